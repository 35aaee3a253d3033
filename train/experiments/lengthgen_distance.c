/* lengthgen_distance.c — how far back the heads look (Kazemnejad et al. 2023,
 * figure 7), per scheme, at the trained length L and the extrapolated length K.
 *
 * For a trained model and a length n, the first QKV_LG_DISTANCE_INPUTS test inputs
 * of length n are decoded greedily and the stream "x SEP y" (2n + 1 tokens) is
 * run once with every layer's attention captured (qkv_seq_model_attention_maps,
 * as `qkv attn` does). For each input, layer, head and query i the attention
 * distance is
 *     d_i = sum_j a_ij (i - j)        (a_ij: the head's weights over keys j <= i)
 * and the run's record keeps the histogram of d over bins [b, b+1), b = 0..2K (the
 * share of all (input, layer, head, query) in each), and the mean of d. A
 * scheme's figures pool its seeds (histograms and means averaged with equal
 * weights): mean, median and 90th percentile (the lower edge of the bin where the
 * cumulative share reaches 1/2 and 9/10), and the share "beyond" 2L, distances of
 * at least 2L + 1 tokens, farther than any query of a training stream can look.
 *
 * Randomized schemes: the maps are those of `qkv attn`, i.e. of one forward pass
 * as the model's config runs it; distances count stream tokens, not position ids.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/ops/tape.h"
#include "train/experiments/lengthgen_distance.h"
#include "train/interrupt.h"
#include "train/viz/plot.h"

typedef qkv_lengthgen lengthgen;

int qkv_lg_distance_length(const lengthgen *g, int which) { return which == 0 ? g->o->train_max : g->o->test_max; }

/* Adds each (layer, head, query)'s distance of one captured input to hist; returns their sum, counts in *n. */
static double add_distances(const qkv_seq_attention *a, double *hist, int bins, long *n) {
    double sum = 0;
    for (int r = 0; r < a->n_rows; r++) {
        const qkv_tensor *w = a->rows[r].weights; /* [1, H, T, T], causal */
        int heads = w->shape[1], side = w->shape[2];
        for (int h = 0; h < heads; h++)
            for (int i = 0; i < side; i++) {
                const float *row = w->data + ((size_t)h * side + i) * side;
                double d = 0;
                for (int j = 0; j <= i; j++) d += (double)row[j] * (i - j);
                int b = (int)floor(d);
                hist[b < 0 ? 0 : b >= bins ? bins - 1 : b] += 1;
                sum += d;
                (*n)++;
            }
    }
    return sum;
}

void qkv_lg_measure_distance(lengthgen *g, qkv_seq_model *model, size_t run) {
    const qkv_lengthgen_options *o = g->o;
    int inputs = o->test_size < QKV_LG_DISTANCE_INPUTS ? o->test_size : QKV_LG_DISTANCE_INPUTS;
    qkv_tape *tape = qkv_tape_create_inference(model->config.seed);
    qkv_seq_batch batch = {0};
    qkv_seq_config trained = model->config.data;
    for (int which = 0; which < QKV_LG_DISTANCE_AT; which++) {
        int n = qkv_lg_distance_length(g, which);
        double *hist = g->distance + (run * QKV_LG_DISTANCE_AT + which) * g->bins, sum = 0;
        long count = 0;
        qkv_seq_config at_n = trained;
        at_n.min_len = at_n.max_len = n;
        qkv_seq_make_batch(&at_n, QKV_LG_TEST_SEED ^ model->config.seed, 0, inputs, &batch); /* evaluation's first */
        for (int i = 0; i < inputs && !qkv_interrupt_poll(); i++) { /* cut: the caller drops the record */
            qkv_seq_attention maps;
            qkv_seq_model_attention_maps(model, tape, batch.src + (size_t)i * batch.src_len, n, &maps);
            sum += add_distances(&maps, hist, g->bins, &count);
            qkv_seq_attention_free(&maps);
            qkv_tape_reset(tape);
        }
        model->config.data = trained; /* the maps' decoding raised max_len */
        for (int b = 0; b < g->bins && count; b++) hist[b] /= count;
        g->distance_mean[run * QKV_LG_DISTANCE_AT + which] = count ? sum / count : 0;
    }
    qkv_seq_batch_free(&batch);
    qkv_tape_free(tape);
}

/* A scheme's histogram at length index which, pooled over seeds, into pool (bins values). */
static void pooled(const lengthgen *g, int task, int scheme, int which, double *pool, double *mean) {
    const qkv_lengthgen_options *o = g->o;
    memset(pool, 0, (size_t)g->bins * sizeof(double));
    *mean = 0;
    for (int k = 0; k < o->seeds; k++) {
        size_t at = qkv_lg_run_at(g, task, scheme, k) * QKV_LG_DISTANCE_AT + which;
        for (int b = 0; b < g->bins; b++) pool[b] += g->distance[at * g->bins + b] / o->seeds;
        *mean += g->distance_mean[at] / o->seeds;
    }
}

/* The lower edge of the bin where the cumulative share reaches q. */
static int quantile(const double *pool, int bins, double q) {
    double c = 0;
    for (int b = 0; b < bins; b++)
        if ((c += pool[b]) >= q - 1e-12) return b;
    return bins - 1;
}

/* Share of distances of at least 2L + 1 tokens. */
static double beyond_trained(const lengthgen *g, const double *pool) {
    double s = 0;
    for (int b = 2 * g->o->train_max + 1; b < g->bins; b++) s += pool[b];
    return s;
}

void qkv_lg_print_distance(const lengthgen *g) {
    double *pool = malloc((size_t)g->bins * sizeof(double)), mean;
    QKV_CHECK(pool, "experiment lengthgen: out of memory");
    int lengths[QKV_LG_DISTANCE_AT];
    for (int w = 0; w < QKV_LG_DISTANCE_AT; w++) lengths[w] = qkv_lg_distance_length(g, w);
    for (int t = 0; t < g->n_tasks; t++) {
        printf("\n%s: attention distance (per query, sum_j a_ij (i - j); pooled over %d inputs, layers, heads, queries "
               "and seeds) at the trained length %d and the extrapolated %d; beyond: share >= %d tokens\n%-16s",
               qkv_seq_task_name((qkv_seq_task)g->tasks[t]),
               g->o->test_size < QKV_LG_DISTANCE_INPUTS ? g->o->test_size : QKV_LG_DISTANCE_INPUTS, lengths[0],
               lengths[1], 2 * g->o->train_max + 1, "scheme");
        for (int w = 0; w < QKV_LG_DISTANCE_AT; w++)
            printf(" %8s%-3d %8s%-3d %8s%-3d", "mean@", lengths[w], "median@", lengths[w], "p90@", lengths[w]);
        printf(" %8s%-3d\n", "beyond@", lengths[1]);
        for (int s = 0; s < g->n_schemes; s++) {
            printf("%-16s", g->schemes[s].name);
            for (int w = 0; w < QKV_LG_DISTANCE_AT; w++) {
                pooled(g, t, s, w, pool, &mean);
                printf(" %11.2f %11d %11d", mean, quantile(pool, g->bins, 0.5), quantile(pool, g->bins, 0.9));
            }
            printf(" %11.3f\n", beyond_trained(g, pool));
        }
    }
    free(pool);
}

void qkv_lg_json_distance(const lengthgen *g, int task, int scheme, qkv_json_out *out) {
    double *pool = malloc((size_t)QKV_LG_DISTANCE_AT * g->bins * sizeof(double)), mean[QKV_LG_DISTANCE_AT];
    QKV_CHECK(pool, "experiment lengthgen: out of memory");
    for (int w = 0; w < QKV_LG_DISTANCE_AT; w++) pooled(g, task, scheme, w, pool + (size_t)w * g->bins, &mean[w]);
    char text[160];
    snprintf(text, sizeof text, "\"attention_distance\": {\"lengths\": [%d, %d], \"mean\": [",
             qkv_lg_distance_length(g, 0), qkv_lg_distance_length(g, 1));
    qkv_json_out_text(out, text);
    for (int w = 0; w < QKV_LG_DISTANCE_AT; w++) {
        if (w) qkv_json_out_text(out, ", ");
        qkv_lg_json_exact(out, mean[w]);
    }
    const double qs[2] = {0.5, 0.9};
    static const char *const keys[2] = {"median", "p90"};
    for (int q = 0; q < 2; q++) {
        snprintf(text, sizeof text, "], \"%s\": [%d, %d", keys[q], quantile(pool, g->bins, qs[q]),
                 quantile(pool + g->bins, g->bins, qs[q]));
        qkv_json_out_text(out, text);
    }
    qkv_json_out_text(out, "], \"beyond_trained\": [");
    for (int w = 0; w < QKV_LG_DISTANCE_AT; w++) {
        if (w) qkv_json_out_text(out, ", ");
        qkv_lg_json_exact(out, beyond_trained(g, pool + (size_t)w * g->bins));
    }
    qkv_json_out_text(out, "], \"histogram\": [");
    for (int w = 0; w < QKV_LG_DISTANCE_AT; w++) {
        qkv_json_out_text(out, w ? "], [" : "[");
        for (int b = 0; b < g->bins; b++) {
            if (b) qkv_json_out_text(out, ", ");
            qkv_lg_json_exact(out, pool[(size_t)w * g->bins + b]);
        }
    }
    qkv_json_out_text(out, "]]}");
    free(pool);
}

#define PANEL_W 640
#define PANEL_H 400

/* Rows: tasks; columns: L and K. Per panel, one line per scheme: the share of distances per bin. */
int qkv_lg_write_distance_plot(const lengthgen *g) {
    int bins = g->bins, n_s = g->n_schemes;
    double *x = malloc((size_t)bins * sizeof(double)), *y = malloc((size_t)n_s * bins * sizeof(double)), mean;
    QKV_CHECK(x && y, "experiment lengthgen: out of memory");
    for (int b = 0; b < bins; b++) x[b] = b;
    qkv_plot_series series[QKV_LENGTHGEN_MAX_SCHEMES];
    qkv_canvas canvas;
    if (qkv_canvas_init(&canvas, PANEL_W * QKV_LG_DISTANCE_AT, PANEL_H * g->n_tasks, (qkv_rgb){255, 255, 255}) != 0) {
        free(x);
        free(y);
        return -1;
    }
    int rc = 0;
    for (int t = 0; t < g->n_tasks && rc == 0; t++)
        for (int w = 0; w < QKV_LG_DISTANCE_AT && rc == 0; w++) {
            int n = qkv_lg_distance_length(g, w), last = 2 * n; /* the longest distance in a stream of 2n + 1 */
            for (int s = 0; s < n_s; s++) {
                pooled(g, t, s, w, y + (size_t)s * bins, &mean);
                series[s] = (qkv_plot_series){g->schemes[s].name, x, y + (size_t)s * bins, last + 1};
            }
            char title[128];
            snprintf(title, sizeof title, "%s, length %d (%s): attention distance",
                     qkv_seq_task_name((qkv_seq_task)g->tasks[t]), n, w == 0 ? "trained" : "extrapolated");
            qkv_plot_options options = {.title = title, .x_label = "sum_j a_ij (i - j), tokens (bins of 1)",
                                        .y_label = "share of queries x heads x layers", .x_min = 0,
                                        .x_max = last > 0 ? last : 1, .x_exact = 1};
            rc = qkv_plot_lines_draw(&canvas, PANEL_W * w, PANEL_H * t, PANEL_W, PANEL_H, series, n_s, &options);
        }
    if (rc == 0) rc = qkv_canvas_write_png(&canvas, g->o->distance_plot);
    qkv_canvas_free(&canvas);
    free(x);
    free(y);
    return rc;
}
