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
 * (train/tasks/sequence.h: one draw per sequence, keyed by the example's index,
 * in training and at test, from the test seed there): the test uses the training
 * scheme, so the model never meets the unseen dense spacing 0..n-1 of short
 * streams, and a test length's accuracy averages over as many draws as it has
 * sequences.
 *
 * Outputs (lengthgen_report.c, lengthgen_distance.c): per task two tables by
 * length, a summary with the fit verdict, the attention distances, the MRR among
 * the schemes that fit; csv, json, plot, distance_plot. All paths are checked
 * before training starts. csv and json are rewritten atomically after every
 * finished model (or round of models, below), so an interrupted run keeps every
 * model it finished and --resume (lengthgen_resume.c) trains only the others.
 *
 * The loop runs in rounds of ranks x jobs models: under mpirun (train/dist.h)
 * rank r trains the round's models r*jobs .. r*jobs + jobs - 1 in solo mode
 * (qkv_dist_solo: each rank trains its own model alone), then the round's
 * records are summed over ranks (each is nonzero on its one rank: exact), rank 0
 * writes csv and json, and a signal or an error on any rank ends the loop. Each
 * model's bits do not depend on which rank or thread trained it, so one process
 * and any number of ranks write the same tables.
 *
 * Threads: the caller's (the command's default is 1: the models are small, dim
 * 64, streams of at most 2L+1 tokens, and on a shared machine a second thread
 * mostly waits at barriers); results are bitwise the same for any count. jobs > 1
 * trains that many models at once instead, one thread each: the same results.
 */
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/cancel.h"
#include "core/error.h"
#include "core/fileio.h"
#include "core/io/json.h"
#include "core/kernels/parallel.h"
#include "core/kernels/isa.h"
#include "core/version.h"
#include "train/dist.h"
#include "train/experiments/lengthgen_record.h"
#include "train/interrupt.h"
#include "train/settings.h"
#include "train/session.h"

/* The kazemnejad preset's budget: the smallest of the sweep in docs/lengthgen.md
 * at which none, t5, alibi, rope, sinusoidal and learned fit copy and reverse on
 * lengths 1..20. */
#define KAZEMNEJAD_STEPS 4000
#define KAZEMNEJAD_BATCH 64
#define KAZEMNEJAD_LR 3e-3f
#define KAZEMNEJAD_DIM 64
#define KAZEMNEJAD_FF 256
#define KAZEMNEJAD_LAYERS 4
#define KAZEMNEJAD_TEST_SIZE 50

typedef qkv_lengthgen lengthgen;
typedef qkv_lg_scheme lg_scheme;

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
    QKV_SETTING_FIELD_SAYING(QKV_FIELD_INT, QKV_SETTING_SEED, T, seed, 1, "first seed (data, init)"),
    QKV_SETTING_FIELD_IN(QKV_FIELD_INT, QKV_SETTING_STEPS, T, steps, 2000, 1, 1e7),
    QKV_INT_FIELD("--batch", "batch", T, batch, 1, 65536, 64, "batch size"),
    QKV_SETTING_FIELD(QKV_FIELD_FLOAT, QKV_SETTING_LR, T, lr, 3e-3),
    QKV_SETTING_FIELD(QKV_FIELD_FLOAT, QKV_SETTING_WEIGHT_DECAY, T, weight_decay, 0.01),
    QKV_SETTING_FIELD(QKV_FIELD_FLOAT, QKV_SETTING_CLIP, T, clip, 1),
    QKV_SETTING_FIELD(QKV_FIELD_CHOICE, QKV_SETTING_SCHEDULE, T, schedule, QKV_SCHED_COSINE),
    QKV_SETTING_FIELD_IN(QKV_FIELD_INT, QKV_SETTING_WARMUP, T, warmup, 100, 0, 1e7),
    /* the stack's shape: ALiBi's slopes exist for at most 64 heads, and a head
     * of width 1 has no pair to rotate */
    QKV_SETTING_FIELD(QKV_FIELD_INT, QKV_SETTING_LAYERS, T, layers, 2),
    QKV_SETTING_FIELD_IN(QKV_FIELD_INT, QKV_SETTING_HEADS, T, heads, 4, 1, 64),
    QKV_SETTING_FIELD_IN(QKV_FIELD_INT, QKV_SETTING_DIM, T, dim, 64, 2, 8192),
    QKV_SETTING_FIELD(QKV_FIELD_INT, QKV_SETTING_FF, T, ff, 256),
    QKV_INT_FIELD("--vocab", "vocab", T, vocab, 2, 100000, 10, "number of symbols"),
    QKV_INT_FIELD("--test-size", "test_size", T, test_size, 1, 1e6, 200, "test sequences per length"),
    QKV_TEXT_FIELD("--csv", NULL, T, csv, NULL, "write one row per scheme, seed and length"),
    QKV_TEXT_FIELD("--json", NULL, T, json, NULL, "write the config and every curve"),
    QKV_TEXT_DEFAULT_FIELD("--plot", NULL, T, plot, "lengthgen.png", "PNG of accuracy against length"),
    QKV_TEXT_FIELD("--distance-plot", NULL, T, distance_plot, NULL,
                   "PNG of the attention-distance histograms at lengths L and K"),
    QKV_FLAG_FIELD("--resume", T, resume, "continue the experiment whose finished models --json holds"),
    QKV_CHOICE_FIELD("--plot-metric", NULL, T, plot_metric, qkv_lengthgen_metric_names, QKV_LENGTHGEN_EXACT,
                     "what the plot shows"),
    QKV_SETTING_FIELD(QKV_FIELD_INT, QKV_SETTING_THREADS, T, threads, 1),   /* 1: these models gain nothing from more */
    QKV_FLAG_FIELD("--quiet", T, quiet, "print only the tables"),
    QKV_MEMBER_FIELD(QKV_FIELD_TEXT, T, command, "provenance: the command line, filled by the command"),
    QKV_MEMBER_FIELD(QKV_FIELD_TEXT, T, date, "provenance: the start date, filled by the run (or its caller)"),
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
        o->schemes = "none,t5,alibi,rope,sinusoidal,learned"; /* the -rand ones do not fit at this budget */
        o->randomize = 0;
        /* the sweep of docs/lengthgen.md */
        o->steps = KAZEMNEJAD_STEPS;
        o->batch = KAZEMNEJAD_BATCH;
        o->lr = KAZEMNEJAD_LR;
        o->warmup = 100;
        o->dim = KAZEMNEJAD_DIM;
        o->heads = 4;
        o->layers = KAZEMNEJAD_LAYERS;
        o->ff = KAZEMNEJAD_FF;
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

/* Greedy exact match and token accuracy of a trained model at every length 1..K
 * (train/tasks/sequence.h). A signal ends it at the next length (the caller drops
 * what it measured). */
static void evaluate_lengths(const lengthgen *g, qkv_seq_model *model, double *exact, double *token) {
    const qkv_lengthgen_options *o = g->o;
    qkv_tape *tape = qkv_tape_create_inference(model->config.seed);
    for (int n = 1; n <= o->test_max && !qkv_interrupt_poll(); n++)
        qkv_seq_model_accuracy_at(model, tape, n, o->test_size, QKV_LG_TEST_SEED ^ model->config.seed, &exact[n - 1],
                                  &token[n - 1]);
    qkv_tape_free(tape);
}

/* Empties run's record: zeros, as a run no rank has finished (the MPI exchange sums records). */
static void clear_record(lengthgen *g, size_t run) {
    size_t k = (size_t)g->o->test_max, d = QKV_LG_DISTANCE_AT;
    memset(g->exact + run * k, 0, k * sizeof(double));
    memset(g->token + run * k, 0, k * sizeof(double));
    memset(g->distance + run * d * g->bins, 0, d * g->bins * sizeof(double));
    memset(g->distance_mean + run * d, 0, d * sizeof(double));
    g->train_seconds[run] = g->train_loss[run] = g->done[run] = 0;
}

/* Trains and tests one model into its record: 0; -1 with qkv_last_error(); or
 * the signal that stopped it (the record stays empty). The rule for cut work
 * (core/cancel.h): a signal that came while the model was tested or its
 * distances measured may have cut an attention op short, so the whole record is
 * dropped, never kept half computed; --resume trains and tests the model again. */
static int train_one(lengthgen *g, size_t run) {
    const qkv_lengthgen_options *o = g->o;
    int task = (int)(run / ((size_t)g->n_schemes * o->seeds)), scheme = (int)(run / o->seeds % g->n_schemes);
    qkv_seq_model_config c;
    model_config(g, g->tasks[task], scheme, (int)(run % o->seeds), &c);
    qkv_seq_model model;
    qkv_seq_model_init(&model, &c);
    qkv_session_spec spec = {.config = {.steps = o->steps, .log_every = 0, .quiet = 1, .clip = o->clip, .seed = c.seed},
                             .task = &model.task};
    spec.config.optim = (qkv_optimizer_config){.kind = QKV_OPT_ADAMW, .lr = o->lr, .weight_decay = o->weight_decay};
    spec.config.schedule = (qkv_schedule){.kind = (qkv_schedule_kind)o->schedule, .warmup = o->warmup};
    qkv_session session; /* the settings derived and the warmup fitted there, as for qkv train */
    qkv_train_result result = {0};
    int rc = qkv_session_prepare(&session, &spec);
    if (rc == 0) {
        rc = qkv_train(&session, &result);
        qkv_session_close(&session);
    } else if (session.status > 128) {
        result.interrupted = session.status - 128; /* a signal during the memory's measurement */
    }
    if (rc != 0 && result.interrupted) rc = result.interrupted;
    if (rc == 0) {
        g->train_seconds[run] = result.seconds;
        g->train_loss[run] = result.final_loss;
        evaluate_lengths(g, &model, g->exact + run * o->test_max, g->token + run * o->test_max);
        qkv_lg_measure_distance(g, &model, run);
        g->done[run] = 1;
        if (qkv_cancelled() || qkv_interrupt_signal()) { /* reached by a signal: dropped */
            clear_record(g, run);
            rc = qkv_interrupt_signal() ? qkv_interrupt_signal() : SIGINT;
        }
    }
    qkv_seq_model_free(&model);
    return rc;
}

/* The progress line of a finished model. */
static void report_model(const lengthgen *g, size_t run) {
    const qkv_lengthgen_options *o = g->o;
    int task = (int)(run / ((size_t)g->n_schemes * o->seeds)), scheme = (int)(run / o->seeds % g->n_schemes);
    const double *exact = g->exact + run * o->test_max;
    printf("  %-8s %-16s seed %d: %d steps in %.1f s, final train loss %.4f, exact match at L=%d: %.3f, "
           "at K=%d: %.3f\n",
           qkv_seq_task_name((qkv_seq_task)g->tasks[task]), g->schemes[scheme].name, o->seed + (int)(run % o->seeds),
           o->steps, g->train_seconds[run], g->train_loss[run], o->train_max, exact[o->train_max - 1], o->test_max,
           exact[o->test_max - 1]);
    fflush(stdout);
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
    if (!(o->weight_decay >= 0 && isfinite(o->weight_decay)) || !(o->clip >= 0 && isfinite(o->clip)))
        return qkv_set_error("--weight-decay %g / --clip %g: expected finite values >= 0", o->weight_decay, o->clip),
               -1;
    if (o->schedule < 0 || o->schedule >= count_names(qkv_schedule_kind_names))
        return qkv_set_error("--schedule %d: not a schedule", o->schedule), -1;
    if (o->resume && !o->json)
        return qkv_set_error("--resume: needs --json, the file that holds the finished models"), -1;
    const char *outputs[4] = {o->csv, o->json, o->plot, o->distance_plot};
    if (o->plot && qkv_check_png_path(o->plot) != 0) return -1;
    if (o->distance_plot && qkv_check_png_path(o->distance_plot) != 0) return -1;
    return qkv_exp_check_outputs(outputs, 4);
}

int qkv_lengthgen_check(const qkv_lengthgen_options *o) {
    lengthgen g = {.o = o};
    return check(&g);
}

static void alloc_records(lengthgen *g) {
    const qkv_lengthgen_options *o = g->o;
    size_t runs = (size_t)g->n_tasks * g->n_schemes * o->seeds;
    g->n_runs = (int)runs;
    g->bins = 2 * o->test_max + 1;
    g->exact = calloc(runs * o->test_max, sizeof(double));
    g->token = calloc(runs * o->test_max, sizeof(double));
    g->train_seconds = calloc(runs, sizeof(double));
    g->train_loss = calloc(runs, sizeof(double));
    g->distance = calloc(runs * QKV_LG_DISTANCE_AT * g->bins, sizeof(double));
    g->distance_mean = calloc(runs * QKV_LG_DISTANCE_AT, sizeof(double));
    g->done = calloc(runs, sizeof(double));
    QKV_CHECK(g->exact && g->token && g->train_seconds && g->train_loss && g->distance && g->distance_mean && g->done,
              "experiment lengthgen: out of memory");
}

static void free_records(lengthgen *g) {
    free(g->exact);
    free(g->token);
    free(g->train_seconds);
    free(g->train_loss);
    free(g->distance);
    free(g->distance_mean);
    free(g->done);
    free(g->command);
}

/* The provenance of a new experiment: this qkv, this ISA path, the command, now. */
static void set_provenance(lengthgen *g) {
    const qkv_lengthgen_options *o = g->o;
    snprintf(g->version, sizeof g->version, "%s", QKV_VERSION);
    snprintf(g->isa, sizeof g->isa, "%s", qkv_isa_name());
    g->command = strdup(o->command ? o->command : "(C API)");
    QKV_CHECK(g->command, "experiment lengthgen: out of memory");
    if (o->date) {
        snprintf(g->date, sizeof g->date, "%s", o->date);
    } else {
        time_t now = time(NULL);
        strftime(g->date, sizeof g->date, "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
    }
}

/* Every rank gets run's record (from the one rank that holds it; the others hold zeros). */
static void exchange_record(lengthgen *g, size_t run) {
    int k = g->o->test_max, d = QKV_LG_DISTANCE_AT;
    qkv_dist_sum_doubles(g->exact + run * k, k);
    qkv_dist_sum_doubles(g->token + run * k, k);
    qkv_dist_sum_doubles(g->train_seconds + run, 1);
    qkv_dist_sum_doubles(g->train_loss + run, 1);
    qkv_dist_sum_doubles(g->distance + run * d * g->bins, d * g->bins);
    qkv_dist_sum_doubles(g->distance_mean + run * d, d);
    qkv_dist_sum_doubles(g->done + run, 1);
}

/* Rank 0 rewrites csv and json with every finished model; an error on rank 0 is every rank's. */
static int save_progress(const lengthgen *g) {
    const qkv_lengthgen_options *o = g->o;
    int rc = 0;
    if (qkv_dist_rank() == 0) rc = (o->csv && qkv_lg_write_csv(g) != 0) || (o->json && qkv_lg_write_json(g) != 0);
    char message[512];
    snprintf(message, sizeof message, "%s", qkv_last_error());
    if (qkv_dist_any(rc)) {
        qkv_set_error("%s", qkv_dist_rank() == 0 ? message : "rank 0 could not write the results");
        return -1;
    }
    return 0;
}

/* Test hook: QKV_TEST_LENGTHGEN_INTERRUPT=n raises SIGINT (through the handler of
 * train/interrupt.h) once this process has finished n models, as a Ctrl-C
 * between two models would: tests interrupt at a known point, not on a timer. */
static void maybe_interrupt_for_test(int finished_here) {
    const char *at = getenv("QKV_TEST_LENGTHGEN_INTERRUPT");
    if (!at || finished_here < atoi(at) || qkv_interrupt_signal()) return;
    qkv_interrupt_install();
    raise(SIGINT);
}

/* Trains the models g does not hold yet, in rounds of ranks x jobs. 0, -1 with
 * qkv_last_error(), or a signal's number. */
static int train_missing(lengthgen *g) {
    const qkv_lengthgen_options *o = g->o;
    int rank = qkv_dist_rank(), ranks = qkv_dist_size(), jobs = o->jobs > 1 ? o->jobs : 1, per_round = ranks * jobs;
    int *todo = malloc((size_t)g->n_runs * sizeof(int)), n_todo = 0, finished_here = 0, stop = 0;
    QKV_CHECK(todo, "experiment lengthgen: out of memory");
    for (int r = 0; r < g->n_runs; r++)
        if (!g->done[r]) todo[n_todo++] = r;
    char failure[512] = "";
    for (int first = 0; first < n_todo && !stop; first += per_round) {
        int failed = 0, signal = 0;
        qkv_dist_solo(1);
        #pragma omp parallel for schedule(static, 1) num_threads(jobs) if (jobs > 1) reduction(max : signal)
        for (int j = 0; j < jobs; j++) {
            int slot = first + rank * jobs + j;
            if (slot >= n_todo) continue;
            if (jobs > 1) qkv_set_threads(1); /* this worker's own setting */
            int rc = train_one(g, (size_t)todo[slot]);
            if (rc > 0) signal = rc;
            if (rc < 0) {
                #pragma omp critical(lengthgen_failure)
                if (!failure[0]) snprintf(failure, sizeof failure, "%s", qkv_last_error()); /* thread-local */
                #pragma omp atomic write
                failed = 1;
            }
        }
        qkv_dist_solo(0);
        for (int slot = first; slot < first + per_round && slot < n_todo; slot++) {
            exchange_record(g, (size_t)todo[slot]);
            if (g->done[todo[slot]] && !o->quiet) report_model(g, (size_t)todo[slot]);
            if (g->done[todo[slot]] && slot / jobs % ranks == rank) finished_here++;
        }
        if (qkv_dist_any(failed)) {
            qkv_set_error("%s", failed ? failure : "another rank failed");
            stop = -1;
        } else if (save_progress(g) != 0) {
            stop = -1;
        } else {
            maybe_interrupt_for_test(finished_here);
            if (!signal) signal = qkv_interrupt_signal();
            if (qkv_dist_any(signal)) stop = signal ? signal : SIGTERM; /* another rank's */
        }
    }
    free(todo);
    return stop;
}

/* The message of a run stopped by sig, with where its finished models are. */
static void interrupted_message(const lengthgen *g, int sig) {
    const qkv_lengthgen_options *o = g->o;
    if (o->json)
        qkv_set_error("stopped by %s after %d of %d models; %s holds them: continue with the same command and "
                      "--resume", qkv_signal_name(sig), qkv_lg_finished(g), g->n_runs, o->json);
    else
        qkv_set_error("stopped by %s after %d of %d models; %s (no --json: nothing to resume from)",
                      qkv_signal_name(sig), qkv_lg_finished(g), g->n_runs,
                      o->csv ? "the csv holds them" : "nothing was written");
}

int qkv_lengthgen_run(const qkv_lengthgen_options *o) {
    lengthgen g = {.o = o};
    if (check(&g) != 0) return -1;
    alloc_records(&g);
    int rc = 0;
    if (!o->resume) set_provenance(&g);
    else if (qkv_dist_rank() == 0 && qkv_lg_resume(&g) != 0) rc = -1;
    if (qkv_dist_size() > 1 && qkv_dist_any(rc) && rc == 0) {
        qkv_set_error("--resume: rank 0 could not read %s", o->json);
        rc = -1;
    }
    if (rc == 0 && qkv_dist_size() > 1) {
        if (o->resume && qkv_dist_rank() != 0) set_provenance(&g); /* only rank 0 writes it */
        for (int r = 0; r < g.n_runs; r++) exchange_record(&g, (size_t)r); /* rank 0's finished models */
    }
    if (rc == 0 && !o->quiet) {
        char randomized[64] = "";
        for (int s = 0; s < g.n_schemes; s++)
            if (g.schemes[s].randomized)
                snprintf(randomized, sizeof randomized, "randomized positions from [0, %d); ", g.randomize);
        printf("lengthgen: %s, decoder-only, %d layers x %d heads, dim %d, feed-forward %d; train on lengths 1..%d "
               "for %d steps (batch %d, AdamW lr %g, weight decay %g, clip %g, %s schedule); test greedy at 1..%d, "
               "%d sequences each; %s%d thread%s, %d model%s at once%s; %d of %d models already done\n",
               o->tasks ? o->tasks : qkv_seq_task_name((qkv_seq_task)o->task), o->layers, o->heads, o->dim, o->ff,
               o->train_max, o->steps, o->batch, o->lr, o->weight_decay, o->clip, qkv_schedule_kind_names[o->schedule],
               o->test_max, o->test_size, randomized, qkv_threads(), qkv_threads() == 1 ? "" : "s",
               o->jobs > 1 ? o->jobs : 1, o->jobs > 1 ? "s" : "",
               qkv_dist_size() > 1 ? " per rank" : "", qkv_lg_finished(&g), g.n_runs);
    }
    if (rc == 0) rc = train_missing(&g);
    if (rc > 0) {
        if (qkv_dist_rank() == 0 && o->plot && qkv_lg_write_plot(&g) != 0) rc = -1;
        else interrupted_message(&g, rc);
    } else if (rc == 0) {
        if (qkv_dist_rank() == 0) {
            qkv_lg_print_results(&g);
            if ((o->csv && qkv_lg_write_csv(&g) != 0) || (o->json && qkv_lg_write_json(&g) != 0) ||
                (o->plot && qkv_lg_write_plot(&g) != 0) || (o->distance_plot && qkv_lg_write_distance_plot(&g) != 0))
                rc = -1;
        }
        if (qkv_dist_size() > 1 && qkv_dist_any(rc)) {
            if (rc == 0) qkv_set_error("rank 0 could not write the results");
            rc = -1;
        }
    }
    free_records(&g);
    return rc;
}
