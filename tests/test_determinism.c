/* test_determinism.c — results are bitwise identical for 1 and 2 threads:
 * matmul, a whole-tensor sum, and full training steps of the demo model. */
#include "tests/test_util.h"

#include <stdint.h>
#include <stdlib.h>

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

/* The contract of the fixed sums, written out: each chunk of QKV_REDUCE_CHUNK a
 * chain in double in element order, chunks then added in order. The interleaved
 * chains (QKV_SUM_LANES at a time) must give exactly these bits. */
static double chain(const float *x, size_t n, int squares) {
    double s = 0.0;
    for (size_t i = 0; i < n; i++) s += squares ? (double)x[i] * x[i] : x[i];
    return s;
}

/* Normal values spread over 2^-30 .. 2^30, so that sums in double round and
 * their order shows in the bits. */
static void fill_spread(float *x, size_t n, uint64_t seed) {
    fill_normal_seeded(x, n, seed, 0.0f, 1.0f);
    for (size_t i = 0; i < n; i++) x[i] = ldexpf(x[i], (int)(i * 7919 % 61) - 30);
}

static double chunks_in_order(const float *x, size_t n, int squares) {
    double total = 0.0;
    for (size_t begin = 0; begin < n; begin += QKV_REDUCE_CHUNK)
        total += chain(x + begin, n - begin < QKV_REDUCE_CHUNK ? n - begin : QKV_REDUCE_CHUNK, squares);
    return total;
}

START_TEST(interleaved_sums_are_the_chains_in_order) {
    enum { COUNT = 11 }; /* one full group of lanes and a partial one */
    static const size_t lens[COUNT] = {4096, 1, 0, 4095, 77, 4096, 3000, 2, 4096, 513, 4096};
    float *data = qkv_malloc(COUNT * QKV_REDUCE_CHUNK * sizeof(float), "test data");
    fill_spread(data, COUNT * QKV_REDUCE_CHUNK, 3);
    const float *x[COUNT];
    double sums[COUNT];
    for (int c = 0; c < COUNT; c++) x[c] = data + (size_t)c * QKV_REDUCE_CHUNK;
    qkv_sum_squares_each(COUNT, x, lens, sums);
    for (int c = 0; c < COUNT; c++) {
        ck_assert_msg(sums[c] == chain(x[c], lens[c], 1), "array %d: %.17g against %.17g", c, sums[c],
                      chain(x[c], lens[c], 1));
        ck_assert(sums[c] == qkv_sum_squares_fixed(x[c], lens[c]));
    }
    /* 10 chunks and a tail: a group of 8 chunks and one of 3 */
    size_t n = 10 * QKV_REDUCE_CHUNK + 1234;
    float *big = qkv_malloc(n * sizeof(float), "test data");
    fill_spread(big, n, 4);
    ck_assert(qkv_sum_fixed(big, n) == chunks_in_order(big, n, 0));
    ck_assert(qkv_sum_squares_fixed(big, n) == chunks_in_order(big, n, 1));
    ck_assert(qkv_sum_fixed(big, n) != chain(big, n, 0)); /* the data tells the orders apart */
    ck_assert(qkv_sum_squares_fixed(big, n) != chain(big, n, 1));
    free(big);
    free(data);
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
    tcase_add_test(tc, interleaved_sums_are_the_chains_in_order);
    tcase_add_test(tc, demo_training_is_thread_independent);
    suite_add_tcase(s, tc);
    return s;
}
