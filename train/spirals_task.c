/* spirals_task.c — see spirals_task.h. */
#include "spirals_task.h"

#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "core/ops.h"
#include "data/spirals.h"
#include "layers/linear.h"
#include "optim/sgd.h"

#define N_CLASSES 2
#define TEST_SEED_OFFSET 1000003

void qkv_spirals_default_config(qkv_spirals_config *config) {
    config->steps = 2000;
    config->batch = 128;
    config->hidden = 64;
    config->n_per_class = 500;
    config->seed = 1;
    config->log_every = 200;
    config->lr = 0.1f;
    config->momentum = 0.9f;
    config->noise = 0.1f;
    config->print_tape = 0;
}

/* Fraction of rows whose argmax logit is the label, evaluated without a tape record. */
static float accuracy(qkv_tape *tape, const qkv_mlp *mlp, const float *x, const int32_t *y, int n) {
    int was = qkv_tape_set_grad(tape, 0);
    qkv_tensor *input = qkv_tape_tensor(tape, 2, (int[]){n, 2});
    memcpy(input->data, x, (size_t)n * 2 * sizeof(float));
    qkv_tensor *logits = qkv_mlp_forward(tape, mlp, input);
    int correct = 0;
    for (int i = 0; i < n; i++) {
        const float *row = logits->data + (size_t)i * N_CLASSES;
        int best = 0;
        for (int c = 1; c < N_CLASSES; c++) if (row[c] > row[best]) best = c;
        correct += best == y[i];
    }
    qkv_tape_set_grad(tape, was);
    qkv_tape_reset(tape);
    return (float)correct / (float)n;
}

void qkv_spirals_train(const qkv_spirals_config *config, FILE *log, qkv_spirals_result *result,
                       qkv_params *trained) {
    int n = config->n_per_class * N_CLASSES;
    float *train_x = malloc((size_t)n * 2 * sizeof(float)), *test_x = malloc((size_t)n * 2 * sizeof(float));
    int32_t *train_y = malloc((size_t)n * sizeof(int32_t)), *test_y = malloc((size_t)n * sizeof(int32_t));
    qkv_spirals_make(config->n_per_class, N_CLASSES, config->noise, (uint64_t)config->seed, train_x, train_y);
    qkv_spirals_make(config->n_per_class, N_CLASSES, config->noise,
                     (uint64_t)config->seed + TEST_SEED_OFFSET, test_x, test_y);

    qkv_rng rng = qkv_rng_make((uint64_t)config->seed);
    qkv_params params = {0};
    qkv_mlp mlp;
    qkv_mlp_init(&mlp, &params, "mlp", 3, (int[]){2, config->hidden, config->hidden, N_CLASSES},
                 QKV_ACT_RELU, &rng);
    qkv_sgd opt;
    qkv_sgd_init(&opt, config->lr, config->momentum);
    qkv_tape *tape = qkv_tape_create((uint64_t)config->seed);
    int32_t *batch_y = malloc((size_t)config->batch * sizeof(int32_t));

    double start = omp_get_wtime();
    for (int step = 1; step <= config->steps; step++) {
        qkv_tensor *x = qkv_tape_tensor(tape, 2, (int[]){config->batch, 2});
        x->name = "x";
        for (int i = 0; i < config->batch; i++) {
            int row = (int)qkv_rng_below(&rng, (uint32_t)n);
            x->data[2 * i] = train_x[2 * row];
            x->data[2 * i + 1] = train_x[2 * row + 1];
            batch_y[i] = train_y[row];
        }
        qkv_tensor *logits = qkv_mlp_forward(tape, &mlp, x);
        qkv_tensor *loss = qkv_cross_entropy(tape, logits, batch_y, -1, NULL);
        qkv_params_zero_grad(&params);
        qkv_backward(tape, loss);
        if (config->print_tape && step == 1 && log) {
            fprintf(log, "tape of step 1 (%d nodes):\n", tape->n_nodes);
            qkv_tape_print(tape, log);
        }
        qkv_sgd_step(&opt, &params);
        float loss_value = loss->data[0];
        if (step == 1) result->first_loss = loss_value;
        result->final_loss = loss_value;
        qkv_tape_reset(tape);
        if (log && config->log_every > 0 && (step % config->log_every == 0 || step == 1))
            fprintf(log, "step %5d  loss %.4f\n", step, loss_value);
    }
    result->seconds = omp_get_wtime() - start;
    result->train_accuracy = accuracy(tape, &mlp, train_x, train_y, n);
    result->test_accuracy = accuracy(tape, &mlp, test_x, test_y, n);

    qkv_tape_free(tape);
    qkv_sgd_free(&opt);
    if (trained) *trained = params;
    else qkv_params_free(&params);
    free(batch_y);
    free(train_x); free(test_x); free(train_y); free(test_y);
}
