/* lengthgen.c — the length-generalization experiment: does a decoder-only transformer
 * trained on lengths 1..L solve the task at lengths up to K > L, and how does the
 * answer depend on the position scheme? (docs/lengthgen.md)
 *
 * For each scheme of `schemes` (--pos) and each of `seeds` seeds, one decoder-only model
 * (train/tasks/sequence.h, arch decoder: the causal stream "x SEP y", cross-entropy on
 * the y part) is trained with AdamW on lengths drawn uniformly from 1..L. It is
 * then tested at every length n = 1..K on `test_size` sequences of exactly n
 * symbols, decoding the answer GREEDILY after SEP with the K/V cache
 * (qkv_seq_model_predict): each generated token is fed back, so one early mistake
 * can spoil the rest. exact_match = share of answers entirely right, token_acc =
 * share of answer tokens right (position by position).
 *
 * Learned positions: the table is sized to the longest TEST stream, 2K+1 rows, so
 * that testing never reads past it. Rows 2L+1 .. 2K are never trained: no gradient
 * reaches them and weight decay spares position tables, so they stay at their
 * N(0, 0.02) init. That is the point of the experiment, not a bug: an absolute
 * table has nothing to say about positions it never saw.
 *
 * Outputs: two tables (exact match, token accuracy; rows: length, columns: scheme,
 * mean over seeds; trained lengths marked *), csv (one row per scheme, seed and
 * length), json (the config, per-seed curves, training times and losses) and a
 * PNG (plot) of the chosen metric against length, one line per scheme, the
 * training range shaded. All paths are checked before training starts; files are
 * written atomically at the end.
 *
 * Threads: the caller's (the command's default is 1: the models are small, dim
 * 64, streams of at most 2L+1 tokens, and on a shared machine a second thread
 * mostly waits at barriers); results are bitwise the same for any count.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/fileio.h"
#include "core/json.h"
#include "core/parallel.h"
#include "train/experiments/experiments.h"
#include "train/viz/plot.h"
#include "train/tasks/sequence.h"

#define TEST_SEED 0x1e96e11ULL

/* One run: its options, the schemes they name, and the results. */
typedef struct lengthgen {
    const qkv_lengthgen_options *o;
    int n_schemes;
    qkv_pos_kind schemes[QKV_LENGTHGEN_MAX_SCHEMES];
    /* results [scheme][seed][length-1] */
    double *exact, *token;
    double *train_seconds, *train_loss;   /* [scheme][seed] */
} lengthgen;

const char *const qkv_lengthgen_metric_names[] = {"exact", "token", NULL};

void qkv_lengthgen_default_options(qkv_lengthgen_options *o) {
    *o = (qkv_lengthgen_options){.task = QKV_TASK_REVERSE, .train_max = 8, .test_max = 16, .seeds = 1, .seed = 1,
                                 .steps = 2000, .batch = 64, .warmup = 100, .lr = 3e-3f, .dim = 64, .heads = 4,
                                 .layers = 2, .ff = 256, .vocab = 10, .test_size = 200,
                                 .schemes = "none,learned,sinusoidal,rope,alibi", .plot = "lengthgen.png",
                                 .plot_metric = QKV_LENGTHGEN_EXACT};
}

/* "none,rope" -> g's schemes; -1 with a one-line message naming --pos. */
static int parse_schemes(lengthgen *g) {
    const qkv_lengthgen_options *o = g->o;
    char list[256], allowed[128] = "";
    for (int i = 0; qkv_pos_kind_names[i]; i++)
        snprintf(allowed + strlen(allowed), sizeof allowed - strlen(allowed), "%s%s", i ? ", " : "",
                 qkv_pos_kind_names[i]);
    if (strlen(o->schemes) >= sizeof list)
        return qkv_set_error("--pos: list too long (allowed: %s)", allowed), -1;
    strcpy(list, o->schemes);
    g->n_schemes = 0;
    char *rest = list;
    for (;;) {
        char *comma = strchr(rest, ',');
        if (comma) *comma = '\0';
        int kind = qkv_pos_kind_parse(rest);
        if (kind < 0) return qkv_set_error("--pos: unknown scheme '%s' (allowed: %s)", rest, allowed), -1;
        for (int i = 0; i < g->n_schemes; i++)
            if ((int)g->schemes[i] == kind) return qkv_set_error("--pos: '%s' given twice", rest), -1;
        g->schemes[g->n_schemes++] = (qkv_pos_kind)kind;
        if (!comma) return 0;
        rest = comma + 1;
    }
}

static void model_config(const lengthgen *g, qkv_pos_kind pos, int seed_index, qkv_seq_model_config *c) {
    const qkv_lengthgen_options *o = g->o;
    qkv_seq_model_default_config(c);
    c->data = (qkv_seq_config){(qkv_seq_task)o->task, QKV_ARCH_DECODER, o->vocab, 1, o->train_max};
    c->layers = o->layers;
    c->heads = o->heads;
    c->dim = o->dim;
    c->ff = o->ff;
    c->pos = pos;
    c->max_pos = pos == QKV_POS_LEARNED ? 2 * o->test_max + 1 : 0;  /* the longest test stream */
    c->batch = o->batch;
    c->test_size = o->test_size;
    c->seed = (unsigned long long)o->seed + (unsigned long long)seed_index;
}

/* Greedy exact match and token accuracy of a trained model at every length 1..K. */
static void evaluate_lengths(const lengthgen *g, qkv_seq_model *model, double *exact, double *token) {
    const qkv_lengthgen_options *o = g->o;
    qkv_tape *tape = qkv_tape_create_inference(model->config.seed);
    qkv_seq_batch batch = {0};
    qkv_seq_config trained = model->config.data;
    int32_t *pred = malloc((size_t)o->test_size * o->test_max * sizeof(int32_t));
    QKV_CHECK(pred, "experiment lengthgen: out of memory");
    for (int n = 1; n <= o->test_max; n++) {
        qkv_seq_config at_n = trained;
        at_n.min_len = at_n.max_len = n;
        qkv_seq_make_batch(&at_n, TEST_SEED ^ model->config.seed, 0, o->test_size, &batch);
        model->config.data = at_n;   /* predict decodes up to config.data.max_len tokens */
        qkv_seq_model_predict(model, tape, &batch, pred);
        model->config.data = trained;
        qkv_tape_reset(tape);
        long right = 0, all_right = 0;
        for (int i = 0; i < o->test_size; i++) {
            const int32_t *answer = batch.src + (size_t)i * batch.src_len + n + 1;  /* x SEP [y] */
            int ok = 1;
            for (int s = 0; s < n; s++) {
                int r = pred[(size_t)i * n + s] == answer[s];
                right += r;
                ok &= r;
            }
            all_right += ok;
        }
        exact[n - 1] = (double)all_right / o->test_size;
        token[n - 1] = (double)right / ((double)o->test_size * n);
    }
    free(pred);
    qkv_seq_batch_free(&batch);
    qkv_tape_free(tape);
}

static int train_one(const lengthgen *g, int scheme, int seed_index) {
    const qkv_lengthgen_options *o = g->o;
    qkv_seq_model_config c;
    model_config(g, g->schemes[scheme], seed_index, &c);
    qkv_seq_model model;
    qkv_seq_model_init(&model, &c);
    qkv_trainer_config t = {.steps = o->steps, .log_every = 0, .quiet = 1, .clip = 1.0f, .seed = c.seed};
    t.optim = (qkv_optimizer_config){.kind = QKV_OPT_ADAMW, .lr = o->lr, .weight_decay = 0.01f};
    t.schedule = (qkv_schedule){.kind = QKV_SCHED_COSINE, .warmup = o->warmup < o->steps ? o->warmup : 0,
                                .total = o->steps};
    qkv_train_result result;
    int rc = qkv_train(&t, &model.task, &result);
    if (rc == 0) {
        size_t at = (size_t)scheme * o->seeds + seed_index;
        g->train_seconds[at] = result.seconds;
        g->train_loss[at] = result.final_loss;
        evaluate_lengths(g, &model, g->exact + at * o->test_max, g->token + at * o->test_max);
        if (!o->quiet) {
            printf("  %-10s seed %d: %d steps in %.1f s, final train loss %.4f, exact match at L=%d: %.3f, at K=%d: %.3f\n",
                   qkv_pos_kind_name(g->schemes[scheme]), (int)c.seed, o->steps, result.seconds, result.final_loss,
                   o->train_max, g->exact[at * o->test_max + o->train_max - 1], o->test_max,
                   g->exact[at * o->test_max + o->test_max - 1]);
            fflush(stdout);
        }
    }
    qkv_seq_model_free(&model);
    return rc;
}

/* Mean over seeds of metric (exact or token) for a scheme, at length index n. */
static double seed_mean(const lengthgen *g, const double *metric, int scheme, int n) {
    const qkv_lengthgen_options *o = g->o;
    double s = 0;
    for (int k = 0; k < o->seeds; k++) s += metric[((size_t)scheme * o->seeds + k) * o->test_max + n];
    return s / o->seeds;
}

static void print_table(const lengthgen *g, const double *metric, const char *title) {
    const qkv_lengthgen_options *o = g->o;
    printf("\n%s, mean over %d seed%s (* = trained length)\n%-7s", title, o->seeds, o->seeds > 1 ? "s" : "",
           "length");
    for (int s = 0; s < g->n_schemes; s++) printf(" %10s", qkv_pos_kind_name(g->schemes[s]));
    putchar('\n');
    for (int n = 0; n < o->test_max; n++) {
        printf("%5d%c ", n + 1, n < o->train_max ? '*' : ' ');
        for (int s = 0; s < g->n_schemes; s++) printf(" %10.3f", seed_mean(g, metric, s, n));
        putchar('\n');
    }
}

static int write_csv(const lengthgen *g) {
    const qkv_lengthgen_options *o = g->o;
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    QKV_CHECK(f, "experiment lengthgen: out of memory");
    fputs("pos,seed,length,trained,exact_match,token_acc\n", f);
    for (int s = 0; s < g->n_schemes; s++)
        for (int k = 0; k < o->seeds; k++)
            for (int n = 0; n < o->test_max; n++) {
                size_t at = ((size_t)s * o->seeds + k) * o->test_max + n;
                fprintf(f, "%s,%d,%d,%d,%.6g,%.6g\n", qkv_pos_kind_name(g->schemes[s]), o->seed + k, n + 1,
                        n < o->train_max, g->exact[at], g->token[at]);
            }
    fclose(f);
    int rc = qkv_write_file_atomic(o->csv, text, len);
    free(text);
    return rc;
}

static void json_curve(qkv_json_out *out, const char *key, const double *values, int n) {
    char number[48];
    qkv_json_out_string(out, key);
    qkv_json_out_text(out, ": [");
    for (int i = 0; i < n; i++) {
        snprintf(number, sizeof number, i ? ", %.6g" : "%.6g", values[i]);
        qkv_json_out_text(out, number);
    }
    qkv_json_out_text(out, "]");
}

static int write_json(const lengthgen *g) {
    const qkv_lengthgen_options *o = g->o;
    qkv_json_out out = {0};
    char text[512];
    snprintf(text, sizeof text,
             "{\"experiment\": \"lengthgen\", \"task\": \"%s\", \"arch\": \"decoder\", \"decoding\": \"greedy\", "
             "\"train_lengths\": [1, %d], \"test_max\": %d, \"seeds\": %d, \"first_seed\": %d, \"steps\": %d, "
             "\"batch\": %d, \"lr\": %g, \"warmup\": %d, \"layers\": %d, \"heads\": %d, \"dim\": %d, \"ff\": %d, "
             "\"vocab\": %d, \"test_size\": %d, \"learned_table_rows\": %d,\n\"schemes\": [",
             qkv_seq_task_name((qkv_seq_task)o->task), o->train_max, o->test_max, o->seeds, o->seed, o->steps,
             o->batch, o->lr, o->warmup, o->layers, o->heads, o->dim, o->ff, o->vocab, o->test_size,
             2 * o->test_max + 1);
    qkv_json_out_text(&out, text);
    double *mean = malloc((size_t)o->test_max * sizeof(double));
    QKV_CHECK(mean, "experiment lengthgen: out of memory");
    for (int s = 0; s < g->n_schemes; s++) {
        qkv_json_out_text(&out, s ? ",\n {\"pos\": " : "\n {\"pos\": ");
        qkv_json_out_string(&out, qkv_pos_kind_name(g->schemes[s]));
        const double *metrics[2] = {g->exact, g->token};
        const char *keys[2] = {"exact_match", "token_acc"};
        for (int m = 0; m < 2; m++) {
            for (int n = 0; n < o->test_max; n++) mean[n] = seed_mean(g, metrics[m], s, n);
            qkv_json_out_text(&out, ", ");
            json_curve(&out, keys[m], mean, o->test_max);
        }
        qkv_json_out_text(&out, ", \"runs\": [");
        for (int k = 0; k < o->seeds; k++) {
            size_t at = (size_t)s * o->seeds + k;
            snprintf(text, sizeof text, "%s{\"seed\": %d, \"train_seconds\": %.3f, \"final_train_loss\": %.6g, ",
                     k ? ", " : "", o->seed + k, g->train_seconds[at], g->train_loss[at]);
            qkv_json_out_text(&out, text);
            json_curve(&out, "exact_match", g->exact + at * o->test_max, o->test_max);
            qkv_json_out_text(&out, ", ");
            json_curve(&out, "token_acc", g->token + at * o->test_max, o->test_max);
            qkv_json_out_text(&out, "}");
        }
        qkv_json_out_text(&out, "]}");
    }
    qkv_json_out_text(&out, "\n]}\n");
    free(mean);
    int rc = out.failed ? (qkv_set_error("%s: out of memory", o->json), -1) : qkv_write_file_atomic(o->json, out.data, out.len);
    qkv_json_out_free(&out);
    return rc;
}

static int write_plot(const lengthgen *g) {
    const qkv_lengthgen_options *o = g->o;
    int k = o->test_max;
    double *x = malloc((size_t)k * sizeof(double)), *y = malloc((size_t)g->n_schemes * k * sizeof(double));
    QKV_CHECK(x && y, "experiment lengthgen: out of memory");
    qkv_plot_series series[QKV_LENGTHGEN_MAX_SCHEMES];
    const double *metric = o->plot_metric == QKV_LENGTHGEN_EXACT ? g->exact : g->token;
    for (int n = 0; n < k; n++) x[n] = n + 1;
    for (int s = 0; s < g->n_schemes; s++) {
        for (int n = 0; n < k; n++) y[(size_t)s * k + n] = seed_mean(g, metric, s, n);
        series[s] = (qkv_plot_series){qkv_pos_kind_name(g->schemes[s]), x, y + (size_t)s * k, k};
    }
    char title[128];
    snprintf(title, sizeof title, "%s, decoder-only, trained on lengths 1..%d (shaded)",
             qkv_seq_task_name((qkv_seq_task)o->task), o->train_max);
    const char *y_label =
        o->plot_metric == QKV_LENGTHGEN_EXACT ? "exact-match accuracy (greedy)" : "token accuracy (greedy)";
    qkv_plot_options options = {title, "sequence length", y_label, 1.0, (double)o->train_max, 0, 800, 500};
    int rc = qkv_plot_lines_png(o->plot, series, g->n_schemes, &options);
    free(x);
    free(y);
    return rc;
}

static int count_names(const char *const *names) {
    int n = 0;
    while (names[n]) n++;
    return n;
}

/* Every check of qkv_lengthgen_check, filling g's schemes. */
static int check(lengthgen *g) {
    const qkv_lengthgen_options *o = g->o;
    if (o->task < 0 || o->task >= count_names(qkv_seq_task_names))
        return qkv_set_error("--task %d: not a task", o->task), -1;
    if (o->seeds < 1 || o->steps < 1 || o->train_max < 1)
        return qkv_set_error("--seeds %d / --steps %d / --train-max %d: expected at least 1", o->seeds, o->steps,
                             o->train_max), -1;
    if (o->seed < 0 || o->warmup < 0 || !(o->lr >= 0 && isfinite(o->lr)))
        return qkv_set_error("--seed %d / --warmup %d / --lr %g: expected finite values >= 0", o->seed, o->warmup,
                             o->lr), -1;
    if (o->plot_metric < 0 || o->plot_metric >= count_names(qkv_lengthgen_metric_names))
        return qkv_set_error("--plot-metric %d: not a metric", o->plot_metric), -1;
    if (!o->schemes) return qkv_set_error("--pos: no schemes given"), -1;
    if (parse_schemes(g) != 0) return -1;
    if (o->test_max < o->train_max)
        return qkv_set_error("--test-max %d: must be at least --train-max %d", o->test_max, o->train_max), -1;
    for (int s = 0; s < g->n_schemes; s++) {   /* every model's config, before anything runs */
        qkv_seq_model_config c;
        model_config(g, g->schemes[s], 0, &c);
        if (qkv_seq_model_check(&c) != 0) return -1;
    }
    const char *outputs[3] = {o->csv, o->json, o->plot};
    return qkv_exp_check_outputs(outputs, 3);
}

int qkv_lengthgen_check(const qkv_lengthgen_options *o) {
    lengthgen g = {.o = o};
    return check(&g);
}

int qkv_lengthgen_run(const qkv_lengthgen_options *o) {
    lengthgen g = {.o = o};
    if (check(&g) != 0) return -1;
    size_t runs = (size_t)g.n_schemes * o->seeds;
    g.exact = calloc(runs * o->test_max, sizeof(double));
    g.token = calloc(runs * o->test_max, sizeof(double));
    g.train_seconds = calloc(runs, sizeof(double));
    g.train_loss = calloc(runs, sizeof(double));
    QKV_CHECK(g.exact && g.token && g.train_seconds && g.train_loss, "experiment lengthgen: out of memory");
    int threads = qkv_threads();
    if (!o->quiet)
        printf("lengthgen: %s, decoder-only, %d layers x %d heads, dim %d; train on lengths 1..%d for %d steps "
               "(batch %d, AdamW lr %g); test greedy at 1..%d, %d sequences each; %d thread%s\n",
               qkv_seq_task_name((qkv_seq_task)o->task), o->layers, o->heads, o->dim, o->train_max, o->steps,
               o->batch, o->lr, o->test_max, o->test_size, threads, threads == 1 ? "" : "s");
    int rc = 0;
    for (int s = 0; s < g.n_schemes && rc == 0; s++)
        for (int k = 0; k < o->seeds && rc == 0; k++) rc = train_one(&g, s, k);
    if (rc == 0) {
        print_table(&g, g.exact, "exact-match accuracy (greedy decoding)");
        print_table(&g, g.token, "token accuracy (greedy decoding)");
        if ((o->csv && write_csv(&g) != 0) || (o->json && write_json(&g) != 0) || (o->plot && write_plot(&g) != 0))
            rc = -1;
    }
    free(g.exact);
    free(g.token);
    free(g.train_seconds);
    free(g.train_loss);
    return rc;
}
