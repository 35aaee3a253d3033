/* test_softmax.c — softmax, log-softmax, cross-entropy and mse: values by hand,
 * stability on huge logits, the ignore_index and weight rules,
 * errors, bitwise thread independence, and the worked attention example. */
#include "tests/test_util.h"

#define IGNORE (-100)

START_TEST(test_softmax_values) {
    qkv_tape *tape = qkv_tape_create(1);
    qkv_tensor *x = tensor_of(2, (int[]){2, 3}, (float[]){1, 2, 3, -1, -1, -1}, 0);
    double z = exp(1) + exp(2) + exp(3);
    float expected[6] = {(float)(exp(1) / z), (float)(exp(2) / z), (float)(exp(3) / z),
                         1.0f / 3, 1.0f / 3, 1.0f / 3};
    qkv_tensor *y = qkv_softmax(tape, x);
    assert_shape(y, 2, (int[]){2, 3});
    assert_floats_near(y->data, expected, 6, 1e-7);

    float expected_log[6] = {(float)(1 - log(z)), (float)(2 - log(z)), (float)(3 - log(z)),
                             (float)-log(3), (float)-log(3), (float)-log(3)};
    assert_floats_near(qkv_log_softmax(tape, x)->data, expected_log, 6, 1e-6);

    /* A single class: softmax 1, log-softmax 0. */
    qkv_tensor *one = tensor_of(2, (int[]){3, 1}, (float[]){-7, 0, 42}, 0);
    assert_floats_near(qkv_softmax(tape, one)->data, (float[]){1, 1, 1}, 3, 0);
    assert_floats_near(qkv_log_softmax(tape, one)->data, (float[]){0, 0, 0}, 3, 0);

    qkv_tensor_free(one);
    qkv_tensor_free(x);
    qkv_tape_free(tape);
}
END_TEST

START_TEST(test_softmax_rows_sum_to_one) {
    qkv_tape *tape = qkv_tape_create(1);
    qkv_tensor *x = tensor_of(3, (int[]){3, 7, 13}, NULL, 0);
    fill_normal_seeded(x->data, x->size, 3, 0.0f, 5.0f);
    qkv_tensor *y = qkv_softmax(tape, x);
    for (int r = 0; r < 21; r++) {
        double sum = 0;
        for (int j = 0; j < 13; j++) {
            float p = y->data[r * 13 + j];
            ck_assert(p >= 0.0f && p <= 1.0f);
            sum += p;
        }
        ck_assert_close(sum, 1.0, 1e-6);
    }
    qkv_tensor_free(x);
    qkv_tape_free(tape);
}
END_TEST

/* Logits of +-1e4 and rows of equal huge values: no NaN or Inf, forward or backward. */
START_TEST(test_softmax_stable_on_huge_logits) {
    qkv_tape *tape = qkv_tape_create(1);
    const float huge = 3e38f;
    qkv_tensor *x = tensor_of(2, (int[]){3, 4},
                          (float[]){1e4f, -1e4f, 0, 1e4f - 1, -1e4f, -1e4f, -1e4f, -1e4f,
                                    huge, huge, huge, huge}, 1);
    const float seed[12] = {1, -2, 3, 0.5f, 1, 2, 3, 4, -1, 1, -1, 2};

    qkv_tensor *y = qkv_softmax(tape, x);
    assert_all_finite(y->data, 12, "softmax");
    double e1 = exp(-1.0);
    float expected[12] = {(float)(1 / (1 + e1)), 0, 0, (float)(e1 / (1 + e1)), 0.25f, 0.25f, 0.25f,
                          0.25f, 0.25f, 0.25f, 0.25f, 0.25f};
    assert_floats_near(y->data, expected, 12, 1e-6);
    qkv_backward_seeded(tape, y, seed);
    assert_all_finite(x->grad, 12, "softmax grad");

    qkv_tensor_zero_grad(x);
    qkv_tape_reset(tape);
    qkv_tensor *ly = qkv_log_softmax(tape, x);
    assert_all_finite(ly->data, 12, "log_softmax");
    ck_assert_close(ly->data[1], -2e4 - log1p(e1), 1e-6);
    ck_assert_close(ly->data[4], -log(4.0), 1e-6);
    ck_assert_close(ly->data[8], -log(4.0), 1e-6);
    qkv_backward_seeded(tape, ly, seed);
    assert_all_finite(x->grad, 12, "log_softmax grad");

    qkv_tensor_zero_grad(x);
    qkv_tape_reset(tape);
    qkv_tensor *loss = qkv_cross_entropy(tape, x, (int32_t[]){1, 0, 3}, IGNORE, NULL);
    ck_assert(isfinite(loss->data[0]));
    ck_assert_close(loss->data[0], (2e4 + log1p(e1) + 2 * log(4.0)) / 3, 1e-6);
    qkv_backward(tape, loss);
    assert_all_finite(x->grad, 12, "cross_entropy grad");

    qkv_tensor_free(x);
    qkv_tape_free(tape);
}
END_TEST

START_TEST(test_log_softmax_is_log_of_softmax) {
    qkv_tape *tape = qkv_tape_create(1);
    qkv_tensor *x = tensor_of(2, (int[]){5, 9}, NULL, 0);
    fill_normal_seeded(x->data, x->size, 11, 0.0f, 3.0f);
    qkv_tensor *p = qkv_softmax(tape, x), *lp = qkv_log_softmax(tape, x);
    int compared = 0;
    for (size_t i = 0; i < x->size; i++) {
        double log_p = log(p->data[i]);
        if (!isfinite(log_p)) continue;
        ck_assert_close(lp->data[i], log_p, 1e-5);
        compared++;
    }
    ck_assert_int_gt(compared, 40);
    qkv_tensor_free(x);
    qkv_tape_free(tape);
}
END_TEST

/* logits [[1,2,3],[1,1,1]]: row losses l0 = log(e+e^2+e^3) - 3, l1 = log 3. */
START_TEST(test_cross_entropy_values) {
    qkv_tape *tape = qkv_tape_create(1);
    qkv_tensor *x = tensor_of(2, (int[]){2, 3}, (float[]){1, 2, 3, 1, 1, 1}, 1);
    double z = exp(1) + exp(2) + exp(3), l0 = log(z) - 3, l1 = log(3.0);

    qkv_tensor *loss = qkv_cross_entropy(tape, x, (int32_t[]){2, 0}, IGNORE, NULL);
    ck_assert_int_eq(loss->ndim, 0);
    ck_assert_close(loss->data[0], (l0 + l1) / 2, 1e-6);
    /* dlogits = (softmax - onehot) / 2 per row. */
    qkv_backward(tape, loss);
    float expected[6] = {(float)(exp(1) / z / 2), (float)(exp(2) / z / 2), (float)((exp(3) / z - 1) / 2),
                         (float)((1.0 / 3 - 1) / 2), (float)(1.0 / 6), (float)(1.0 / 6)};
    assert_floats_near(x->grad, expected, 6, 1e-6);

    /* The ignored row counts for nothing, in value or gradient. */
    qkv_tensor_zero_grad(x);
    qkv_tape_reset(tape);
    loss = qkv_cross_entropy(tape, x, (int32_t[]){2, -1}, -1, NULL);
    ck_assert_close(loss->data[0], l0, 1e-6);
    qkv_backward(tape, loss);
    assert_floats_near(x->grad + 3, (float[]){0, 0, 0}, 3, 0);
    ck_assert_close(x->grad[2], exp(3) / z - 1, 1e-6);

    /* ignore_index may be a valid class, as in PyTorch. */
    qkv_tape_reset(tape);
    ck_assert_close(qkv_cross_entropy(tape, x, (int32_t[]){2, 0}, 0, NULL)->data[0], l0, 1e-6);

    /* Weighted: (2 l0 + 1 l1) / 3, and the gradient scales by w_i / sum_w. */
    qkv_tensor_zero_grad(x);
    qkv_tape_reset(tape);
    loss = qkv_cross_entropy(tape, x, (int32_t[]){2, 0}, IGNORE, (float[]){2, 1});
    ck_assert_close(loss->data[0], (2 * l0 + l1) / 3, 1e-6);
    qkv_backward(tape, loss);
    ck_assert_close(x->grad[2], 2.0 / 3 * (exp(3) / z - 1), 1e-6);
    ck_assert_close(x->grad[3], 1.0 / 3 * (1.0 / 3 - 1), 1e-6);

    qkv_tensor_free(x);
    qkv_tape_free(tape);
}
END_TEST

/* The targets and weights are copied: the caller may reuse its buffers before backward. */
START_TEST(test_cross_entropy_copies_targets) {
    qkv_tape *tape = qkv_tape_create(1);
    qkv_tensor *x = tensor_of(2, (int[]){2, 3}, (float[]){1, 2, 3, 1, 1, 1}, 1);
    int32_t targets[2] = {2, 0};
    float weights[2] = {2, 1};
    qkv_tensor *loss = qkv_cross_entropy(tape, x, targets, IGNORE, weights);
    targets[0] = 0, targets[1] = IGNORE;
    weights[0] = 100;
    qkv_backward(tape, loss);
    double z = exp(1) + exp(2) + exp(3);
    ck_assert_close(x->grad[2], 2.0 / 3 * (exp(3) / z - 1), 1e-6);
    ck_assert_close(x->grad[3], 1.0 / 3 * (1.0 / 3 - 1), 1e-6);
    qkv_tensor_free(x);
    qkv_tape_free(tape);
}
END_TEST

START_TEST(test_cross_entropy_all_ignored) {
    qkv_tape *tape = qkv_tape_create(1);
    qkv_tensor *x = tensor_of(3, (int[]){2, 2, 3}, NULL, 1);
    fill_normal_seeded(x->data, x->size, 2, 0.0f, 1.0f);
    const int32_t targets[4] = {IGNORE, IGNORE, IGNORE, IGNORE};
    qkv_tensor *loss = qkv_cross_entropy(tape, x, targets, IGNORE, NULL);
    ck_assert(loss->data[0] == 0.0f);
    qkv_backward(tape, loss);
    for (size_t i = 0; i < x->size; i++) ck_assert(x->grad[i] == 0.0f);
    /* Counted rows whose weights are all 0: also 0, not 0/0. */
    qkv_tape_reset(tape);
    loss = qkv_cross_entropy(tape, x, (int32_t[]){0, 1, 2, IGNORE}, IGNORE, (float[]){0, 0, 0, 5});
    ck_assert(loss->data[0] == 0.0f);
    qkv_backward(tape, loss);
    for (size_t i = 0; i < x->size; i++) ck_assert(x->grad[i] == 0.0f);
    qkv_tensor_free(x);
    qkv_tape_free(tape);
}
END_TEST

START_TEST(test_mse_values) {
    qkv_tape *tape = qkv_tape_create(1);
    qkv_tensor *pred = tensor_of(1, (int[]){3}, (float[]){1, 2, 3}, 1);
    qkv_tensor *target = tensor_of(1, (int[]){3}, (float[]){0, 2, 5}, 1);
    qkv_tensor *loss = qkv_mse(tape, pred, target);
    ck_assert_int_eq(loss->ndim, 0);
    ck_assert_close(loss->data[0], 5.0 / 3, 1e-6);
    qkv_backward(tape, loss);
    assert_floats_near(pred->grad, (float[]){2.0f / 3, 0, -4.0f / 3}, 3, 1e-6);
    assert_floats_near(target->grad, (float[]){-2.0f / 3, 0, 4.0f / 3}, 3, 1e-6);
    qkv_tensor_free(pred);
    qkv_tensor_free(target);
    qkv_tape_free(tape);
}
END_TEST

START_TEST(test_softmax_errors) {
    qkv_tape *tape = qkv_tape_create(1);
    qkv_tensor *x = tensor_of(2, (int[]){2, 3}, NULL, 1);
    qkv_tensor *y = tensor_of(2, (int[]){3, 2}, NULL, 0);
    qkv_tensor *scalar = qkv_tensor_create(NULL, 0, (int[]){1}, 1);
    EXPECT_FATAL(qkv_cross_entropy(tape, x, (int32_t[]){0, 3}, IGNORE, NULL),
                 "cross_entropy: logits [2,3]: row 1 target 3 outside [0,3)");
    EXPECT_FATAL(qkv_cross_entropy(tape, x, (int32_t[]){-5, 0}, IGNORE, NULL),
                 "cross_entropy: logits [2,3]: row 0 target -5");
    EXPECT_FATAL(qkv_cross_entropy(tape, x, NULL, IGNORE, NULL),
                 "cross_entropy: logits [2,3]: targets is NULL");
    EXPECT_FATAL(qkv_cross_entropy(tape, scalar, (int32_t[]){0}, IGNORE, NULL),
                 "cross_entropy: axis -1 out of range for []");
    EXPECT_FATAL(qkv_softmax(tape, scalar), "softmax: axis -1 out of range for []");
    EXPECT_FATAL(qkv_log_softmax(tape, scalar), "log_softmax: axis -1 out of range for []");
    EXPECT_FATAL(qkv_mse(tape, x, y), "mse: pred [2,3] vs target [3,2]: shapes differ");
    EXPECT_FATAL(qkv_mse(tape, x, NULL), "mse: input tensor is NULL");
    qkv_tensor *activation = qkv_softmax(tape, x);
    qkv_tape_reset(tape);
    EXPECT_FATAL(qkv_log_softmax(tape, activation), "log_softmax: activation");
    qkv_tensor_free(x);
    qkv_tensor_free(y);
    qkv_tensor_free(scalar);
    qkv_tape_free(tape);
}
END_TEST

/* ---- 1 vs 2 threads, bitwise ------------------------------------------------- */

#define BIG_ROWS 256
#define BIG_COLS 1000

typedef qkv_tensor *(*big_op)(qkv_tape *tape, qkv_tensor *x, qkv_tensor *other);

static int32_t big_targets[BIG_ROWS];
static float big_weights[BIG_ROWS];

static qkv_tensor *softmax_op(qkv_tape *t, qkv_tensor *x, qkv_tensor *o) {
    (void)o;
    return qkv_softmax(t, x);
}
static qkv_tensor *log_softmax_op(qkv_tape *t, qkv_tensor *x, qkv_tensor *o) {
    (void)o;
    return qkv_log_softmax(t, x);
}
static qkv_tensor *cross_entropy_op(qkv_tape *t, qkv_tensor *x, qkv_tensor *o) {
    (void)o;
    return qkv_cross_entropy(t, x, big_targets, IGNORE, big_weights);
}
static qkv_tensor *mse_op(qkv_tape *t, qkv_tensor *x, qkv_tensor *o) { return qkv_mse(t, x, o); }

typedef struct big_run {
    big_op op;
    qkv_tensor *x, *other;
} big_run;

/* Runs op forward and backward (random output gradient); out gets the output and
 * both inputs' gradients (out, dx, dother). */
static void run_big(float *out, void *ctx) {
    big_run *r = ctx;
    qkv_tape *tape = qkv_tape_create(7);
    qkv_tensor_zero_grad(r->x);
    qkv_tensor_zero_grad(r->other);
    qkv_tensor *y = r->op(tape, r->x, r->other);
    backward_random(tape, y, 99);
    out = append_floats(out, y->data, y->size);
    out = append_floats(out, r->x->grad, r->x->size);
    append_floats(out, r->other->grad, r->other->size);
    qkv_tape_free(tape);
}

static void assert_big_thread_independent(big_op op, const char *name) {
    const int shape[2] = {BIG_ROWS, BIG_COLS};
    big_run r = {op, tensor_of(2, shape, NULL, 1), tensor_of(2, shape, NULL, 1)};
    fill_normal_seeded(r.x->data, r.x->size, 21, 0.0f, 4.0f);
    fill_normal_seeded(r.other->data, r.other->size, 22, 0.0f, 1.0f);
    expect_same_for_1_and_2_threads(run_big, &r, 3 * r.x->size, name);
    qkv_tensor_free(r.x);
    qkv_tensor_free(r.other);
}

START_TEST(test_softmax_thread_independent) {
    for (int r = 0; r < BIG_ROWS; r++) {
        big_targets[r] = r % 7 == 3 ? IGNORE : (r * 37) % BIG_COLS;
        big_weights[r] = 0.5f + (float)(r % 5) * 0.25f;
    }
    assert_big_thread_independent(softmax_op, "softmax");
    assert_big_thread_independent(log_softmax_op, "log_softmax");
    assert_big_thread_independent(cross_entropy_op, "cross_entropy");
    assert_big_thread_independent(mse_op, "mse");
}
END_TEST

/* ---- worked attention example ----------------------------------------------- */

/* One query q = [1], keys [0], [log 2], [log 3]: scores q.k = 0, log 2, log 3;
 * softmax gives weights 1/6, 2/6, 3/6; with values [1,0], [0,2], [2,2] the output
 * is 1/6 [1,0] + 2/6 [0,2] + 3/6 [2,2] = [7/6, 5/3]. */
START_TEST(test_attention_worked_example) {
    qkv_tape *tape = qkv_tape_create(1);
    const float query = 1.0f, keys[3] = {0.0f, logf(2.0f), logf(3.0f)};
    const float values[3][2] = {{1, 0}, {0, 2}, {2, 2}};
    qkv_tensor *scores = tensor_of(2, (int[]){1, 3}, NULL, 0);
    for (int k = 0; k < 3; k++) scores->data[k] = query * keys[k];

    qkv_tensor *weights = qkv_softmax(tape, scores);
    assert_floats_near(weights->data, (float[]){1.0f / 6, 2.0f / 6, 3.0f / 6}, 3, 1e-6);

    float out[2] = {0, 0};
    for (int k = 0; k < 3; k++)
        for (int d = 0; d < 2; d++) out[d] += weights->data[k] * values[k][d];
    assert_floats_near(out, (float[]){7.0f / 6, 5.0f / 3}, 2, 1e-6);

    qkv_tensor_free(scores);
    qkv_tape_free(tape);
}
END_TEST

Suite *suite_softmax(void) {
    Suite *s = suite_create("softmax");
    TCase *tc = tcase_create("softmax");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_softmax_values);
    tcase_add_test(tc, test_softmax_rows_sum_to_one);
    tcase_add_test(tc, test_softmax_stable_on_huge_logits);
    tcase_add_test(tc, test_log_softmax_is_log_of_softmax);
    tcase_add_test(tc, test_cross_entropy_values);
    tcase_add_test(tc, test_cross_entropy_copies_targets);
    tcase_add_test(tc, test_cross_entropy_all_ignored);
    tcase_add_test(tc, test_mse_values);
    tcase_add_test(tc, test_softmax_errors);
    tcase_add_test(tc, test_softmax_thread_independent);
    tcase_add_test(tc, test_attention_worked_example);
    suite_add_tcase(s, tc);
    return s;
}
