/* lengthgen.c — the length-generalization experiment: does a decoder-only transformer
 * trained on lengths 1..L solve the task at lengths up to K > L, and how does the
 * answer depend on the position scheme? (docs/lengthgen.md)
 *
 * For each task of `tasks` (--tasks, or the one --task), each scheme of `schemes`
 * (--pos) and each of `seeds` seeds, one decoder-only model
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
 * Randomized schemes ("rope-rand", ...: Ruoss et al. 2023) train and test with
 * positions drawn as sorted samples of distinct integers from [0, M)
 * (train/tasks/sequence.h: per training step one draw for the batch; at test one
 * draw per length, from the test seed): the test uses the training scheme, so
 * the model never meets the unseen dense spacing 0..n-1 of short streams.
 *
 * Outputs, per task: two tables (exact match, token accuracy; rows: length,
 * columns: scheme, mean over seeds; trained lengths marked *) and a summary (exact
 * match averaged over the extrapolation lengths L+1..K, mean over seeds with a 95%
 * Student-t interval, and over the trained lengths 1..L); then the mean reciprocal
 * rank over tasks (qkv_lengthgen_mrr) next to the paper's. csv (one row per task,
 * scheme, seed and length), json (the config, per-seed curves, training times and
 * losses, the summaries) and a PNG (plot), one panel per task, of the chosen
 * metric against length, one line per scheme, the training range shaded. All paths are checked before training starts; files are
 * written atomically at the end.
 *
 * Threads: the caller's (the command's default is 1: the models are small, dim
 * 64, streams of at most 2L+1 tokens, and on a shared machine a second thread
 * mostly waits at barriers); results are bitwise the same for any count. jobs > 1
 * trains that many models at once instead, one thread each: the same results.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/fileio.h"
#include "core/io/json.h"
#include "core/kernels/parallel.h"
#include "train/experiments/experiments.h"
#include "train/viz/plot.h"
#include "train/tasks/sequence.h"

#define TEST_SEED 0x1e96e11ULL

/* The kazemnejad preset's budget, from the sweep in docs/lengthgen.md. */
#define KAZEMNEJAD_STEPS 1500
#define KAZEMNEJAD_BATCH 64
#define KAZEMNEJAD_LR 1e-2f
#define KAZEMNEJAD_DIM 32
#define KAZEMNEJAD_LAYERS 2
#define KAZEMNEJAD_TEST_SIZE 100

/* A scheme: a position kind, with randomized positions or not. */
typedef struct lg_scheme {
    qkv_pos_kind kind;
    int randomized;
    char name[24];   /* "rope", "rope-rand" */
} lg_scheme;

/* One run: its options, the tasks and schemes they name, and the results. */
typedef struct lengthgen {
    const qkv_lengthgen_options *o;
    int n_tasks, n_schemes, randomize;   /* randomize: the M of the -rand schemes */
    int tasks[QKV_LENGTHGEN_MAX_TASKS];
    lg_scheme schemes[QKV_LENGTHGEN_MAX_SCHEMES];
    /* results [task][scheme][seed][length-1] */
    double *exact, *token;
    double *train_seconds, *train_loss;   /* [task][scheme][seed] */
} lengthgen;

const char *const qkv_lengthgen_metric_names[] = {"exact", "token", NULL};
const char *const qkv_lengthgen_preset_names[] = {"kazemnejad", NULL};

/* The options, in the order --help lists them; the rows with a key head the --json record. */
#define T qkv_lengthgen_options
const qkv_field qkv_lengthgen_fields[] = {
    QKV_TEXT_FIELD("--preset", NULL, T, preset, NULL,
                   "kazemnejad: the paper's setup at qkv's scale (docs/lengthgen.md); the other flags override it"),
    QKV_CHOICE_FIELD("--task", "task", T, task, qkv_seq_task_names, QKV_TASK_REVERSE, "what to learn"),
    QKV_TEXT_FIELD("--tasks", "task_list", T, tasks, NULL, "comma-separated tasks (reverse, copy, sort); overrides --task"),
    QKV_TEXT_DEFAULT_FIELD("--pos", "pos", T, schemes, "none,learned,sinusoidal,rope,alibi",
                           "comma-separated position schemes (none, learned, sinusoidal, rope, alibi, t5; "
                           "learned-rand, sinusoidal-rand, rope-rand)"),
    QKV_INT_FIELD("--pos-randomize", "pos_randomize", T, randomize, 0, 1e6, 0,
                  "M of the -rand schemes: positions drawn from [0, M); 0: twice the longest test stream"),
    QKV_INT_FIELD("--jobs", NULL, T, jobs, 1, 64, 1, "models trained at once, one thread each (same results)"),
    QKV_INT_FIELD("--train-max", "train_max", T, train_max, 1, 256, 8, "train on lengths 1..L"),
    QKV_INT_FIELD("--test-max", "test_max", T, test_max, 1, 1024, 16, "test at lengths 1..K (K >= L)"),
    QKV_INT_FIELD("--seeds", "seeds", T, seeds, 1, 100, 1, "models per scheme (seeds --seed, --seed + 1, ...)"),
    QKV_INT_FIELD("--seed", "seed", T, seed, 0, 2147483647, 1, "first seed (data, init)"),
    QKV_INT_FIELD("--steps", "steps", T, steps, 1, 1e7, 2000, "training steps per model"),
    QKV_INT_FIELD("--batch", "batch", T, batch, 1, 65536, 64, "batch size"),
    QKV_FLOAT_FIELD("--lr", "lr", T, lr, 0, 10, 3e-3, "AdamW learning rate (cosine schedule)"),
    QKV_INT_FIELD("--warmup", "warmup", T, warmup, 0, 1e7, 100, "linear warmup steps"),
    QKV_INT_FIELD("--layers", "layers", T, layers, 1, 64, 2, "decoder layers"),
    QKV_INT_FIELD("--heads", "heads", T, heads, 1, 64, 4, "attention heads"),
    QKV_INT_FIELD("--dim", "dim", T, dim, 2, 8192, 64, "model width"),
    QKV_INT_FIELD("--ff", "ff", T, ff, 1, 65536, 256, "feed-forward width"),
    QKV_INT_FIELD("--vocab", "vocab", T, vocab, 2, 100000, 10, "number of symbols"),
    QKV_INT_FIELD("--test-size", "test_size", T, test_size, 1, 1e6, 200, "test sequences per length"),
    QKV_TEXT_FIELD("--csv", NULL, T, csv, NULL, "write one row per scheme, seed and length"),
    QKV_TEXT_FIELD("--json", NULL, T, json, NULL, "write the config and every curve"),
    QKV_TEXT_DEFAULT_FIELD("--plot", NULL, T, plot, "lengthgen.png", "PNG of accuracy against length"),
    QKV_CHOICE_FIELD("--plot-metric", NULL, T, plot_metric, qkv_lengthgen_metric_names, QKV_LENGTHGEN_EXACT,
                     "what the plot shows"),
    QKV_INT_FIELD("--threads", NULL, T, threads, 0, 1024, 1,
                  QKV_THREADS_HELP "; these models are too small to gain from more than 1"),
    QKV_FLAG_FIELD("--quiet", T, quiet, "print only the tables"),
};
#undef T
const int qkv_lengthgen_n_fields = (int)(sizeof qkv_lengthgen_fields / sizeof qkv_lengthgen_fields[0]);

void qkv_lengthgen_default_options(qkv_lengthgen_options *o) {
    memset(o, 0, sizeof *o);
    qkv_fields_defaults(qkv_lengthgen_fields, qkv_lengthgen_n_fields, o);
}

int qkv_lengthgen_preset(qkv_lengthgen_options *o, const char *name) {
    if (name && strcmp(name, "kazemnejad") == 0) {
        o->tasks = "copy,reverse";
        o->train_max = 20;
        o->test_max = 40;
        o->seeds = 3;
        o->schemes = "none,t5,alibi,rope,sinusoidal,learned,rope-rand,sinusoidal-rand,learned-rand";
        o->randomize = 0;
        /* the sweep of docs/lengthgen.md */
        o->steps = KAZEMNEJAD_STEPS;
        o->batch = KAZEMNEJAD_BATCH;
        o->lr = KAZEMNEJAD_LR;
        o->warmup = 100;
        o->dim = KAZEMNEJAD_DIM;
        o->heads = 4;
        o->layers = KAZEMNEJAD_LAYERS;
        o->ff = 2 * KAZEMNEJAD_DIM;
        o->test_size = KAZEMNEJAD_TEST_SIZE;
        return 0;
    }
    char allowed[64] = "";
    for (int i = 0; qkv_lengthgen_preset_names[i]; i++)
        snprintf(allowed + strlen(allowed), sizeof allowed - strlen(allowed), "%s%s", i ? ", " : "",
                 qkv_lengthgen_preset_names[i]);
    return qkv_set_error("--preset: unknown preset '%s' (allowed: %s)", name ? name : "", allowed), -1;
}

/* Splits a comma-separated list into at most max items of size item_len; -1
 * with an error naming flag on an empty item or too many. */
static int split_list(const char *flag, const char *text, char (*items)[24], int max, int *n) {
    *n = 0;
    for (const char *p = text;;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        if (len == 0 || len >= 24) return qkv_set_error("%s: empty or overlong item in '%s'", flag, text), -1;
        if (*n == max) return qkv_set_error("%s: more than %d items in '%s'", flag, max, text), -1;
        memcpy(items[*n], p, len);
        items[(*n)++][len] = '\0';
        if (!comma) return 0;
        p = comma + 1;
    }
}

/* "none,rope-rand" -> g's schemes; -1 with a one-line message naming --pos. */
static int parse_schemes(lengthgen *g) {
    const qkv_lengthgen_options *o = g->o;
    char items[QKV_LENGTHGEN_MAX_SCHEMES][24], allowed[160], randomizable[64];
    snprintf(allowed, sizeof allowed, "%s; %s + \"-rand\"", qkv_pos_scheme_list((char[96]){0}, 96, ", ", NULL, NULL),
             qkv_pos_scheme_list(randomizable, sizeof randomizable, ", ", NULL, qkv_pos_keep_randomizable));
    if (split_list("--pos", o->schemes, items, QKV_LENGTHGEN_MAX_SCHEMES, &g->n_schemes) != 0) return -1;
    for (int s = 0; s < g->n_schemes; s++) {
        lg_scheme *sc = &g->schemes[s];
        char base[24];
        strcpy(base, items[s]);
        size_t len = strlen(base);
        sc->randomized = len > 5 && strcmp(base + len - 5, "-rand") == 0;
        if (sc->randomized) base[len - 5] = '\0';
        int kind = qkv_pos_kind_parse(base);
        if (kind < 0 || (sc->randomized && !qkv_pos_randomizable((qkv_pos_kind)kind)))
            return qkv_set_error("--pos: unknown scheme '%s' (allowed: %s)", items[s], allowed), -1;
        sc->kind = (qkv_pos_kind)kind;
        strcpy(sc->name, items[s]);
        for (int i = 0; i < s; i++)
            if (strcmp(g->schemes[i].name, sc->name) == 0) return qkv_set_error("--pos: '%s' given twice", sc->name), -1;
    }
    return 0;
}

/* --tasks (or --task) -> g's tasks. */
static int parse_tasks(lengthgen *g) {
    const qkv_lengthgen_options *o = g->o;
    if (!o->tasks) {
        g->n_tasks = 1;
        g->tasks[0] = o->task;
        return 0;
    }
    char items[QKV_LENGTHGEN_MAX_TASKS][24];
    if (split_list("--tasks", o->tasks, items, QKV_LENGTHGEN_MAX_TASKS, &g->n_tasks) != 0) return -1;
    for (int t = 0; t < g->n_tasks; t++) {
        int task = -1;
        for (int i = 0; qkv_seq_task_names[i]; i++)
            if (strcmp(qkv_seq_task_names[i], items[t]) == 0) task = i;
        if (task < 0) return qkv_set_error("--tasks: unknown task '%s' (allowed: reverse, copy, sort)", items[t]), -1;
        for (int i = 0; i < t; i++)
            if (g->tasks[i] == task) return qkv_set_error("--tasks: '%s' given twice", items[t]), -1;
        g->tasks[t] = task;
    }
    return 0;
}

static size_t run_at(const lengthgen *g, int task, int scheme, int seed_index) {
    return ((size_t)task * g->n_schemes + scheme) * g->o->seeds + seed_index;
}

static void model_config(const lengthgen *g, int task, int scheme, int seed_index, qkv_seq_model_config *c) {
    const qkv_lengthgen_options *o = g->o;
    const lg_scheme *sc = &g->schemes[scheme];
    qkv_seq_model_default_config(c);
    c->data = (qkv_seq_config){(qkv_seq_task)task, QKV_ARCH_DECODER, o->vocab, 1, o->train_max};
    c->layers = o->layers;
    c->heads = o->heads;
    c->dim = o->dim;
    c->ff = o->ff;
    c->pos = sc->kind;
    c->pos_randomize = sc->randomized ? g->randomize : 0;
    /* learned: the longest test stream (randomized: every position of [0, M)) */
    c->max_pos = sc->kind != QKV_POS_LEARNED ? 0 : sc->randomized ? g->randomize : 2 * o->test_max + 1;
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

static int train_one(const lengthgen *g, int task, int scheme, int seed_index) {
    const qkv_lengthgen_options *o = g->o;
    qkv_seq_model_config c;
    model_config(g, g->tasks[task], scheme, seed_index, &c);
    qkv_seq_model model;
    qkv_seq_model_init(&model, &c);
    qkv_trainer_config t = {.steps = o->steps, .log_every = 0, .quiet = 1, .clip = 1.0f, .seed = c.seed};
    t.optim = (qkv_optimizer_config){.kind = QKV_OPT_ADAMW, .lr = o->lr, .weight_decay = 0.01f};
    t.schedule = (qkv_schedule){.kind = QKV_SCHED_COSINE, .warmup = o->warmup < o->steps ? o->warmup : 0,
                                .total = o->steps};
    qkv_train_result result;
    int rc = qkv_train(&t, &model.task, &result);
    if (rc == 0) {
        size_t at = run_at(g, task, scheme, seed_index);
        g->train_seconds[at] = result.seconds;
        g->train_loss[at] = result.final_loss;
        evaluate_lengths(g, &model, g->exact + at * o->test_max, g->token + at * o->test_max);
        if (!o->quiet) {
            #pragma omp critical(lengthgen_output)
            printf("  %-8s %-16s seed %d: %d steps in %.1f s, final train loss %.4f, exact match at L=%d: %.3f, "
                   "at K=%d: %.3f\n",
                   qkv_seq_task_name((qkv_seq_task)g->tasks[task]), g->schemes[scheme].name, (int)c.seed, o->steps,
                   result.seconds, result.final_loss, o->train_max, g->exact[at * o->test_max + o->train_max - 1],
                   o->test_max, g->exact[at * o->test_max + o->test_max - 1]);
            fflush(stdout);
        }
    }
    qkv_seq_model_free(&model);
    return rc;
}

/* Mean over seeds of metric (exact or token) for a task and scheme, at length index n. */
static double seed_mean(const lengthgen *g, const double *metric, int task, int scheme, int n) {
    const qkv_lengthgen_options *o = g->o;
    double s = 0;
    for (int k = 0; k < o->seeds; k++) s += metric[run_at(g, task, scheme, k) * o->test_max + n];
    return s / o->seeds;
}

/* Student's t quantile t_{0.975, df}: the 95% two-sided interval's factor. */
static double t975(int df) {
    static const double t[] = {0, 12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
                               2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
                               2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042};
    return df < 1 ? NAN : df <= 30 ? t[df] : 1.96;
}

/* A seed's exact match averaged over lengths [from, to) (0-based). */
static double range_mean(const lengthgen *g, int task, int scheme, int seed_index, int from, int to) {
    const double *e = g->exact + run_at(g, task, scheme, seed_index) * g->o->test_max;
    double s = 0;
    for (int n = from; n < to; n++) s += e[n];
    return to > from ? s / (to - from) : NAN;
}

/* Over seeds: the mean of range_mean and the half-width of its 95% t-interval
 * (NAN for one seed). */
static void range_summary(const lengthgen *g, int task, int scheme, int from, int to, double *mean, double *half) {
    int k = g->o->seeds;
    double s = 0, ss = 0;
    for (int i = 0; i < k; i++) s += range_mean(g, task, scheme, i, from, to);
    *mean = s / k;
    for (int i = 0; i < k; i++) {
        double d = range_mean(g, task, scheme, i, from, to) - *mean;
        ss += d * d;
    }
    *half = k > 1 ? t975(k - 1) * sqrt(ss / (k - 1)) / sqrt((double)k) : NAN;
}

void qkv_lengthgen_mrr(const double *score, int n_tasks, int n_schemes, double *mrr) {
    for (int s = 0; s < n_schemes; s++) mrr[s] = 0;
    for (int t = 0; t < n_tasks; t++) {
        const double *row = score + (size_t)t * n_schemes;
        for (int s = 0; s < n_schemes; s++) {
            int better = 0, same = 0;   /* rank = better + (1 + same) / 2: ties share their mean rank */
            for (int r = 0; r < n_schemes; r++) {
                better += row[r] > row[s];
                same += row[r] == row[s];
            }
            mrr[s] += 1.0 / (better + (1.0 + same) / 2.0) / n_tasks;
        }
    }
}

static void print_table(const lengthgen *g, int task, const double *metric, const char *title) {
    const qkv_lengthgen_options *o = g->o;
    printf("\n%s: %s, mean over %d seed%s (* = trained length)\n%-7s", qkv_seq_task_name((qkv_seq_task)g->tasks[task]),
           title, o->seeds, o->seeds > 1 ? "s" : "", "length");
    for (int s = 0; s < g->n_schemes; s++) printf(" %*s", s < g->n_schemes ? 10 > (int)strlen(g->schemes[s].name) ? 10 : (int)strlen(g->schemes[s].name) : 10, g->schemes[s].name);
    putchar('\n');
    for (int n = 0; n < o->test_max; n++) {
        printf("%5d%c ", n + 1, n < o->train_max ? '*' : ' ');
        for (int s = 0; s < g->n_schemes; s++) {
            int w = 10 > (int)strlen(g->schemes[s].name) ? 10 : (int)strlen(g->schemes[s].name);
            printf(" %*.3f", w, seed_mean(g, metric, task, s, n));
        }
        putchar('\n');
    }
}

/* Per task: each scheme's exact match over the extrapolation and trained lengths. */
static void print_summary(const lengthgen *g, int task) {
    const qkv_lengthgen_options *o = g->o;
    printf("\n%s: exact match over the extrapolation lengths %d..%d and the trained lengths 1..%d\n"
           "(per seed the mean over those lengths; then the mean over %d seed%s, 95%% t-interval)\n"
           "%-16s %-22s %-22s %s\n",
           qkv_seq_task_name((qkv_seq_task)g->tasks[task]), o->train_max + 1, o->test_max, o->train_max, o->seeds,
           o->seeds > 1 ? "s" : "", "scheme", "extrapolation", "trained", "fits (>= 0.99 trained)");
    for (int s = 0; s < g->n_schemes; s++) {
        double em, eh, tm, th;
        range_summary(g, task, s, o->train_max, o->test_max, &em, &eh);
        range_summary(g, task, s, 0, o->train_max, &tm, &th);
        char ext[32], tr[32];
        snprintf(ext, sizeof ext, isnan(eh) ? "%.3f" : "%.3f +- %.3f", em, eh);
        snprintf(tr, sizeof tr, isnan(th) ? "%.3f" : "%.3f +- %.3f", tm, th);
        printf("%-16s %-22s %-22s %s\n", g->schemes[s].name, ext, tr, tm >= 0.99 ? "yes" : "NO");
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

/* MRR over tasks among the paper's schemes (all present, else not printed) and
 * among all of the run's schemes. mrr_paper [N_PAPER] and mrr_all [n_schemes]
 * are filled; returns whether the paper's ranking could be computed. */
static int compute_mrr(const lengthgen *g, double *mrr_paper, double *mrr_all) {
    const qkv_lengthgen_options *o = g->o;
    double score_all[QKV_LENGTHGEN_MAX_TASKS * QKV_LENGTHGEN_MAX_SCHEMES] = {0}, score_paper[QKV_LENGTHGEN_MAX_TASKS * N_PAPER] = {0};
    int have_paper = 1, at[N_PAPER];
    for (int p = 0; p < N_PAPER; p++) have_paper &= (at[p] = plain_scheme(g, paper_schemes[p].kind)) >= 0;
    for (int t = 0; t < g->n_tasks; t++) {
        for (int s = 0; s < g->n_schemes; s++) {
            double half;
            range_summary(g, t, s, o->train_max, o->test_max, &score_all[t * g->n_schemes + s], &half);
        }
        for (int p = 0; have_paper && p < N_PAPER; p++) score_paper[t * N_PAPER + p] = score_all[t * g->n_schemes + at[p]];
    }
    qkv_lengthgen_mrr(score_all, g->n_tasks, g->n_schemes, mrr_all);
    if (have_paper) qkv_lengthgen_mrr(score_paper, g->n_tasks, N_PAPER, mrr_paper);
    return have_paper;
}

static void print_mrr(const lengthgen *g) {
    const qkv_lengthgen_options *o = g->o;
    double mrr_paper[N_PAPER], mrr_all[QKV_LENGTHGEN_MAX_SCHEMES];
    int have_paper = compute_mrr(g, mrr_paper, mrr_all);
    printf("\nmean reciprocal rank over %d task%s (rank by mean exact match over lengths %d..%d; ties share ranks)\n",
           g->n_tasks, g->n_tasks > 1 ? "s" : "", o->train_max + 1, o->test_max);
    if (have_paper) {
        printf("%-18s %8s %8s\n", "the paper's five", "here", "paper");
        for (int p = 0; p < N_PAPER; p++)
            printf("%-18s %8.3f %8.2f\n", paper_schemes[p].label, mrr_paper[p], paper_schemes[p].paper);
    } else {
        printf("(the paper's comparison needs none, t5, alibi, rope and sinusoidal in --pos)\n");
    }
    printf("%-18s %8s\n", "all schemes", "here");
    for (int s = 0; s < g->n_schemes; s++) printf("%-18s %8.3f\n", g->schemes[s].name, mrr_all[s]);
}

static int write_csv(const lengthgen *g) {
    const qkv_lengthgen_options *o = g->o;
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    QKV_CHECK(f, "experiment lengthgen: out of memory");
    fputs("task,pos,seed,length,trained,exact_match,token_acc\n", f);
    for (int t = 0; t < g->n_tasks; t++)
        for (int s = 0; s < g->n_schemes; s++)
            for (int k = 0; k < o->seeds; k++)
                for (int n = 0; n < o->test_max; n++) {
                    size_t at = run_at(g, t, s, k) * o->test_max + n;
                    fprintf(f, "%s,%s,%d,%d,%d,%.6g,%.6g\n", qkv_seq_task_name((qkv_seq_task)g->tasks[t]),
                            g->schemes[s].name, o->seed + k, n + 1, n < o->train_max, g->exact[at], g->token[at]);
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

/* A number for JSON: null when not finite (one seed has no interval). */
static void json_number(qkv_json_out *out, const char *key, double v) {
    char text[64];
    qkv_json_out_text(out, ", ");
    qkv_json_out_string(out, key);
    snprintf(text, sizeof text, isfinite(v) ? ": %.6g" : ": null", v);
    qkv_json_out_text(out, text);
}

static int write_json(const lengthgen *g) {
    const qkv_lengthgen_options *o = g->o;
    qkv_json_out out = {0};
    char text[640];
    qkv_json_out_text(&out, "{\"experiment\": \"lengthgen\", \"arch\": \"decoder\", \"decoding\": \"greedy\"");
    qkv_fields_json(qkv_lengthgen_fields, qkv_lengthgen_n_fields, o, 0, &out);
    snprintf(text, sizeof text, ", \"learned_table_rows\": %d, \"randomize_max\": %d,\n\"tasks\": [",
             2 * o->test_max + 1, g->randomize);
    qkv_json_out_text(&out, text);
    double *mean = malloc((size_t)o->test_max * sizeof(double));
    QKV_CHECK(mean, "experiment lengthgen: out of memory");
    for (int t = 0; t < g->n_tasks; t++) {
        qkv_json_out_text(&out, t ? ",\n {\"task\": " : "\n {\"task\": ");
        qkv_json_out_string(&out, qkv_seq_task_name((qkv_seq_task)g->tasks[t]));
        qkv_json_out_text(&out, ", \"schemes\": [");
        for (int s = 0; s < g->n_schemes; s++) {
            qkv_json_out_text(&out, s ? ",\n  {\"pos\": " : "\n  {\"pos\": ");
            qkv_json_out_string(&out, g->schemes[s].name);
            double em, eh, tm, th;
            range_summary(g, t, s, o->train_max, o->test_max, &em, &eh);
            range_summary(g, t, s, 0, o->train_max, &tm, &th);
            json_number(&out, "extrapolation_exact", em);
            json_number(&out, "extrapolation_exact_ci95", eh);
            json_number(&out, "trained_exact", tm);
            json_number(&out, "trained_exact_ci95", th);
            const double *metrics[2] = {g->exact, g->token};
            const char *keys[2] = {"exact_match", "token_acc"};
            for (int m = 0; m < 2; m++) {
                for (int n = 0; n < o->test_max; n++) mean[n] = seed_mean(g, metrics[m], t, s, n);
                qkv_json_out_text(&out, ", ");
                json_curve(&out, keys[m], mean, o->test_max);
            }
            qkv_json_out_text(&out, ", \"runs\": [");
            for (int k = 0; k < o->seeds; k++) {
                size_t at = run_at(g, t, s, k);
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
        qkv_json_out_text(&out, "]}");
    }
    double mrr_paper[N_PAPER], mrr_all[QKV_LENGTHGEN_MAX_SCHEMES];
    int have_paper = compute_mrr(g, mrr_paper, mrr_all);
    qkv_json_out_text(&out, "],\n\"mrr\": {");
    for (int s = 0; s < g->n_schemes; s++) {
        snprintf(text, sizeof text, "%s\"%s\": %.6g", s ? ", " : "", g->schemes[s].name, mrr_all[s]);
        qkv_json_out_text(&out, text);
    }
    qkv_json_out_text(&out, "},\n\"mrr_paper_schemes\": ");
    if (!have_paper) qkv_json_out_text(&out, "null");
    for (int p = 0; have_paper && p < N_PAPER; p++) {
        snprintf(text, sizeof text, "%s\"%s\": {\"here\": %.6g, \"paper\": %.2f}", p ? ", " : "{",
                 qkv_pos_kind_name(paper_schemes[p].kind), mrr_paper[p], paper_schemes[p].paper);
        qkv_json_out_text(&out, text);
    }
    qkv_json_out_text(&out, have_paper ? "}}\n" : "}\n");
    free(mean);
    int rc = out.failed ? (qkv_set_error("%s: out of memory", o->json), -1) : qkv_write_file_atomic(o->json, out.data, out.len);
    qkv_json_out_free(&out);
    return rc;
}

#define PANEL_W 800
#define PANEL_H 500

/* One panel per task, side by side. */
static int write_plot(const lengthgen *g) {
    const qkv_lengthgen_options *o = g->o;
    int k = o->test_max;
    double *x = malloc((size_t)k * sizeof(double)), *y = malloc((size_t)g->n_schemes * k * sizeof(double));
    QKV_CHECK(x && y, "experiment lengthgen: out of memory");
    qkv_plot_series series[QKV_LENGTHGEN_MAX_SCHEMES];
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
            for (int n = 0; n < k; n++) y[(size_t)s * k + n] = seed_mean(g, metric, t, s, n);
            series[s] = (qkv_plot_series){g->schemes[s].name, x, y + (size_t)s * k, k};
        }
        char title[128];
        snprintf(title, sizeof title, "%s: trained on 1..%d (shaded), %d seed%s",
                 qkv_seq_task_name((qkv_seq_task)g->tasks[t]), o->train_max, o->seeds, o->seeds > 1 ? "s" : "");
        qkv_plot_options options = {.title = title, .x_label = "sequence length", .y_label = y_label,
                                    .shade_x0 = 1.0, .shade_x1 = (double)o->train_max};
        rc = qkv_plot_lines_draw(&canvas, PANEL_W * t, 0, PANEL_W, PANEL_H, series, g->n_schemes, &options);
    }
    if (rc == 0) rc = qkv_canvas_write_png(&canvas, o->plot);
    qkv_canvas_free(&canvas);
    free(x);
    free(y);
    return rc;
}

static int count_names(const char *const *names) {
    int n = 0;
    while (names[n]) n++;
    return n;
}

/* Every check of qkv_lengthgen_check, filling g's tasks and schemes. */
static int check(lengthgen *g) {
    const qkv_lengthgen_options *o = g->o;
    if (!o->tasks && (o->task < 0 || o->task >= count_names(qkv_seq_task_names)))
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
    if (parse_tasks(g) != 0 || parse_schemes(g) != 0) return -1;
    if (o->test_max < o->train_max)
        return qkv_set_error("--test-max %d: must be at least --train-max %d", o->test_max, o->train_max), -1;
    g->randomize = o->randomize ? o->randomize : 2 * (2 * o->test_max + 1);
    if (o->randomize < 0 || g->randomize < 2 * o->test_max + 1)
        return qkv_set_error("--pos-randomize %d: smaller than the longest test stream, %d positions (--test-max %d)",
                             o->randomize, 2 * o->test_max + 1, o->test_max), -1;
    for (int s = 0; s < g->n_schemes; s++) {   /* every model's config, before anything runs */
        qkv_seq_model_config c;
        model_config(g, g->tasks[0], s, 0, &c);
        if (qkv_seq_model_check(&c) != 0) return -1;
    }
    const char *outputs[3] = {o->csv, o->json, o->plot};
    if (o->plot && qkv_check_png_path(o->plot) != 0) return -1;
    return qkv_exp_check_outputs(outputs, 3);
}

int qkv_lengthgen_check(const qkv_lengthgen_options *o) {
    lengthgen g = {.o = o};
    return check(&g);
}

int qkv_lengthgen_run(const qkv_lengthgen_options *o) {
    lengthgen g = {.o = o};
    if (check(&g) != 0) return -1;
    size_t runs = (size_t)g.n_tasks * g.n_schemes * o->seeds;
    g.exact = calloc(runs * o->test_max, sizeof(double));
    g.token = calloc(runs * o->test_max, sizeof(double));
    g.train_seconds = calloc(runs, sizeof(double));
    g.train_loss = calloc(runs, sizeof(double));
    QKV_CHECK(g.exact && g.token && g.train_seconds && g.train_loss, "experiment lengthgen: out of memory");
    int threads = qkv_threads();
    if (!o->quiet)
        printf("lengthgen: %s, decoder-only, %d layers x %d heads, dim %d; train on lengths 1..%d for %d steps "
               "(batch %d, AdamW lr %g); test greedy at 1..%d, %d sequences each; randomized positions from "
               "[0, %d); %d thread%s, %d model%s at once\n",
               o->tasks ? o->tasks : qkv_seq_task_name((qkv_seq_task)o->task), o->layers, o->heads, o->dim,
               o->train_max, o->steps, o->batch, o->lr, o->test_max, o->test_size, g.randomize, threads,
               threads == 1 ? "" : "s", o->jobs > 1 ? o->jobs : 1, o->jobs > 1 ? "s" : "");
    /* jobs > 1: that many models at once, each on one thread. Every model's run is
     * the same as alone; only the order of the progress lines changes. */
    int rc = 0, jobs = o->jobs > 1 ? o->jobs : 1, n_runs = (int)runs;
    char failure[512] = "";
    #pragma omp parallel for schedule(dynamic, 1) num_threads(jobs) if (jobs > 1)
    for (int r = 0; r < n_runs; r++) {
        int failed;
        #pragma omp atomic read
        failed = rc;
        if (failed) continue;
        if (jobs > 1) qkv_set_threads(1);   /* this worker's own setting */
        int t = r / (g.n_schemes * o->seeds), s = r / o->seeds % g.n_schemes, k = r % o->seeds;
        if (train_one(&g, t, s, k) != 0) {
            #pragma omp critical(lengthgen_failure)
            if (!failure[0]) snprintf(failure, sizeof failure, "%s", qkv_last_error());  /* thread-local */
            #pragma omp atomic write
            rc = -1;
        }
    }
    if (rc != 0) qkv_set_error("%s", failure);
    if (rc == 0) {
        for (int t = 0; t < g.n_tasks; t++) {
            print_table(&g, t, g.exact, "exact-match accuracy (greedy decoding)");
            print_table(&g, t, g.token, "token accuracy (greedy decoding)");
            print_summary(&g, t);
        }
        print_mrr(&g);
        if ((o->csv && write_csv(&g) != 0) || (o->json && write_json(&g) != 0) || (o->plot && write_plot(&g) != 0))
            rc = -1;
    }
    free(g.exact);
    free(g.token);
    free(g.train_seconds);
    free(g.train_loss);
    return rc;
}
