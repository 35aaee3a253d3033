/* test_norm.c — layer norm: hand-computed values, the statistics of its
 * output, error paths, and bitwise thread independence. */
#include <stdlib.h>

#include "tests/test_util.h"

/* x = [1,2,3,4]: mean 2.5, biased var 1.25, y = (x - 2.5) / sqrt(1.25 + eps). */
START_TEST(test_layer_norm_values) {
    qkv_tape *tape = qkv_tape_create(1);
    const float xv[] = {1, 2, 3, 4};
    qkv_tensor *x = tensor_of(1, (int[]){4}, xv, 0);
    const double expect_eps0[] = {-1.3416407864998738, -0.4472135954999579, 0.4472135954999579,
                                  1.3416407864998738};
    const double expect_eps5[] = {-1.3416354199689269, -0.447211806656309, 0.447211806656309,
                                  1.3416354199689269};
    qkv_tensor *y0 = qkv_layer_norm(tape, x, NULL, NULL, 0.0f);
    qkv_tensor *y5 = qkv_layer_norm(tape, x, NULL, NULL, 1e-5f);
    for (int i = 0; i < 4; i++) {
        ck_assert_close(y0->data[i], expect_eps0[i], 1e-6);
        ck_assert_close(y5->data[i], expect_eps5[i], 1e-6);
    }
    /* Affine: y * gamma + beta. */
    const float gv[] = {2, -1, 0.5f, 0}, bv[] = {0.5f, 1, -2, 3};
    qkv_tensor *gamma = tensor_of(1, (int[]){4}, gv, 0), *beta = tensor_of(1, (int[]){4}, bv, 0);
    qkv_tensor *ya = qkv_layer_norm(tape, x, gamma, beta, 0.0f);
    for (int i = 0; i < 4; i++) ck_assert_close(ya->data[i], expect_eps0[i] * gv[i] + bv[i], 1e-6);
    /* Rows are independent: [[1,2,3,4],[10,20,30,40]] normalizes both rows to the same values. */
    const float x2v[] = {1, 2, 3, 4, 10, 20, 30, 40};
    qkv_tensor *x2 = tensor_of(2, (int[]){2, 4}, x2v, 0);
    qkv_tensor *y2 = qkv_layer_norm(tape, x2, NULL, NULL, 0.0f);
    ck_assert_int_eq(y2->ndim, 2);
    for (int i = 0; i < 4; i++) {
        ck_assert_close(y2->data[i], expect_eps0[i], 1e-6);
        ck_assert_close(y2->data[4 + i], expect_eps0[i], 1e-6);
    }
    qkv_tensor_free(x); qkv_tensor_free(x2); qkv_tensor_free(gamma); qkv_tensor_free(beta);
    qkv_tape_free(tape);
}
END_TEST

/* A constant row has var 0: y = 0 (rstd = 1/sqrt(eps) stays finite), then beta. */
START_TEST(test_layer_norm_constant_row) {
    qkv_tape *tape = qkv_tape_create(1);
    qkv_tensor *x = tensor_of(2, (int[]){2, 3}, (const float[]){5, 5, 5, -1, -1, -1}, 0);
    qkv_tensor *beta = tensor_of(1, (int[]){3}, (const float[]){1, 2, 3}, 0);
    qkv_tensor *y = qkv_layer_norm(tape, x, NULL, beta, 1e-5f);
    for (int i = 0; i < 6; i++) ck_assert_float_eq(y->data[i], (float)(i % 3 + 1));
    qkv_tensor_free(x); qkv_tensor_free(beta);
    qkv_tape_free(tape);
}
END_TEST

/* Every row of the output has mean 0 and biased variance 1 (eps 0). */
START_TEST(test_layer_norm_statistics) {
    enum { ROWS = 16, D = 37 };
    qkv_tape *tape = qkv_tape_create(1);
    qkv_tensor *x = tensor_of(3, (int[]){2, 8, D}, NULL, 0);
    fill_normal_seeded(x->data, x->size, 7, 3.0f, 5.0f);
    qkv_tensor *y = qkv_layer_norm(tape, x, NULL, NULL, 0.0f);
    for (int r = 0; r < ROWS; r++) {
        double sum = 0, squares = 0;
        for (int i = 0; i < D; i++) sum += y->data[r * D + i];
        for (int i = 0; i < D; i++) squares += (double)y->data[r * D + i] * y->data[r * D + i];
        ck_assert_close(sum / D, 0.0, 1e-6);
        ck_assert_close(squares / D - (sum / D) * (sum / D), 1.0, 1e-5);
    }
    qkv_tensor_free(x);
    qkv_tape_free(tape);
}
END_TEST

/* For L = sum(y): dbeta = rows, dgamma[d] = sum_r xhat[r,d], and dx = 0 (each row of
 * xhat sums to 0 whatever x is). Backward adds: a second pass (y's own gradient
 * cleared, since activation gradients accumulate too) doubles dbeta. */
START_TEST(test_layer_norm_backward_sum) {
    enum { ROWS = 5, D = 6 };
    qkv_tape *tape = qkv_tape_create(1);
    qkv_tensor *x = tensor_of(2, (int[]){ROWS, D}, NULL, 1);
    qkv_tensor *gamma = tensor_of(1, (int[]){D}, NULL, 1), *beta = tensor_of(1, (int[]){D}, NULL, 1);
    fill_normal_seeded(x->data, x->size, 3, 0.0f, 2.0f);
    qkv_tensor_fill(gamma, 1.0f);
    qkv_tensor *plain = qkv_layer_norm(tape, x, NULL, NULL, 1e-5f);
    qkv_tensor *y = qkv_layer_norm(tape, x, gamma, beta, 1e-5f);
    backward_ones(tape, y);
    for (int d = 0; d < D; d++) {
        double xhat_sum = 0;
        for (int r = 0; r < ROWS; r++) xhat_sum += plain->data[r * D + d];
        ck_assert_close(beta->grad[d], ROWS, 1e-6);
        ck_assert_close(gamma->grad[d], xhat_sum, 1e-5);
    }
    for (int i = 0; i < ROWS * D; i++) ck_assert_close(x->grad[i], 0.0, 1e-5);
    memset(y->grad, 0, y->size * sizeof(float));
    backward_ones(tape, y);
    for (int d = 0; d < D; d++) ck_assert_close(beta->grad[d], 2 * ROWS, 1e-6);
    qkv_tensor_free(x); qkv_tensor_free(gamma); qkv_tensor_free(beta);
    qkv_tape_free(tape);
}
END_TEST

/* No node is recorded without grad mode or without an input that needs a gradient. */
START_TEST(test_layer_norm_records) {
    qkv_tape *tape = qkv_tape_create(1);
    qkv_tensor *x = tensor_of(2, (int[]){2, 3}, NULL, 1), *data = tensor_of(2, (int[]){2, 3}, NULL, 0);
    qkv_layer_norm(tape, data, NULL, NULL, 1e-5f);
    ck_assert_int_eq(tape->n_nodes, 0);
    qkv_tape_set_grad(tape, 0);
    qkv_layer_norm(tape, x, NULL, NULL, 1e-5f);
    ck_assert_int_eq(tape->n_nodes, 0);
    qkv_tape_set_grad(tape, 1);
    qkv_tensor *y = qkv_layer_norm(tape, x, NULL, NULL, 1e-5f);
    ck_assert_int_eq(tape->n_nodes, 1);
    ck_assert_str_eq(tape->nodes[0].op, "layer_norm");
    ck_assert_int_eq(y->requires_grad, 1);
    qkv_tensor_free(x); qkv_tensor_free(data);
    qkv_tape_free(tape);
}
END_TEST

START_TEST(test_layer_norm_errors) {
    qkv_tape *tape = qkv_tape_create(1);
    qkv_tensor *x = tensor_of(2, (int[]){4, 8}, NULL, 1);
    qkv_tensor *g5 = tensor_of(1, (int[]){5}, NULL, 1), *g8 = tensor_of(1, (int[]){8}, NULL, 1);
    qkv_tensor *g2d = tensor_of(2, (int[]){1, 8}, NULL, 1), *scalar = tensor_of(0, (int[]){1}, NULL, 1);
    EXPECT_FATAL(qkv_layer_norm(tape, x, g5, NULL, 1e-5f), "layer_norm: gamma [5] does not match the last dim 8 of x [4,8]");
    EXPECT_FATAL(qkv_layer_norm(tape, x, g8, g5, 1e-5f), "layer_norm: beta [5] does not match the last dim 8 of x [4,8]");
    EXPECT_FATAL(qkv_layer_norm(tape, x, g2d, NULL, 1e-5f), "gamma [1,8]");
    EXPECT_FATAL(qkv_layer_norm(tape, scalar, NULL, NULL, 1e-5f), "layer_norm: x [] is a scalar");
    EXPECT_FATAL(qkv_layer_norm(tape, x, NULL, NULL, -1.0f), "layer_norm: eps -1 must be >= 0 (x [4,8])");
    EXPECT_FATAL(qkv_layer_norm(tape, NULL, NULL, NULL, 1e-5f), "layer_norm");
    /* An activation used after its tape was reset. */
    qkv_tensor *y = qkv_layer_norm(tape, x, NULL, NULL, 1e-5f);
    qkv_tape_reset(tape);
    EXPECT_FATAL(qkv_layer_norm(tape, y, NULL, NULL, 1e-5f), "layer_norm: activation");
    ck_assert_int_eq(tape->n_nodes, 0);
    qkv_tensor_free(x); qkv_tensor_free(g5); qkv_tensor_free(g8); qkv_tensor_free(g2d);
    qkv_tensor_free(scalar);
    qkv_tape_free(tape);
}
END_TEST

/* Forward and backward on [4096,256] with gamma and beta; out gets y, dx, dgamma
 * and dbeta. */
enum { BIG_ROWS = 4096, BIG_D = 256, BIG_N = BIG_ROWS * BIG_D };
static void layer_norm_run(float *out, void *ctx) {
    (void)ctx;
    qkv_tape *tape = qkv_tape_create(1);
    qkv_tensor *x = tensor_of(2, (int[]){BIG_ROWS, BIG_D}, NULL, 1);
    qkv_tensor *gamma = tensor_of(1, (int[]){BIG_D}, NULL, 1), *beta = tensor_of(1, (int[]){BIG_D}, NULL, 1);
    qkv_rng rng = qkv_rng_make(11);
    qkv_fill_normal(x->data, BIG_N, &rng, 0.5f, 2.0f);
    qkv_fill_normal(gamma->data, BIG_D, &rng, 1.0f, 0.3f);
    qkv_fill_normal(beta->data, BIG_D, &rng, 0.0f, 0.3f);
    float *seed = malloc(BIG_N * sizeof(float));
    qkv_fill_normal(seed, BIG_N, &rng, 0.0f, 1.0f);
    qkv_tensor *y = qkv_layer_norm(tape, x, gamma, beta, 1e-5f);
    qkv_backward_seeded(tape, y, seed);
    out = append_floats(out, y->data, BIG_N);
    out = append_floats(out, x->grad, BIG_N);
    out = append_floats(out, gamma->grad, BIG_D);
    append_floats(out, beta->grad, BIG_D);
    free(seed);
    qkv_tensor_free(x); qkv_tensor_free(gamma); qkv_tensor_free(beta);
    qkv_tape_free(tape);
}

START_TEST(test_layer_norm_threads) {
    expect_same_for_1_and_2_threads(layer_norm_run, NULL, 2 * (size_t)BIG_N + 2 * BIG_D, "layer_norm");
}
END_TEST

Suite *suite_norm(void) {
    Suite *s = suite_create("norm");
    TCase *tc = tcase_create("layer_norm");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_layer_norm_values);
    tcase_add_test(tc, test_layer_norm_constant_row);
    tcase_add_test(tc, test_layer_norm_statistics);
    tcase_add_test(tc, test_layer_norm_backward_sum);
    tcase_add_test(tc, test_layer_norm_records);
    tcase_add_test(tc, test_layer_norm_errors);
    tcase_add_test(tc, test_layer_norm_threads);
    suite_add_tcase(s, tc);
    return s;
}
