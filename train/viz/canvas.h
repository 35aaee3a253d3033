/* canvas.h — an RGB8 raster to draw plots and heatmaps on, saved as PNG.
 *
 * A canvas is width x height pixels, 3 bytes each (R, G, B), rows top to bottom;
 * (0, 0) is the top-left pixel, x grows right and y grows down. Every drawing call
 * clips to the canvas and to its clip rectangle (qkv_canvas_clip), so coordinates
 * far outside are harmless. Text uses a built-in 5x7 bitmap font (printable ASCII
 * 32..126, anything else drawn as '?'), each glyph in a 6x8 cell, scaled by an
 * integer factor. qkv_colormap_viridis maps t in [0, 1] to matplotlib's viridis
 * (perceptually uniform, readable in gray), linearly between 9 samples.
 *
 * qkv_canvas_init returns 0, or -1 with qkv_last_error() for a bad size or no
 * memory; qkv_canvas_write_png writes through qkv_png_write (atomic, one-line errors).
 */
#ifndef QKV_CANVAS_H
#define QKV_CANVAS_H

typedef struct qkv_rgb { unsigned char r, g, b; } qkv_rgb;

typedef struct qkv_canvas {
    int width, height;
    unsigned char *pixels;           /* width * height * 3 bytes */
    int clip_x0, clip_y0, clip_x1, clip_y1; /* drawing limited to [x0,x1) x [y0,y1) */
} qkv_canvas;

#define QKV_FONT_W 6 /* glyph cell width at scale 1 (5 columns + 1 spacing) */
#define QKV_FONT_H 8 /* glyph cell height at scale 1 (7 rows + 1 spacing) */

int qkv_canvas_init(qkv_canvas *c, int width, int height, qkv_rgb background);
void qkv_canvas_free(qkv_canvas *c);
/* Limits drawing to [x, x+w) x [y, y+h) (intersected with the canvas). */
void qkv_canvas_clip(qkv_canvas *c, int x, int y, int w, int h);
void qkv_canvas_unclip(qkv_canvas *c);

void qkv_canvas_fill(qkv_canvas *c, qkv_rgb color);
void qkv_canvas_pixel(qkv_canvas *c, int x, int y, qkv_rgb color);
/* The color at (x, y); black outside the canvas. */
qkv_rgb qkv_canvas_get(const qkv_canvas *c, int x, int y);
/* Bresenham line from (x0,y0) to (x1,y1), both ends included; thickness >= 1 pixels. */
void qkv_canvas_line(qkv_canvas *c, int x0, int y0, int x1, int y1, qkv_rgb color, int thickness);
/* Rectangle [x, x+w) x [y, y+h): outline one pixel wide, or filled. */
void qkv_canvas_rect(qkv_canvas *c, int x, int y, int w, int h, qkv_rgb color);
void qkv_canvas_fill_rect(qkv_canvas *c, int x, int y, int w, int h, qkv_rgb color);
/* Blends color over the rectangle with opacity alpha in [0, 1] (shaded ranges). */
void qkv_canvas_blend_rect(qkv_canvas *c, int x, int y, int w, int h, qkv_rgb color, double alpha);

/* Text with its top-left corner at (x, y); returns the width drawn in pixels.
 * qkv_canvas_text_up draws it rotated 90 degrees counterclockwise (reading
 * bottom to top, for a y-axis label) with the bottom-left of the text at (x, y). */
int qkv_canvas_text(qkv_canvas *c, int x, int y, const char *text, qkv_rgb color, int scale);
void qkv_canvas_text_up(qkv_canvas *c, int x, int y, const char *text, qkv_rgb color, int scale);
/* Width in pixels of text at scale (the last glyph's spacing column excluded). */
int qkv_text_width(const char *text, int scale);

/* viridis(t), t clamped to [0, 1]; NaN gives the t = 0 color. */
qkv_rgb qkv_colormap_viridis(double t);
/* Distinct line colors (a colorblind-safe cycle), i >= 0. */
qkv_rgb qkv_palette(int i);

int qkv_canvas_write_png(const qkv_canvas *c, const char *path);

#endif
