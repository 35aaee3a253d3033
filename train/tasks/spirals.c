/* spirals.c — see spirals.h. */
#include "train/tasks/spirals.h"

#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "core/ops.h"
#include "data/spirals.h"

#define N_CLASSES 2
#define TEST_SEED_OFFSET 1000003

void qkv_spirals_default_config(qkv_spirals_config *config) {
    *config = (qkv_spirals_config){.batch = 128, .hidden = 64, .n_per_class = 500, .seed = 1, .noise = 0.1f};
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
    float *x = qkv_tape_alloc(tape, (size_t)n * 2 * sizeof(float));
    uint64_t stream = qkv_rng_make((uint64_t)t->config.seed).seed;
    for (int i = 0; i < n; i++) {
        uint64_t example = (uint64_t)step * (uint64_t)b + (uint64_t)(first + i);
        int row = (int)(qkv_rng_at(stream, example) % (uint64_t)t->n);
        x[2 * i] = t->train_x[2 * row];
        x[2 * i + 1] = t->train_x[2 * row + 1];
        t->batch_y[i] = t->train_y[row];
    }
    return qkv_cross_entropy(tape, logits_of(t, tape, x, n), t->batch_y, -1, NULL);
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
    qkv_metrics_set(metrics, "train_acc", accuracy(t, tape, t->train_x, t->train_y));
}

static void task_describe(void *self, qkv_config_kv *out) {
    const qkv_spirals_config *c = &((qkv_spirals_task *)self)->config;
    qkv_config_add(out, "task", "spirals");
    qkv_config_add(out, "batch", "%d", c->batch);
    qkv_config_add(out, "hidden", "%d", c->hidden);
    qkv_config_add(out, "points", "%d", c->n_per_class);
    qkv_config_add(out, "noise", "%g", c->noise);
    qkv_config_add(out, "seed", "%d", c->seed);
}

void qkv_spirals_task_init(qkv_spirals_task *t, const qkv_spirals_config *config) {
    memset(t, 0, sizeof *t);
    t->config = *config;
    t->n = config->n_per_class * N_CLASSES;
    t->train_x = qkv_malloc((size_t)t->n * 2 * sizeof(float), "the spirals");
    t->test_x = qkv_malloc((size_t)t->n * 2 * sizeof(float), "the spirals");
    t->train_y = qkv_malloc((size_t)t->n * sizeof(int32_t), "the spirals' labels");
    t->test_y = qkv_malloc((size_t)t->n * sizeof(int32_t), "the spirals' labels");
    t->batch_y = qkv_malloc((size_t)config->batch * sizeof(int32_t), "the batch labels");
    qkv_spirals_make(config->n_per_class, N_CLASSES, config->noise, (uint64_t)config->seed, t->train_x, t->train_y);
    qkv_spirals_make(config->n_per_class, N_CLASSES, config->noise, (uint64_t)config->seed + TEST_SEED_OFFSET,
                     t->test_x, t->test_y);
    qkv_rng rng = qkv_rng_make((uint64_t)config->seed);
    qkv_mlp_init(&t->mlp, &t->params, "mlp", 3, (int[]){2, config->hidden, config->hidden, N_CLASSES},
                 QKV_ACT_RELU, &rng);
    t->task = (qkv_task){"spirals", t, &t->params, task_loss, task_evaluate, task_describe, config->batch, 0};
}

void qkv_spirals_task_free(qkv_spirals_task *t) {
    qkv_params_free(&t->params);
    free(t->train_x); free(t->test_x); free(t->train_y); free(t->test_y); free(t->batch_y);
}
