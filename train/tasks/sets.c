/* sets.c — point-cloud classification and max regression. See sets.h. */
#include "train/tasks/sets.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "core/ops.h"
#include "data/off.h"

#define TEST_SEED_OFFSET 0x5e75ULL


/* Data as a tensor viewing the task's buffers: no copy (they outlive the step). */
static qkv_tensor *data_tensor(qkv_tape *tape, float *values, int ndim, const int *shape) {
    return qkv_tape_view(tape, ndim, shape, values);
}

/* ---- points --------------------------------------------------------------------------- */

void qkv_points_task_default_config(qkv_points_task_config *c) {
    memset(c, 0, sizeof *c);
    c->model = (qkv_set_model_config){.kind = QKV_SET_MODEL_ISAB, .d_in = 3, .width = 128, .n_heads = 4,
                                      .n_outputs = 10, .n_layers = 2, .n_inducing = 16, .layer_norm = 0};
    c->data = qkv_points_config_default(10, 256);
    c->data.rotate = QKV_ROTATE_Z; /* ModelNet's convention: objects keep their up axis */
    c->batch = 32;
    c->test_size = 2000;
    c->seed = 1;
}

static qkv_tensor *points_logits(qkv_points_task *t, qkv_tape *tape, float *xyz, int b) {
    int n = t->config.data.n_points;
    return qkv_set_model_forward(tape, &t->model, data_tensor(tape, xyz, 3, (int[]){b, n, 3}), NULL);
}

static qkv_tensor *points_loss(void *self, qkv_tape *tape, long step) {
    qkv_points_task *t = self;
    int n = t->config.data.n_points, first, b;   /* this tape's clouds [first, first+b) of the batch */
    qkv_tape_batch_slice(tape, t->config.batch, &first, &b);
    uint64_t example0 = (uint64_t)step * (uint64_t)t->config.batch + (uint64_t)first;
    if (!t->config.data_dir) {
        qkv_points_batch(&t->config.data, t->config.seed, example0, b, t->batch_xyz, t->batch_labels);
    } else {
        uint64_t stream = qkv_rng_make(t->config.seed).seed;
        for (int i = 0; i < b; i++) {
            int cloud = (int)(qkv_rng_at(stream, example0 + (uint64_t)i) % (uint64_t)t->train.count);
            memcpy(t->batch_xyz + (size_t)i * n * 3, t->train.xyz + (size_t)cloud * n * 3, (size_t)n * 3 * sizeof(float));
            t->batch_labels[i] = t->train.labels[cloud];
        }
    }
    return qkv_cross_entropy(tape, points_logits(t, tape, t->batch_xyz, b), t->batch_labels, -1, NULL);
}

static void points_evaluate(void *self, qkv_tape *tape, qkv_metrics *metrics) {
    qkv_points_task *t = self;
    int n = t->test.n_points, classes = t->test.classes, correct = 0;
    for (int first = 0; first < t->test.count; first += t->config.batch) {
        int b = t->test.count - first < t->config.batch ? t->test.count - first : t->config.batch;
        qkv_tensor *logits = points_logits(t, tape, t->test.xyz + (size_t)first * n * 3, b);
        for (int i = 0; i < b; i++) {
            correct += qkv_argmax(logits->data + (size_t)i * classes, classes) == t->test.labels[first + i];
        }
        qkv_tape_reset(tape);
    }
    qkv_metrics_set(metrics, "test_acc", (double)correct / t->test.count);
}

static void describe_model(const qkv_set_model_config *m, qkv_config_kv *out) {
    qkv_config_add(out, "model", "%s", qkv_set_model_kind_name(m->kind));
    qkv_config_add(out, "width", "%d", m->width);
    qkv_config_add(out, "heads", "%d", m->n_heads);
    qkv_config_add(out, "layers", "%d", m->n_layers);
    qkv_config_add(out, "inducing", "%d", m->n_inducing);
    qkv_config_add(out, "layer_norm", "%d", m->layer_norm);
}

static void points_describe(void *self, qkv_config_kv *out) {
    const qkv_points_task_config *c = &((qkv_points_task *)self)->config;
    qkv_config_add(out, "task", "points");
    qkv_config_add(out, "data", "%s", c->data_dir ? c->data_dir : "synthetic");
    qkv_config_add(out, "classes", "%d", c->model.n_outputs);
    qkv_config_add(out, "points", "%d", c->data.n_points);
    describe_model(&c->model, out);
    qkv_config_add(out, "batch", "%d", c->batch);
    qkv_config_add(out, "test_size", "%d", c->test_size);
    qkv_config_add(out, "seed", "%llu", c->seed);
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
        t->test = (qkv_point_set){.count = config->test_size, .n_points = n, .classes = config->data.classes};
        t->test.xyz = qkv_malloc((size_t)config->test_size * n * 3 * sizeof(float), "the test clouds");
        t->test.labels = qkv_malloc((size_t)config->test_size * sizeof(int32_t), "the test labels");
        qkv_points_batch(&config->data, config->seed ^ TEST_SEED_OFFSET, 0, config->test_size, t->test.xyz,
                         t->test.labels);
        t->config.model.n_outputs = config->data.classes;
    }
    t->batch_xyz = qkv_malloc((size_t)config->batch * n * 3 * sizeof(float), "the batch clouds");
    t->batch_labels = qkv_malloc((size_t)config->batch * sizeof(int32_t), "the batch labels");
    qkv_rng rng = qkv_rng_make(config->seed);
    qkv_set_model_init(&t->model, &t->params, "set", &t->config.model, &rng);
    t->task = (qkv_task){"points", t, &t->params, points_loss, points_evaluate, points_describe, config->batch, 0};
    return 0;
}

void qkv_points_task_free(qkv_points_task *t) {
    qkv_params_free(&t->params);
    qkv_point_set_free(&t->train);
    qkv_point_set_free(&t->test);
    free(t->batch_xyz);
    free(t->batch_labels);
}

/* ---- maxreg ------------------------------------------------------------------------------ */

void qkv_maxreg_task_default_config(qkv_maxreg_task_config *c) {
    memset(c, 0, sizeof *c);
    c->model = (qkv_set_model_config){.kind = QKV_SET_MODEL_SAB, .d_in = 1, .width = 64, .n_heads = 4,
                                      .n_outputs = 1, .n_layers = 2, .n_inducing = 16};
    c->data = qkv_maxreg_config_default();
    c->batch = 128;
    c->test_size = 1000;
    c->seed = 1;
}

/* Predictions [b, 1] for examples first.. of the data set with this seed. */
static qkv_tensor *maxreg_predict(qkv_maxreg_task *t, qkv_tape *tape, uint64_t seed, uint64_t first, int b) {
    int n = t->config.data.max_size;
    qkv_maxreg_batch(&t->config.data, seed, first, b, t->x, t->mask, t->targets, NULL);
    qkv_tensor *x = data_tensor(tape, t->x, 3, (int[]){b, n, 1});
    qkv_tensor *mask = data_tensor(tape, t->mask, 2, (int[]){b, n});
    return qkv_set_model_forward(tape, &t->model, x, mask);
}

/* Mean absolute error: mean |prediction - target|. */
static qkv_tensor *maxreg_loss(void *self, qkv_tape *tape, long step) {
    qkv_maxreg_task *t = self;
    int first, b;   /* this tape's examples [first, first+b) of the batch */
    qkv_tape_batch_slice(tape, t->config.batch, &first, &b);
    uint64_t example0 = (uint64_t)step * (uint64_t)t->config.batch + (uint64_t)first;
    qkv_tensor *pred = maxreg_predict(t, tape, t->config.seed, example0, b);
    qkv_tensor *target = data_tensor(tape, t->targets, 2, (int[]){b, 1});
    return qkv_mean_all(tape, qkv_abs(tape, qkv_sub(tape, pred, target)));
}

static void maxreg_evaluate(void *self, qkv_tape *tape, qkv_metrics *metrics) {
    qkv_maxreg_task *t = self;
    double total = 0.0;
    for (int first = 0; first < t->config.test_size; first += t->config.batch) {
        int b = t->config.test_size - first < t->config.batch ? t->config.test_size - first : t->config.batch;
        qkv_tensor *pred = maxreg_predict(t, tape, t->config.seed ^ TEST_SEED_OFFSET, (uint64_t)first, b);
        for (int i = 0; i < b; i++) total += fabs((double)pred->data[i] - (double)t->targets[i]);
        qkv_tape_reset(tape);
    }
    qkv_metrics_set(metrics, "test_mae", total / t->config.test_size);
}

static void maxreg_describe(void *self, qkv_config_kv *out) {
    const qkv_maxreg_task_config *c = &((qkv_maxreg_task *)self)->config;
    qkv_config_add(out, "task", "maxreg");
    qkv_config_add(out, "min_size", "%d", c->data.min_size);
    qkv_config_add(out, "max_size", "%d", c->data.max_size);
    describe_model(&c->model, out);
    qkv_config_add(out, "batch", "%d", c->batch);
    qkv_config_add(out, "test_size", "%d", c->test_size);
    qkv_config_add(out, "seed", "%llu", c->seed);
}

void qkv_maxreg_task_init(qkv_maxreg_task *t, const qkv_maxreg_task_config *config) {
    memset(t, 0, sizeof *t);
    t->config = *config;
    size_t n = (size_t)config->batch * config->data.max_size;
    t->x = qkv_malloc(n * sizeof(float), "the batch");
    t->mask = qkv_malloc(n * sizeof(float), "the batch mask");
    t->targets = qkv_malloc((size_t)config->batch * sizeof(float), "the batch targets");
    qkv_rng rng = qkv_rng_make(config->seed);
    qkv_set_model_init(&t->model, &t->params, "set", &config->model, &rng);
    t->task = (qkv_task){"maxreg", t, &t->params, maxreg_loss, maxreg_evaluate, maxreg_describe, config->batch, 0};
}

void qkv_maxreg_task_free(qkv_maxreg_task *t) {
    qkv_params_free(&t->params);
    free(t->x);
    free(t->mask);
    free(t->targets);
}
