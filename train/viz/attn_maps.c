/* attn_maps.c — grids of attention heatmaps. See attn_maps.h. */
#include "train/viz/attn_maps.h"

#include <stdio.h>
#include <string.h>

#include "core/error.h"
#include "train/viz/canvas.h"

#define PAD 8
#define LABEL_CHARS 7
#define LABEL_W (LABEL_CHARS * QKV_FONT_W + 3)  /* room for a token label */
#define TITLE_H (QKV_FONT_H + 6)
#define AXIS_H (QKV_FONT_H + 4)                   /* an axis title's band */
#define HEADER_H (PAD + 3 * (QKV_FONT_H + 4) + 4) /* two caption lines and the warning */
#define KEY_AXIS "key position:token"
#define QUERY_AXIS "query position:token"
#define BAR_W 100
#define MIN_CELL_W 180

static const qkv_rgb WHITE = {255, 255, 255}, TEXT = {40, 40, 40}, AXIS = {90, 90, 90}, WARN = {200, 20, 20};

/* Pixels per token: big for a few tokens, at least 6 so labels stay apart. */
static int token_pixels(int tokens) {
    int cs = tokens > 0 ? 240 / tokens : 24;
    return cs < 10 ? 10 : cs > 28 ? 28 : cs;
}

static void cell_size(int tokens, int *w, int *h) {
    int heat = tokens * token_pixels(tokens);
    *w = PAD + AXIS_H + LABEL_W + heat + PAD;
    if (*w < MIN_CELL_W) *w = MIN_CELL_W;
    *h = PAD + TITLE_H + AXIS_H + LABEL_W + heat + PAD;
}

void qkv_attn_grid_size(int rows, int cols, int tokens, int *width, int *height) {
    int cw, ch;
    cell_size(tokens, &cw, &ch);
    *width = cols * cw;
    *height = HEADER_H + rows * ch;
}

/* Blue (-1), white (0), red (+1): a signed value over the map's range; NaN white. */
static qkv_rgb diverging(double t) {
    static const qkv_rgb blue = {59, 76, 192}, red = {180, 4, 38};
    if (t != t) t = 0;
    t = t < -1 ? -1 : t > 1 ? 1 : t;
    qkv_rgb end = t < 0 ? blue : red;
    double a = t < 0 ? -t : t;
    return (qkv_rgb){(unsigned char)(255 + a * (end.r - 255) + 0.5), (unsigned char)(255 + a * (end.g - 255) + 0.5),
                     (unsigned char)(255 + a * (end.b - 255) + 0.5)};
}

static qkv_rgb cell_color(const qkv_attn_map *m, float x) {
    return m->range > 0 ? diverging(x / m->range) : qkv_colormap_viridis(x);
}

static void short_label(const char *label, char out[LABEL_CHARS + 1]) {
    snprintf(out, LABEL_CHARS + 1, "%s", label ? label : "");
}

static void draw_map(qkv_canvas *c, const qkv_attn_map *m, int x, int y, int tokens) {
    int cs = token_pixels(tokens);
    qkv_canvas_text(c, x + PAD, y + PAD, m->title, TEXT, 1);
    if (!m->weights) return;
    int hx = x + PAD + AXIS_H + LABEL_W, hy = y + PAD + TITLE_H + AXIS_H + LABEL_W; /* heatmap's top-left */
    char label[LABEL_CHARS + 1];
    /* Axis titles: keys over their labels, queries (read bottom to top) left of theirs. */
    const char *q_axis = m->q_axis ? m->q_axis : QUERY_AXIS;
    qkv_canvas_text(c, hx, y + PAD + TITLE_H, m->k_axis ? m->k_axis : KEY_AXIS, AXIS, 1);
    int query_len = qkv_text_width(q_axis, 1), span = m->tq * cs;
    qkv_canvas_text_up(c, x + PAD, hy + (span > query_len ? (span + query_len) / 2 : query_len), q_axis, AXIS, 1);
    for (int j = 0; j < m->tk; j++) { /* key labels, rotated, read bottom to top, ending at the heatmap */
        short_label(m->k_labels ? m->k_labels[j] : NULL, label);
        qkv_canvas_text_up(c, hx + j * cs + (cs - 7) / 2, hy - 3, label, TEXT, 1);
    }
    for (int i = 0; i < m->tq; i++) {
        short_label(m->q_labels ? m->q_labels[i] : NULL, label);
        qkv_canvas_text(c, hx - 3 - qkv_text_width(label, 1), hy + i * cs + (cs - 7) / 2, label, TEXT, 1);
        for (int j = 0; j < m->tk; j++)
            qkv_canvas_fill_rect(c, hx + j * cs, hy + i * cs, cs, cs,
                                 cell_color(m, m->weights[(size_t)i * m->tk + j]));
    }
    qkv_canvas_rect(c, hx - 1, hy - 1, m->tk * cs + 2, m->tq * cs + 2, TEXT);
}

int qkv_attn_grid_png(const char *path, const char *caption, const char *warning, const qkv_attn_map *maps,
                      int rows, int cols) {
    if (!path || !*path) {
        qkv_set_error("attn: empty output path");
        return -1;
    }
    int tokens = 1;
    for (int k = 0; k < rows * cols; k++) {
        if (maps[k].tq > tokens) tokens = maps[k].tq;
        if (maps[k].tk > tokens) tokens = maps[k].tk;
    }
    if (tokens > QKV_ATTN_MAX_TOKENS) {
        qkv_set_error("%s: %d tokens a side, at most %d fit an attention map", path, tokens, QKV_ATTN_MAX_TOKENS);
        return -1;
    }
    int width, height, cw, ch;
    qkv_attn_grid_size(rows, cols, tokens, &width, &height);
    cell_size(tokens, &cw, &ch);
    /* Caption: up to two lines (split at the first newline); the image widens to fit them and the bar. */
    char lines[2][256] = {"", ""};
    const char *newline = caption ? strchr(caption, '\n') : NULL;
    snprintf(lines[0], sizeof lines[0], "%.*s", newline ? (int)(newline - caption) : 255, caption ? caption : "");
    if (newline) snprintf(lines[1], sizeof lines[1], "%s", newline + 1);
    int text_w = qkv_text_width(lines[0], 1) > qkv_text_width(lines[1], 1) ? qkv_text_width(lines[0], 1)
                                                                          : qkv_text_width(lines[1], 1);
    /* the color bar, top right: 0..1, or -range..range for signed maps */
    float range = rows * cols > 0 ? maps[0].range : 0;
    char low[24] = "0", high[24] = "1";
    if (range > 0) snprintf(low, sizeof low, "-%.2g", (double)range), snprintf(high, sizeof high, "%.2g", (double)range);
    int bar_room = qkv_text_width(low, 1) + qkv_text_width(high, 1) + 2 + BAR_W + 16;
    if (warning && qkv_text_width(warning, 1) > text_w) text_w = qkv_text_width(warning, 1);
    if (width < PAD + text_w + 20 + bar_room + PAD) width = PAD + text_w + 20 + bar_room + PAD;
    qkv_canvas c;
    if (qkv_canvas_init(&c, width, height, WHITE)) return -1;
    for (int k = 0; k < 2; k++) qkv_canvas_text(&c, PAD, PAD + k * (QKV_FONT_H + 4), lines[k], TEXT, 1);
    if (warning) qkv_canvas_text(&c, PAD, PAD + 2 * (QKV_FONT_H + 4), warning, WARN, 1);
    int bx = width - PAD - (qkv_text_width(high, 1) + 1) - 4 - BAR_W;
    qkv_canvas_text(&c, bx - 4 - qkv_text_width(low, 1), PAD, low, TEXT, 1);
    for (int i = 0; i < BAR_W; i++)
        qkv_canvas_fill_rect(&c, bx + i, PAD - 1, 1, 9, range > 0 ? diverging(2 * i / (BAR_W - 1.0) - 1)
                                                                  : qkv_colormap_viridis(i / (BAR_W - 1.0)));
    qkv_canvas_text(&c, bx + BAR_W + 4, PAD, high, TEXT, 1);
    for (int r = 0; r < rows; r++)
        for (int col = 0; col < cols; col++)
            draw_map(&c, &maps[r * cols + col], col * cw, HEADER_H + r * ch, tokens);
    int rc = qkv_canvas_write_png(&c, path);
    qkv_canvas_free(&c);
    return rc;
}
