/* test_core.c — tensors, the tape, the RNG, errors and parameter lists. */
#include "tests/test_util.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>

START_TEST(tensor_create_and_shape) {
    qkv_tensor *t = qkv_tensor_create("w", 3, (int[]){2, 3, 4}, 1);
    ck_assert_int_eq(t->size, 24);
    ck_assert_ptr_nonnull(t->grad);
    char buf[QKV_SHAPE_STR_LEN];
    ck_assert_str_eq(qkv_shape_str(t, buf, sizeof buf), "[2,3,4]");
    for (size_t i = 0; i < t->size; i++) t->data[i] = (float)i;
    ck_assert_float_eq(qkv_at(t, 1, 2, 3, 0), 23.0f);
    qkv_tensor_free(t);
    qkv_tensor *scalar = qkv_tensor_create(NULL, 0, NULL, 0);
    ck_assert_int_eq(scalar->size, 1);
    ck_assert_str_eq(qkv_shape_str(scalar, buf, sizeof buf), "[]");
    qkv_tensor_free(scalar);
}
END_TEST

/* NaN, +-Inf and only those, counted across the blocks of 2^16 the count is
 * kept in 32 bits for, at edges of blocks and vectors; the largest finite float
 * and subnormals are not counted. */
START_TEST(count_nonfinite_counts_nan_and_inf_only) {
    size_t n = 3 * ((size_t)1 << 16) + 37;
    float *x = calloc(n, sizeof *x);
    const size_t at[] = {0, 15, 16, 65535, 65536, 131071, 131072, n - 1};
    const float bad[] = {NAN, INFINITY, -INFINITY, -NAN};
    for (size_t i = 0; i < sizeof at / sizeof at[0]; i++) x[at[i]] = bad[i % 4];
    x[1] = FLT_MAX, x[2] = -FLT_MAX, x[3] = 1e-45f, x[65537] = FLT_MAX;
    ck_assert_uint_eq(qkv_count_nonfinite(x, n), sizeof at / sizeof at[0]);
    ck_assert_uint_eq(qkv_count_nonfinite(x, 15), 1);
    ck_assert_uint_eq(qkv_count_nonfinite(x + 1, 14), 0);
    ck_assert_uint_eq(qkv_count_nonfinite(x, 0), 0);
    free(x);
}
END_TEST

START_TEST(tensor_bad_shapes_stop) {
    EXPECT_FATAL(qkv_tensor_create(NULL, 5, (int[]){1, 1, 1, 1, 1}, 0), "ndim 5");
    EXPECT_FATAL(qkv_tensor_create(NULL, 2, (int[]){3, 0}, 0), "dim 1 is 0");
    qkv_tensor *t = qkv_tensor_create(NULL, 2, (int[]){2, 2}, 0);
    EXPECT_FATAL(qkv_at(t, 2, 0, 0, 0), "out of range");
    EXPECT_FATAL(qkv_axis("sum", t, 2), "sum: axis 2 out of range for [2,2]");
    ck_assert_int_eq(qkv_axis("sum", t, -1), 1);
    qkv_tensor_free(t);
}
END_TEST

START_TEST(arena_reset_and_stale_use) {
    qkv_tape *tape = qkv_tape_create(1);
    qkv_tensor *a = qkv_tape_zeros(tape, 2, (int[]){3, 3});
    ck_assert_int_eq(((size_t)a->data) % 64, 0);
    size_t used = tape->arena_used;
    ck_assert_uint_gt(used, 0);
    qkv_tape_reset(tape);
    ck_assert_uint_eq(tape->arena_used, 0);
    EXPECT_FATAL(qkv_add(tape, a, a), "used after its tape was reset");
    /* A step larger than the first chunk grows the arena; reset merges it into one chunk. */
    for (int i = 0; i < 8; i++) qkv_tape_tensor(tape, 1, (int[]){1 << 20});
    ck_assert_int_gt(qkv_tape_n_chunks(tape), 1);
    qkv_tape_reset(tape);
    ck_assert_int_eq(qkv_tape_n_chunks(tape), 1);
    for (int i = 0; i < 8; i++) qkv_tape_tensor(tape, 1, (int[]){1 << 20});
    ck_assert_int_eq(qkv_tape_n_chunks(tape), 1); /* the steady state needs no malloc */
    qkv_tape_free(tape);
}
END_TEST

START_TEST(backward_accumulates_and_no_grad_records_nothing) {
    qkv_tape *tape = qkv_tape_create(1);
    qkv_tensor *w = tensor_of(1, (int[]){3}, (float[]){1, 2, 3}, 1);
    for (int round = 1; round <= 2; round++) {
        /* L = sum(w * w): dL/dw = 2w, accumulated over two backward passes. */
        qkv_tensor *loss = qkv_sum_all(tape, qkv_mul(tape, w, w));
        ck_assert_float_eq(loss->data[0], 14.0f);
        qkv_backward(tape, loss);
        for (int i = 0; i < 3; i++) ck_assert_float_eq(w->grad[i], 2.0f * (float)round * w->data[i]);
        qkv_tape_reset(tape);
    }
    qkv_tensor_zero_grad(w);
    ck_assert_float_eq(w->grad[0], 0.0f);
    qkv_tape_set_grad(tape, 0);
    qkv_tensor *y = qkv_mul(tape, w, w);
    ck_assert_int_eq(tape->n_nodes, 0);
    ck_assert_int_eq(y->requires_grad, 0);
    qkv_tape_set_grad(tape, 1);
    /* Inputs that need no gradient are not recorded either. */
    qkv_tensor *data = qkv_tape_zeros(tape, 1, (int[]){3});
    qkv_exp(tape, data);
    ck_assert_int_eq(tape->n_nodes, 0);
    EXPECT_FATAL(qkv_backward(tape, qkv_mul(tape, w, w)), "loss must be a scalar, got [3]");
    /* Two backward passes on one tape through an intermediate activation: each adds
     * exactly its own gradient (the activation's gradient restarts at 0). */
    qkv_tensor_zero_grad(w);
    qkv_tensor *twice = qkv_sum_all(tape, qkv_scale(tape, w, 2.0f));
    qkv_backward(tape, twice);
    qkv_backward(tape, twice);
    for (int i = 0; i < 3; i++) ck_assert_float_eq(w->grad[i], 4.0f);
    qkv_tensor_free(w);
    qkv_tape_free(tape);
}
END_TEST

START_TEST(tape_prints_one_line_per_node) {
    qkv_tape *tape = qkv_tape_create(1);
    qkv_tensor *w = qkv_tensor_create("w", 2, (int[]){4, 3}, 1);
    qkv_tensor *x = qkv_tape_zeros(tape, 2, (int[]){2, 3});
    x->name = "x";
    qkv_tensor *loss = qkv_mean_all(tape, qkv_matmul(tape, x, w, 0, 1));
    (void)loss;
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    qkv_tape_print(tape, out);
    fclose(out);
    ck_assert_ptr_nonnull(strstr(text, "matmul"));
    ck_assert_ptr_nonnull(strstr(text, "x[2,3], w[4,3] -> [2,4]"));
    ck_assert_msg(strstr(text, "mean_all       #0[2,4] -> []\n"), "%s", text); /* an activation by its node */
    int lines = 0;
    for (char *c = text; *c; c++) lines += *c == '\n';
    ck_assert_int_eq(lines, tape->n_nodes);
    free(text);
    qkv_tensor_free(w);
    qkv_tape_free(tape);
}
END_TEST

/* Attention names its six inputs (masks included) and says when it is causal. */
START_TEST(tape_names_the_inputs_of_attention) {
    qkv_tape *tape = qkv_tape_create(1);
    qkv_tensor *w = qkv_tensor_create("w", 4, (int[]){1, 2, 3, 4}, 1);
    qkv_tensor *pad = qkv_tape_zeros(tape, 2, (int[]){1, 3});
    qkv_attention_opts opts = {.causal = 1, .key_padding = pad};
    qkv_tensor *q = qkv_scale(tape, w, 2.0f);
    qkv_attention(tape, q, w, w, &opts, NULL);
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    qkv_tape_print(tape, out);
    fclose(out);
    ck_assert_msg(strstr(text, "attention      q=#0[1,2,3,4], k=w[1,2,3,4], v=w[1,2,3,4], bias=none, "
                               "key_padding=input[1,3], keep=none -> [1,2,3,4] causal\n"), "%s", text);
    free(text);
    qkv_tensor_free(w);
    qkv_tape_free(tape);
}
END_TEST

START_TEST(rng_is_counter_based_and_reproducible) {
    qkv_rng a = qkv_rng_make(42), b = qkv_rng_make(42), c = qkv_rng_make(43);
    uint64_t first = qkv_rng_u64(&a);
    ck_assert_uint_eq(first, qkv_rng_u64(&b));
    ck_assert_uint_ne(first, qkv_rng_u64(&c));
    ck_assert_uint_eq(first, qkv_rng_at(a.seed, 0));
    /* Fixed values: the same seed gives these numbers on every machine. */
    ck_assert_uint_eq(qkv_rng_at(0, 0), 0xe220a8397b1dcdafULL);
    double sum = 0, sum_sq = 0;
    qkv_rng r = qkv_rng_make(7);
    for (int i = 0; i < 100000; i++) {
        float z = qkv_rng_normal(&r);
        sum += z;
        sum_sq += (double)z * z;
    }
    ck_assert_double_lt(fabs(sum / 1e5), 0.02);
    ck_assert_double_lt(fabs(sum_sq / 1e5 - 1.0), 0.02);
    for (int i = 0; i < 1000; i++) {
        float u = qkv_rng_uniform(&r);
        ck_assert(u >= 0.0f && u < 1.0f);
        ck_assert_uint_lt(qkv_rng_below(&r, 7), 7);
    }
}
END_TEST

static void returning_hook(const char *message) { (void)message; }

START_TEST(input_errors_are_per_call_messages) {
    qkv_set_error("%s: %s", "file.npy", "bad magic");
    ck_assert_str_eq(qkv_last_error(), "file.npy: bad magic");
    qkv_error_hook old = qkv_set_error_hook(returning_hook);
    ck_assert_ptr_nonnull(old);
    qkv_set_error_hook(NULL);
}
END_TEST

START_TEST(params_list) {
    qkv_params params = {0};
    qkv_tensor *a = qkv_params_new(&params, "enc.0.w", 2, (int[]){3, 4});
    qkv_params_new(&params, "enc.0.b", 1, (int[]){4});
    ck_assert_int_eq(qkv_params_count(&params), 16);
    ck_assert_ptr_eq(qkv_params_find(&params, "enc.0.w"), a);
    ck_assert_ptr_null(qkv_params_find(&params, "nope"));
    EXPECT_FATAL(qkv_params_new(&params, "enc.0.w", 1, (int[]){1}), "duplicate parameter name enc.0.w");
    a->grad[0] = 5;
    qkv_params_zero_grad(&params);
    ck_assert_float_eq(a->grad[0], 0);
    qkv_params_free(&params);
    ck_assert_int_eq(params.n, 0);
}
END_TEST

/* The checker itself must catch a wrong gradient. */
static void wrong_backward(qkv_node *node) {
    float *g = qkv_tensor_grad(node->inputs[0]);
    for (size_t i = 0; i < node->out->size; i++) g[i] += 2.0f * node->out->grad[i]; /* true: 3 */
}
static qkv_tensor *triple_with_wrong_grad(qkv_tape *tape, qkv_tensor *const *in, const void *ctx) {
    (void)ctx;
    qkv_tensor *out = qkv_tape_tensor(tape, in[0]->ndim, in[0]->shape);
    for (size_t i = 0; i < out->size; i++) out->data[i] = 3.0f * in[0]->data[i];
    qkv_tape_record(tape, "triple", out, wrong_backward, 1, in);
    return out;
}

START_TEST(gradcheck_detects_a_wrong_gradient) {
    qkv_gradcheck_case c = {.name = "triple", .fn = triple_with_wrong_grad, .n_inputs = 1, .ndim = {1}, .shape = {{5}}};
    qkv_gradcheck_result r = qkv_gradcheck_run_case(&c, 3);
    ck_assert_int_eq(r.n_checked, 5);
    ck_assert_double_gt(r.max_err, 0.1);
}
END_TEST

Suite *suite_core(void) {
    Suite *s = suite_create("core");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, tensor_create_and_shape);
    tcase_add_test(tc, tensor_bad_shapes_stop);
    tcase_add_test(tc, count_nonfinite_counts_nan_and_inf_only);
    tcase_add_test(tc, arena_reset_and_stale_use);
    tcase_add_test(tc, backward_accumulates_and_no_grad_records_nothing);
    tcase_add_test(tc, tape_prints_one_line_per_node);
    tcase_add_test(tc, tape_names_the_inputs_of_attention);
    tcase_add_test(tc, rng_is_counter_based_and_reproducible);
    tcase_add_test(tc, input_errors_are_per_call_messages);
    tcase_add_test(tc, params_list);
    tcase_add_test(tc, gradcheck_detects_a_wrong_gradient);
    suite_add_tcase(s, tc);
    return s;
}
