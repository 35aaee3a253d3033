/* points.c — point-cloud classification. See points.h. */
#include "train/tasks/points.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "core/ops/ops.h"
#include "data/off.h"
#include "train/interrupt.h"
#include "train/step.h"
#include "train/tasks/registry.h"
#include "train/tasks/set_fields.h"

#define TEST_SEED_OFFSET 0x5e75ULL

/* ---- points --------------------------------------------------------------------------- */

static const char *const rotation_names[] = {"none", "so3", "z", NULL}; /* enum qkv_points_rotation */

typedef qkv_points_task_config C;
/* The checkpoint description's order. "classes" is the model's outputs: the
 * directory's classes, or --classes synthetic shapes. "rotate" came later:
 * written only when it is not z, read as z when absent. */
static const qkv_field fields[] = {
    QKV_TEXT_FIELD("--data", "data", C, data_dir, "synthetic", "a ModelNet directory: CLASS/train/*.off, CLASS/test/*.off"),
    QKV_DATA_IDENTITY_FIELDS(C, data_identity),
    QKV_INT_FIELD("--classes", NULL, C, data.classes, 2, 1 << 16, 10, "synthetic shape classes"),
    QKV_INT_FIELD(NULL, "classes", C, model.n_outputs, 2, 1 << 16, 10, NULL),
    QKV_INT_FIELD("--points", "points", C, data.n_points, 1, 1 << 20, 256, "points per cloud"),
    {"--rotate", "rotate", QKV_FIELD_CHOICE, offsetof(C, data.rotate), 0, 0, QKV_ROTATE_Z, rotation_names, NULL,
     "random rotation of synthetic clouds", QKV_FIELD_OPTIONAL, 0, NULL},
    QKV_FLAG_FIELD("--skip-bad", C, skip_bad, "skip (and count) malformed OFF files"),
    QKV_SET_MODEL_FIELDS(C, QKV_SET_MODEL_ISAB, 128, 4, 2, 16, 1),
    QKV_INT_FIELD("--batch", "batch", C, batch, 1, 1 << 20, 32, "clouds per batch"),
    QKV_INT_FIELD("--test-size", "test_size", C, test_size, 1, 1 << 24, 2000, "held-out synthetic clouds"),
    QKV_SEED_FIELD(C, seed, "seed for data, init and batches"),
};
#define N_FIELDS ((int)(sizeof fields / sizeof fields[0]))

void qkv_points_task_default_config(qkv_points_task_config *c) {
    memset(c, 0, sizeof *c);
    c->data = qkv_points_config_default(10, 256);   /* jitter, scale: not settings */
    c->model.d_in = 3;
    qkv_fields_defaults(fields, N_FIELDS, c);
}

static qkv_tensor *points_logits(qkv_points_task *t, qkv_tape *tape, float *xyz, int b) {
    int n = t->config.data.n_points;
    return qkv_set_model_forward(tape, &t->model, qkv_tape_view(tape, 3, (int[]){b, n, 3}, xyz), NULL);
}

static qkv_tensor *points_loss(void *self, qkv_tape *tape, long step) {
    qkv_points_task *t = self;
    int n = t->config.data.n_points, first, b;   /* this tape's clouds [first, first+b) of the batch */
    qkv_tape_batch_slice(tape, t->config.batch, &first, &b);
    uint64_t example0 = (uint64_t)step * (uint64_t)t->config.batch + (uint64_t)first;
    float *xyz = qkv_tape_alloc(tape, (size_t)b * (size_t)n * 3 * sizeof(float)); /* the micro-batch's own */
    int32_t *labels = qkv_tape_alloc(tape, (size_t)b * sizeof(int32_t));
    if (!t->config.data_dir) {
        qkv_points_batch(&t->config.data, t->config.seed, example0, b, xyz, labels);
    } else {
        uint64_t stream = qkv_rng_make(t->config.seed).seed;
        for (int i = 0; i < b; i++) {
            int cloud = (int)(qkv_rng_at(stream, example0 + (uint64_t)i) % (uint64_t)t->train.count);
            memcpy(xyz + (size_t)i * n * 3, t->train.xyz + (size_t)cloud * n * 3, (size_t)n * 3 * sizeof(float));
            labels[i] = t->train.labels[cloud];
        }
    }
    return qkv_cross_entropy(tape, points_logits(t, tape, xyz, b), labels, -1, NULL);
}

/* Test accuracy: each batch-sized chunk of the held-out clouds counts its correct
 * predictions on a worker (train/step.h: qkv_parallel_chunks); the counts add in
 * chunk order. */
typedef struct points_eval {
    qkv_points_task *t;
    int *correct;
} points_eval;

static void points_eval_chunk(void *ctx, qkv_tape *tape, int chunk) {
    points_eval *e = ctx;
    qkv_points_task *t = e->t;
    int n = t->test.n_points, classes = t->test.classes, first = chunk * t->config.batch;
    int b = t->test.count - first < t->config.batch ? t->test.count - first : t->config.batch;
    qkv_tensor *logits = points_logits(t, tape, t->test.xyz + (size_t)first * n * 3, b);
    e->correct[chunk] = 0;
    for (int i = 0; i < b; i++)
        e->correct[chunk] += qkv_argmax(logits->data + (size_t)i * classes, classes) == t->test.labels[first + i];
}

static void points_evaluate(void *self, qkv_tape *tape, qkv_metrics *metrics) {
    (void)tape; /* the chunks run on their workers' tapes */
    qkv_points_task *t = self;
    int chunks = (t->test.count + t->config.batch - 1) / t->config.batch, correct = 0;
    points_eval e = {t, qkv_malloc((size_t)chunks * sizeof *e.correct, "the evaluation's counts")};
    qkv_parallel_chunks(chunks, points_eval_chunk, &e, &t->params);
    for (int c = 0; c < chunks; c++) correct += e.correct[c];
    free(e.correct);
    qkv_metrics_set(metrics, "test_acc", (double)correct / t->test.count);
}

static void points_describe(void *self, qkv_config_kv *out) {
    qkv_task_kind_describe(&qkv_task_kind_points, &((qkv_points_task *)self)->config, out);
}

int qkv_points_task_init(qkv_points_task *t, const qkv_points_task_config *config, int *skipped,
                         char *first_skipped, size_t first_skipped_size) {
    memset(t, 0, sizeof *t);
    t->config = *config;
    int n = config->data.n_points;
    if (skipped) *skipped = 0;
    if (config->data_dir) {
        int count = qkv_modelnet_load(config->data_dir, n, config->seed, config->skip_bad, &t->train, &t->test,
                                      first_skipped, first_skipped_size);
        if (count < 0) return -1;
        if (skipped) *skipped = count;
        t->config.model.n_outputs = t->train.classes;
    } else {
        /* in pieces a signal stops between (data/pieces.h); its memory judged before (points_data_bytes) */
        t->test = (qkv_point_set){.count = config->test_size, .n_points = n, .classes = config->data.classes};
        t->test.xyz = qkv_try_malloc(qkv_size_mul((size_t)config->test_size * n, 3 * sizeof(float)), NULL,
                                     "the test clouds");
        t->test.labels = qkv_try_malloc((size_t)config->test_size * sizeof(int32_t), NULL, "the test labels");
        if (!t->test.xyz || !t->test.labels ||
            qkv_points_make_set(&config->data, config->seed ^ TEST_SEED_OFFSET, config->test_size, t->test.xyz,
                                t->test.labels, qkv_interrupt_poll) != 0) {
            qkv_point_set_free(&t->test);
            return -1;
        }
        t->config.model.n_outputs = config->data.classes;
    }
    qkv_rng rng = qkv_rng_make(config->seed);
    qkv_set_model_init(&t->model, &t->params, "set", &t->config.model, &rng);
    t->task = (qkv_task){.name = "points", .self = t, .params = &t->params, .loss = points_loss,
                         .evaluate = points_evaluate, .describe = points_describe, .batch = config->batch,
                         .micro_batch = 4, .eval_chunk = t->test.count < config->batch ? t->test.count : config->batch,
                         .eval_chunks = (t->test.count + config->batch - 1) / config->batch};
    return 0;
}

void qkv_points_task_free(qkv_points_task *t) {
    qkv_params_free(&t->params);
    qkv_point_set_free(&t->train);
    qkv_point_set_free(&t->test);
}


/* ---- the registry's entry ------------------------------------------------------------ */

static void points_defaults(void *config) { qkv_points_task_default_config(config); }

static int points_check(void *config, qkv_trainer_config *trainer) {
    qkv_points_task_config *c = config;
    if (!trainer) c->data.classes = c->model.n_outputs;   /* from a checkpoint: its classes */
    if (!c->data_dir && c->data.classes > qkv_points_class_count_max())   /* either way: flags and checkpoints */
        return qkv_set_error("--classes %d: there are %d synthetic shapes", c->data.classes,
                             qkv_points_class_count_max()), -1;
    c->model.d_in = 3;
    return qkv_set_model_fields_check(&c->model);
}

/* A directory's two splits are read together; training also works out its
 * identity (evaluation has the checkpoint's, which the registry checked). */
static qkv_task *points_create(const void *config, int for_eval) {
    qkv_points_task *t = qkv_malloc(sizeof *t, "the points task");
    int skipped = 0;
    char first_skipped[256] = "";
    if (qkv_points_task_init(t, config, &skipped, first_skipped, sizeof first_skipped) != 0) {
        free(t);
        return NULL;
    }
    if (!for_eval && t->config.data_dir && qkv_data_identity_of(t->config.data_dir, &t->config.data_identity) != 0) {
        qkv_points_task_free(t);
        free(t);
        return NULL;
    }
    if (skipped) printf("skipped %d bad files (first: %s)\n", skipped, first_skipped);
    return &t->task;
}

static void points_destroy(qkv_task *task) {
    qkv_points_task_free(task->self);
    free(task->self);
}

static void points_banner(const qkv_task *task, const qkv_trainer_config *trainer, int threads) {
    const qkv_points_task_config *c = &((const qkv_points_task *)task->self)->config;
    printf("points: %s, %d classes, %d points, %s width %d, %d heads, %zu parameters, %s lr %g, batch %d, "
           "%d steps, %d thread%s\n",
           c->data_dir ? c->data_dir : "synthetic shapes", c->model.n_outputs, c->data.n_points,
           qkv_set_model_kind_name(c->model.kind), c->model.width, c->model.n_heads, qkv_params_count(task->params),
           qkv_opt_kind_name(trainer->optim.kind), trainer->optim.lr, c->batch, trainer->steps, threads,
           threads == 1 ? "" : "s");
}

/* The synthetic test clouds, or a --data directory's clouds of both splits (its
 * listing counts them; evaluation reads both too), each with its label and, while
 * read, its error slot. A directory that cannot be listed is create's to say. */
static size_t points_data_bytes(const void *config, int for_eval, char *what, size_t what_size) {
    (void)for_eval;
    const qkv_points_task_config *c = config;
    size_t cloud = (size_t)c->data.n_points * 3 * sizeof(float) + sizeof(int32_t);
    long files;
    if (!c->data_dir) {
        snprintf(what, what_size, "%d test clouds of %d points", c->test_size, c->data.n_points);
        return qkv_size_mul((size_t)c->test_size, cloud);
    }
    if (qkv_modelnet_count(c->data_dir, &files) != 0) return 0;
    snprintf(what, what_size, "%ld clouds of %d points from %s", files, c->data.n_points, c->data_dir);
    return qkv_size_mul((size_t)files, cloud + sizeof(char *));
}

const qkv_task_kind qkv_task_kind_points = {
    "points", "a Set Transformer classifies point clouds (synthetic, or --data DIR of OFF meshes)",
    sizeof(qkv_points_task_config), points_defaults, fields, N_FIELDS,
    {.steps = 1800, .eval_every = 600, .log_every = 100, .target_key = "test_acc", .target = 0.99f, .clip = 1.0f,
     .optim = {.kind = QKV_OPT_ADAM, .lr = 3e-3f}, .schedule = {.kind = QKV_SCHED_COSINE, .warmup = 100}},
    points_check, points_create, points_destroy, points_banner, NULL, points_data_bytes};
