/* test_determinism.c — results are bitwise identical for 1 and 2 threads:
 * matmul, a whole-tensor sum, and full training steps of the demo model. */
#include "tests/test_util.h"

#include "train/tasks/sequence.h"
#include "train/tasks/spirals.h"

#define N 256
static void matmul_forward_backward(float *out, void *ctx) {
    (void)ctx;
    qkv_tape *tape = qkv_tape_create(1);
    qkv_rng rng = qkv_rng_make(5);
    qkv_tensor *a = random_tensor_from(&rng, 2, (int[]){N, N}, 1);
    qkv_tensor *b = random_tensor_from(&rng, 2, (int[]){N, N}, 1);
    qkv_tensor *c = qkv_matmul(tape, a, b, 0, 1);
    qkv_backward(tape, qkv_sum_all(tape, qkv_mul(tape, c, c)));
    out = append_floats(out, c->data, N * N);
    out = append_floats(out, a->grad, N * N);
    append_floats(out, b->grad, N * N);
    qkv_tensor_free(a);
    qkv_tensor_free(b);
    qkv_tape_free(tape);
}

START_TEST(matmul_is_thread_independent) {
    expect_same_for_1_and_2_threads(matmul_forward_backward, NULL, 3 * N * N, "matmul forward and backward");
}
END_TEST

#define BIG 1000003
static void big_sum(float *out, void *ctx) {
    (void)ctx;
    qkv_tape *tape = qkv_tape_create(1);
    qkv_tensor *x = tensor_of(1, (int[]){BIG}, NULL, 1);
    fill_normal_seeded(x->data, x->size, 9, 0.5f, 3.0f);
    out[0] = qkv_sum_all(tape, x)->data[0];
    out[1] = qkv_mean_all(tape, x)->data[0];
    out[2] = (float)qkv_sum_fixed(x->data, x->size);
    qkv_tensor_free(x);
    qkv_tape_free(tape);
}

START_TEST(sum_is_thread_independent) {
    expect_same_for_1_and_2_threads(big_sum, NULL, 3, "sum_all, mean_all, sum_fixed");
}
END_TEST

/* 30 SGD steps of the MLP demo, with a batch large enough to run in parallel. */
static size_t spirals_floats;
static void spirals_training(float *out, void *ctx) {
    (void)ctx;
    qkv_spirals_config config;
    qkv_spirals_default_config(&config);
    config.batch = 512;
    config.hidden = 128;
    config.n_per_class = 300;
    qkv_spirals_task model;
    qkv_spirals_task_init(&model, &config);
    qkv_optimizer_config sgd = {.kind = QKV_OPT_SGD, .lr = 0.1f, .momentum = 0.9f};
    spirals_floats = train_and_dump(&model.task, 30, sgd, out);
    qkv_spirals_task_free(&model);
}

/* 3 AdamW steps of the reversal transformer (the default demo model), with
 * dropout on so that the dropout stream is part of the comparison. */
static size_t reverse_floats;
static void reverse_training(float *out, void *ctx) {
    (void)ctx;
    qkv_seq_model_config config;
    qkv_seq_model_default_config(&config);
    config.test_size = 64;
    config.dropout = 0.1f;
    qkv_seq_model model;
    qkv_seq_model_init(&model, &config);
    qkv_optimizer_config adamw = {.kind = QKV_OPT_ADAMW, .lr = 3e-3f, .weight_decay = 0.01f};
    reverse_floats = train_and_dump(&model.task, 3, adamw, out);
    qkv_seq_model_free(&model);
}

START_TEST(demo_training_is_thread_independent) {
    spirals_training(NULL, NULL);
    expect_same_for_1_and_2_threads(spirals_training, NULL, spirals_floats, "spirals parameters and loss");
    reverse_training(NULL, NULL);
    expect_same_for_1_and_2_threads(reverse_training, NULL, reverse_floats, "reverse parameters and loss");
}
END_TEST

Suite *suite_determinism(void) {
    Suite *s = suite_create("determinism");
    TCase *tc = tcase_create("threads");
    tcase_set_timeout(tc, 0);
    tcase_add_test(tc, matmul_is_thread_independent);
    tcase_add_test(tc, sum_is_thread_independent);
    tcase_add_test(tc, demo_training_is_thread_independent);
    suite_add_tcase(s, tc);
    return s;
}
