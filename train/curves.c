/* curves.c — recording loss and metric curves and plotting them. See curves.h. */
#include "train/curves.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "train/viz/plot.h"

#define PANEL_W 560
#define PANEL_H 400

static double *grow(double *p, int cap) {
    double *q = realloc(p, (size_t)cap * sizeof *q);
    if (!q) qkv_fatal("curves: out of memory for %d points", cap);
    return q;
}

void qkv_curves_add_loss(qkv_curves *c, double step, double loss) {
    if (c->n_loss == c->cap_loss) {
        c->cap_loss = c->cap_loss ? 2 * c->cap_loss : 64;
        c->loss_step = grow(c->loss_step, c->cap_loss);
        c->loss = grow(c->loss, c->cap_loss);
    }
    c->loss_step[c->n_loss] = step;
    c->loss[c->n_loss++] = loss;
}

void qkv_curves_add_metrics(qkv_curves *c, double step, const qkv_metrics *m) {
    if (c->n_eval == c->cap_eval) {
        c->cap_eval = c->cap_eval ? 2 * c->cap_eval : 16;
        c->eval_step = grow(c->eval_step, c->cap_eval);
        for (int k = 0; k < QKV_MAX_METRICS; k++) c->metric[k] = grow(c->metric[k], c->cap_eval);
    }
    int e = c->n_eval++;
    c->eval_step[e] = step;
    for (int k = 0; k < QKV_MAX_METRICS; k++) c->metric[k][e] = NAN;
    for (int i = 0; i < m->n; i++) {
        int k = 0;
        while (k < c->n_keys && strcmp(c->key[k], m->key[i]) != 0) k++;
        if (k == c->n_keys) {
            if (c->n_keys == QKV_MAX_METRICS) continue;
            c->key[c->n_keys++] = m->key[i];
        }
        c->metric[k][e] = m->value[i];
    }
}

int qkv_curves_write_png(const qkv_curves *c, const char *path, const char *title) {
    qkv_canvas canvas;
    const qkv_rgb white = {255, 255, 255};
    int top = title && *title ? 2 * QKV_FONT_H + 8 : 0;
    if (qkv_canvas_init(&canvas, 2 * PANEL_W, PANEL_H + top, white)) return -1;
    if (top) qkv_canvas_text(&canvas, (2 * PANEL_W - qkv_text_width(title, 2)) / 2, 6, title,
                             (qkv_rgb){40, 40, 40}, 2);
    qkv_plot_series loss = {"train loss", c->loss_step, c->loss, c->n_loss};
    qkv_plot_options loss_options = {.title = "loss", .x_label = "step", .y_label = "loss (log)", .log_y = 1};
    qkv_plot_series metrics[QKV_MAX_METRICS];
    for (int k = 0; k < c->n_keys; k++)
        metrics[k] = (qkv_plot_series){c->key[k], c->eval_step, c->metric[k], c->n_eval};
    qkv_plot_options metric_options = {.title = "test metrics", .x_label = "step", .y_label = "value"};
    int rc = qkv_plot_lines_draw(&canvas, 0, top, PANEL_W, PANEL_H, &loss, 1, &loss_options);
    if (rc == 0) rc = qkv_plot_lines_draw(&canvas, PANEL_W, top, PANEL_W, PANEL_H, metrics, c->n_keys, &metric_options);
    if (rc == 0) rc = qkv_canvas_write_png(&canvas, path);
    qkv_canvas_free(&canvas);
    return rc;
}

void qkv_curves_free(qkv_curves *c) {
    free(c->loss_step);
    free(c->loss);
    free(c->eval_step);
    for (int k = 0; k < QKV_MAX_METRICS; k++) free(c->metric[k]);
    memset(c, 0, sizeof *c);
}
