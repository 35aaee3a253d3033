/* test_viz.c — seeing inside: the canvas and line plots (train/canvas.c, plot.c)
 * write valid PNGs, --plot and --dot on a training run, `qkv attn` on a trained
 * checkpoint, `qkv explain attention`'s worked example and gradient checks. */
#include <math.h>
#include <stb_image.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/test_util.h"
#include "train/viz/canvas.h"
#include "train/viz/attn_maps.h"
#include "train/viz/plot.h"

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
    qkv_canvas_free(&c);
    ck_assert_int_eq(qkv_canvas_init(&c, 0, 5, white), -1);
    qkv_canvas_free(&c); /* safe on a canvas whose init failed */
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
    /* No labels: no legend, so every pixel of a series color is its line. Series 0
     * is solid (the NaN's gap is its only one), series 1 dashed. */
    qkv_plot_series series[3] = {{NULL, x, y_gap, N}, {NULL, x, y, N}, {NULL, x_bad, y_bad, 3}};
    qkv_plot_options o = {.title = "t", .x_label = "step", .y_label = "loss", .width = 320, .height = 200};
    const char *path = scratch_file("p.png");
    ck_assert_msg(qkv_plot_lines_png(path, series, 3, &o) == 0, "%s", qkv_last_error());
    int w, h, first, last, gap;
    unsigned char *px = load_rgb(path, &w, &h);
    ck_assert_int_eq(w, 320);
    ck_assert_int_eq(h, 200);
    ck_assert(same_color(px, (qkv_rgb){255, 255, 255})); /* background */
    ck_assert_int_gt(color_columns(px, w, h, qkv_palette(0), &first, &last, &gap), 200);
    ck_assert_int_eq(gap, 1); /* the NaN breaks the line */
    ck_assert_int_gt(color_columns(px, w, h, qkv_palette(1), &first, &last, &gap), 100);
    ck_assert_int_eq(gap, 1); /* dashes */
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

/* Series that lie on one another (lengthgen's schemes at the same accuracy) all
 * stay visible: each draws its own dashes and markers, so every color shows
 * through the gaps of those drawn over it (with solid lines only the last one did). */
START_TEST(plot_lines_on_one_another_all_show) {
    scratch_dir_create();
    enum { N = 12, S = 5 };
    double x[N], y[N];
    for (int i = 0; i < N; i++) x[i] = i, y[i] = i < 6 ? 1.0 : 0.2;
    qkv_plot_series series[S];
    for (int s = 0; s < S; s++) series[s] = (qkv_plot_series){NULL, x, y, N};   /* no legend */
    const char *path = scratch_file("same.png");
    ck_assert_int_eq(qkv_plot_lines_png(path, series, S, NULL), 0);
    int w, h;
    unsigned char *px = load_rgb(path, &w, &h);
    for (int s = 0; s < S; s++) {
        long n = 0;
        for (long i = 0; i < (long)w * h; i++) n += same_color(px + 3 * i, qkv_palette(s));
        ck_assert_msg(n >= 40, "series %d: %ld pixels of its color", s, n);
    }
    stbi_image_free(px);
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


/* ---- --dot ------------------------------------------------------------------------ */

/* Runs ../qkv with args and returns its exit status; its stdout goes to out (a
 * malloc'd, '\0'-terminated buffer the caller frees). */
static int run_qkv_stdout(const char *args, char **out) {
    char command[1024];
    snprintf(command, sizeof command, "../qkv %s 2>/dev/null", args);
    FILE *p = popen(command, "r");
    ck_assert_ptr_nonnull(p);
    size_t cap = 1 << 16, len = 0;
    char *text = malloc(cap);
    size_t got;
    while ((got = fread(text + len, 1, cap - len - 1, p)) > 0) {
        len += got;
        if (cap - len < 1024) text = realloc(text, cap *= 2);
    }
    text[len] = '\0';
    *out = text;
    int status = pclose(p);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* Checks a dot file: "digraph" first, n_nodes lines "  op<i> [" numbered 0..n-1,
 * and every edge "a -> op<i>;" between defined nodes. Returns the edge count. */
static int check_dot(const char *path, int n_nodes) {
    size_t len;
    char *text = (char *)read_file_bytes(path, &len);
    text[len] = '\0';
    ck_assert_msg(strncmp(text, "digraph", 7) == 0, "%s does not start with digraph", path);
    int ops = 0, leaves = 0, edges = 0;
    char defined_leaf[4096] = {0};
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
        int a, b, n = 0;
        char kind[8];
        if (sscanf(line, "  op%d [%n", &a, &n) == 1 && n > 0) {
            ck_assert_int_eq(a, ops);
            ops++;
        } else if (sscanf(line, "  leaf%d [%n", &a, &n) == 1 && n > 0) {
            ck_assert(a >= 0 && a < 4096);
            defined_leaf[a] = 1;
            leaves++;
        } else if (sscanf(line, "  %7[a-z]%d -> op%d;", kind, &a, &b) == 3) {
            ck_assert_msg(b >= 0 && b < n_nodes, "edge into undefined op%d", b);
            if (strcmp(kind, "op") == 0) ck_assert_msg(a >= 0 && a < b, "edge from op%d into op%d", a, b);
            else ck_assert_msg(strcmp(kind, "leaf") == 0 && a >= 0 && a < 4096 && defined_leaf[a],
                               "edge from undefined %s%d", kind, a);
            edges++;
        }
    }
    ck_assert_int_eq(ops, n_nodes);
    ck_assert_int_gt(leaves, 0);
    free(text);
    return edges;
}

START_TEST(tape_dot_in_process) {
    scratch_dir_create();
    qkv_tape *tape = qkv_tape_create(1);
    qkv_tensor *w = tensor_of(2, (int[]){3, 2}, NULL, 1), *x = tensor_of(2, (int[]){4, 3}, NULL, 0);
    w->name = strdup("w"); /* qkv_tensor_free frees the name */
    qkv_tensor *h = qkv_matmul(tape, x, w, 0, 0);
    qkv_tensor *loss = qkv_sum_all(tape, qkv_mul(tape, h, h)); /* h used twice: two edges from one node */
    qkv_backward(tape, loss);
    const char *path = scratch_file("t.dot");
    ck_assert_int_eq(qkv_tape_write_dot(tape, path), 0);
    ck_assert_int_eq(tape->n_nodes, 3);
    ck_assert_int_eq(check_dot(path, 3), 5); /* x, w -> matmul; matmul -> mul twice; mul -> sum */
    size_t len;
    char *text = (char *)read_file_bytes(path, &len);
    text[len] = '\0';
    ck_assert_ptr_nonnull(strstr(text, "w\\n[3,2]"));
    ck_assert_ptr_nonnull(strstr(text, "matmul\\n[4,2]"));
    free(text);
    ck_assert_int_eq(qkv_tape_write_dot(tape, scratch_file("missing/t.dot")), -1);
    expect_last_error("missing/t.dot", "");
    qkv_tape_free(tape);
    qkv_tensor_free(w);

    /* The edges into attention say which input is Q, K and V. */
    tape = qkv_tape_create(1);
    qkv_tensor *qkv = tensor_of(4, (int[]){1, 1, 2, 4}, NULL, 1);
    qkv->name = strdup("x");
    qkv_tensor *q = qkv_scale(tape, qkv, 0.5f);
    qkv_attention(tape, q, qkv, qkv, NULL, NULL);
    ck_assert_int_eq(qkv_tape_write_dot(tape, path), 0);
    ck_assert_int_eq(check_dot(path, 2), 4);
    text = (char *)read_file_bytes(path, &len);
    text[len] = '\0';
    ck_assert_msg(strstr(text, "op0 -> op1 [label=\"q\"];"), "%s", text);
    ck_assert_msg(strstr(text, "-> op1 [label=\"k\"];") && strstr(text, "-> op1 [label=\"v\"];"), "%s", text);
    free(text);
    qkv_tape_free(tape);
    qkv_tensor_free(qkv);
    qkv_tensor_free(x);
    scratch_dir_remove();
}
END_TEST

START_TEST(train_plot_and_dot_end_to_end) {
    scratch_dir_create();
    char args[1024], *out = NULL, line[512];
    const char *plot = strdup(scratch_file("curves.png")), *dot = strdup(scratch_file("tape.dot"));
    snprintf(args, sizeof args,
             "train reverse --len 3 --vocab 4 --layers 1 --heads 2 --dim 8 --ff 16 --batch 4 --test-size 8 "
             "--steps 6 --log-every 2 --eval-every 3 --print-tape --quiet --threads 1 --plot %s --dot %s", plot, dot);
    ck_assert_int_eq(run_qkv_stdout(args, &out), 0);
    int nodes = 0;
    const char *at = strstr(out, "tape of step 1 (");
    ck_assert_ptr_nonnull(at);
    ck_assert_int_eq(sscanf(at, "tape of step 1 (%d nodes)", &nodes), 1);
    free(out);
    ck_assert_int_gt(nodes, 10);
    ck_assert_int_gt(check_dot(dot, nodes), nodes);
    int w, h;
    unsigned char *px = load_rgb(plot, &w, &h);
    ck_assert_int_eq(w, 1120); /* two 560-wide panels */
    ck_assert_int_gt(h, 400);
    /* the loss line and both metric lines are drawn */
    int first, last, gap;
    ck_assert_int_gt(color_columns(px, w / 2, h, qkv_palette(0), &first, &last, &gap), 100);
    stbi_image_free(px);

    /* Paths are checked before training: nothing is written. */
    snprintf(args, sizeof args, "train spirals --steps 5 --plot %s", scratch_file("missing/p.png"));
    ck_assert_int_eq(run_qkv(args, line, sizeof line), 2);
    ck_assert_ptr_nonnull(strstr(line, "missing/p.png"));
    snprintf(args, sizeof args, "train spirals --steps 5 --plot %s --dot %s", plot, plot);
    ck_assert_int_eq(run_qkv(args, line, sizeof line), 2);
    ck_assert_ptr_nonnull(strstr(line, "two outputs"));
    free((void *)plot);
    free((void *)dot);
    scratch_dir_remove();
}
END_TEST

/* ---- attention capture and qkv attn ----------------------------------------------- */

START_TEST(mha_capture_keeps_outputs) {
    qkv_params params = {0};
    qkv_rng rng = qkv_rng_make(3);
    qkv_mha mha;
    qkv_mha_init(&mha, &params, "a", 8, 2, 0, 0, 1, &rng);
    ck_assert_ptr_null(mha.capture);
    qkv_tape *tape = qkv_tape_create(1);
    qkv_tensor *x = random_tape_tensor(tape, 3, (int[]){2, 5, 8}, 7);
    qkv_mha_call call = {.causal = 1};
    qkv_tensor *plain = qkv_mha_forward(tape, &mha, x, NULL, &call);
    qkv_tensor *weights = NULL;
    mha.capture = &weights;
    qkv_tensor *captured = qkv_mha_forward(tape, &mha, x, NULL, &call);
    assert_floats_near(captured->data, plain->data, plain->size, 0);
    ck_assert_ptr_nonnull(weights);
    assert_shape(weights, 4, (int[]){2, 2, 5, 5});
    for (int row = 0; row < 2 * 2 * 5; row++) {
        double sum = 0;
        for (int j = 0; j < 5; j++) sum += weights->data[row * 5 + j];
        ck_assert_close(sum, 1.0, 1e-5);
        int i = row % 5;
        for (int j = i + 1; j < 5; j++) ck_assert_float_eq(weights->data[row * 5 + j], 0.0f); /* causal */
    }
    qkv_tape_free(tape);
    qkv_params_free(&params);
}
END_TEST

/* Trains a tiny checkpoint of arch and checks the attn grid's size. */
static void attn_grid_case(const char *arch, int layers, int heads, int rows, int tokens) {
    char args[1024], line[512];
    const char *ckpt = strdup(scratch_file(arch));
    snprintf(args, sizeof args,
             "train reverse --arch %s --len 3 --vocab 4 --layers %d --heads %d --dim 8 --ff 16 --batch 4 "
             "--test-size 4 --steps 3 --eval-every 0 --quiet --threads 1 --save %s", arch, layers, heads, ckpt);
    ck_assert_int_eq(run_qkv(args, line, sizeof line), 0);
    const char *png = scratch_file("attn.png");
    snprintf(args, sizeof args, "attn %s --input \"3 1 2\" --out %s", ckpt, png);
    ck_assert_msg(run_qkv(args, line, sizeof line) == 0, "%s: %s", args, line);
    int w, h, gw, gh;
    unsigned char *px = load_rgb(png, &w, &h);
    qkv_attn_grid_size(rows, heads, tokens, &gw, &gh);
    ck_assert_int_eq(w, gw);
    ck_assert_int_eq(h, gh);
    stbi_image_free(px);
    free((void *)ckpt);
}

START_TEST(attn_writes_a_grid) {
    scratch_dir_create();
    attn_grid_case("encoder", 2, 4, 2, 3);  /* rows = layers */
    attn_grid_case("seq2seq", 1, 4, 3, 3);  /* encoder, decoder self, decoder cross */
    attn_grid_case("decoder", 1, 4, 1, 7);  /* the stream 3 1 2 SEP y y y */

    /* one-line errors, exit 2 */
    char args[1024], line[512];
    const char *ckpt = scratch_file("encoder");
    snprintf(args, sizeof args, "attn %s --input \"3 1 9\" --out %s", ckpt, scratch_file("a.png"));
    ck_assert_int_eq(run_qkv(args, line, sizeof line), 2);
    ck_assert_ptr_nonnull(strstr(line, "--input: symbol 9"));
    snprintf(args, sizeof args, "attn %s --input \"1 2 3 0\" --out %s", scratch_file("encoder"), scratch_file("a.png"));
    ck_assert_int_eq(run_qkv(args, line, sizeof line), 2); /* learned table of 3 rows */
    ck_assert_ptr_nonnull(strstr(line, "at most 3"));
    snprintf(args, sizeof args, "attn %s --input \"1\" --out %s", scratch_file("attn.png"), scratch_file("a.png"));
    ck_assert_int_eq(run_qkv(args, line, sizeof line), 2); /* a PNG is no checkpoint */
    ck_assert_ptr_nonnull(strstr(line, "attn.png"));
    ck_assert_int_eq(run_qkv("attn", line, sizeof line), 2);
    /* A length it was not trained on (3 only): refused, or drawn and marked with --force. */
    snprintf(args, sizeof args, "attn %s --input \"1 2\" --out %s", scratch_file("encoder"), scratch_file("a.png"));
    ck_assert_int_eq(run_qkv(args, line, sizeof line), 2);
    ck_assert_msg(strstr(line, "--input: 2 symbols, but this model was trained on lengths 3..3 only") &&
                  strstr(line, "--force"), "%s", line);
    ck_assert(!path_exists(scratch_file("a.png")));
    snprintf(args + strlen(args), sizeof args - strlen(args), " --force");
    ck_assert_int_eq(run_qkv(args, line, sizeof line), 0);
    ck_assert_msg(strstr(line, "qkv attn: warning: --input: 2 symbols"), "%s", line);
    ck_assert(path_exists(scratch_file("a.png")));
    snprintf(args, sizeof args, "attn %s --out %s", scratch_file("encoder"), scratch_file("a.png"));
    ck_assert_int_eq(run_qkv(args, line, sizeof line), 2);
    ck_assert_ptr_nonnull(strstr(line, "--input"));
    scratch_dir_remove();
}
END_TEST

/* ---- qkv explain attention ----------------------------------------------------------- */

/* Every "max |analytic - numeric| = X" in text is below tol; returns how many. */
static int finite_difference_lines(const char *text, double tol) {
    int n = 0;
    for (const char *at = strstr(text, "max |analytic - numeric| = "); at;
         at = strstr(at + 1, "max |analytic - numeric| = ")) {
        double diff = 1;
        ck_assert_int_eq(sscanf(at, "max |analytic - numeric| = %lf", &diff), 1);
        ck_assert_msg(diff < tol, "finite-difference check %g >= %g", diff, tol);
        n++;
    }
    return n;
}

START_TEST(explain_attention_worked_example) {
    char *out = NULL;
    ck_assert_int_eq(run_qkv_stdout("explain attention", &out), 0);
    const char *expected[] = {"0.1667", "0.3333", "0.5000", "1.1667", "1.6667", "[1,3]"};
    for (size_t i = 0; i < sizeof expected / sizeof expected[0]; i++)
        ck_assert_msg(strstr(out, expected[i]) != NULL, "explain output lacks %s", expected[i]);
    ck_assert_int_eq(finite_difference_lines(out, 1e-3), 6); /* dO dP dS dQ dK dV */
    ck_assert_ptr_null(strstr(out, "FAILED"));
    free(out);
    const char *variants[] = {"--mask causal", "--mask padding", "--pos sinusoidal", "--pos rope",
                              "--pos alibi", "--mask causal --pos rope", "--mask padding --pos alibi"};
    for (size_t i = 0; i < sizeof variants / sizeof variants[0]; i++) {
        char args[128];
        snprintf(args, sizeof args, "explain attention %s", variants[i]);
        ck_assert_msg(run_qkv_stdout(args, &out) == 0, "%s failed", args);
        ck_assert_int_ge(finite_difference_lines(out, 1e-3), 6);
        ck_assert_ptr_null(strstr(out, "FAILED"));
        if (strstr(variants[i], "causal") && !strstr(variants[i], "rope"))
            ck_assert_ptr_nonnull(strstr(out, "0.3333    0.6667    0.0000")); /* query 1 sees keys 0, 1 */
        if (strcmp(variants[i], "--pos alibi") == 0) /* slope 1/2: P moves visibly from 1/6, 2/6, 3/6 */
            ck_assert_ptr_nonnull(strstr(out, "0.0803    0.2648    0.6549"));
        if (strstr(variants[i], "rope")) /* the scores are of the rotated queries and keys */
            ck_assert_ptr_nonnull(strstr(out, "scores = Qr Kr^T"));
        free(out);
    }
    char line[256];
    ck_assert_int_eq(run_qkv("explain attention --mask sideways", line, sizeof line), 2);
    ck_assert_ptr_nonnull(strstr(line, "--mask"));
    ck_assert_int_eq(run_qkv("explain gravity", line, sizeof line), 2);
}
END_TEST

Suite *suite_viz(void) {
    Suite *s = suite_create("viz");
    TCase *tc = tcase_create("viz");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, canvas_draws_and_saves);
    tcase_add_test(tc, plot_writes_axes_and_lines);
    tcase_add_test(tc, plot_errors_are_one_line);
    tcase_add_test(tc, plot_lines_on_one_another_all_show);
    tcase_add_test(tc, tape_dot_in_process);
    tcase_add_test(tc, train_plot_and_dot_end_to_end);
    tcase_add_test(tc, mha_capture_keeps_outputs);
    tcase_add_test(tc, attn_writes_a_grid);
    tcase_add_test(tc, explain_attention_worked_example);
    suite_add_tcase(s, tc);
    return s;
}
