/* plot.h — line plots as PNG: axes, ticks with numbers, grid, legend, one colored
 * line per series, an optional shaded x-range and a logarithmic y axis.
 *
 * Points whose x or y is not finite are skipped and break the line there (with
 * log_y, so are points with y <= 0); a point with no valid neighbor is drawn as a
 * dot, and every point gets a small marker when a series has at most 40. Empty
 * series are fine (they still get a legend entry); with no valid point at all the
 * axes span [0, 1]. Axis ranges are the data's, widened to round tick values.
 * A series' band (options->bands) counts in the y range and is filled at each x
 * between its points' pixels. Series i is drawn in qkv_palette(i), in the i-th of
 * five line styles (solid, long dashes, short dashes, dash-dot, dots) with the i-th
 * of five markers (square, diamond, triangle, plus, cross), so series that lie on
 * one another all stay visible; series with a NULL or empty label are left
 * out of the legend.
 *
 * qkv_plot_lines_png returns 0, or -1 with qkv_last_error() (one line: a bad path,
 * a series with n < 0 or NULL data, a size below 120x90); the file is written
 * atomically. qkv_plot_lines_draw draws the same plot into the rectangle
 * [x, x+w) x [y, y+h) of an existing canvas (several panels in one image).
 */
#ifndef QKV_PLOT_H
#define QKV_PLOT_H

#include "train/viz/canvas.h"

typedef struct qkv_plot_series { const char *label; const double *x; const double *y; int n; } qkv_plot_series;
/* A band around series i: lo and hi (both or neither, n values each: e.g. the
 * min and max over seeds), drawn under the line in its color, translucent. */
typedef struct qkv_plot_band { const double *lo, *hi; } qkv_plot_band;
typedef struct qkv_plot_options {
    const char *title, *x_label, *y_label;
    double shade_x0, shade_x1;   /* shaded x-range when shade_x1 > shade_x0 (e.g. the training lengths) */
    int log_y;                   /* logarithmic y axis */
    int width, height;           /* 0: defaults (e.g. 640x400) */
    double x_min, x_max;         /* when x_max > x_min, the x axis spans at least [x_min, x_max]
                                  * (panels side by side share their steps) */
    int x_exact;                 /* with x_max > x_min: the x axis is exactly [x_min, x_max]
                                  * (not widened to round ticks; the data must lie inside) */
    const qkv_plot_band *bands;  /* NULL, or one per series (lo = NULL: none) */
} qkv_plot_options;

#define QKV_PLOT_DEFAULT_WIDTH 640
#define QKV_PLOT_DEFAULT_HEIGHT 400

/* Writes a PNG with axes, ticks with numbers, a legend, one colored line per series. 0 or -1 with qkv_last_error(). */
int qkv_plot_lines_png(const char *path, const qkv_plot_series *series, int n_series, const qkv_plot_options *options);

/* Draws into a panel of c (options->width/height are ignored). 0 or -1 with qkv_last_error(). */
int qkv_plot_lines_draw(qkv_canvas *c, int x, int y, int w, int h, const qkv_plot_series *series,
                        int n_series, const qkv_plot_options *options);

#endif
