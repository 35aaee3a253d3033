/* test_viz.c — seeing inside: the canvas and line plots (train/canvas.c, plot.c)
 * write valid PNGs, --plot and --dot on a training run, `qkv attn` on a trained
 * checkpoint, `qkv explain attention`'s worked example and gradient checks. */
#include <math.h>
#include <stb_image.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "test_util.h"
#include "train/canvas.h"
#include "train/plot.h"

static unsigned char *load_rgb(const char *path, int *w, int *h) {
    int c = 0;
    unsigned char *px = stbi_load(path, w, h, &c, 3);
    ck_assert_msg(px != NULL, "%s: not a readable PNG", path);
    return px;
}

static int same_color(const unsigned char *p, qkv_rgb c) { return p[0] == c.r && p[1] == c.g && p[2] == c.b; }

/* Columns of the image holding at least one pixel of color: first, last and
 * whether some column between them holds none (a gap in the line). */
static int color_columns(const unsigned char *px, int w, int h, qkv_rgb color, int *first, int *last,
                         int *gap) {
    int n = 0;
    *first = -1;
    *last = -1;
    *gap = 0;
    int prev_hit = 0;
    for (int x = 0; x < w; x++) {
        int hit = 0;
        for (int y = 0; y < h && !hit; y++) hit = same_color(px + 3 * ((size_t)y * w + x), color);
        if (hit) {
            if (*first < 0) *first = x;
            else if (!prev_hit) *gap = 1;
            *last = x;
            n++;
        }
        prev_hit = hit;
    }
    return n;
}

START_TEST(canvas_draws_and_saves) {
    scratch_dir_create();
    qkv_canvas c;
    const qkv_rgb white = {255, 255, 255}, red = {200, 10, 20}, blue = {0, 0, 255};
    ck_assert_int_eq(qkv_canvas_init(&c, 40, 30, white), 0);
    qkv_canvas_line(&c, 0, 0, 39, 29, red, 1);
    qkv_canvas_fill_rect(&c, 30, 2, 5, 5, blue);
    qkv_canvas_rect(&c, -100, -100, 1000, 1000, blue); /* fully outside: clipped away */
    qkv_canvas_line(&c, -100000, 15, 100000, 15, blue, 3); /* far ends are clipped */
    ck_assert_int_gt(qkv_canvas_text(&c, 1, 20, "A1", red, 1), 0);
    const char *path = scratch_file("c.png");
    ck_assert_int_eq(qkv_canvas_write_png(&c, path), 0);
    int w, h;
    unsigned char *px = load_rgb(path, &w, &h);
    ck_assert_int_eq(w, 40);
    ck_assert_int_eq(h, 30);
    ck_assert(same_color(px + 3 * (29 * 40 + 0), white));
    ck_assert(same_color(px, red));
    ck_assert(same_color(px + 3 * (29 * 40 + 39), red));
    ck_assert(same_color(px + 3 * (4 * 40 + 32), blue));
    ck_assert(same_color(px + 3 * (15 * 40 + 5), blue));
    ck_assert(same_color(px + 3 * (14 * 40 + 5), blue));
    ck_assert(same_color(px + 3 * (5 * 40 + 20), white));
    stbi_image_free(px);
    /* viridis ends and a NaN */
    qkv_rgb v0 = qkv_colormap_viridis(0), v1 = qkv_colormap_viridis(1), vn = qkv_colormap_viridis(NAN);
    ck_assert_int_eq(v0.r, 68);
    ck_assert_int_eq(v1.r, 253);
    ck_assert_int_eq(vn.g, v0.g);
    ck_assert_int_eq(qkv_canvas_init(&c, 0, 5, white), -1);
    qkv_canvas_free(&c);
    scratch_dir_remove();
}
END_TEST

START_TEST(plot_writes_axes_and_lines) {
    scratch_dir_create();
    enum { N = 100 };
    double x[N], y[N], y_gap[N], y_bad[3] = {NAN, INFINITY, -INFINITY}, x_bad[3] = {0, 1, 2};
    for (int i = 0; i < N; i++) {
        x[i] = i;
        y[i] = 1 + 0.01 * i;
        y_gap[i] = i == 50 ? NAN : 2 + 0.01 * i;
    }
    /* No labels: no legend, so every pixel of a series color is its line. */
    qkv_plot_series series[3] = {{NULL, x, y, N}, {NULL, x, y_gap, N}, {NULL, x_bad, y_bad, 3}};
    qkv_plot_options o = {.title = "t", .x_label = "step", .y_label = "loss", .width = 320, .height = 200};
    const char *path = scratch_file("p.png");
    ck_assert_msg(qkv_plot_lines_png(path, series, 3, &o) == 0, "%s", qkv_last_error());
    int w, h, first, last, gap;
    unsigned char *px = load_rgb(path, &w, &h);
    ck_assert_int_eq(w, 320);
    ck_assert_int_eq(h, 200);
    ck_assert(same_color(px, (qkv_rgb){255, 255, 255})); /* background */
    ck_assert_int_gt(color_columns(px, w, h, qkv_palette(0), &first, &last, &gap), 200);
    ck_assert_int_eq(gap, 0);
    ck_assert_int_gt(color_columns(px, w, h, qkv_palette(1), &first, &last, &gap), 200);
    ck_assert_int_eq(gap, 1); /* the NaN breaks the line */
    ck_assert_int_eq(color_columns(px, w, h, qkv_palette(2), &first, &last, &gap), 0); /* all skipped */
    stbi_image_free(px);

    /* Log y skips y <= 0; empty series and default size are fine; labels give a legend. */
    double yl[4] = {1, 0, -1, 10}, xl[4] = {0, 1, 2, 3};
    qkv_plot_series log_series[2] = {{"a", xl, yl, 4}, {"empty", NULL, NULL, 0}};
    qkv_plot_options lo = {.log_y = 1};
    ck_assert_int_eq(qkv_plot_lines_png(path, log_series, 2, &lo), 0);
    px = load_rgb(path, &w, &h);
    ck_assert_int_eq(w, QKV_PLOT_DEFAULT_WIDTH);
    ck_assert_int_eq(h, QKV_PLOT_DEFAULT_HEIGHT);
    ck_assert_int_gt(color_columns(px, w, h, qkv_palette(1), &first, &last, &gap), 0); /* legend swatch */
    stbi_image_free(px);
    ck_assert_int_eq(qkv_plot_lines_png(path, NULL, 0, NULL), 0);
    scratch_dir_remove();
}
END_TEST

START_TEST(plot_errors_are_one_line) {
    scratch_dir_create();
    double x[2] = {0, 1};
    qkv_plot_series s = {"a", x, x, 2};
    const char *path = scratch_file("missing/p.png");
    ck_assert_int_eq(qkv_plot_lines_png(path, &s, 1, NULL), -1);
    expect_last_error("missing/p.png", "");
    ck_assert_int_eq(qkv_plot_lines_png("", &s, 1, NULL), -1);
    qkv_plot_series bad = {"b", NULL, x, 2};
    ck_assert_int_eq(qkv_plot_lines_png(scratch_file("p.png"), &bad, 1, NULL), -1);
    expect_last_error("plot", "series 0");
    qkv_plot_options tiny = {.width = 10, .height = 10};
    ck_assert_int_eq(qkv_plot_lines_png(scratch_file("p.png"), &s, 1, &tiny), -1);
    ck_assert_int_eq(count_dir_entries(scratch_dir), 0);
    scratch_dir_remove();
}
END_TEST

Suite *suite_viz(void) {
    Suite *s = suite_create("viz");
    TCase *tc = tcase_create("viz");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, canvas_draws_and_saves);
    tcase_add_test(tc, plot_writes_axes_and_lines);
    tcase_add_test(tc, plot_errors_are_one_line);
    suite_add_tcase(s, tc);
    return s;
}
