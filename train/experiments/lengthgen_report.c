/* lengthgen_report.c — what a lengthgen run reports from its records
 * (lengthgen_report.h): per task the exact-match and token-accuracy tables by
 * length, the summary with the fit verdict, the MRR among the schemes that fit
 * next to the paper's, the CSV and the plot. The JSON record is
 * lengthgen_record.c's, the attention distances lengthgen_distance.c's.
 *
 * Fit: a scheme fits a task when its exact match averaged over the trained
 * lengths 1..L, mean over seeds, is at least QKV_LENGTHGEN_FIT (0.99). The MRR
 * ranks, per task, only the schemes that fit it, and only a scheme that fits
 * every task gets an MRR (qkv_lengthgen_mrr_fitted); the table names the others
 * and why. Ranking a scheme that never learned the task would measure its
 * under-training, not its extrapolation.
 *
 * CSV: `#` lines first (provenance: qkv version, ISA path, date, command; then
 * every setting, key=value), then the header and one row per finished (task,
 * scheme, seed, length), in run order. The plot: one panel per task, the seed
 * mean per scheme with its min-max band over seeds, the x axis 1..K exactly.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/fileio.h"
#include "train/experiments/lengthgen_report.h"
#include "train/stats.h"
#include "train/viz/plot.h"

typedef qkv_lengthgen lengthgen;

/* Mean over seeds of metric (exact or token) for a task and scheme, at length index n. */
static double seed_mean(const lengthgen *g, const double *metric, int task, int scheme, int n) {
    const qkv_lengthgen_options *o = g->o;
    double s = 0;
    for (int k = 0; k < o->seeds; k++) s += metric[qkv_lg_run_at(g, task, scheme, k) * o->test_max + n];
    return s / o->seeds;
}

/* A seed's exact match averaged over lengths [from, to) (0-based). */
static double range_mean(const lengthgen *g, int task, int scheme, int seed_index, int from, int to) {
    const double *e = g->exact + qkv_lg_run_at(g, task, scheme, seed_index) * g->o->test_max;
    double s = 0;
    for (int n = from; n < to; n++) s += e[n];
    return to > from ? s / (to - from) : NAN;
}

void qkv_lg_range_summary(const lengthgen *g, int task, int scheme, int from, int to, double *mean, double *half) {
    int k = g->o->seeds;
    double *per_seed = malloc((size_t)k * sizeof(double));
    QKV_CHECK(per_seed, "experiment lengthgen: out of memory");
    for (int i = 0; i < k; i++) per_seed[i] = range_mean(g, task, scheme, i, from, to);
    qkv_mean_t95(per_seed, k, mean, half);
    free(per_seed);
}

void qkv_lengthgen_mrr_fitted(const double *score, const double *trained, int n_tasks, int n_schemes, double *mrr) {
    for (int s = 0; s < n_schemes; s++) mrr[s] = 0;
    for (int t = 0; t < n_tasks; t++) {
        const double *row = score + (size_t)t * n_schemes;
        const double *fit = trained ? trained + (size_t)t * n_schemes : NULL;
        for (int s = 0; s < n_schemes; s++) {
            if (fit && !(fit[s] >= QKV_LENGTHGEN_FIT)) {
                mrr[s] = NAN; /* left out: never ranked, on any task */
                continue;
            }
            int better = 0, same = 0; /* rank = better + (1 + same) / 2: ties share their mean rank */
            for (int r = 0; r < n_schemes; r++) {
                if (fit && !(fit[r] >= QKV_LENGTHGEN_FIT)) continue;
                better += row[r] > row[s];
                same += row[r] == row[s];
            }
            mrr[s] += 1.0 / (better + (1.0 + same) / 2.0) / n_tasks;
        }
    }
}

void qkv_lengthgen_mrr(const double *score, int n_tasks, int n_schemes, double *mrr) {
    qkv_lengthgen_mrr_fitted(score, NULL, n_tasks, n_schemes, mrr);
}

static int column_width(const char *name) { return 10 > (int)strlen(name) ? 10 : (int)strlen(name); }

static void print_table(const lengthgen *g, int task, const double *metric, const char *title) {
    const qkv_lengthgen_options *o = g->o;
    printf("\n%s: %s, mean over %d seed%s (* = trained length)\n%-7s", qkv_seq_task_name((qkv_seq_task)g->tasks[task]),
           title, o->seeds, o->seeds > 1 ? "s" : "", "length");
    for (int s = 0; s < g->n_schemes; s++) printf(" %*s", column_width(g->schemes[s].name), g->schemes[s].name);
    putchar('\n');
    for (int n = 0; n < o->test_max; n++) {
        printf("%5d%c ", n + 1, n < o->train_max ? '*' : ' ');
        for (int s = 0; s < g->n_schemes; s++)
            printf(" %*.3f", column_width(g->schemes[s].name), seed_mean(g, metric, task, s, n));
        putchar('\n');
    }
}

/* Per task: each scheme's exact match over the extrapolation and trained lengths. */
static void print_summary(const lengthgen *g, int task) {
    const qkv_lengthgen_options *o = g->o;
    printf("\n%s: exact match over the extrapolation lengths %d..%d and the trained lengths 1..%d\n"
           "(per seed the mean over those lengths; then the mean over %d seed%s, 95%% t-interval)\n"
           "%-16s %-22s %-22s fits (>= %.2f trained)\n",
           qkv_seq_task_name((qkv_seq_task)g->tasks[task]), o->train_max + 1, o->test_max, o->train_max, o->seeds,
           o->seeds > 1 ? "s" : "", "scheme", "extrapolation", "trained", QKV_LENGTHGEN_FIT);
    for (int s = 0; s < g->n_schemes; s++) {
        double em, eh, tm, th;
        qkv_lg_range_summary(g, task, s, o->train_max, o->test_max, &em, &eh);
        qkv_lg_range_summary(g, task, s, 0, o->train_max, &tm, &th);
        char ext[32], tr[32];
        snprintf(ext, sizeof ext, isnan(eh) ? "%.3f" : "%.3f +- %.3f", em, eh);
        snprintf(tr, sizeof tr, isnan(th) ? "%.3f" : "%.3f +- %.3f", tm, th);
        printf("%-16s %-22s %-22s %s\n", g->schemes[s].name, ext, tr, tm >= QKV_LENGTHGEN_FIT ? "yes" : "NO");
    }
}

/* The paper's five schemes and its MRR (Kazemnejad et al. 2023, over its tasks). */
static const struct { qkv_pos_kind kind; const char *label; double paper; } paper_schemes[] = {
    {QKV_POS_NONE, "NoPE", 0.69}, {QKV_POS_T5, "T5", 0.55}, {QKV_POS_ALIBI, "ALiBi", 0.50},
    {QKV_POS_ROPE, "RoPE", 0.33}, {QKV_POS_SINUSOIDAL, "APE (sinusoidal)", 0.22},
};
#define N_PAPER ((int)(sizeof paper_schemes / sizeof paper_schemes[0]))

/* The scheme index of kind without randomization, or -1. */
static int plain_scheme(const lengthgen *g, qkv_pos_kind kind) {
    for (int s = 0; s < g->n_schemes; s++)
        if (g->schemes[s].kind == kind && !g->schemes[s].randomized) return s;
    return -1;
}

/* The MRRs among the schemes that fit: of the paper's five (when all are in
 * the run) and of all the run's schemes. Returns whether the paper's could be
 * computed. */
int qkv_lg_mrr(const lengthgen *g, double *mrr_paper, double *mrr_all) {
    const qkv_lengthgen_options *o = g->o;
    double score[QKV_LENGTHGEN_MAX_TASKS * QKV_LENGTHGEN_MAX_SCHEMES], fit[QKV_LENGTHGEN_MAX_TASKS * QKV_LENGTHGEN_MAX_SCHEMES];
    double score_paper[QKV_LENGTHGEN_MAX_TASKS * N_PAPER], fit_paper[QKV_LENGTHGEN_MAX_TASKS * N_PAPER];
    int have_paper = 1, at[N_PAPER];
    for (int p = 0; p < N_PAPER; p++) have_paper &= (at[p] = plain_scheme(g, paper_schemes[p].kind)) >= 0;
    for (int t = 0; t < g->n_tasks; t++) {
        for (int s = 0; s < g->n_schemes; s++) {
            double half;
            qkv_lg_range_summary(g, t, s, o->train_max, o->test_max, &score[t * g->n_schemes + s], &half);
            qkv_lg_range_summary(g, t, s, 0, o->train_max, &fit[t * g->n_schemes + s], &half);
        }
        for (int p = 0; have_paper && p < N_PAPER; p++) {
            score_paper[t * N_PAPER + p] = score[t * g->n_schemes + at[p]];
            fit_paper[t * N_PAPER + p] = fit[t * g->n_schemes + at[p]];
        }
    }
    qkv_lengthgen_mrr_fitted(score, fit, g->n_tasks, g->n_schemes, mrr_all);
    if (have_paper) qkv_lengthgen_mrr_fitted(score_paper, fit_paper, g->n_tasks, N_PAPER, mrr_paper);
    return have_paper;
}

int qkv_lg_paper_count(void) { return N_PAPER; }
qkv_pos_kind qkv_lg_paper_kind(int p) { return paper_schemes[p].kind; }
double qkv_lg_paper_mrr(int p) { return paper_schemes[p].paper; }

int qkv_lg_left_out_reason(const lengthgen *g, int scheme, char *why, size_t len) {
    const qkv_lengthgen_options *o = g->o;
    size_t used = 0;
    why[0] = '\0';
    for (int t = 0; t < g->n_tasks; t++) {
        double trained, half;
        qkv_lg_range_summary(g, t, scheme, 0, o->train_max, &trained, &half);
        if (trained >= QKV_LENGTHGEN_FIT) continue;
        int n = snprintf(why + used, len - used, "%s%s: exact match %.3f over lengths 1..%d < %.2f", used ? "; " : "",
                         qkv_seq_task_name((qkv_seq_task)g->tasks[t]), trained, o->train_max, QKV_LENGTHGEN_FIT);
        if (n < 0 || (size_t)n >= len - used) break;
        used += (size_t)n;
    }
    return why[0] != '\0';
}

static void print_mrr(const lengthgen *g) {
    const qkv_lengthgen_options *o = g->o;
    double mrr_paper[N_PAPER], mrr_all[QKV_LENGTHGEN_MAX_SCHEMES];
    int have_paper = qkv_lg_mrr(g, mrr_paper, mrr_all);
    char why[256];
    printf("\nmean reciprocal rank over %d task%s among the schemes that fit (rank by mean exact match over lengths "
           "%d..%d; ties share ranks)\n", g->n_tasks, g->n_tasks > 1 ? "s" : "", o->train_max + 1, o->test_max);
    if (have_paper) {
        printf("%-18s %8s %8s\n", "the paper's five", "here", "paper");
        for (int p = 0; p < N_PAPER; p++) {
            if (isnan(mrr_paper[p])) printf("%-18s %8s %8.2f\n", paper_schemes[p].label, "-", paper_schemes[p].paper);
            else printf("%-18s %8.3f %8.2f\n", paper_schemes[p].label, mrr_paper[p], paper_schemes[p].paper);
        }
    } else {
        printf("(the paper's comparison needs none, t5, alibi, rope and sinusoidal in --pos)\n");
    }
    printf("%-18s %8s\n", "all schemes", "here");
    for (int s = 0; s < g->n_schemes; s++)
        if (!isnan(mrr_all[s])) printf("%-18s %8.3f\n", g->schemes[s].name, mrr_all[s]);
    for (int s = 0; s < g->n_schemes; s++)
        if (qkv_lg_left_out_reason(g, s, why, sizeof why))
            printf("left out (does not fit): %s: %s\n", g->schemes[s].name, why);
}

void qkv_lg_print_results(const lengthgen *g) {
    for (int t = 0; t < g->n_tasks; t++) {
        print_table(g, t, g->exact, "exact-match accuracy (greedy decoding)");
        print_table(g, t, g->token, "token accuracy (greedy decoding)");
        print_summary(g, t);
    }
    qkv_lg_print_distance(g);
    print_mrr(g);
}

int qkv_lg_write_csv(const lengthgen *g) {
    const qkv_lengthgen_options *o = g->o;
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    QKV_CHECK(f, "experiment lengthgen: out of memory");
    fprintf(f, "# qkv %s experiment lengthgen; isa %s; date %s; %d of %d models finished\n# command: %s\n# config:",
            g->version, g->isa, g->date, qkv_lg_finished(g), g->n_runs, g->command);
    char value[256];
    for (int i = 0; i < qkv_lengthgen_n_fields; i++) {
        const qkv_field *field = &qkv_lengthgen_fields[i];
        if (!field->key) continue;
        qkv_field_format(field, o, value, sizeof value);
        fprintf(f, " %s=%s", field->key, value);
    }
    fputs("\ntask,pos,seed,length,trained,exact_match,token_acc\n", f);
    for (int t = 0; t < g->n_tasks; t++)
        for (int s = 0; s < g->n_schemes; s++)
            for (int k = 0; k < o->seeds; k++) {
                size_t run = qkv_lg_run_at(g, t, s, k);
                for (int n = 0; g->done[run] && n < o->test_max; n++)
                    fprintf(f, "%s,%s,%d,%d,%d,%.6g,%.6g\n", qkv_seq_task_name((qkv_seq_task)g->tasks[t]),
                            g->schemes[s].name, o->seed + k, n + 1, n < o->train_max, g->exact[run * o->test_max + n],
                            g->token[run * o->test_max + n]);
            }
    fclose(f);
    int rc = qkv_write_file_atomic(o->csv, text, len);
    free(text);
    return rc;
}

#define PANEL_W 800
#define PANEL_H 500

/* One panel per task, side by side: per scheme the mean over seeds and the min-max band. */
int qkv_lg_write_plot(const lengthgen *g) {
    const qkv_lengthgen_options *o = g->o;
    int k = o->test_max;
    size_t per = (size_t)g->n_schemes * k;
    double *x = malloc((size_t)k * sizeof(double)), *y = malloc(3 * per * sizeof(double));
    QKV_CHECK(x && y, "experiment lengthgen: out of memory");
    double *lo = y + per, *hi = y + 2 * per;
    qkv_plot_series series[QKV_LENGTHGEN_MAX_SCHEMES];
    qkv_plot_band bands[QKV_LENGTHGEN_MAX_SCHEMES];
    const double *metric = o->plot_metric == QKV_LENGTHGEN_EXACT ? g->exact : g->token;
    const char *y_label =
        o->plot_metric == QKV_LENGTHGEN_EXACT ? "exact-match accuracy (greedy)" : "token accuracy (greedy)";
    for (int n = 0; n < k; n++) x[n] = n + 1;
    qkv_canvas canvas;
    if (qkv_canvas_init(&canvas, PANEL_W * g->n_tasks, PANEL_H, (qkv_rgb){255, 255, 255}) != 0) {
        free(x);
        free(y);
        return -1;
    }
    int rc = 0;
    for (int t = 0; t < g->n_tasks && rc == 0; t++) {
        for (int s = 0; s < g->n_schemes; s++) {
            int complete = qkv_lg_complete(g, t, s);
            for (int n = 0; n < k; n++) {
                size_t at = (size_t)s * k + n;
                y[at] = complete ? seed_mean(g, metric, t, s, n) : NAN; /* an unfinished scheme: its legend only */
                lo[at] = hi[at] = y[at];
                for (int seed = 0; complete && seed < o->seeds; seed++) {
                    double v = metric[qkv_lg_run_at(g, t, s, seed) * k + n];
                    lo[at] = fmin(lo[at], v);
                    hi[at] = fmax(hi[at], v);
                }
            }
            series[s] = (qkv_plot_series){g->schemes[s].name, x, y + (size_t)s * k, k};
            bands[s] = (qkv_plot_band){lo + (size_t)s * k, hi + (size_t)s * k};
        }
        char title[128];
        snprintf(title, sizeof title, "%s: trained on 1..%d (shaded), %d seed%s%s",
                 qkv_seq_task_name((qkv_seq_task)g->tasks[t]), o->train_max, o->seeds, o->seeds > 1 ? "s" : "",
                 o->seeds > 1 ? ", band: min-max" : "");
        qkv_plot_options options = {.title = title, .x_label = "sequence length", .y_label = y_label,
                                    .shade_x0 = 1.0, .shade_x1 = (double)o->train_max, .x_min = 1,
                                    .x_max = k > 1 ? k : 2, .x_exact = 1, .bands = bands};
        rc = qkv_plot_lines_draw(&canvas, PANEL_W * t, 0, PANEL_W, PANEL_H, series, g->n_schemes, &options);
    }
    if (rc == 0) rc = qkv_canvas_write_png(&canvas, o->plot);
    qkv_canvas_free(&canvas);
    free(x);
    free(y);
    return rc;
}
