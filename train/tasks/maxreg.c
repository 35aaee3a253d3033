/* maxreg.c — max regression: the task and its registry entry (--compare is
 * maxreg_compare.c). See maxreg.h. */
#include "train/tasks/maxreg.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "core/ops/ops.h"
#include "core/fileio.h"
#include "core/io/json.h"
#include "train/dist.h"
#include "train/tasks/registry.h"
#include "train/tasks/set_fields.h"
#include "train/interrupt.h"
#include "train/session.h"

#define TEST_SEED_OFFSET 0x5e75ULL

/* ---- maxreg ------------------------------------------------------------------------------ */

typedef qkv_maxreg_task_config C;
static const qkv_field fields[] = {   /* the checkpoint description's order */
    QKV_INT_FIELD("--min-size", "min_size", C, data.min_size, 1, 1 << 20, 1, "smallest set"),
    QKV_INT_FIELD("--max-size", "max_size", C, data.max_size, 1, 1 << 20, 10, "largest set"),
    QKV_SET_MODEL_FIELDS(C, QKV_SET_MODEL_SAB, 64, 4, 2, 16, 0),
    QKV_INT_FIELD("--batch", "batch", C, batch, 1, 1 << 20, 128, "sets per batch"),
    QKV_INT_FIELD("--test-size", "test_size", C, test_size, 1, 1 << 24, 1000, "held-out sets"),
    QKV_SEED_FIELD(C, seed, "seed for data, init and batches"),
    QKV_FLAG_FIELD("--compare", C, compare,
                   "train mean, sum, max pooling and SAB+PMA over --seeds seeds; print a table with 95% intervals"),
    QKV_INT_FIELD("--seeds", NULL, C, seeds, 1, 64, 3, "--compare: seeds per model (--seed, --seed + 1, ...)"),
    QKV_INT_FIELD("--jobs", NULL, C, jobs, 1, 64, 1, "--compare: models trained at once, one thread each (same results)"),
};
#define N_FIELDS ((int)(sizeof fields / sizeof fields[0]))

void qkv_maxreg_task_default_config(qkv_maxreg_task_config *c) {
    memset(c, 0, sizeof *c);
    c->data = qkv_maxreg_config_default();   /* the value range: not a setting */
    c->model.d_in = 1;
    c->model.n_outputs = 1;
    qkv_fields_defaults(fields, N_FIELDS, c);
}

/* A micro-batch, and an evaluation chunk, hold at most about this many set
 * elements (padded): a unit of work short enough that a signal is answered
 * between units within about a second (train/interrupt.h) even for sets of
 * 100,000. Sets of up to 512 keep the old 8 sets per micro-batch and a whole
 * batch per evaluation chunk, so their results are unchanged. */
#define UNIT_ELEMENTS 4096

/* Sets per micro-batch (the trainer's default) and per evaluation chunk. */
static int sets_per_unit(const C *c) {
    int n = UNIT_ELEMENTS / c->data.max_size;
    return n < 1 ? 1 : n > 8 ? 8 : n;
}
static int eval_chunk(const C *c) { return sets_per_unit(c) == 8 ? c->batch : sets_per_unit(c); }

/* Predictions [b, 1] for examples first.. of the data set with this seed; their
 * targets in *targets. The sets live in the tape's arena (a micro-batch's own). */
static qkv_tensor *maxreg_predict(qkv_maxreg_task *t, qkv_tape *tape, uint64_t seed, uint64_t first, int b,
                                  float **targets) {
    int n = t->config.data.max_size;
    float *x = qkv_tape_alloc(tape, (size_t)b * (size_t)n * sizeof(float));
    float *mask = qkv_tape_alloc(tape, (size_t)b * (size_t)n * sizeof(float));
    *targets = qkv_tape_alloc(tape, (size_t)b * sizeof(float));
    qkv_maxreg_batch(&t->config.data, seed, first, b, x, mask, *targets, NULL);
    return qkv_set_model_forward(tape, &t->model, qkv_tape_view(tape, 3, (int[]){b, n, 1}, x),
                                 qkv_tape_view(tape, 2, (int[]){b, n}, mask));
}

/* Mean absolute error: mean |prediction - target|. */
static qkv_tensor *maxreg_loss(void *self, qkv_tape *tape, long step) {
    qkv_maxreg_task *t = self;
    int first, b;   /* this tape's examples [first, first+b) of the batch */
    qkv_tape_batch_slice(tape, t->config.batch, &first, &b);
    uint64_t example0 = (uint64_t)step * (uint64_t)t->config.batch + (uint64_t)first;
    float *targets;
    qkv_tensor *pred = maxreg_predict(t, tape, t->config.seed, example0, b, &targets);
    qkv_tensor *target = qkv_tape_view(tape, 2, (int[]){b, 1}, targets);
    return qkv_mean_all(tape, qkv_abs(tape, qkv_sub(tape, pred, target)));
}

static void maxreg_evaluate(void *self, qkv_tape *tape, qkv_metrics *metrics) {
    qkv_maxreg_task *t = self;
    double total = 0.0;
    const int chunk = eval_chunk(&t->config);
    for (int first = 0; first < t->config.test_size && !qkv_interrupt_poll(); first += chunk) {
        int b = t->config.test_size - first < chunk ? t->config.test_size - first : chunk;
        float *targets;
        qkv_tensor *pred = maxreg_predict(t, tape, t->config.seed ^ TEST_SEED_OFFSET, (uint64_t)first, b, &targets);
        for (int i = 0; i < b; i++) total += fabs((double)pred->data[i] - (double)targets[i]);
        qkv_tape_reset(tape);
    }
    qkv_metrics_set(metrics, "test_mae", total / t->config.test_size);
}

static void maxreg_describe(void *self, qkv_config_kv *out) {
    qkv_task_kind_describe(&qkv_task_kind_maxreg, &((qkv_maxreg_task *)self)->config, out);
}

void qkv_maxreg_task_init(qkv_maxreg_task *t, const qkv_maxreg_task_config *config) {
    memset(t, 0, sizeof *t);
    t->config = *config;
    qkv_rng rng = qkv_rng_make(config->seed);
    qkv_set_model_init(&t->model, &t->params, "set", &config->model, &rng);
    t->task = (qkv_task){.name = "maxreg", .self = t, .params = &t->params, .loss = maxreg_loss,
                         .evaluate = maxreg_evaluate, .describe = maxreg_describe, .batch = config->batch,
                         .micro_batch = sets_per_unit(config), .eval_chunk = eval_chunk(config)};
}

void qkv_maxreg_task_free(qkv_maxreg_task *t) {
    qkv_params_free(&t->params);
}

/* ---- the registry's entry ------------------------------------------------------------ */

static void maxreg_defaults(void *config) { qkv_maxreg_task_default_config(config); }

static int maxreg_check(void *config, qkv_trainer_config *trainer) {
    qkv_maxreg_task_config *c = config;
    c->model.d_in = c->model.n_outputs = 1;
    if (qkv_set_model_fields_check(&c->model) != 0) return -1;
    if (c->data.min_size > c->data.max_size)
        return qkv_set_error("--min-size %d exceeds --max-size %d", c->data.min_size, c->data.max_size), -1;
    if (trainer && c->compare && (trainer->save_path || trainer->resume_path || trainer->csv_path))
        return qkv_set_error("--compare trains four models: --save, --resume and --csv do not apply"), -1;
    if (trainer && !c->compare) {   /* --compare's flags: refused, not ignored (a value off its default) */
        C d;
        qkv_maxreg_task_default_config(&d);
        if (c->seeds != d.seeds) return qkv_set_error("--seeds applies to --compare only"), -1;
        if (c->jobs != d.jobs) return qkv_set_error("--jobs applies to --compare only"), -1;
    }
    return 0;
}

static qkv_task *maxreg_create(const void *config, int for_eval) {
    (void)for_eval;   /* the data is made on the fly */
    qkv_maxreg_task *t = qkv_malloc(sizeof *t, "the maxreg task");
    qkv_maxreg_task_init(t, config);
    return &t->task;
}

static void maxreg_destroy(qkv_task *task) {
    qkv_maxreg_task_free(task->self);
    free(task->self);
}

static void maxreg_banner(const qkv_task *task, const qkv_trainer_config *trainer, int threads) {
    const qkv_maxreg_task_config *c = &((const qkv_maxreg_task *)task->self)->config;
    printf("maxreg: sets of %d..%d reals, %s width %d, %d heads, %s lr %g, batch %d, %d steps, %d thread%s\n",
           c->data.min_size, c->data.max_size, qkv_set_model_kind_name(c->model.kind), c->model.width,
           c->model.n_heads, qkv_opt_kind_name(trainer->optim.kind), trainer->optim.lr, c->batch, trainer->steps,
           threads, threads == 1 ? "" : "s");
}

static int maxreg_run(const void *config, const qkv_trainer_config *trainer) {
    const qkv_maxreg_task_config *c = config;
    return c->compare ? qkv_maxreg_compare(&qkv_task_kind_maxreg, c, *trainer) : 1;
}

const qkv_task_kind qkv_task_kind_maxreg = {
    "maxreg", "a set model predicts the maximum of a set (--compare: pooling baselines vs SAB+PMA)",
    sizeof(qkv_maxreg_task_config), maxreg_defaults, fields, N_FIELDS,
    {.steps = 20000, .eval_every = 2000, .log_every = 1000, .target_key = "test_mae", .lower_is_better = 1,
     .optim = {.kind = QKV_OPT_ADAM, .lr = 1e-3f}, .schedule = {.kind = QKV_SCHED_COSINE, .min_factor = 0.1f}},
    maxreg_check, maxreg_create, maxreg_destroy, maxreg_banner, maxreg_run,
    NULL};   /* no stored set: each micro-batch and evaluation chunk makes its sets in its tape (measured) */
