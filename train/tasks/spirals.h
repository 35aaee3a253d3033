/* spirals.h — the first demo as a trainer task: an MLP learns the
 * two-spirals problem.
 *
 * Train and test sets are drawn from disjoint seeds. Step s's minibatch is the
 * rows qkv_rng_at(stream, s * batch + i) mod n of the training set: a pure
 * function of (seed, s), so resumed runs see the same batches. Metrics:
 * train_acc and test_acc (argmax of the logits).
 */
#ifndef QKV_TASKS_SPIRALS_H
#define QKV_TASKS_SPIRALS_H

#include <stdint.h>

#include "layers/linear.h"
#include "train/trainer.h"

typedef struct qkv_spirals_config {
    int batch, hidden, n_per_class;
    float noise;
    unsigned long long seed;
} qkv_spirals_config;

typedef struct qkv_spirals_task {
    qkv_spirals_config config;
    qkv_params params;
    qkv_mlp mlp;
    int n;                              /* rows per set */
    float *train_x, *test_x;            /* [n, 2] */
    int32_t *train_y, *test_y;
    qkv_task task;
} qkv_spirals_task;

void qkv_spirals_default_config(qkv_spirals_config *config);
/* 0; or -1 (nothing left to free) when the sets' memory cannot be had (the
 * error says so) or a signal stopped their making (train/interrupt.h). */
int qkv_spirals_task_init(qkv_spirals_task *t, const qkv_spirals_config *config);
void qkv_spirals_task_free(qkv_spirals_task *t);

#endif
