/* spirals.c — see spirals.h. */
#include "train/tasks/spirals.h"

#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "core/ops/ops.h"
#include "data/spirals.h"
#include "train/tasks/registry.h"
#include "train/interrupt.h"
#include "train/settings.h"

#define N_CLASSES 2
#define TEST_SEED_OFFSET 1000003

typedef qkv_spirals_config C;
static const qkv_field fields[] = {   /* the checkpoint description's order */
    QKV_INT_FIELD("--batch", "batch", C, batch, 1, 65536, 128, "minibatch size"),
    QKV_INT_FIELD("--hidden", "hidden", C, hidden, 1, 4096, 64, "hidden width of the 3-layer MLP"),
    QKV_INT_FIELD("--points", "points", C, n_per_class, 2, 1e6, 500, "points per spiral"),
    QKV_FLOAT_FIELD("--noise", "noise", C, noise, 0, 10, 0.1, "angular noise of the spirals"),
    QKV_SEED_FIELD(C, seed, "seed for data, init and batches"),
};
#define N_FIELDS ((int)(sizeof fields / sizeof fields[0]))

void qkv_spirals_default_config(qkv_spirals_config *config) {
    memset(config, 0, sizeof *config);
    qkv_fields_defaults(fields, N_FIELDS, config);
}

/* Logits for n rows of x [n, 2]; x is viewed, not copied (it outlives the step). */
static qkv_tensor *logits_of(const qkv_spirals_task *t, qkv_tape *tape, float *x, int n) {
    qkv_tensor *input = qkv_tape_view(tape, 2, (int[]){n, 2}, x);
    input->name = "x";
    return qkv_mlp_forward(tape, &t->mlp, input);
}

static qkv_tensor *task_loss(void *self, qkv_tape *tape, long step) {
    qkv_spirals_task *t = self;
    int b = t->config.batch, first, n;   /* this tape's rows [first, first+n) of the batch */
    qkv_tape_batch_slice(tape, b, &first, &n);
    float *x = qkv_tape_alloc(tape, (size_t)n * 2 * sizeof(float));   /* the micro-batch's own rows */
    int32_t *y = qkv_tape_alloc(tape, (size_t)n * sizeof(int32_t));
    uint64_t stream = qkv_rng_make((uint64_t)t->config.seed).seed;
    for (int i = 0; i < n; i++) {
        uint64_t example = (uint64_t)step * (uint64_t)b + (uint64_t)(first + i);
        int row = (int)(qkv_rng_at(stream, example) % (uint64_t)t->n);
        x[2 * i] = t->train_x[2 * row];
        x[2 * i + 1] = t->train_x[2 * row + 1];
        y[i] = t->train_y[row];
    }
    return qkv_cross_entropy(tape, logits_of(t, tape, x, n), y, -1, NULL);
}

/* Share of rows whose largest logit is the label. */
static double accuracy(const qkv_spirals_task *t, qkv_tape *tape, float *x, const int32_t *y) {
    qkv_tensor *logits = logits_of(t, tape, x, t->n);
    int correct = 0;
    for (int i = 0; i < t->n; i++) {
        correct += qkv_argmax(logits->data + (size_t)i * N_CLASSES, N_CLASSES) == y[i];
    }
    qkv_tape_reset(tape);
    return (double)correct / t->n;
}

static void task_evaluate(void *self, qkv_tape *tape, qkv_metrics *metrics) {
    qkv_spirals_task *t = self;
    qkv_metrics_set(metrics, "test_acc", accuracy(t, tape, t->test_x, t->test_y));
    if (qkv_interrupt_poll()) return; /* the trainer drops a cut-short evaluation */
    qkv_metrics_set(metrics, "train_acc", accuracy(t, tape, t->train_x, t->train_y));
}

static void task_describe(void *self, qkv_config_kv *out) {
    qkv_task_kind_describe(&qkv_task_kind_spirals, &((qkv_spirals_task *)self)->config, out);
}

static void free_sets(qkv_spirals_task *t) {
    free(t->train_x); free(t->test_x); free(t->train_y); free(t->test_y);
}

int qkv_spirals_task_init(qkv_spirals_task *t, const qkv_spirals_config *config) {
    memset(t, 0, sizeof *t);
    t->config = *config;
    t->n = config->n_per_class * N_CLASSES;
    /* judged before (spirals_data_bytes); made in pieces a signal stops between (data/pieces.h) */
    t->train_x = qkv_try_malloc((size_t)t->n * 2 * sizeof(float), NULL, "the spirals");
    t->test_x = qkv_try_malloc((size_t)t->n * 2 * sizeof(float), NULL, "the spirals");
    t->train_y = qkv_try_malloc((size_t)t->n * sizeof(int32_t), NULL, "the spirals' labels");
    t->test_y = qkv_try_malloc((size_t)t->n * sizeof(int32_t), NULL, "the spirals' labels");
    if (!t->train_x || !t->test_x || !t->train_y || !t->test_y ||
        qkv_spirals_make_pieces(config->n_per_class, N_CLASSES, config->noise, (uint64_t)config->seed, t->train_x,
                                t->train_y, qkv_interrupt_poll) != 0 ||
        qkv_spirals_make_pieces(config->n_per_class, N_CLASSES, config->noise,
                                (uint64_t)config->seed + TEST_SEED_OFFSET, t->test_x, t->test_y,
                                qkv_interrupt_poll) != 0) {
        free_sets(t);
        return -1;
    }
    qkv_rng rng = qkv_rng_make((uint64_t)config->seed);
    qkv_mlp_init(&t->mlp, &t->params, "mlp", 3, (int[]){2, config->hidden, config->hidden, N_CLASSES},
                 QKV_ACT_RELU, &rng);
    t->task = (qkv_task){.name = "spirals", .self = t, .params = &t->params, .loss = task_loss,
                         .evaluate = task_evaluate, .describe = task_describe, .batch = config->batch,
                         .eval_chunk = t->n};
    return 0;
}

void qkv_spirals_task_free(qkv_spirals_task *t) {
    qkv_params_free(&t->params);
    free_sets(t);
}

/* ---- the registry's entry ------------------------------------------------------------ */

static void spirals_defaults(void *config) { qkv_spirals_default_config(config); }

static int spirals_check(void *config, qkv_trainer_config *trainer) {
    (void)config, (void)trainer;   /* every field's range is all there is to check */
    return 0;
}

static qkv_task *spirals_create(const void *config, int for_eval) {
    (void)for_eval;   /* both sets are made */
    qkv_spirals_task *t = qkv_malloc(sizeof *t, "the spirals task");
    if (qkv_spirals_task_init(t, config) != 0) {
        free(t);
        return NULL;
    }
    return &t->task;
}

static void spirals_destroy(qkv_task *task) {
    qkv_spirals_task_free(task->self);
    free(task->self);
}

static void spirals_banner(const qkv_task *task, const qkv_trainer_config *trainer, int threads) {
    const qkv_spirals_config *c = &((const qkv_spirals_task *)task->self)->config;
    printf("two spirals: MLP 2-%d-%d-2, %s lr %g momentum %g, batch %d, %d steps, %d thread%s\n", c->hidden,
           c->hidden, qkv_opt_kind_name(trainer->optim.kind), trainer->optim.lr, trainer->optim.momentum, c->batch,
           trainer->steps, threads, threads == 1 ? "" : "s");
}

/* The training and test spirals: two coordinates and a label a point. */
static size_t spirals_data_bytes(const void *config, int for_eval, char *what, size_t what_size) {
    (void)for_eval;   /* both sets are made */
    const qkv_spirals_config *c = config;
    size_t points = (size_t)c->n_per_class * N_CLASSES;
    snprintf(what, what_size, "2 x %zu points", points);
    return 2 * points * (2 * sizeof(float) + sizeof(int32_t));
}

const qkv_task_kind qkv_task_kind_spirals = {
    "spirals", "an MLP learns two spirals with SGD (the first demo)", sizeof(qkv_spirals_config), spirals_defaults, fields, N_FIELDS,
    {.steps = 2000, .log_every = 200, .target_key = "test_acc",
     .optim = {.kind = QKV_OPT_SGD, .lr = 0.1f, .momentum = 0.9f}, .schedule = {.kind = QKV_SCHED_CONSTANT}},
    spirals_check, spirals_create, spirals_destroy, spirals_banner, NULL, spirals_data_bytes};
