/* test_determinism.c — results are bitwise identical for 1 and 2 threads:
 * matmul, a whole-tensor sum, and full training steps of the demo model. */
#include "test_util.h"

#include <omp.h>
#include <stdlib.h>

#include "train/spirals_task.h"

/* Runs f with 1 thread, then 2, and compares the n floats it writes. */
static void same_for_1_and_2_threads(void (*f)(float *out), size_t n) {
    float *one = malloc(n * sizeof(float)), *two = malloc(n * sizeof(float));
    int saved = qkv_threads();
    qkv_set_threads(1);
    f(one);
    qkv_set_threads(2);
    f(two);
    qkv_set_threads(saved);
    ck_assert_msg(memcmp(one, two, n * sizeof(float)) == 0, "1 and 2 threads differ");
    free(one);
    free(two);
}

#define N 256
static void matmul_forward_backward(float *out) {
    qkv_tape *tape = qkv_tape_create(1);
    qkv_rng rng = qkv_rng_make(5);
    qkv_tensor *a = qkv_tensor_create("a", 2, (int[]){N, N}, 1);
    qkv_tensor *b = qkv_tensor_create("b", 2, (int[]){N, N}, 1);
    qkv_fill_normal(a->data, a->size, &rng, 0, 1);
    qkv_fill_normal(b->data, b->size, &rng, 0, 1);
    qkv_tensor *c = qkv_matmul(tape, a, b, 0, 1);
    qkv_backward(tape, qkv_sum_all(tape, qkv_mul(tape, c, c)));
    memcpy(out, c->data, N * N * sizeof(float));
    memcpy(out + N * N, a->grad, N * N * sizeof(float));
    memcpy(out + 2 * N * N, b->grad, N * N * sizeof(float));
    qkv_tensor_free(a);
    qkv_tensor_free(b);
    qkv_tape_free(tape);
}

START_TEST(matmul_is_thread_independent) { same_for_1_and_2_threads(matmul_forward_backward, 3 * N * N); }
END_TEST

#define BIG 1000003
static void big_sum(float *out) {
    qkv_tape *tape = qkv_tape_create(1);
    qkv_rng rng = qkv_rng_make(9);
    qkv_tensor *x = qkv_tensor_create("x", 1, (int[]){BIG}, 1);
    qkv_fill_normal(x->data, x->size, &rng, 0.5f, 3.0f);
    out[0] = qkv_sum_all(tape, x)->data[0];
    out[1] = qkv_mean_all(tape, x)->data[0];
    out[2] = (float)qkv_sum_fixed(x->data, x->size);
    qkv_tensor_free(x);
    qkv_tape_free(tape);
}

START_TEST(sum_is_thread_independent) { same_for_1_and_2_threads(big_sum, 3); }
END_TEST

/* 30 SGD steps of the demo MLP with a batch large enough to run in parallel. */
static size_t demo_param_count;
static void demo_training(float *out) {
    qkv_spirals_config config;
    qkv_spirals_default_config(&config);
    config.steps = 30;
    config.batch = 512;
    config.hidden = 128;
    config.n_per_class = 300;
    qkv_spirals_result result;
    qkv_params params;
    qkv_spirals_train(&config, NULL, &result, &params);
    size_t off = 0;
    for (int i = 0; i < params.n; i++) {
        if (out) memcpy(out + off, params.items[i]->data, params.items[i]->size * sizeof(float));
        off += params.items[i]->size;
    }
    if (out) out[off] = result.final_loss;
    demo_param_count = off + 1;
    qkv_params_free(&params);
}

START_TEST(demo_training_is_thread_independent) {
    demo_training(NULL);
    same_for_1_and_2_threads(demo_training, demo_param_count);
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
