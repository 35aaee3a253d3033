/* spirals_task.h — the demo job: an MLP learns the two-spirals problem with SGD.
 *
 * Train and test sets are drawn from disjoint seeds. Each step samples a
 * minibatch with the run's RNG, runs forward and backward on one tape, takes an
 * SGD step and resets the tape. Deterministic in the seed for any thread count.
 */
#ifndef QKV_SPIRALS_TASK_H
#define QKV_SPIRALS_TASK_H

#include <stdio.h>

#include "core/params.h"

typedef struct qkv_spirals_config {
    int steps, batch, hidden, n_per_class, seed, log_every;
    float lr, momentum, noise;
    int print_tape;        /* print the first step's tape */
} qkv_spirals_config;

typedef struct qkv_spirals_result {
    float first_loss, final_loss;   /* minibatch loss at the first and last step */
    float train_accuracy, test_accuracy;
    double seconds;
} qkv_spirals_result;

void qkv_spirals_default_config(qkv_spirals_config *config);

/* Trains and evaluates. Progress lines go to log (NULL: silent). If trained is
 * not NULL, the model's parameters are handed over to it (the caller frees them
 * with qkv_params_free). */
void qkv_spirals_train(const qkv_spirals_config *config, FILE *log, qkv_spirals_result *result,
                       qkv_params *trained);

#endif
