/* test_reduce.c — sum, mean, max, sum_all, mean_all: values by hand,
 * shapes with keepdim, gradient accumulation, errors, and bitwise thread
 * independence on large inputs. */
#include "tests/test_util.h"

START_TEST(test_sum_mean_values) {
    qkv_tape *tape = qkv_tape_create(1);
    const float v[6] = {1, 2, 3, 4, 5, 6};
    qkv_tensor *x = tensor_of(2, (int[]){2, 3}, v, 0);

    qkv_tensor *s0 = qkv_sum(tape, x, 0, 0);
    assert_shape(s0, 1, (int[]){3});
    assert_values_near(s0, (float[]){5, 7, 9}, 3, 0);

    qkv_tensor *s1 = qkv_sum(tape, x, -1, 1);
    assert_shape(s1, 2, (int[]){2, 1});
    assert_values_near(s1, (float[]){6, 15}, 2, 0);

    qkv_tensor *m1 = qkv_mean(tape, x, 1, 0);
    assert_shape(m1, 1, (int[]){2});
    assert_values_near(m1, (float[]){2, 5}, 2, 1e-6);

    qkv_tensor *m0 = qkv_mean(tape, x, -2, 1);
    assert_shape(m0, 2, (int[]){1, 3});
    assert_values_near(m0, (float[]){2.5f, 3.5f, 4.5f}, 3, 1e-6);

    qkv_tensor *all = qkv_sum_all(tape, x);
    ck_assert_int_eq(all->ndim, 0);
    assert_values_near(all, (float[]){21}, 1, 0);
    qkv_tensor *avg = qkv_mean_all(tape, x);
    ck_assert_int_eq(avg->ndim, 0);
    assert_values_near(avg, (float[]){3.5f}, 1, 1e-6);

    /* Middle axis of [2,3,2] holding 0..11: out[o,i] = sum_k x[o,k,i]. */
    qkv_tensor *y = ramp_tensor(3, (int[]){2, 3, 2}, 0.0f, 1.0f, 0);
    qkv_tensor *mid = qkv_sum(tape, y, 1, 0);
    assert_shape(mid, 2, (int[]){2, 2});
    assert_values_near(mid, (float[]){6, 9, 24, 27}, 4, 0);

    /* Reducing the only axis without keepdim gives a 0-dim scalar. */
    qkv_tensor *z = tensor_of(1, (int[]){4}, v, 0);
    qkv_tensor *zs = qkv_sum(tape, z, 0, 0);
    ck_assert_int_eq(zs->ndim, 0);
    assert_values_near(zs, (float[]){10}, 1, 0);

    qkv_tensor_free(x);
    qkv_tensor_free(y);
    qkv_tensor_free(z);
    qkv_tape_free(tape);
}
END_TEST

START_TEST(test_sum_mean_backward_values) {
    qkv_tape *tape = qkv_tape_create(1);
    qkv_tensor *x = tensor_of(2, (int[]){2, 3}, (float[]){1, 2, 3, 4, 5, 6}, 1);

    qkv_backward_seeded(tape, qkv_sum(tape, x, 0, 0), (float[]){1, 2, 3});
    assert_floats_near(x->grad, (float[]){1, 2, 3, 1, 2, 3}, 6, 0);

    qkv_tensor_zero_grad(x);
    qkv_tape_reset(tape);
    qkv_backward_seeded(tape, qkv_mean(tape, x, 1, 1), (float[]){3, 6});
    assert_floats_near(x->grad, (float[]){1, 1, 1, 2, 2, 2}, 6, 1e-6);

    /* Gradients accumulate (+=) across backward passes until zeroed. */
    qkv_tensor_zero_grad(x);
    for (int pass = 0; pass < 2; pass++) {
        qkv_tape_reset(tape);
        qkv_backward(tape, qkv_mean_all(tape, x));
    }
    for (int i = 0; i < 6; i++) ck_assert_float_eq_tol(x->grad[i], 2.0f / 6.0f, 1e-7f);

    qkv_tensor_free(x);
    qkv_tape_free(tape);
}
END_TEST

START_TEST(test_max_values_and_first_argmax) {
    qkv_tape *tape = qkv_tape_create(1);
    qkv_tensor *x = tensor_of(2, (int[]){2, 3}, (float[]){1, 5, 5, 7, -2, 7}, 1);

    /* Ties: the gradient goes to the first maximum only. */
    qkv_tensor *rows = qkv_max(tape, x, 1, 0);
    assert_shape(rows, 1, (int[]){2});
    assert_values_near(rows, (float[]){5, 7}, 2, 0);
    qkv_backward_seeded(tape, rows, (float[]){1, 10});
    assert_floats_near(x->grad, (float[]){0, 1, 0, 10, 0, 0}, 6, 0);

    qkv_tensor_zero_grad(x);
    qkv_tape_reset(tape);
    qkv_tensor *cols = qkv_max(tape, x, 0, 1);
    assert_shape(cols, 2, (int[]){1, 3});
    assert_values_near(cols, (float[]){7, 5, 7}, 3, 0);
    qkv_backward_seeded(tape, cols, (float[]){1, 2, 3});
    assert_floats_near(x->grad, (float[]){0, 2, 0, 1, 0, 3}, 6, 0);

    /* All-negative line: the maximum is not clamped at 0. */
    qkv_tape_reset(tape);
    qkv_tensor *neg = tensor_of(1, (int[]){3}, (float[]){-3, -1, -2}, 0);
    assert_values_near(qkv_max(tape, neg, 0, 0), (float[]){-1}, 1, 0);

    qkv_tensor_free(neg);
    qkv_tensor_free(x);
    qkv_tape_free(tape);
}
END_TEST

START_TEST(test_no_node_without_grad) {
    qkv_tape *tape = qkv_tape_create(1);
    qkv_tensor *data = tensor_of(2, (int[]){2, 3}, NULL, 0);
    qkv_tensor *param = tensor_of(2, (int[]){2, 3}, NULL, 1);
    qkv_sum(tape, data, 0, 0);
    qkv_max(tape, data, 1, 0);
    ck_assert_int_eq(tape->n_nodes, 0);
    qkv_tape_set_grad(tape, 0);
    qkv_mean_all(tape, param);
    ck_assert_int_eq(tape->n_nodes, 0);
    qkv_tape_set_grad(tape, 1);
    qkv_tensor *s = qkv_sum(tape, param, 1, 0);
    ck_assert_int_eq(tape->n_nodes, 1);
    ck_assert_str_eq(tape->nodes[0].op, "sum");
    ck_assert(s->requires_grad);
    qkv_tensor_free(data);
    qkv_tensor_free(param);
    qkv_tape_free(tape);
}
END_TEST

START_TEST(test_reduce_errors) {
    qkv_tape *tape = qkv_tape_create(1);
    qkv_tensor *x = tensor_of(2, (int[]){3, 4}, NULL, 1);
    EXPECT_FATAL(qkv_sum(tape, x, 2, 0), "sum: axis 2 out of range for [3,4]");
    EXPECT_FATAL(qkv_mean(tape, x, -3, 1), "mean: axis -3 out of range for [3,4]");
    EXPECT_FATAL(qkv_max(tape, x, 7, 0), "max: axis 7 out of range for [3,4]");
    EXPECT_FATAL(qkv_sum(tape, x, 0, 2), "sum: [3,4] axis 0: keepdim 2 must be 0 or 1");
    qkv_tensor *scalar = qkv_sum_all(tape, x);
    EXPECT_FATAL(qkv_max(tape, scalar, 0, 0), "max: axis 0 out of range for []");
    EXPECT_FATAL(qkv_sum_all(tape, NULL), "sum_all: input tensor is NULL");
    qkv_tape_reset(tape);
    EXPECT_FATAL(qkv_mean_all(tape, scalar), "mean_all: activation");
    EXPECT_FATAL(qkv_sum(tape, scalar, 0, 0), "sum: activation");
    qkv_tensor_free(x);
    qkv_tape_free(tape);
}
END_TEST

/* Forward value and input gradient of op on a large input, for a given thread count. */
typedef qkv_tensor *(*reduce_op)(qkv_tape *tape, qkv_tensor *x);

typedef struct reduce_run {
    reduce_op op;
    qkv_tensor *x;
    size_t out_size; /* of the first run's output; 0 before it */
} reduce_run;

/* out = op(x) (x->size floats, padded with zeros), then dx for a random output gradient. */
static void reduce_forward_backward(float *out, void *ctx) {
    reduce_run *r = ctx;
    qkv_tape *tape = qkv_tape_create(7);
    qkv_tensor_zero_grad(r->x);
    qkv_tensor *y = r->op(tape, r->x);
    ck_assert_uint_le(y->size, r->x->size);
    if (r->out_size) ck_assert_uint_eq(y->size, r->out_size);
    r->out_size = y->size;
    backward_random(tape, y, 99);
    memcpy(out, y->data, y->size * sizeof(float));
    memcpy(out + r->x->size, r->x->grad, r->x->size * sizeof(float));
    qkv_tape_free(tape);
}

static void assert_thread_independent(reduce_op op, int ndim, const int *shape, const char *name) {
    reduce_run r = {op, random_tensor(ndim, shape, 5, 1), 0};
    expect_same_for_1_and_2_threads(reduce_forward_backward, &r, 2 * r.x->size, name);
    qkv_tensor_free(r.x);
}

static qkv_tensor *sum_all_op(qkv_tape *t, qkv_tensor *x) { return qkv_sum_all(t, x); }
static qkv_tensor *mean_all_op(qkv_tape *t, qkv_tensor *x) { return qkv_mean_all(t, x); }
static qkv_tensor *sum_rows_op(qkv_tape *t, qkv_tensor *x) { return qkv_sum(t, x, 0, 0); }
static qkv_tensor *mean_last_op(qkv_tape *t, qkv_tensor *x) { return qkv_mean(t, x, -1, 1); }
static qkv_tensor *max_middle_op(qkv_tape *t, qkv_tensor *x) { return qkv_max(t, x, 1, 0); }

START_TEST(test_reduce_thread_independent) {
    assert_thread_independent(sum_all_op, 1, (int[]){1000000}, "sum_all");
    assert_thread_independent(mean_all_op, 2, (int[]){1000, 1000}, "mean_all");
    assert_thread_independent(sum_rows_op, 2, (int[]){300, 1000}, "sum axis 0");
    assert_thread_independent(mean_last_op, 2, (int[]){1000, 300}, "mean axis -1");
    assert_thread_independent(max_middle_op, 3, (int[]){20, 50, 300}, "max axis 1");
}
END_TEST

/* sum_all of a large tensor matches a double-precision sum (no float drift). */
START_TEST(test_sum_all_large_accuracy) {
    qkv_tape *tape = qkv_tape_create(1);
    qkv_tensor *x = qkv_tensor_create(NULL, 1, (int[]){1000000}, 0);
    qkv_tensor_fill(x, 0.1f);
    double expected = 1000000.0 * (double)0.1f;
    ck_assert_close(qkv_sum_all(tape, x)->data[0], expected, 1e-6);
    ck_assert_close(qkv_sum(tape, x, 0, 0)->data[0], expected, 1e-6);
    qkv_tensor_free(x);
    qkv_tape_free(tape);
}
END_TEST

Suite *suite_reduce(void) {
    Suite *s = suite_create("reduce");
    TCase *tc = tcase_create("reduce");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_sum_mean_values);
    tcase_add_test(tc, test_sum_mean_backward_values);
    tcase_add_test(tc, test_max_values_and_first_argmax);
    tcase_add_test(tc, test_no_node_without_grad);
    tcase_add_test(tc, test_reduce_errors);
    tcase_add_test(tc, test_reduce_thread_independent);
    tcase_add_test(tc, test_sum_all_large_accuracy);
    suite_add_tcase(s, tc);
    return s;
}
