/* canvas.c — RGB8 raster, lines, rectangles, 5x7 bitmap text, viridis. See canvas.h. */
#include "train/viz/canvas.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/io/png.h"

/* The classic 5x7 font, printable ASCII 32..126: five columns per glyph, bit r of a
 * column byte is row r (row 0 on top). */
static const unsigned char font5x7[95][5] = {
    {0x00,0x00,0x00,0x00,0x00}, {0x00,0x00,0x5F,0x00,0x00}, {0x00,0x07,0x00,0x07,0x00}, /*  ! " */
    {0x14,0x7F,0x14,0x7F,0x14}, {0x24,0x2A,0x7F,0x2A,0x12}, {0x23,0x13,0x08,0x64,0x62}, /* # $ % */
    {0x36,0x49,0x55,0x22,0x50}, {0x00,0x05,0x03,0x00,0x00}, {0x00,0x1C,0x22,0x41,0x00}, /* & ' ( */
    {0x00,0x41,0x22,0x1C,0x00}, {0x08,0x2A,0x1C,0x2A,0x08}, {0x08,0x08,0x3E,0x08,0x08}, /* ) * + */
    {0x00,0x50,0x30,0x00,0x00}, {0x08,0x08,0x08,0x08,0x08}, {0x00,0x60,0x60,0x00,0x00}, /* , - . */
    {0x20,0x10,0x08,0x04,0x02}, {0x3E,0x51,0x49,0x45,0x3E}, {0x00,0x42,0x7F,0x40,0x00}, /* / 0 1 */
    {0x42,0x61,0x51,0x49,0x46}, {0x21,0x41,0x45,0x4B,0x31}, {0x18,0x14,0x12,0x7F,0x10}, /* 2 3 4 */
    {0x27,0x45,0x45,0x45,0x39}, {0x3C,0x4A,0x49,0x49,0x30}, {0x01,0x71,0x09,0x05,0x03}, /* 5 6 7 */
    {0x36,0x49,0x49,0x49,0x36}, {0x06,0x49,0x49,0x29,0x1E}, {0x00,0x36,0x36,0x00,0x00}, /* 8 9 : */
    {0x00,0x56,0x36,0x00,0x00}, {0x08,0x14,0x22,0x41,0x00}, {0x14,0x14,0x14,0x14,0x14}, /* ; < = */
    {0x00,0x41,0x22,0x14,0x08}, {0x02,0x01,0x51,0x09,0x06}, {0x32,0x49,0x79,0x41,0x3E}, /* > ? @ */
    {0x7E,0x11,0x11,0x11,0x7E}, {0x7F,0x49,0x49,0x49,0x36}, {0x3E,0x41,0x41,0x41,0x22}, /* A B C */
    {0x7F,0x41,0x41,0x22,0x1C}, {0x7F,0x49,0x49,0x49,0x41}, {0x7F,0x09,0x09,0x01,0x01}, /* D E F */
    {0x3E,0x41,0x41,0x51,0x32}, {0x7F,0x08,0x08,0x08,0x7F}, {0x00,0x41,0x7F,0x41,0x00}, /* G H I */
    {0x20,0x40,0x41,0x3F,0x01}, {0x7F,0x08,0x14,0x22,0x41}, {0x7F,0x40,0x40,0x40,0x40}, /* J K L */
    {0x7F,0x02,0x04,0x02,0x7F}, {0x7F,0x04,0x08,0x10,0x7F}, {0x3E,0x41,0x41,0x41,0x3E}, /* M N O */
    {0x7F,0x09,0x09,0x09,0x06}, {0x3E,0x41,0x51,0x21,0x5E}, {0x7F,0x09,0x19,0x29,0x46}, /* P Q R */
    {0x46,0x49,0x49,0x49,0x31}, {0x01,0x01,0x7F,0x01,0x01}, {0x3F,0x40,0x40,0x40,0x3F}, /* S T U */
    {0x1F,0x20,0x40,0x20,0x1F}, {0x7F,0x20,0x18,0x20,0x7F}, {0x63,0x14,0x08,0x14,0x63}, /* V W X */
    {0x03,0x04,0x78,0x04,0x03}, {0x61,0x51,0x49,0x45,0x43}, {0x00,0x7F,0x41,0x41,0x00}, /* Y Z [ */
    {0x02,0x04,0x08,0x10,0x20}, {0x00,0x41,0x41,0x7F,0x00}, {0x04,0x02,0x01,0x02,0x04}, /* \ ] ^ */
    {0x40,0x40,0x40,0x40,0x40}, {0x00,0x01,0x02,0x04,0x00}, {0x20,0x54,0x54,0x54,0x78}, /* _ ` a */
    {0x7F,0x48,0x44,0x44,0x38}, {0x38,0x44,0x44,0x44,0x20}, {0x38,0x44,0x44,0x48,0x7F}, /* b c d */
    {0x38,0x54,0x54,0x54,0x18}, {0x08,0x7E,0x09,0x01,0x02}, {0x08,0x14,0x54,0x54,0x3C}, /* e f g */
    {0x7F,0x08,0x04,0x04,0x78}, {0x00,0x44,0x7D,0x40,0x00}, {0x20,0x40,0x44,0x3D,0x00}, /* h i j */
    {0x00,0x7F,0x10,0x28,0x44}, {0x00,0x41,0x7F,0x40,0x00}, {0x7C,0x04,0x18,0x04,0x78}, /* k l m */
    {0x7C,0x08,0x04,0x04,0x78}, {0x38,0x44,0x44,0x44,0x38}, {0x7C,0x14,0x14,0x14,0x08}, /* n o p */
    {0x08,0x14,0x14,0x18,0x7C}, {0x7C,0x08,0x04,0x04,0x08}, {0x48,0x54,0x54,0x54,0x20}, /* q r s */
    {0x04,0x3F,0x44,0x40,0x20}, {0x3C,0x40,0x40,0x20,0x7C}, {0x1C,0x20,0x40,0x20,0x1C}, /* t u v */
    {0x3C,0x40,0x30,0x40,0x3C}, {0x44,0x28,0x10,0x28,0x44}, {0x0C,0x50,0x50,0x50,0x3C}, /* w x y */
    {0x44,0x64,0x54,0x4C,0x44}, {0x00,0x08,0x36,0x41,0x00}, {0x00,0x00,0x7F,0x00,0x00}, /* z { | */
    {0x00,0x41,0x36,0x08,0x00}, {0x10,0x08,0x08,0x10,0x08},                              /* } ~ */
};

int qkv_canvas_init(qkv_canvas *c, int width, int height, qkv_rgb background) {
    memset(c, 0, sizeof *c);
    if (width <= 0 || height <= 0 || width > 16384 || height > 16384) {
        qkv_set_error("canvas: size %dx%d outside 1..16384", width, height);
        return -1;
    }
    c->pixels = malloc((size_t)width * (size_t)height * 3);
    if (!c->pixels) {
        qkv_set_error("canvas: out of memory for %dx%d pixels", width, height);
        return -1;
    }
    c->width = width;
    c->height = height;
    qkv_canvas_unclip(c);
    qkv_canvas_fill(c, background);
    return 0;
}

void qkv_canvas_free(qkv_canvas *c) {
    free(c->pixels);
    memset(c, 0, sizeof *c);
}

void qkv_canvas_unclip(qkv_canvas *c) {
    c->clip_x0 = 0;
    c->clip_y0 = 0;
    c->clip_x1 = c->width;
    c->clip_y1 = c->height;
}

static int max_int(int a, int b) { return a > b ? a : b; }
static int min_int(int a, int b) { return a < b ? a : b; }

void qkv_canvas_clip(qkv_canvas *c, int x, int y, int w, int h) {
    c->clip_x0 = max_int(0, x);
    c->clip_y0 = max_int(0, y);
    c->clip_x1 = min_int(c->width, x + w);
    c->clip_y1 = min_int(c->height, y + h);
}

void qkv_canvas_fill(qkv_canvas *c, qkv_rgb color) {
    for (size_t i = 0; i < (size_t)c->width * c->height; i++) {
        c->pixels[3 * i] = color.r;
        c->pixels[3 * i + 1] = color.g;
        c->pixels[3 * i + 2] = color.b;
    }
}

void qkv_canvas_pixel(qkv_canvas *c, int x, int y, qkv_rgb color) {
    if (x < c->clip_x0 || x >= c->clip_x1 || y < c->clip_y0 || y >= c->clip_y1) return;
    unsigned char *p = c->pixels + 3 * ((size_t)y * c->width + x);
    p[0] = color.r;
    p[1] = color.g;
    p[2] = color.b;
}

qkv_rgb qkv_canvas_get(const qkv_canvas *c, int x, int y) {
    qkv_rgb black = {0, 0, 0};
    if (x < 0 || x >= c->width || y < 0 || y >= c->height) return black;
    const unsigned char *p = c->pixels + 3 * ((size_t)y * c->width + x);
    qkv_rgb color = {p[0], p[1], p[2]};
    return color;
}

void qkv_canvas_fill_rect(qkv_canvas *c, int x, int y, int w, int h, qkv_rgb color) {
    int x0 = max_int(x, c->clip_x0), x1 = min_int(x + w, c->clip_x1);
    int y0 = max_int(y, c->clip_y0), y1 = min_int(y + h, c->clip_y1);
    for (int yy = y0; yy < y1; yy++)
        for (int xx = x0; xx < x1; xx++) qkv_canvas_pixel(c, xx, yy, color);
}

void qkv_canvas_blend_rect(qkv_canvas *c, int x, int y, int w, int h, qkv_rgb color, double alpha) {
    int x0 = max_int(x, c->clip_x0), x1 = min_int(x + w, c->clip_x1);
    int y0 = max_int(y, c->clip_y0), y1 = min_int(y + h, c->clip_y1);
    const unsigned char rgb[3] = {color.r, color.g, color.b};
    for (int yy = y0; yy < y1; yy++)
        for (int xx = x0; xx < x1; xx++) {
            unsigned char *p = c->pixels + 3 * ((size_t)yy * c->width + xx);
            for (int k = 0; k < 3; k++) p[k] = (unsigned char)lround(p[k] + alpha * (rgb[k] - p[k]));
        }
}

void qkv_canvas_rect(qkv_canvas *c, int x, int y, int w, int h, qkv_rgb color) {
    if (w <= 0 || h <= 0) return;
    qkv_canvas_fill_rect(c, x, y, w, 1, color);
    qkv_canvas_fill_rect(c, x, y + h - 1, w, 1, color);
    qkv_canvas_fill_rect(c, x, y, 1, h, color);
    qkv_canvas_fill_rect(c, x + w - 1, y, 1, h, color);
}

/* Clips the segment to the clip rectangle (grown by the pen) with Liang-Barsky,
 * so a segment with far-away ends costs only the pixels it draws. 0: nothing left. */
static int clip_segment(const qkv_canvas *c, int pen, double *x0, double *y0, double *x1, double *y1) {
    double lo_x = c->clip_x0 - pen, hi_x = c->clip_x1 + pen;
    double lo_y = c->clip_y0 - pen, hi_y = c->clip_y1 + pen;
    double dx = *x1 - *x0, dy = *y1 - *y0, t0 = 0, t1 = 1;
    double p[4] = {-dx, dx, -dy, dy};
    double q[4] = {*x0 - lo_x, hi_x - *x0, *y0 - lo_y, hi_y - *y0};
    for (int i = 0; i < 4; i++) {
        if (p[i] == 0) {
            if (q[i] < 0) return 0;
            continue;
        }
        double t = q[i] / p[i];
        if (p[i] < 0) t0 = t > t0 ? t : t0;
        else t1 = t < t1 ? t : t1;
        if (t0 > t1) return 0;
    }
    double ax = *x0, ay = *y0;
    *x0 = ax + t0 * dx;
    *y0 = ay + t0 * dy;
    *x1 = ax + t1 * dx;
    *y1 = ay + t1 * dy;
    return 1;
}

void qkv_canvas_line(qkv_canvas *c, int x0, int y0, int x1, int y1, qkv_rgb color, int thickness) {
    if (thickness < 1) thickness = 1;
    double fx0 = x0, fy0 = y0, fx1 = x1, fy1 = y1;
    if (!clip_segment(c, thickness, &fx0, &fy0, &fx1, &fy1)) return;
    int ax = (int)lround(fx0), ay = (int)lround(fy0), bx = (int)lround(fx1), by = (int)lround(fy1);
    int dx = abs(bx - ax), dy = -abs(by - ay);
    int sx = ax < bx ? 1 : -1, sy = ay < by ? 1 : -1, err = dx + dy;
    int half = (thickness - 1) / 2;
    for (;;) {
        if (thickness == 1) qkv_canvas_pixel(c, ax, ay, color);
        else qkv_canvas_fill_rect(c, ax - half, ay - half, thickness, thickness, color);
        if (ax == bx && ay == by) break;
        int e2 = 2 * err;
        if (e2 >= dy) { err += dy; ax += sx; }
        if (e2 <= dx) { err += dx; ay += sy; }
    }
}

static const unsigned char *glyph(char ch) {
    unsigned char u = (unsigned char)ch;
    return font5x7[(u >= 32 && u <= 126 ? u : '?') - 32];
}

int qkv_text_width(const char *text, int scale) {
    int n = (int)strlen(text);
    return n ? (n * QKV_FONT_W - 1) * scale : 0;
}

int qkv_canvas_text(qkv_canvas *c, int x, int y, const char *text, qkv_rgb color, int scale) {
    if (scale < 1) scale = 1;
    for (int i = 0; text[i]; i++) {
        const unsigned char *g = glyph(text[i]);
        int gx = x + i * QKV_FONT_W * scale;
        for (int col = 0; col < 5; col++)
            for (int row = 0; row < 7; row++)
                if (g[col] >> row & 1)
                    qkv_canvas_fill_rect(c, gx + col * scale, y + row * scale, scale, scale, color);
    }
    return qkv_text_width(text, scale);
}

/* Rotated 90 degrees counterclockwise: glyph column col goes up from y, glyph
 * row r goes right from x; the text's baseline side faces right. */
void qkv_canvas_text_up(qkv_canvas *c, int x, int y, const char *text, qkv_rgb color, int scale) {
    if (scale < 1) scale = 1;
    for (int i = 0; text[i]; i++) {
        const unsigned char *g = glyph(text[i]);
        int gy = y - i * QKV_FONT_W * scale;
        for (int col = 0; col < 5; col++)
            for (int row = 0; row < 7; row++)
                if (g[col] >> row & 1)
                    qkv_canvas_fill_rect(c, x + row * scale, gy - (col + 1) * scale, scale, scale, color);
    }
}

qkv_rgb qkv_colormap_viridis(double t) {
    /* matplotlib's viridis at t = 0, 1/8, ..., 1 */
    static const unsigned char samples[9][3] = {
        {68, 1, 84}, {72, 40, 120}, {62, 73, 137}, {49, 104, 142}, {38, 130, 142},
        {31, 158, 137}, {53, 183, 121}, {110, 206, 88}, {253, 231, 37},
    };
    if (!(t > 0)) t = 0; /* also NaN */
    if (t > 1) t = 1;
    double pos = t * 8;
    int i = (int)pos;
    if (i > 7) i = 7;
    double f = pos - i;
    qkv_rgb color;
    color.r = (unsigned char)lround(samples[i][0] + f * (samples[i + 1][0] - samples[i][0]));
    color.g = (unsigned char)lround(samples[i][1] + f * (samples[i + 1][1] - samples[i][1]));
    color.b = (unsigned char)lround(samples[i][2] + f * (samples[i + 1][2] - samples[i][2]));
    return color;
}

qkv_rgb qkv_palette(int i) {
    /* matplotlib's tab10 */
    static const qkv_rgb colors[10] = {
        {31, 119, 180}, {255, 127, 14}, {44, 160, 44}, {214, 39, 40}, {148, 103, 189},
        {140, 86, 75}, {227, 119, 194}, {127, 127, 127}, {188, 189, 34}, {23, 190, 207},
    };
    return colors[(i < 0 ? -i : i) % 10];
}

int qkv_canvas_write_png(const qkv_canvas *c, const char *path) {
    return qkv_png_write(path, c->pixels, c->width, c->height, 3);
}
