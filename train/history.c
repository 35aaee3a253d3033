/* history.c — a run's record of steps, losses and metrics. See history.h. */
#include "train/history.h"

#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/error.h"
#include "core/fileio.h"
#include "core/number.h"
#include "train/viz/plot.h"

#define PANEL_W 560
#define PANEL_H 400
#define N_FIXED 4 /* step, loss, lr, seconds */

static const char *const fixed_columns[N_FIXED] = {"step", "loss", "lr", "seconds"};

static double *grow(double *p, int cap) {
    double *q = realloc(p, (size_t)cap * sizeof *q);
    if (!q) qkv_fatal("history: out of memory for %d rows", cap);
    return q;
}

static double **column(qkv_history *h, int c) {
    double **fixed[N_FIXED] = {&h->step, &h->loss, &h->lr, &h->seconds};
    return c < N_FIXED ? fixed[c] : &h->metric[c - N_FIXED];
}

/* The metric key's index, added if new; -1 when the table is full. */
static int key_index(qkv_history *h, const char *key) {
    for (int k = 0; k < h->n_keys; k++)
        if (strcmp(h->key[k], key) == 0) return k;
    if (h->n_keys == QKV_MAX_METRICS || strlen(key) >= QKV_HISTORY_KEY_LEN) return -1;
    snprintf(h->key[h->n_keys], QKV_HISTORY_KEY_LEN, "%s", key);
    return h->n_keys++;
}

static int new_row(qkv_history *h) {
    if (h->n == h->cap) {
        h->cap = h->cap ? 2 * h->cap : 64;
        for (int c = 0; c < N_FIXED + QKV_MAX_METRICS; c++) *column(h, c) = grow(*column(h, c), h->cap);
    }
    for (int c = 0; c < N_FIXED + QKV_MAX_METRICS; c++) (*column(h, c))[h->n] = NAN;
    return h->n++;
}

void qkv_history_add(qkv_history *h, long step, double loss, double lr, double seconds, const qkv_metrics *metrics) {
    int r = h->n > 0 && h->step[h->n - 1] == (double)step ? h->n - 1 : new_row(h);
    double fixed[N_FIXED] = {(double)step, loss, lr, seconds};
    for (int c = 0; c < N_FIXED; c++)
        if (isnan((*column(h, c))[r])) (*column(h, c))[r] = fixed[c];
    for (int i = 0; metrics && i < metrics->n; i++) {
        int k = key_index(h, metrics->key[i]);
        if (k >= 0) h->metric[k][r] = metrics->value[i];
    }
}

int qkv_history_awaits_evaluation(const qkv_history *h, long step) {
    if (h->n == 0 || h->step[h->n - 1] != (double)step) return 0;
    for (int k = 0; k < h->n_keys; k++)
        if (!isnan(h->metric[k][h->n - 1])) return 0;
    return 1;
}

/* ---- CSV ------------------------------------------------------------------------- */

#define SECONDS 3 /* the column a checkpoint's copy leaves out */

char *qkv_history_csv(const qkv_history *h, int seconds) {
    size_t cap = 256 + (size_t)h->n * (N_FIXED + QKV_MAX_METRICS) * 24, len = 0;
    char *out = malloc(cap);
    if (!out) qkv_fatal("history: out of memory for %zu bytes of CSV", cap);
    for (int c = 0; c < N_FIXED + h->n_keys; c++)
        if (seconds || c != SECONDS)
            len += (size_t)snprintf(out + len, cap - len, "%s%s", c ? "," : "",
                                    c < N_FIXED ? fixed_columns[c] : h->key[c - N_FIXED]);
    out[len++] = '\n';
    qkv_history *mutable = (qkv_history *)h; /* column() only reads through it here */
    for (int r = 0; r < h->n; r++) {
        for (int c = 0; c < N_FIXED + h->n_keys; c++) {
            if (!seconds && c == SECONDS) continue;
            double v = (*column(mutable, c))[r];
            /* a float loss or metric round-trips in 9 digits; the lr is a schedule's value */
            const char *fmt = c == 0 ? "%.0f" : c == 2 ? "%.6g" : c == SECONDS ? "%.3f" : "%.9g";
            if (c) out[len++] = ',';
            if (!isnan(v)) len += (size_t)snprintf(out + len, cap - len, fmt, v);
        }
        out[len++] = '\n';
    }
    out[len] = '\0';
    return out;
}

/* The next comma- or newline-ended cell of *at as a number (NaN when empty). */
static int parse_cell(const char **at, double *value) {
    const char *s = *at;
    size_t n = strcspn(s, ",\n");
    if (n == 0) {
        *value = NAN;
    } else {   /* the number syntax of flags and checkpoints (core/number.h), finite */
        char cell[64];
        if (n >= sizeof cell) return -1;
        memcpy(cell, s, n);
        cell[n] = '\0';
        if (qkv_parse_double(cell, -DBL_MAX, DBL_MAX, value) != 0) return -1;
    }
    *at = s + n + (s[n] == ',');
    return 0;
}

int qkv_history_parse(qkv_history *h, const char *csv, long until, const char *what) {
    qkv_history_free(h);
    size_t header = strcspn(csv, "\n");
    char line[N_FIXED * 16 + QKV_MAX_METRICS * (QKV_HISTORY_KEY_LEN + 1)];
    if (csv[header] != '\n' || header >= sizeof line) return qkv_set_error("%s: no history header", what), -1;
    memcpy(line, csv, header);
    line[header] = '\0';
    /* Column i of the text is column place[i] of the history: seconds may be absent. */
    int place[N_FIXED + QKV_MAX_METRICS], n_columns = 0, fixed = 0;
    for (char *save = NULL, *name = strtok_r(line, ",", &save); name; name = strtok_r(NULL, ",", &save)) {
        if (fixed == SECONDS && strcmp(name, fixed_columns[SECONDS]) != 0) fixed++; /* no seconds */
        int ok = n_columns < N_FIXED + QKV_MAX_METRICS;
        if (ok && fixed < N_FIXED) {
            ok = strcmp(name, fixed_columns[fixed]) == 0;
            place[n_columns] = fixed++;
        } else if (ok) {
            int new_key = h->n_keys; /* a key seen before is a malformed header */
            ok = key_index(h, name) == new_key;
            place[n_columns] = N_FIXED + new_key;
        }
        if (!ok) {
            qkv_history_free(h);
            return qkv_set_error("%s: unexpected history column '%.40s'", what, name), -1;
        }
        n_columns++;
    }
    if (fixed == SECONDS) fixed++; /* step, loss, lr and nothing else: no seconds, no metric */
    if (fixed < N_FIXED) return qkv_set_error("%s: the history has %d columns", what, n_columns), -1;
    int rows = 0;
    for (const char *at = csv + header + 1; *at; at += *at == '\n', rows++) {
        double cells[N_FIXED + QKV_MAX_METRICS];
        for (int c = 0; c < n_columns; c++)
            if (parse_cell(&at, &cells[c]) != 0 || (c + 1 < n_columns && at[-1] != ',')) {
                qkv_history_free(h);
                return qkv_set_error("%s: history row %d, column %d is not a number", what, rows + 1, c + 1), -1;
            }
        if (*at != '\n' || isnan(cells[0]) || (h->n && cells[0] <= h->step[h->n - 1])) {
            qkv_history_free(h);
            return qkv_set_error("%s: history row %d is malformed or out of step order", what, rows + 1), -1;
        }
        if (cells[0] > (double)until) continue;
        int r = new_row(h);
        for (int c = 0; c < n_columns; c++) (*column(h, place[c]))[r] = cells[c];
    }
    return 0;
}

double qkv_history_adopt_seconds(qkv_history *h, const qkv_history *earlier, long step) {
    int *match = malloc(((size_t)h->n + 1) * sizeof *match);
    if (!match) qkv_fatal("history: out of memory for %d rows", h->n);
    int e = 0, same = h->n > 0;   /* an empty history proves nothing */
    for (int r = 0; r < h->n && same; r++) {   /* both in step order: one walk */
        while (e < earlier->n && earlier->step[e] < h->step[r]) e++;
        same = e < earlier->n && earlier->step[e] == h->step[r] && earlier->loss[e] == h->loss[r] &&
               (earlier->lr[e] == h->lr[r] || (isnan(earlier->lr[e]) && isnan(h->lr[r])));
        match[r] = e;
    }
    double until = NAN;
    for (int r = 0; same && r < earlier->n && earlier->step[r] <= (double)step; r++)
        if (!isnan(earlier->seconds[r])) until = earlier->seconds[r];
    if (same && !isnan(until))
        for (int r = 0; r < h->n; r++) h->seconds[r] = earlier->seconds[match[r]];
    free(match);
    return same ? until : NAN;
}

double qkv_history_adopt_csv_seconds(qkv_history *h, const char *path, long step) {
    if (access(path, R_OK) != 0) return NAN;   /* none yet: nothing to go on from */
    size_t len;
    char *text = (char *)qkv_read_file(path, (size_t)64 << 20, &len);
    qkv_history earlier = {0};
    double before = NAN;
    if (text && qkv_history_parse(&earlier, text, LONG_MAX, path) == 0)
        before = qkv_history_adopt_seconds(h, &earlier, step);
    qkv_history_free(&earlier);
    free(text);
    return before;
}

/* ---- the picture ------------------------------------------------------------------ */

static int is_loss_key(const char *key) {
    size_t n = strlen(key);
    return n >= 5 && strcmp(key + n - 5, "_loss") == 0;
}

/* Metric k at the rows that evaluated it, so that its line joins evaluations. */
static qkv_plot_series evaluated(const qkv_history *h, int k, double *x, double *y) {
    int n = 0;
    for (int r = 0; r < h->n; r++)
        if (!isnan(h->metric[k][r])) x[n] = h->step[r], y[n++] = h->metric[k][r];
    return (qkv_plot_series){h->key[k], x, y, n};
}

const char *qkv_history_loss_title(const qkv_history *h) {
    for (int k = 0; k < h->n_keys; k++)
        if (is_loss_key(h->key[k])) return "loss (train and held-out, nats)";
    return "train loss (nats)";   /* the task evaluates no loss (reverse: accuracies) */
}

int qkv_history_write_png(const qkv_history *h, const char *path, const char *title) {
    qkv_canvas canvas;
    const qkv_rgb white = {255, 255, 255};
    int top = title && *title ? 2 * QKV_FONT_H + 8 : 0;
    if (qkv_canvas_init(&canvas, 2 * PANEL_W, PANEL_H + top, white)) return -1;
    if (top) qkv_canvas_text(&canvas, (2 * PANEL_W - qkv_text_width(title, 2)) / 2, 6, title,
                             (qkv_rgb){40, 40, 40}, 2);
    qkv_plot_series losses[1 + QKV_MAX_METRICS], metrics[QKV_MAX_METRICS];
    int n_losses = 0, n_metrics = 0;
    losses[n_losses++] = (qkv_plot_series){"train loss", h->step, h->loss, h->n};
    double *xy = malloc(((size_t)h->n + 1) * 2 * QKV_MAX_METRICS * sizeof *xy);
    if (!xy) qkv_fatal("history: out of memory for a plot of %d rows", h->n);
    for (int k = 0; k < h->n_keys; k++) {
        qkv_plot_series s = evaluated(h, k, xy + (size_t)(2 * k) * h->n, xy + (size_t)(2 * k + 1) * h->n);
        if (is_loss_key(h->key[k])) losses[n_losses++] = s;
        else metrics[n_metrics++] = s;
    }
    double first = h->n ? h->step[0] : 0, last = h->n ? h->step[h->n - 1] : 1;
    qkv_plot_options loss_options = {.title = qkv_history_loss_title(h), .x_label = "step",
                                     .y_label = "loss (log)", .log_y = 1, .x_min = first, .x_max = last};
    qkv_plot_options metric_options = {.title = "held-out metrics", .x_label = "step", .y_label = "value",
                                       .x_min = first, .x_max = last};
    int rc = qkv_plot_lines_draw(&canvas, 0, top, PANEL_W, PANEL_H, losses, n_losses, &loss_options);
    if (rc == 0) rc = qkv_plot_lines_draw(&canvas, PANEL_W, top, PANEL_W, PANEL_H, metrics, n_metrics, &metric_options);
    if (rc == 0) rc = qkv_canvas_write_png(&canvas, path);
    qkv_canvas_free(&canvas);
    free(xy);
    return rc;
}

void qkv_history_free(qkv_history *h) {
    for (int c = 0; c < N_FIXED + QKV_MAX_METRICS; c++) free(*column(h, c));
    memset(h, 0, sizeof *h);
}
