/* test_elementwise.c — Check suite for core/ops/ops_elementwise.c: forward values
 * against hand-computed numbers and a naive broadcasting loop, broadcast backward
 * sums, error messages, dropout statistics and seeding, and bitwise independence
 * of the thread count. */
#include "tests/test_util.h"

/* ---- helpers ----------------------------------------------------------------------- */

typedef qkv_tensor *(*binary_fn)(qkv_tape *, qkv_tensor *, qkv_tensor *);

static float apply_op(int op, float x, float y) {
    switch (op) {
    case 0: return x + y;
    case 1: return x - y;
    case 2: return x * y;
    default: return x / y;
    }
}

/* Element of t read at output multi-index idx (output has ndim dims), numpy rules. */
static float broadcast_read(const qkv_tensor *t, int ndim, const int *idx) {
    size_t off = 0;
    for (int d = 0; d < t->ndim; d++) {
        int i = idx[d + ndim - t->ndim];
        off = off * (size_t)t->shape[d] + (size_t)(t->shape[d] == 1 ? 0 : i);
    }
    return t->data[off];
}

/* Checks out == a op b element by element with a naive index loop. */
static void check_against_naive(int op, const qkv_tensor *a, const qkv_tensor *b, const qkv_tensor *out) {
    int idx[4] = {0, 0, 0, 0};
    for (size_t e = 0; e < out->size; e++) {
        size_t rest = e;
        for (int d = out->ndim - 1; d >= 0; d--) {
            idx[d] = (int)(rest % (size_t)out->shape[d]);
            rest /= (size_t)out->shape[d];
        }
        float expect = apply_op(op, broadcast_read(a, out->ndim, idx), broadcast_read(b, out->ndim, idx));
        ck_assert_msg(out->data[e] == expect, "op %d element %zu: %g != %g", op, e,
                      (double)out->data[e], (double)expect);
    }
}

/* ---- gradients -------------------------------------------------------------------------- */

/* ---- binary forward --------------------------------------------------------------------- */

START_TEST(test_binary_values) {
    qkv_tape *tape = qkv_tape_create(1);
    int shape[1] = {4};
    qkv_tensor *a = tensor_of(1, shape, (float[]){1, 2, 3, -4}, 0);
    qkv_tensor *b = tensor_of(1, shape, (float[]){2, -1, 0.5f, 4}, 0);
    const float sum[] = {3, 1, 3.5f, 0}, diff[] = {-1, 3, 2.5f, -8}, prod[] = {2, -2, 1.5f, -16},
                quot[] = {0.5f, -2, 6, -1};
    qkv_tensor *r[4] = {qkv_add(tape, a, b), qkv_sub(tape, a, b), qkv_mul(tape, a, b), qkv_div(tape, a, b)};
    const float *expect[4] = {sum, diff, prod, quot};
    for (int op = 0; op < 4; op++) {
        assert_shape(r[op], 1, shape);
        assert_floats_near(r[op]->data, expect[op], 4, 0);
    }
    ck_assert_int_eq(tape->n_nodes, 0); /* nothing requires a gradient */
    qkv_tensor_free(a);
    qkv_tensor_free(b);
    qkv_tape_free(tape);
}
END_TEST

START_TEST(test_broadcast_values) {
    /* Pairs of shapes (ndim, dims...) and the expected output shape. */
    static const struct { int na, a[4], nb, b[4], nout, out[4]; } pairs[] = {
        {2, {3, 4}, 1, {4}, 2, {3, 4}},
        {1, {4}, 2, {3, 4}, 2, {3, 4}},
        {2, {3, 4}, 2, {3, 1}, 2, {3, 4}},
        {3, {2, 1, 4}, 2, {3, 1}, 3, {2, 3, 4}},
        {2, {3, 1}, 3, {2, 1, 4}, 3, {2, 3, 4}},
        {1, {4}, 2, {3, 1}, 2, {3, 4}},
        {0, {0}, 2, {2, 3}, 2, {2, 3}},
        {2, {2, 3}, 1, {1}, 2, {2, 3}},
        {4, {2, 3, 4, 5}, 4, {1, 3, 1, 5}, 4, {2, 3, 4, 5}},
        {4, {1, 3, 1, 5}, 4, {2, 3, 4, 5}, 4, {2, 3, 4, 5}},
        {4, {2, 3, 4, 5}, 4, {2, 1, 4, 1}, 4, {2, 3, 4, 5}},
        {4, {2, 1, 4, 1}, 3, {3, 1, 5}, 4, {2, 3, 4, 5}},
        {3, {1, 1, 1}, 2, {1, 1}, 3, {1, 1, 1}},
        {2, {5000, 3}, 2, {1, 3}, 2, {5000, 3}},   /* many short rows, parallel pieces */
        {2, {2, 9000}, 1, {9000}, 2, {2, 9000}},   /* rows longer than one piece */
    };
    binary_fn fns[4] = {qkv_add, qkv_sub, qkv_mul, qkv_div};
    qkv_tape *tape = qkv_tape_create(2);
    for (size_t p = 0; p < sizeof pairs / sizeof pairs[0]; p++) {
        qkv_tensor *a = random_uniform_tensor(pairs[p].na, pairs[p].a, 10 + p, -2.0f, 2.0f, 0);
        qkv_tensor *b = random_uniform_tensor(pairs[p].nb, pairs[p].b, 100 + p, 0.5f, 2.0f, 0);
        for (int op = 0; op < 4; op++) {
            qkv_tensor *out = fns[op](tape, a, b);
            assert_shape(out, pairs[p].nout, pairs[p].out);
            check_against_naive(op, a, b, out);
        }
        qkv_tape_reset(tape);
        qkv_tensor_free(a);
        qkv_tensor_free(b);
    }
    qkv_tape_free(tape);
}
END_TEST

/* ---- binary backward ---------------------------------------------------------------------- */

START_TEST(test_broadcast_backward_sums) {
    qkv_tape *tape = qkv_tape_create(3);
    int sa[2] = {3, 4}, sb[1] = {4};
    qkv_tensor *a = random_uniform_tensor(2, sa, 7, 0.5f, 2.0f, 1);
    qkv_tensor *b = random_uniform_tensor(1, sb, 8, 0.5f, 2.0f, 1);

    /* y = a * b, dL/dy = 1: da[i][j] = b[j], db[j] = sum_i a[i][j]. */
    backward_ones(tape, qkv_mul(tape, a, b));
    for (int j = 0; j < 4; j++) {
        double col = 0;
        for (int i = 0; i < 3; i++) {
            ck_assert_float_eq(a->grad[i * 4 + j], b->data[j]);
            col += a->data[i * 4 + j];
        }
        ck_assert_close(b->grad[j], col, 1e-6);
    }

    /* sub: db = -3 for each j; and gradients accumulate (+=) across backward calls. */
    qkv_tensor_zero_grad(a);
    qkv_tensor_zero_grad(b);
    qkv_tape_reset(tape);
    backward_ones(tape, qkv_sub(tape, a, b));
    qkv_tape_reset(tape);
    backward_ones(tape, qkv_sub(tape, a, b));
    for (int j = 0; j < 4; j++) ck_assert_float_eq(b->grad[j], -6.0f);
    for (int i = 0; i < 12; i++) ck_assert_float_eq(a->grad[i], 2.0f);

    /* div: da = 1/b, db[j] = -sum_i a[i][j] / b[j]^2. */
    qkv_tensor_zero_grad(a);
    qkv_tensor_zero_grad(b);
    qkv_tape_reset(tape);
    backward_ones(tape, qkv_div(tape, a, b));
    for (int j = 0; j < 4; j++) {
        double col = 0;
        for (int i = 0; i < 3; i++) {
            ck_assert_close(a->grad[i * 4 + j], 1.0 / b->data[j], 1e-6);
            col += a->data[i * 4 + j];
        }
        ck_assert_close(b->grad[j], -col / ((double)b->data[j] * b->data[j]), 1e-5);
    }

    /* A [1] operand gets the sum of every output gradient. */
    int s1[1] = {1};
    qkv_tensor *c = tensor_of(1, s1, (float[]){0.5f}, 1);
    qkv_tape_reset(tape);
    backward_ones(tape, qkv_add(tape, a, c));
    ck_assert_float_eq(c->grad[0], 12.0f);

    qkv_tensor_free(a);
    qkv_tensor_free(b);
    qkv_tensor_free(c);
    qkv_tape_free(tape);
}
END_TEST

/* ---- unary ops ----------------------------------------------------------------------------- */

typedef qkv_tensor *(*unary_fn)(qkv_tape *, qkv_tensor *);

/* f(x) and f'(x) for one scalar x. */
static void unary_at(unary_fn f, float x, float *value, float *slope) {
    qkv_tape *tape = qkv_tape_create(4);
    int shape[1] = {1};
    qkv_tensor *t = tensor_of(1, shape, &x, 1);
    qkv_tensor *y = f(tape, t);
    *value = y->data[0];
    backward_ones(tape, y);
    *slope = t->grad[0];
    qkv_tensor_free(t);
    qkv_tape_free(tape);
}

static qkv_tensor *scale_neg3(qkv_tape *t, qkv_tensor *x) { return qkv_scale(t, x, -3.0f); }
static qkv_tensor *plus_half(qkv_tape *t, qkv_tensor *x) { return qkv_add_scalar(t, x, 0.5f); }

START_TEST(test_unary_values_and_slopes) {
    static const struct { const char *name; unary_fn f; float x, value, slope; } cases[] = {
        {"relu(-2)", qkv_relu, -2.0f, 0.0f, 0.0f},
        {"relu(3)", qkv_relu, 3.0f, 3.0f, 1.0f},
        {"relu(0)", qkv_relu, 0.0f, 0.0f, 0.0f},              /* 1[x > 0] at the kink */
        {"abs(-2)", qkv_abs, -2.0f, 2.0f, -1.0f},
        {"abs(3)", qkv_abs, 3.0f, 3.0f, 1.0f},
        {"abs(0)", qkv_abs, 0.0f, 0.0f, 0.0f},                /* sign(0) = 0 */
        {"gelu(1)", qkv_gelu, 1.0f, 0.841192f, 1.082964f},    /* tanh approximation */
        {"gelu(-1)", qkv_gelu, -1.0f, -0.158808f, -0.082964f},
        {"gelu(0)", qkv_gelu, 0.0f, 0.0f, 0.5f},
        {"gelu_exact(1)", qkv_gelu_exact, 1.0f, 0.841345f, 1.083315f},
        {"gelu_exact(-1)", qkv_gelu_exact, -1.0f, -0.158655f, -0.083315f},
        {"gelu_exact(0)", qkv_gelu_exact, 0.0f, 0.0f, 0.5f},
        {"tanh(0.5)", qkv_tanh, 0.5f, 0.462117f, 0.786448f},
        {"sigmoid(0)", qkv_sigmoid, 0.0f, 0.5f, 0.25f},
        {"sigmoid(2)", qkv_sigmoid, 2.0f, 0.880797f, 0.104994f},
        {"sigmoid(-2)", qkv_sigmoid, -2.0f, 0.119203f, 0.104994f},
        {"sigmoid(100)", qkv_sigmoid, 100.0f, 1.0f, 0.0f},
        {"sigmoid(-100)", qkv_sigmoid, -100.0f, 0.0f, 0.0f},
        {"exp(1)", qkv_exp, 1.0f, 2.718282f, 2.718282f},
        {"exp(-2)", qkv_exp, -2.0f, 0.135335f, 0.135335f},
        {"log(2)", qkv_log, 2.0f, 0.693147f, 0.5f},
        {"sqrt(9)", qkv_sqrt, 9.0f, 3.0f, 1.0f / 6.0f},
        {"silu(1)", qkv_silu, 1.0f, 0.731059f, 0.927671f},    /* s(1), s (1 + x (1 - s)) */
        {"silu(-1)", qkv_silu, -1.0f, -0.268941f, 0.072329f},
        {"silu(0)", qkv_silu, 0.0f, 0.0f, 0.5f},
        {"scale(2, -3)", scale_neg3, 2.0f, -6.0f, -3.0f},
        {"add_scalar(2, 0.5)", plus_half, 2.0f, 2.5f, 1.0f},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        float value, slope;
        unary_at(cases[i].f, cases[i].x, &value, &slope);
        ck_assert_msg(isfinite(value) && isfinite(slope), "%s: not finite", cases[i].name);
        ck_assert_msg(fabsf(value - cases[i].value) <= 2e-6f * fmaxf(1.0f, fabsf(cases[i].value)),
                      "%s = %.7g, expected %.7g", cases[i].name, (double)value, (double)cases[i].value);
        ck_assert_msg(fabsf(slope - cases[i].slope) <= 2e-6f * fmaxf(1.0f, fabsf(cases[i].slope)),
                      "%s slope = %.7g, expected %.7g", cases[i].name, (double)slope,
                      (double)cases[i].slope);
    }
}
END_TEST

START_TEST(test_log_sqrt_ieee) {
    qkv_tape *tape = qkv_tape_create(5);
    int shape[1] = {3};
    qkv_tensor *x = tensor_of(1, shape, (float[]){0.0f, -1.0f, 4.0f}, 0);
    qkv_tensor *l = qkv_log(tape, x), *s = qkv_sqrt(tape, x);
    ck_assert(isinf(l->data[0]) && l->data[0] < 0);
    ck_assert(isnan(l->data[1]));
    ck_assert_float_eq_tol(l->data[2], logf(4.0f), 1e-7f);
    ck_assert_float_eq(s->data[0], 0.0f);
    ck_assert(isnan(s->data[1]));
    ck_assert_float_eq(s->data[2], 2.0f);
    qkv_tensor_free(x);
    qkv_tape_free(tape);
}
END_TEST

/* ---- errors -------------------------------------------------------------------------------- */

START_TEST(test_errors) {
    qkv_tape *tape = qkv_tape_create(6);
    qkv_tensor *a = qkv_tensor_create(NULL, 2, (int[]){2, 3}, 0);
    qkv_tensor *b = qkv_tensor_create(NULL, 1, (int[]){4}, 0);
    qkv_tensor *c = qkv_tensor_create(NULL, 2, (int[]){3, 2}, 0);
    qkv_tensor *d = qkv_tensor_create(NULL, 4, (int[]){2, 3, 4, 5}, 0);
    qkv_tensor *e = qkv_tensor_create(NULL, 2, (int[]){3, 5}, 0);
    EXPECT_FATAL(qkv_add(tape, a, b), "add: [2,3] + [4]: shapes do not broadcast");
    EXPECT_FATAL(qkv_sub(tape, b, a), "sub: [4] - [2,3]: shapes do not broadcast");
    EXPECT_FATAL(qkv_mul(tape, a, c), "mul: [2,3] * [3,2]: shapes do not broadcast");
    EXPECT_FATAL(qkv_div(tape, d, e), "div: [2,3,4,5] / [3,5]: shapes do not broadcast");
    EXPECT_FATAL(qkv_dropout(tape, a, 1.0f), "dropout: [2,3]: p = 1 outside [0, 1)");
    EXPECT_FATAL(qkv_dropout(tape, a, -0.1f), "dropout: [2,3]: p = -0.1");
    EXPECT_FATAL(qkv_dropout(tape, a, NAN), "dropout: [2,3]: p = nan");
    qkv_tape_set_training(tape, 0); /* p is checked in eval mode too */
    EXPECT_FATAL(qkv_dropout(tape, a, 1.5f), "dropout: [2,3]: p = 1.5");

    /* An activation used after its tape was reset. */
    qkv_tensor *stale = qkv_relu(tape, a);
    qkv_tape_reset(tape);
    EXPECT_FATAL(qkv_gelu(tape, stale), "gelu: activation");
    EXPECT_FATAL(qkv_mul(tape, a, stale), "mul: activation");

    qkv_tensor *list[] = {a, b, c, d, e};
    for (int i = 0; i < 5; i++) qkv_tensor_free(list[i]);
    qkv_tape_free(tape);
}
END_TEST

/* ---- dropout ------------------------------------------------------------------------------- */

#define BIG 200000

START_TEST(test_dropout_identity) {
    qkv_tape *tape = qkv_tape_create(7);
    int shape[2] = {3, 5};
    qkv_tensor *x = random_uniform_tensor(2, shape, 9, -1.0f, 1.0f, 1);
    qkv_tape_set_training(tape, 0);
    qkv_tensor *y = qkv_dropout(tape, x, 0.5f);
    ck_assert_int_eq(memcmp(y->data, x->data, x->size * sizeof(float)), 0);
    qkv_tape_set_training(tape, 1);
    y = qkv_dropout(tape, x, 0.0f);
    ck_assert_int_eq(memcmp(y->data, x->data, x->size * sizeof(float)), 0);
    ck_assert_int_eq(tape->n_nodes, 0);
    ck_assert_uint_eq(tape->rng.counter, 0); /* no mask drawn */
    qkv_tensor_free(x);
    qkv_tape_free(tape);
}
END_TEST

START_TEST(test_dropout_statistics) {
    const float p = 0.3f;
    qkv_tape *tape = qkv_tape_create(8);
    int shape[1] = {BIG};
    qkv_tensor *x = random_uniform_tensor(1, shape, 11, 0.5f, 1.5f, 1);
    qkv_tensor *y = qkv_dropout(tape, x, p);
    ck_assert_int_eq(tape->n_nodes, 1);
    ck_assert_str_eq(tape->nodes[0].op, "dropout");
    size_t zeros = 0;
    for (size_t i = 0; i < x->size; i++) {
        if (y->data[i] == 0.0f) zeros++;
        else ck_assert_float_eq(y->data[i], x->data[i] * (1.0f / (1.0f - p)));
    }
    /* Binomial: std of the zero fraction is sqrt(p(1-p)/n) ~ 0.001. */
    ck_assert_double_eq_tol((double)zeros / BIG, p, 0.006);
    double mean_x = qkv_sum_fixed(x->data, x->size) / BIG, mean_y = qkv_sum_fixed(y->data, y->size) / BIG;
    ck_assert_double_eq_tol(mean_y, mean_x, 0.01);

    /* Backward: dx = g * mask, so with g = 1 the gradient is y / x. */
    backward_ones(tape, y);
    for (size_t i = 0; i < x->size; i++) ck_assert_float_eq(x->grad[i], y->data[i] == 0.0f ? 0.0f : 1.0f / (1.0f - p));
    qkv_tensor_free(x);
    qkv_tape_free(tape);
}
END_TEST

START_TEST(test_dropout_seeding) {
    int shape[2] = {100, 50};
    qkv_tensor *x = random_uniform_tensor(2, shape, 12, 1.0f, 2.0f, 0);
    qkv_tape *t1 = qkv_tape_create(42), *t2 = qkv_tape_create(42), *t3 = qkv_tape_create(43);
    qkv_tensor *y1 = qkv_dropout(t1, x, 0.5f), *y2 = qkv_dropout(t2, x, 0.5f), *y3 = qkv_dropout(t3, x, 0.5f);
    ck_assert_int_eq(memcmp(y1->data, y2->data, x->size * sizeof(float)), 0);
    ck_assert_int_ne(memcmp(y1->data, y3->data, x->size * sizeof(float)), 0);
    ck_assert_uint_eq(t1->rng.counter, x->size); /* the mask reserved x->size draws */
    qkv_tensor *again = qkv_dropout(t1, x, 0.5f); /* the next call draws a new mask */
    ck_assert_int_ne(memcmp(y1->data, again->data, x->size * sizeof(float)), 0);
    qkv_tape_free(t1);
    qkv_tape_free(t2);
    qkv_tape_free(t3);
    qkv_tensor_free(x);
}
END_TEST

/* ---- thread independence ---------------------------------------------------------------------- */

enum { LA = 16, LB = 64, LC = 96, LARGE = LA * LB * LC };

/* Large broadcast ops, forward and backward: out gets y_mul, y_div, y_drop, y_gelu
 * (LARGE floats each), then the gradients of a (LARGE), b (LB), c (LA * LC) and d (LC). */
static void run_large(float *out, void *ctx) {
    (void)ctx;
    int sa[3] = {LA, LB, LC}, sb[2] = {LB, 1}, sc[3] = {LA, 1, LC}, sd[1] = {LC};
    qkv_tensor *a = random_uniform_tensor(3, sa, 21, -1.0f, 1.0f, 1);
    qkv_tensor *b = random_uniform_tensor(2, sb, 22, -1.0f, 1.0f, 1);
    qkv_tensor *c = random_uniform_tensor(3, sc, 23, 0.5f, 2.0f, 1);
    qkv_tensor *d = random_uniform_tensor(1, sd, 24, -1.0f, 1.0f, 1); /* a bias: one input row */
    qkv_tape *tape = qkv_tape_create(99);
    qkv_tensor *y_mul = qkv_mul(tape, a, b), *y_div = qkv_div(tape, a, c);
    qkv_tensor *y_drop = qkv_dropout(tape, y_mul, 0.25f);
    qkv_tensor *y_gelu = qkv_gelu(tape, qkv_add(tape, qkv_add(tape, y_drop, y_div), d));
    backward_random(tape, y_gelu, 5);
    qkv_tensor *outputs[4] = {y_mul, y_div, y_drop, y_gelu}, *inputs[4] = {a, b, c, d};
    for (int i = 0; i < 4; i++) out = append_floats(out, outputs[i]->data, outputs[i]->size);
    for (int i = 0; i < 4; i++) out = append_floats(out, inputs[i]->grad, inputs[i]->size);
    qkv_tape_free(tape);
    for (int i = 0; i < 4; i++) qkv_tensor_free(inputs[i]);
}

START_TEST(test_threads_bitwise) {
    expect_same_for_1_and_2_threads(run_large, NULL, 5 * (size_t)LARGE + LB + LA * LC + LC,
                                    "mul, div, dropout, gelu and their gradients");
}
END_TEST

Suite *suite_elementwise(void) {
    Suite *s = suite_create("elementwise");
    TCase *tc = tcase_create("elementwise");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_binary_values);
    tcase_add_test(tc, test_broadcast_values);
    tcase_add_test(tc, test_broadcast_backward_sums);
    tcase_add_test(tc, test_unary_values_and_slopes);
    tcase_add_test(tc, test_log_sqrt_ieee);
    tcase_add_test(tc, test_errors);
    tcase_add_test(tc, test_dropout_identity);
    tcase_add_test(tc, test_dropout_statistics);
    tcase_add_test(tc, test_dropout_seeding);
    tcase_add_test(tc, test_threads_bitwise);
    suite_add_tcase(s, tc);
    return s;
}
