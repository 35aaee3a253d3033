/* plot.c — line plots drawn on a canvas. See plot.h.
 *
 * Layout of a panel: title on top, y tick labels and the rotated y label on the
 * left, x tick labels and the x label below, the plot area in the middle with a
 * light grid at the ticks and the legend in the corner that hides the least line. */
#include "train/viz/plot.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/error.h"

#define MAX_TICKS 24
#define MARKER_MAX_POINTS 40

static const qkv_rgb WHITE = {255, 255, 255}, BLACK = {0, 0, 0}, GRID = {225, 225, 225},
                     TEXT = {40, 40, 40}, SHADE = {120, 120, 120};

/* One axis: the mapped range [lo, hi] (log10 of the data for a log axis) and the
 * tick positions in the same units. */
typedef struct axis {
    double lo, hi;
    int log;
    int n_ticks;
    double tick[MAX_TICKS];
    double step; /* linear tick spacing, for label precision */
} axis;

static int point_ok(double v, int log) { return isfinite(v) && (!log || v > 0); }
static double to_axis(double v, int log) { return log ? log10(v) : v; }

/* The "nice" numbers 1, 2, 5 (or 10) times a power of ten, near range (Heckbert). */
static double nice_number(double range, int round) {
    double exponent = floor(log10(range)), f = range / pow(10, exponent), nf;
    if (round) nf = f < 1.5 ? 1 : f < 3 ? 2 : f < 7 ? 5 : 10;
    else nf = f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10;
    return nf * pow(10, exponent);
}

/* Linear axis over [min, max]: about 6 ticks at nice values, range widened to them. */
static void linear_axis(axis *a, double min, double max) {
    if (!(max > min)) {
        double pad = min != 0 ? fabs(min) * 0.1 : 0.5;
        min -= pad;
        max += pad;
    }
    double step = nice_number(nice_number(max - min, 0) / 5, 1);
    a->lo = floor(min / step) * step;
    a->hi = ceil(max / step) * step;
    a->step = step;
    a->n_ticks = 0;
    for (double t = a->lo; t <= a->hi + step * 1e-9 && a->n_ticks < MAX_TICKS; t += step)
        a->tick[a->n_ticks++] = fabs(t) < step * 1e-9 ? 0 : t;
}

/* Log axis over log10 values [lmin, lmax]: whole decades, with 2 and 5 in between
 * when the span is under two decades. */
static void log_axis(axis *a, double lmin, double lmax) {
    a->lo = floor(lmin);
    a->hi = ceil(lmax);
    if (a->hi <= a->lo) a->hi = a->lo + 1;
    int decades = (int)(a->hi - a->lo);
    int every = decades > 10 ? (decades + 9) / 10 : 1;
    a->n_ticks = 0;
    for (int d = 0; d <= decades && a->n_ticks < MAX_TICKS; d += every) {
        a->tick[a->n_ticks++] = a->lo + d;
        if (decades <= 2 && d < decades) {
            a->tick[a->n_ticks++] = a->lo + d + log10(2);
            a->tick[a->n_ticks++] = a->lo + d + log10(5);
        }
    }
    a->step = 1;
}

static void tick_label(const axis *a, double t, char *buf, size_t len) {
    if (a->log) {
        snprintf(buf, len, "%g", pow(10, t));
        return;
    }
    double big = fmax(fabs(a->lo), fabs(a->hi));
    if (big >= 1e5 || a->step < 1e-4) {
        snprintf(buf, len, "%.3g", t);
        return;
    }
    int decimals = a->step >= 1 ? 0 : (int)ceil(-log10(a->step) - 1e-9);
    snprintf(buf, len, "%.*f", decimals, t);
}

/* Data range over the valid points; 0 if there is none. */
static int data_range(const qkv_plot_series *series, const qkv_plot_band *bands, int n_series, int log_y,
                      double *x0, double *x1, double *y0, double *y1) {
    int any = 0;
    for (int s = 0; s < n_series; s++)
        for (int i = 0; i < series[s].n; i++) {
            double x = series[s].x[i], y = series[s].y[i];
            if (!point_ok(x, 0) || !point_ok(y, log_y)) continue;
            y = to_axis(y, log_y);
            if (!any) { *x0 = *x1 = x; *y0 = *y1 = y; any = 1; continue; }
            *x0 = fmin(*x0, x); *x1 = fmax(*x1, x);
            *y0 = fmin(*y0, y); *y1 = fmax(*y1, y);
            for (int b = 0; bands && bands[s].lo && bands[s].hi && b < 2; b++) {
                double v = b ? bands[s].hi[i] : bands[s].lo[i];
                if (!point_ok(v, log_y)) continue;
                *y0 = fmin(*y0, to_axis(v, log_y)); *y1 = fmax(*y1, to_axis(v, log_y));
            }
        }
    return any;
}

static int check_series(const qkv_plot_series *series, int n_series) {
    if (n_series < 0 || (n_series > 0 && !series)) {
        qkv_set_error("plot: %d series at %p", n_series, (const void *)series);
        return -1;
    }
    for (int s = 0; s < n_series; s++)
        if (series[s].n < 0 || (series[s].n > 0 && (!series[s].x || !series[s].y))) {
            qkv_set_error("plot: series %d ('%s') has n = %d and %s data", s,
                          series[s].label ? series[s].label : "", series[s].n,
                          series[s].x && series[s].y ? "its" : "NULL");
            return -1;
        }
    return 0;
}

/* ---- line styles and markers ---------------------------------------------------- */

/* Series s's style, by index: solid, long dashes, short dashes, dash-dot, dots
 * (on/off run lengths in pixels along the line, 0-terminated), and its marker.
 * Lines that lie on one another (schemes with the same accuracy) then still show
 * every color through the others' gaps, and the legend tells them apart. */
#define N_STYLES 5
static const int dash[N_STYLES][5] = {{0}, {9, 4}, {4, 4}, {10, 3, 2, 3}, {2, 4}};
typedef enum { MARK_SQUARE, MARK_DIAMOND, MARK_TRIANGLE, MARK_PLUS, MARK_CROSS } marker;

static const int *style_dash(int s) { return dash[s % N_STYLES]; }
static marker style_marker(int s) { return (marker)(s % N_STYLES); }

/* A segment in pattern, whose phase (pixels into it) goes on from segment to
 * segment so a dashed polyline keeps its rhythm. */
static void styled_line(qkv_canvas *c, int x0, int y0, int x1, int y1, qkv_rgb color, const int *pattern,
                        double *phase) {
    if (!pattern[0]) {
        qkv_canvas_line(c, x0, y0, x1, y1, color, 2);
        return;
    }
    int period = 0, runs = 0;
    while (runs < 4 && pattern[runs]) period += pattern[runs++];
    double dx = x1 - x0, dy = y1 - y0, len = hypot(dx, dy);
    for (double t = 0; t < len;) {
        double at = fmod(*phase + t, period);
        int k = 0;
        while (at >= pattern[k]) at -= pattern[k], k = (k + 1) % runs;
        double step = fmin(pattern[k] - at, len - t);
        if (k % 2 == 0)   /* an "on" run */
            qkv_canvas_line(c, (int)lround(x0 + dx * t / len), (int)lround(y0 + dy * t / len),
                            (int)lround(x0 + dx * (t + step) / len), (int)lround(y0 + dy * (t + step) / len), color, 2);
        t += step;
    }
    *phase = fmod(*phase + len, period);
}

/* Series s's marker at (x, y): a filled square, or an outline (diamond, triangle,
 * plus, cross) that lets a marker under it show. */
static void draw_marker(qkv_canvas *c, int x, int y, marker m, qkv_rgb color) {
    switch (m) {
    case MARK_SQUARE: qkv_canvas_fill_rect(c, x - 2, y - 2, 5, 5, color); break;
    case MARK_DIAMOND:
        qkv_canvas_line(c, x, y - 5, x + 5, y, color, 1), qkv_canvas_line(c, x + 5, y, x, y + 5, color, 1);
        qkv_canvas_line(c, x, y + 5, x - 5, y, color, 1), qkv_canvas_line(c, x - 5, y, x, y - 5, color, 1);
        break;
    case MARK_TRIANGLE:
        qkv_canvas_line(c, x, y - 7, x + 6, y + 4, color, 1), qkv_canvas_line(c, x + 6, y + 4, x - 6, y + 4, color, 1);
        qkv_canvas_line(c, x - 6, y + 4, x, y - 7, color, 1);
        break;
    case MARK_PLUS: qkv_canvas_line(c, x - 7, y, x + 7, y, color, 1), qkv_canvas_line(c, x, y - 7, x, y + 7, color, 1); break;
    case MARK_CROSS:
        qkv_canvas_line(c, x - 4, y - 4, x + 4, y + 4, color, 2), qkv_canvas_line(c, x - 4, y + 4, x + 4, y - 4, color, 2);
        break;
    }
}

/* Pixel coordinate of axis value v over [p0, p1] (p1 may be < p0: y grows down). */
static int to_pixel(const axis *a, double v, int p0, int p1) {
    double f = (v - a->lo) / (a->hi - a->lo);
    double p = p0 + f * (p1 - p0);
    if (!(p > -1e6)) p = -1e6; /* also NaN */
    if (p > 1e6) p = 1e6;
    return (int)lround(p);
}

/* Colored (non-gray) pixels in a rectangle: how much of the lines a legend there would hide. */
static long colored_pixels(const qkv_canvas *c, int x, int y, int w, int h) {
    long n = 0;
    for (int yy = y; yy < y + h; yy++)
        for (int xx = x; xx < x + w; xx++) {
            qkv_rgb p = qkv_canvas_get(c, xx, yy);
            n += p.r != p.g || p.g != p.b;
        }
    return n;
}

/* The legend goes in the corner of the plot area where it hides the fewest line
 * pixels (top right on ties). */
static void draw_legend(qkv_canvas *c, const qkv_plot_series *series, int n_series, int left, int right,
                        int top, int bottom) {
    int n = 0, text_w = 0;
    for (int s = 0; s < n_series; s++)
        if (series[s].label && *series[s].label) {
            n++;
            int w = qkv_text_width(series[s].label, 1);
            if (w > text_w) text_w = w;
        }
    if (!n) return;
    int row = QKV_FONT_H + 8, box_w = text_w + 44, box_h = n * row + 6;
    int xs[2] = {right - box_w - 6, left + 7}, ys[2] = {top + 6, bottom - box_h - 6};
    int x = xs[0], y = ys[0];
    long best = -1;
    for (int corner = 0; corner < 4; corner++) {
        int cx = xs[corner & 1], cy = ys[corner >> 1];
        long hidden = colored_pixels(c, cx, cy, box_w, box_h);
        if (best < 0 || hidden < best) { best = hidden; x = cx; y = cy; }
    }
    qkv_canvas_fill_rect(c, x, y, box_w, box_h, WHITE);
    qkv_canvas_rect(c, x, y, box_w, box_h, GRID);
    int k = 0;
    for (int s = 0; s < n_series; s++) {
        if (!series[s].label || !*series[s].label) continue;
        int ry = y + 6 + k * row;
        double phase = 0;
        styled_line(c, x + 5, ry + 3, x + 34, ry + 3, qkv_palette(s), style_dash(s), &phase);
        draw_marker(c, x + 19, ry + 3, style_marker(s), qkv_palette(s));
        qkv_canvas_text(c, x + 39, ry, series[s].label, TEXT, 1);
        k++;
    }
}

/* The band y_lo..y_hi of a series: each pixel column between two valid points
 * filled from the interpolated low to the interpolated high, translucent. */
static void draw_band(qkv_canvas *c, const qkv_plot_series *s, const qkv_plot_band *band, qkv_rgb color, int log_y, const axis *ax,
                      const axis *ay, int left, int right, int top, int bottom) {
    (void)top;
    for (int i = 0; i + 1 < s->n; i++) {
        const double xs[2] = {s->x[i], s->x[i + 1]}, lo[2] = {band->lo[i], band->lo[i + 1]},
                     hi[2] = {band->hi[i], band->hi[i + 1]};
        int ok = 1;
        for (int e = 0; e < 2; e++) ok &= point_ok(xs[e], 0) && point_ok(lo[e], log_y) && point_ok(hi[e], log_y);
        if (!ok) continue;
        int p0 = to_pixel(ax, xs[0], left, right), p1 = to_pixel(ax, xs[1], left, right);
        for (int px = p0; px <= p1 && p1 > p0; px++) {
            double f = (double)(px - p0) / (p1 - p0);
            double l = to_axis(lo[0], log_y) + f * (to_axis(lo[1], log_y) - to_axis(lo[0], log_y));
            double h = to_axis(hi[0], log_y) + f * (to_axis(hi[1], log_y) - to_axis(hi[0], log_y));
            int y_hi = to_pixel(ay, h, bottom, top), y_lo = to_pixel(ay, l, bottom, top);
            if (px == p1 && i + 2 < s->n) continue; /* the next pair starts here */
            qkv_canvas_blend_rect(c, px, y_hi, 1, y_lo - y_hi + 1, color, 0.22);
        }
    }
}

/* Series index's line (markers 0), or its markers (markers 1): all lines are drawn
 * before any marker, so a line never hides another series' markers; the markers
 * of series 0 (a filled square) come last, inside the larger outlines of the rest. */
static void draw_series(qkv_canvas *c, const qkv_plot_series *s, int index, int markers, int log_y, const axis *ax,
                        const axis *ay, int left, int right, int top, int bottom) {
    int have_prev = 0, prev_x = 0, prev_y = 0;
    qkv_rgb color = qkv_palette(index);
    double phase = 0;
    for (int i = 0; i < s->n; i++) {
        if (!point_ok(s->x[i], 0) || !point_ok(s->y[i], log_y)) {
            have_prev = 0;
            continue;
        }
        int px = to_pixel(ax, s->x[i], left, right);
        int py = to_pixel(ay, to_axis(s->y[i], log_y), bottom, top);
        int next_ok = i + 1 < s->n && point_ok(s->x[i + 1], 0) && point_ok(s->y[i + 1], log_y);
        if (!markers && have_prev) styled_line(c, prev_x, prev_y, px, py, color, style_dash(index), &phase);
        if (markers && (s->n <= MARKER_MAX_POINTS || (!have_prev && !next_ok)))
            draw_marker(c, px, py, style_marker(index), color);
        have_prev = 1;
        prev_x = px;
        prev_y = py;
    }
}

int qkv_plot_lines_draw(qkv_canvas *c, int x, int y, int w, int h, const qkv_plot_series *series,
                        int n_series, const qkv_plot_options *options) {
    static const qkv_plot_options defaults = {0};
    const qkv_plot_options *o = options ? options : &defaults;
    if (check_series(series, n_series)) return -1;
    if (w < 120 || h < 90) {
        qkv_set_error("plot: panel of %dx%d is below 120x90", w, h);
        return -1;
    }
    axis ax = {0}, ay = {0};
    double x0 = 0, x1 = 1, y0 = 0, y1 = 1;
    int any = data_range(series, o->bands, n_series, o->log_y, &x0, &x1, &y0, &y1);
    if (!any && o->shade_x1 > o->shade_x0 && isfinite(o->shade_x0) && isfinite(o->shade_x1)) {
        x0 = o->shade_x0;
        x1 = o->shade_x1;
    }
    if (o->x_max > o->x_min && isfinite(o->x_min) && isfinite(o->x_max)) {
        x0 = any ? fmin(x0, o->x_min) : o->x_min;
        x1 = any ? fmax(x1, o->x_max) : o->x_max;
    }
    ay.log = o->log_y;
    linear_axis(&ax, x0, x1);
    if (o->x_exact && o->x_max > o->x_min && isfinite(o->x_min) && isfinite(o->x_max)) {
        ax.lo = o->x_min; /* the ticks of the widened axis that lie inside */
        ax.hi = o->x_max;
        int n = 0;
        for (int i = 0; i < ax.n_ticks; i++)
            if (ax.tick[i] >= ax.lo - ax.step * 1e-9 && ax.tick[i] <= ax.hi + ax.step * 1e-9) ax.tick[n++] = ax.tick[i];
        ax.n_ticks = n;
    }
    if (o->log_y) log_axis(&ay, any ? y0 : 0, any ? y1 : 1);
    else linear_axis(&ay, y0, y1);

    /* Margins from the widest y tick label and the labels present. */
    char label[64];
    int tick_w = 0;
    for (int i = 0; i < ay.n_ticks; i++) {
        tick_label(&ay, ay.tick[i], label, sizeof label);
        int tw = qkv_text_width(label, 1);
        if (tw > tick_w) tick_w = tw;
    }
    int top = y + (o->title && *o->title ? 2 * QKV_FONT_H + 10 : 12);
    int left = x + 10 + (o->y_label && *o->y_label ? QKV_FONT_H + 6 : 0) + tick_w + 6;
    int bottom = y + h - 1 - (QKV_FONT_H + 10) - (o->x_label && *o->x_label ? QKV_FONT_H + 6 : 0);
    int right = x + w - 1 - 16;
    if (right - left < 40 || bottom - top < 30) {
        qkv_set_error("plot: panel of %dx%d leaves no room for the plot area", w, h);
        return -1;
    }

    qkv_canvas_clip(c, x, y, w, h);
    qkv_canvas_fill_rect(c, x, y, w, h, WHITE);
    if (o->title && *o->title)
        qkv_canvas_text(c, x + (w - qkv_text_width(o->title, 2)) / 2, y + 6, o->title, TEXT, 2);
    if (o->shade_x1 > o->shade_x0) {
        int s0 = to_pixel(&ax, o->shade_x0, left, right), s1 = to_pixel(&ax, o->shade_x1, left, right);
        qkv_canvas_clip(c, left, top, right - left + 1, bottom - top + 1);
        qkv_canvas_blend_rect(c, s0, top, s1 - s0 + 1, bottom - top + 1, SHADE, 0.18);
        qkv_canvas_clip(c, x, y, w, h);
    }
    for (int i = 0; i < ax.n_ticks; i++) {
        int px = to_pixel(&ax, ax.tick[i], left, right);
        qkv_canvas_line(c, px, top, px, bottom, GRID, 1);
        qkv_canvas_line(c, px, bottom, px, bottom + 4, BLACK, 1);
        tick_label(&ax, ax.tick[i], label, sizeof label);
        qkv_canvas_text(c, px - qkv_text_width(label, 1) / 2, bottom + 7, label, TEXT, 1);
    }
    for (int i = 0; i < ay.n_ticks; i++) {
        int py = to_pixel(&ay, ay.tick[i], bottom, top);
        qkv_canvas_line(c, left, py, right, py, GRID, 1);
        qkv_canvas_line(c, left - 4, py, left, py, BLACK, 1);
        tick_label(&ay, ay.tick[i], label, sizeof label);
        qkv_canvas_text(c, left - 7 - qkv_text_width(label, 1), py - 3, label, TEXT, 1);
    }
    if (o->x_label && *o->x_label)
        qkv_canvas_text(c, (left + right - qkv_text_width(o->x_label, 1)) / 2, bottom + QKV_FONT_H + 14,
                        o->x_label, TEXT, 1);
    if (o->y_label && *o->y_label)
        qkv_canvas_text_up(c, x + 8, (top + bottom + qkv_text_width(o->y_label, 1)) / 2, o->y_label, TEXT, 1);

    qkv_canvas_clip(c, left + 1, top, right - left, bottom - top);
    for (int s = 0; s < n_series; s++)
        if (o->bands && o->bands[s].lo && o->bands[s].hi)
            draw_band(c, &series[s], &o->bands[s], qkv_palette(s), o->log_y, &ax, &ay, left, right, top, bottom);
    for (int s = 0; s < n_series; s++)   /* lines in order, then markers the other way: the */
        draw_series(c, &series[s], s, 0, o->log_y, &ax, &ay, left, right, top, bottom);
    for (int s = n_series - 1; s >= 0; s--)   /* small filled square last, inside the outlines */
        draw_series(c, &series[s], s, 1, o->log_y, &ax, &ay, left, right, top, bottom);
    qkv_canvas_clip(c, x, y, w, h);
    qkv_canvas_rect(c, left, top, right - left + 1, bottom - top + 1, BLACK);
    draw_legend(c, series, n_series, left, right, top, bottom);
    qkv_canvas_unclip(c);
    return 0;
}

int qkv_plot_lines_png(const char *path, const qkv_plot_series *series, int n_series, const qkv_plot_options *options) {
    if (!path || !*path) {
        qkv_set_error("plot: empty output path");
        return -1;
    }
    int w = options && options->width ? options->width : QKV_PLOT_DEFAULT_WIDTH;
    int h = options && options->height ? options->height : QKV_PLOT_DEFAULT_HEIGHT;
    if (w < 120 || h < 90 || w > 16384 || h > 16384) {
        qkv_set_error("%s: plot size %dx%d outside 120x90 .. 16384x16384", path, w, h);
        return -1;
    }
    qkv_canvas c;
    if (qkv_canvas_init(&c, w, h, WHITE)) return -1;
    int rc = qkv_plot_lines_draw(&c, 0, 0, w, h, series, n_series, options);
    if (rc == 0) rc = qkv_canvas_write_png(&c, path);
    qkv_canvas_free(&c);
    return rc;
}
