/* lengthgen.c — `qkv experiment lengthgen`: does a decoder-only transformer
 * trained on lengths 1..L solve the task at lengths up to K > L, and how does the
 * answer depend on the position scheme? (docs/lengthgen.md)
 *
 * For each scheme of --pos and each of --seeds seeds, one decoder-only model
 * (train/tasks/sequence.h, arch decoder: the causal stream "x SEP y", cross-entropy on
 * the y part) is trained with AdamW on lengths drawn uniformly from 1..L. It is
 * then tested at every length n = 1..K on --test-size sequences of exactly n
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
 * mean over seeds; trained lengths marked *), --csv (one row per scheme, seed and
 * length), --json (the config, per-seed curves, training times and losses) and a
 * PNG (--plot) of the chosen metric against length, one line per scheme, the
 * training range shaded. All paths are checked before training starts; files are
 * written atomically at the end.
 *
 * Threads: 1 by default. The models are small (dim 64, streams of at most 2L+1
 * tokens) and on a shared machine a second thread mostly waits at barriers;
 * results are bitwise the same for any --threads.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/fileio.h"
#include "core/json.h"
#include "core/parallel.h"
#include "train/cli/args.h"
#include "train/cli/train_flags.h"
#include "train/experiments/experiments.h"
#include "train/viz/plot.h"
#include "train/tasks/sequence.h"

#define MAX_SCHEMES 5
#define TEST_SEED 0x1e96e11ULL

typedef struct lengthgen {
    int task, train_max, test_max, seeds, steps, batch, dim, heads, layers, ff, vocab, test_size, warmup, seed;
    int threads, quiet, plot_metric;
    float lr;
    int n_schemes;
    qkv_pos_kind schemes[MAX_SCHEMES];
    const char *pos_list, *csv, *json, *plot;
    /* results [scheme][seed][length-1] */
    double *exact, *token;
    double *train_seconds, *train_loss;   /* [scheme][seed] */
} lengthgen;

static const char *const metric_names[] = {"exact", "token", NULL};

/* "none,rope" -> schemes; -1 with a one-line message naming --pos. */
static int parse_schemes(lengthgen *g) {
    char list[256], allowed[128] = "";
    for (int i = 0; qkv_pos_kind_names[i]; i++)
        snprintf(allowed + strlen(allowed), sizeof allowed - strlen(allowed), "%s%s", i ? ", " : "",
                 qkv_pos_kind_names[i]);
    if (strlen(g->pos_list) >= sizeof list) {
        fprintf(stderr, "qkv experiment lengthgen: --pos: list too long (allowed: %s)\n", allowed);
        return -1;
    }
    strcpy(list, g->pos_list);
    g->n_schemes = 0;
    char *rest = list;
    for (;;) {
        char *comma = strchr(rest, ',');
        if (comma) *comma = '\0';
        int kind = qkv_pos_kind_parse(rest);
        if (kind < 0) {
            fprintf(stderr, "qkv experiment lengthgen: --pos: unknown scheme '%s' (allowed: %s)\n", rest, allowed);
            return -1;
        }
        for (int i = 0; i < g->n_schemes; i++)
            if ((int)g->schemes[i] == kind) {
                fprintf(stderr, "qkv experiment lengthgen: --pos: '%s' given twice\n", rest);
                return -1;
            }
        g->schemes[g->n_schemes++] = (qkv_pos_kind)kind;
        if (!comma) return 0;
        rest = comma + 1;
    }
}

static void model_config(const lengthgen *g, qkv_pos_kind pos, int seed_index, qkv_seq_model_config *c) {
    qkv_seq_model_default_config(c);
    c->data = (qkv_seq_config){(qkv_seq_task)g->task, QKV_ARCH_DECODER, g->vocab, 1, g->train_max};
    c->layers = g->layers;
    c->heads = g->heads;
    c->dim = g->dim;
    c->ff = g->ff;
    c->pos = pos;
    c->max_pos = pos == QKV_POS_LEARNED ? 2 * g->test_max + 1 : 0;  /* the longest test stream */
    c->batch = g->batch;
    c->test_size = g->test_size;
    c->seed = (unsigned long long)g->seed + (unsigned long long)seed_index;
}

/* Greedy exact match and token accuracy of a trained model at every length 1..K. */
static void evaluate_lengths(const lengthgen *g, qkv_seq_model *model, double *exact, double *token) {
    qkv_tape *tape = qkv_tape_create(model->config.seed);
    qkv_tape_set_grad(tape, 0);
    qkv_tape_set_training(tape, 0);
    qkv_seq_batch batch = {0};
    qkv_seq_config trained = model->config.data;
    int32_t *pred = malloc((size_t)g->test_size * g->test_max * sizeof(int32_t));
    QKV_CHECK(pred, "experiment lengthgen: out of memory");
    for (int n = 1; n <= g->test_max; n++) {
        qkv_seq_config at_n = trained;
        at_n.min_len = at_n.max_len = n;
        qkv_seq_make_batch(&at_n, TEST_SEED ^ model->config.seed, 0, g->test_size, &batch);
        model->config.data = at_n;   /* predict decodes up to config.data.max_len tokens */
        qkv_seq_model_predict(model, tape, &batch, pred);
        model->config.data = trained;
        qkv_tape_reset(tape);
        long right = 0, all_right = 0;
        for (int i = 0; i < g->test_size; i++) {
            const int32_t *answer = batch.src + (size_t)i * batch.src_len + n + 1;  /* x SEP [y] */
            int ok = 1;
            for (int s = 0; s < n; s++) {
                int r = pred[(size_t)i * n + s] == answer[s];
                right += r;
                ok &= r;
            }
            all_right += ok;
        }
        exact[n - 1] = (double)all_right / g->test_size;
        token[n - 1] = (double)right / ((double)g->test_size * n);
    }
    free(pred);
    qkv_seq_batch_free(&batch);
    qkv_tape_free(tape);
}

static int train_one(const lengthgen *g, int scheme, int seed_index) {
    qkv_seq_model_config c;
    model_config(g, g->schemes[scheme], seed_index, &c);
    qkv_seq_model model;
    qkv_seq_model_init(&model, &c);
    qkv_trainer_config t = {.steps = g->steps, .log_every = 0, .quiet = 1, .clip = 1.0f, .seed = c.seed};
    t.optim = (qkv_optimizer_config){.kind = QKV_OPT_ADAMW, .lr = g->lr, .weight_decay = 0.01f};
    t.schedule = (qkv_schedule){.kind = QKV_SCHED_COSINE, .warmup = g->warmup < g->steps ? g->warmup : 0,
                                .total = g->steps};
    qkv_train_result result;
    int rc = qkv_train_exit(qkv_train(&t, &model.task, &result), NULL, &result); /* prints an error */
    if (rc == 0) {
        size_t at = (size_t)scheme * g->seeds + seed_index;
        g->train_seconds[at] = result.seconds;
        g->train_loss[at] = result.final_loss;
        evaluate_lengths(g, &model, g->exact + at * g->test_max, g->token + at * g->test_max);
        if (!g->quiet) {
            printf("  %-10s seed %d: %d steps in %.1f s, final train loss %.4f, exact match at L=%d: %.3f, at K=%d: %.3f\n",
                   qkv_pos_kind_name(g->schemes[scheme]), (int)c.seed, g->steps, result.seconds, result.final_loss,
                   g->train_max, g->exact[at * g->test_max + g->train_max - 1], g->test_max,
                   g->exact[at * g->test_max + g->test_max - 1]);
            fflush(stdout);
        }
    }
    qkv_seq_model_free(&model);
    return rc;
}

/* Mean over seeds of metric (exact or token) for a scheme, at length index n. */
static double seed_mean(const lengthgen *g, const double *metric, int scheme, int n) {
    double s = 0;
    for (int k = 0; k < g->seeds; k++) s += metric[((size_t)scheme * g->seeds + k) * g->test_max + n];
    return s / g->seeds;
}

static void print_table(const lengthgen *g, const double *metric, const char *title) {
    printf("\n%s, mean over %d seed%s (* = trained length)\n%-7s", title, g->seeds, g->seeds > 1 ? "s" : "",
           "length");
    for (int s = 0; s < g->n_schemes; s++) printf(" %10s", qkv_pos_kind_name(g->schemes[s]));
    putchar('\n');
    for (int n = 0; n < g->test_max; n++) {
        printf("%5d%c ", n + 1, n < g->train_max ? '*' : ' ');
        for (int s = 0; s < g->n_schemes; s++) printf(" %10.3f", seed_mean(g, metric, s, n));
        putchar('\n');
    }
}

static int write_csv(const lengthgen *g) {
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    QKV_CHECK(f, "experiment lengthgen: out of memory");
    fputs("pos,seed,length,trained,exact_match,token_acc\n", f);
    for (int s = 0; s < g->n_schemes; s++)
        for (int k = 0; k < g->seeds; k++)
            for (int n = 0; n < g->test_max; n++) {
                size_t at = ((size_t)s * g->seeds + k) * g->test_max + n;
                fprintf(f, "%s,%d,%d,%d,%.6g,%.6g\n", qkv_pos_kind_name(g->schemes[s]), g->seed + k, n + 1,
                        n < g->train_max, g->exact[at], g->token[at]);
            }
    fclose(f);
    int rc = qkv_write_file_atomic(g->csv, text, len);
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
    qkv_json_out out = {0};
    char text[512];
    snprintf(text, sizeof text,
             "{\"experiment\": \"lengthgen\", \"task\": \"%s\", \"arch\": \"decoder\", \"decoding\": \"greedy\", "
             "\"train_lengths\": [1, %d], \"test_max\": %d, \"seeds\": %d, \"first_seed\": %d, \"steps\": %d, "
             "\"batch\": %d, \"lr\": %g, \"warmup\": %d, \"layers\": %d, \"heads\": %d, \"dim\": %d, \"ff\": %d, "
             "\"vocab\": %d, \"test_size\": %d, \"learned_table_rows\": %d,\n\"schemes\": [",
             qkv_seq_task_name((qkv_seq_task)g->task), g->train_max, g->test_max, g->seeds, g->seed, g->steps,
             g->batch, g->lr, g->warmup, g->layers, g->heads, g->dim, g->ff, g->vocab, g->test_size,
             2 * g->test_max + 1);
    qkv_json_out_text(&out, text);
    double *mean = malloc((size_t)g->test_max * sizeof(double));
    QKV_CHECK(mean, "experiment lengthgen: out of memory");
    for (int s = 0; s < g->n_schemes; s++) {
        qkv_json_out_text(&out, s ? ",\n {\"pos\": " : "\n {\"pos\": ");
        qkv_json_out_string(&out, qkv_pos_kind_name(g->schemes[s]));
        const double *metrics[2] = {g->exact, g->token};
        const char *keys[2] = {"exact_match", "token_acc"};
        for (int m = 0; m < 2; m++) {
            for (int n = 0; n < g->test_max; n++) mean[n] = seed_mean(g, metrics[m], s, n);
            qkv_json_out_text(&out, ", ");
            json_curve(&out, keys[m], mean, g->test_max);
        }
        qkv_json_out_text(&out, ", \"runs\": [");
        for (int k = 0; k < g->seeds; k++) {
            size_t at = (size_t)s * g->seeds + k;
            snprintf(text, sizeof text, "%s{\"seed\": %d, \"train_seconds\": %.3f, \"final_train_loss\": %.6g, ",
                     k ? ", " : "", g->seed + k, g->train_seconds[at], g->train_loss[at]);
            qkv_json_out_text(&out, text);
            json_curve(&out, "exact_match", g->exact + at * g->test_max, g->test_max);
            qkv_json_out_text(&out, ", ");
            json_curve(&out, "token_acc", g->token + at * g->test_max, g->test_max);
            qkv_json_out_text(&out, "}");
        }
        qkv_json_out_text(&out, "]}");
    }
    qkv_json_out_text(&out, "\n]}\n");
    free(mean);
    int rc = out.failed ? (qkv_set_error("%s: out of memory", g->json), -1) : qkv_write_file_atomic(g->json, out.data, out.len);
    qkv_json_out_free(&out);
    return rc;
}

static int write_plot(const lengthgen *g) {
    int k = g->test_max;
    double *x = malloc((size_t)k * sizeof(double)), *y = malloc((size_t)g->n_schemes * k * sizeof(double));
    QKV_CHECK(x && y, "experiment lengthgen: out of memory");
    qkv_plot_series series[MAX_SCHEMES];
    const double *metric = g->plot_metric == 0 ? g->exact : g->token;
    for (int n = 0; n < k; n++) x[n] = n + 1;
    for (int s = 0; s < g->n_schemes; s++) {
        for (int n = 0; n < k; n++) y[(size_t)s * k + n] = seed_mean(g, metric, s, n);
        series[s] = (qkv_plot_series){qkv_pos_kind_name(g->schemes[s]), x, y + (size_t)s * k, k};
    }
    char title[128];
    snprintf(title, sizeof title, "%s, decoder-only, trained on lengths 1..%d (shaded)",
             qkv_seq_task_name((qkv_seq_task)g->task), g->train_max);
    qkv_plot_options options = {title, "sequence length",
                                g->plot_metric == 0 ? "exact-match accuracy (greedy)" : "token accuracy (greedy)",
                                1.0, (double)g->train_max, 0, 800, 500};
    int rc = qkv_plot_lines_png(g->plot, series, g->n_schemes, &options);
    free(x);
    free(y);
    return rc;
}

int qkv_cmd_experiment_lengthgen(int argc, char **argv) {
    lengthgen g = {.task = QKV_TASK_REVERSE, .train_max = 8, .test_max = 16, .seeds = 1, .steps = 2000,
                   .batch = 64, .dim = 64, .heads = 4, .layers = 2, .ff = 256, .vocab = 10, .test_size = 200,
                   .warmup = 100, .seed = 1, .threads = 1, .lr = 3e-3f, .pos_list = "none,learned,sinusoidal,rope,alibi",
                   .plot = "lengthgen.png"};
    const qkv_arg args[] = {
        QKV_ARG_CHOICE_ROW("--task", &g.task, qkv_seq_task_names, "what to learn"),
        QKV_ARG_STRING_ROW("--pos", &g.pos_list, "comma-separated position schemes (none, learned, sinusoidal, rope, alibi)"),
        QKV_ARG_INT_ROW("--train-max", &g.train_max, 1, 256, "train on lengths 1..L"),
        QKV_ARG_INT_ROW("--test-max", &g.test_max, 1, 1024, "test at lengths 1..K (K >= L)"),
        QKV_ARG_INT_ROW("--seeds", &g.seeds, 1, 100, "models per scheme (seeds --seed, --seed + 1, ...)"),
        QKV_ARG_INT_ROW("--seed", &g.seed, 0, 2147483647, "first seed (data, init)"),
        QKV_ARG_INT_ROW("--steps", &g.steps, 1, 1e7, "training steps per model"),
        QKV_ARG_INT_ROW("--batch", &g.batch, 1, 65536, "batch size"),
        QKV_ARG_FLOAT_ROW("--lr", &g.lr, 0, 10, "AdamW learning rate (cosine schedule)"),
        QKV_ARG_INT_ROW("--warmup", &g.warmup, 0, 1e7, "linear warmup steps"),
        QKV_ARG_INT_ROW("--layers", &g.layers, 1, 64, "decoder layers"),
        QKV_ARG_INT_ROW("--heads", &g.heads, 1, 64, "attention heads"),
        QKV_ARG_INT_ROW("--dim", &g.dim, 2, 8192, "model width"),
        QKV_ARG_INT_ROW("--ff", &g.ff, 1, 65536, "feed-forward width"),
        QKV_ARG_INT_ROW("--vocab", &g.vocab, 2, 100000, "number of symbols"),
        QKV_ARG_INT_ROW("--test-size", &g.test_size, 1, 1e6, "test sequences per length"),
        QKV_ARG_STRING_ROW("--csv", &g.csv, "write one row per scheme, seed and length"),
        QKV_ARG_STRING_ROW("--json", &g.json, "write the config and every curve"),
        QKV_ARG_STRING_ROW("--plot", &g.plot, "PNG of accuracy against length"),
        QKV_ARG_CHOICE_ROW("--plot-metric", &g.plot_metric, metric_names, "what the plot shows"),
        QKV_ARG_INT_ROW("--threads", &g.threads, 0, 1024, QKV_THREADS_HELP "; these models are too small to gain from more than 1"),
        QKV_ARG_FLAG_ROW("--quiet", &g.quiet, "print only the tables"),
    };
    int parsed = qkv_args_parse("experiment lengthgen", argc, argv, args, (int)(sizeof args / sizeof args[0]));
    if (parsed != 0) return parsed > 0 ? 0 : 2;
    if (parse_schemes(&g) != 0) return 2;
    if (g.test_max < g.train_max) {
        fprintf(stderr, "qkv experiment lengthgen: --test-max %d: must be at least --train-max %d\n", g.test_max,
                g.train_max);
        return 2;
    }
    for (int s = 0; s < g.n_schemes; s++) {   /* every model's config, before anything runs */
        qkv_seq_model_config c;
        model_config(&g, g.schemes[s], 0, &c);
        if (qkv_seq_model_check(&c) != 0) {
            fprintf(stderr, "qkv experiment lengthgen: %s\n", qkv_last_error());
            return 2;
        }
    }
    const char *outputs[3] = {g.csv, g.json, g.plot};
    if (qkv_exp_check_outputs(outputs, 3) != 0) {
        fprintf(stderr, "qkv experiment lengthgen: %s\n", qkv_last_error());
        return 2;
    }
    g.threads = qkv_set_threads(g.threads);
    size_t runs = (size_t)g.n_schemes * g.seeds;
    g.exact = calloc(runs * g.test_max, sizeof(double));
    g.token = calloc(runs * g.test_max, sizeof(double));
    g.train_seconds = calloc(runs, sizeof(double));
    g.train_loss = calloc(runs, sizeof(double));
    QKV_CHECK(g.exact && g.token && g.train_seconds && g.train_loss, "experiment lengthgen: out of memory");
    if (!g.quiet)
        printf("lengthgen: %s, decoder-only, %d layers x %d heads, dim %d; train on lengths 1..%d for %d steps "
               "(batch %d, AdamW lr %g); test greedy at 1..%d, %d sequences each; %d thread%s\n",
               qkv_seq_task_name((qkv_seq_task)g.task), g.layers, g.heads, g.dim, g.train_max, g.steps, g.batch,
               g.lr, g.test_max, g.test_size, g.threads, g.threads == 1 ? "" : "s");
    int rc = 0;
    for (int s = 0; s < g.n_schemes && rc == 0; s++)
        for (int k = 0; k < g.seeds && rc == 0; k++) rc = train_one(&g, s, k);
    if (rc == 0) {
        print_table(&g, g.exact, "exact-match accuracy (greedy decoding)");
        print_table(&g, g.token, "token accuracy (greedy decoding)");
        if ((g.csv && write_csv(&g) != 0) || (g.json && write_json(&g) != 0) || (g.plot && write_plot(&g) != 0)) {
            fprintf(stderr, "qkv experiment lengthgen: %s\n", qkv_last_error());
            rc = 2;
        }
    }
    free(g.exact);
    free(g.token);
    free(g.train_seconds);
    free(g.train_loss);
    return rc;
}
