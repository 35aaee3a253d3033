/* checks_elementwise.c — gradient-check cases for ops_elementwise.c.
 *
 * Every unary op of the table (core/ops/unary_ops.h) gets its rows "<op> [shape]"
 * here from its row, generated (UNARY_OP_ROWS): a new op needs no line in this
 * file; tests/test_registries.c fails for an op of ops_elementwise.c without rows.
 * Every binary op runs on the same list of shape pairs: equal shapes, size-1 dims,
 * scalar-ish [1] and 0-d operands, broadcasts in both directions (the smaller
 * operand first too) up to 4-D. div's denominator is QKV_INIT_POSITIVE. Every
 * unary op runs on 1-D to 4-D shapes with the init its check column asks for
 * (unary_ops.h: relu QKV_INIT_SPREAD, no input near the kink; log and sqrt
 * QKV_INIT_POSITIVE), abs at 2-D and 3-D. Dropout runs in training mode with
 * p = 0.3 (the checker re-seeds the tape's RNG, so the mask is fixed) and as the
 * identity (p = 0, and eval mode). All cases use the default eps and tolerance.
 */
#include "core/check/gradcheck.h"
#include "core/ops/ops.h"

/* ---- case functions ------------------------------------------------------------ */

static qkv_tensor *run_add(qkv_tape *t, qkv_tensor *const *in, const void *ctx) { (void)ctx; return qkv_add(t, in[0], in[1]); }
static qkv_tensor *run_sub(qkv_tape *t, qkv_tensor *const *in, const void *ctx) { (void)ctx; return qkv_sub(t, in[0], in[1]); }
static qkv_tensor *run_mul(qkv_tape *t, qkv_tensor *const *in, const void *ctx) { (void)ctx; return qkv_mul(t, in[0], in[1]); }
static qkv_tensor *run_div(qkv_tape *t, qkv_tensor *const *in, const void *ctx) { (void)ctx; return qkv_div(t, in[0], in[1]); }
static qkv_tensor *run_square(qkv_tape *t, qkv_tensor *const *in, const void *ctx) { (void)ctx; return qkv_mul(t, in[0], in[0]); }

/* Every unary op of the table (core/ops/unary_ops.h) runs through qkv_unary with
 * its kind and the constant its row gives the check. */
typedef struct unary_ctx {
    qkv_unary_kind op;
    float c;
} unary_ctx;

#define UNARY_CTX(KIND, name, cost, check, check_c, value, slope) {QKV_UNARY_##KIND, check_c},
static const unary_ctx unary_ctxs[QKV_UNARY_COUNT] = {QKV_UNARY_OPS(UNARY_CTX)};

static qkv_tensor *run_unary(qkv_tape *t, qkv_tensor *const *in, const void *ctx) {
    const unary_ctx *u = ctx;
    return qkv_unary(t, u->op, in[0], u->c);
}

/* tanh(a * b + c): gradients through a chain of broadcasts. */
static qkv_tensor *run_chain(qkv_tape *t, qkv_tensor *const *in, const void *ctx) {
    (void)ctx;
    return qkv_tanh(t, qkv_add(t, qkv_mul(t, in[0], in[1]), in[2]));
}

typedef struct dropout_ctx {
    float p;
    int training;
} dropout_ctx;

static qkv_tensor *run_dropout(qkv_tape *t, qkv_tensor *const *in, const void *ctx) {
    const dropout_ctx *d = ctx;
    qkv_tape_set_training(t, d->training);
    return qkv_dropout(t, in[0], d->p);
}

static const dropout_ctx drop_train = {0.3f, 1}, drop_zero = {0.0f, 1}, drop_eval = {0.3f, 0};

/* ---- cases -------------------------------------------------------------------------- */

#define N QKV_INIT_NORMAL
#define P QKV_INIT_POSITIVE
#define S QKV_INIT_SPREAD

/* Designated initializers keep the table valid when qkv_gradcheck_case grows. */
#define PAIR(OP, FN, INIT_B, NA, NB, ...)                                                    \
    {.name = OP, .fn = FN, .n_inputs = 2, .ndim = {NA, NB}, .shape = {__VA_ARGS__},         \
     .init = {N, INIT_B}}

/* One binary op over every shape pair; INIT_B is the second operand's init. */
#define BINARY_CASES(OP, FN, INIT_B)                                                         \
    PAIR(OP " [3,4],[3,4]", FN, INIT_B, 2, 2, {3, 4}, {3, 4}),                               \
    PAIR(OP " [3,4],[4]", FN, INIT_B, 2, 1, {3, 4}, {4}),                                    \
    PAIR(OP " [4],[3,4]", FN, INIT_B, 1, 2, {4}, {3, 4}),                                    \
    PAIR(OP " [3,4],[3,1]", FN, INIT_B, 2, 2, {3, 4}, {3, 1}),                               \
    PAIR(OP " [2,1,4],[3,1]", FN, INIT_B, 3, 2, {2, 1, 4}, {3, 1}),                          \
    PAIR(OP " [3,1],[2,1,4]", FN, INIT_B, 2, 3, {3, 1}, {2, 1, 4}),                          \
    PAIR(OP " [2,3],[1]", FN, INIT_B, 2, 1, {2, 3}, {1}),                                    \
    PAIR(OP " [1],[2,3]", FN, INIT_B, 1, 2, {1}, {2, 3}),                                    \
    PAIR(OP " [],[3]", FN, INIT_B, 0, 1, {0}, {3}),                                          \
    PAIR(OP " [1],[1]", FN, INIT_B, 1, 1, {1}, {1}),                                         \
    PAIR(OP " [2,3,4,5],[1,3,1,5]", FN, INIT_B, 4, 4, {2, 3, 4, 5}, {1, 3, 1, 5}),           \
    PAIR(OP " [1,3,1,5],[2,3,4,5]", FN, INIT_B, 4, 4, {1, 3, 1, 5}, {2, 3, 4, 5}),           \
    PAIR(OP " [2,3,4,5],[2,1,4,1]", FN, INIT_B, 4, 4, {2, 3, 4, 5}, {2, 1, 4, 1}),           \
    {.name = OP " [2,3,4],[4] a is data", .fn = FN, .n_inputs = 2, .ndim = {3, 1},           \
     .shape = {{2, 3, 4}, {4}}, .init = {N, INIT_B}, .no_grad = {1, 0}}

#define ONE(OP, FN, INIT, CTX, ND, ...)                                                      \
    {.name = OP, .fn = FN, .n_inputs = 1, .ndim = {ND}, .shape = {__VA_ARGS__},             \
     .init = {INIT}, .ctx = CTX}

/* One unary op over 1-D to 4-D shapes. */
#define UNARY_CASES(OP, FN, INIT, CTX)                                                       \
    ONE(OP " [1]", FN, INIT, CTX, 1, {1}),                                                   \
    ONE(OP " [3,4]", FN, INIT, CTX, 2, {3, 4}),                                              \
    ONE(OP " [2,1,3]", FN, INIT, CTX, 3, {2, 1, 3}),                                         \
    ONE(OP " [2,3,4,5]", FN, INIT, CTX, 4, {2, 3, 4, 5})

/* The rows of one op of the unary table, by its check column (unary_ops.h). */
#define ROWS_SMOOTH(OP, KIND, CTX) UNARY_CASES(OP, run_unary, N, CTX)
#define ROWS_POSITIVE(OP, KIND, CTX) UNARY_CASES(OP, run_unary, P, CTX)
/* SPREAD keeps inputs away from the kink; [1] has one draw, NORMAL (far from 0). */
#define ROWS_KINK(OP, KIND, CTX)                                                             \
    ONE(OP " [1]", run_unary, N, CTX, 1, {1}),                                               \
    ONE(OP " [3,4]", run_unary, S, CTX, 2, {3, 4}),                                          \
    ONE(OP " [2,1,3]", run_unary, S, CTX, 3, {2, 1, 3}),                                     \
    ONE(OP " [2,3,4,5]", run_unary, S, CTX, 4, {2, 3, 4, 5})
#define ROWS_LISTED(OP, KIND, CTX) LISTED_ROWS_##KIND(CTX)
/* abs: the kink at 0, SPREAD, at 2-D and 3-D (its rows since it was added). */
#define LISTED_ROWS_ABS(CTX)                                                                 \
    ONE("abs [3,4]", run_unary, S, CTX, 2, {3, 4}),                                          \
    ONE("abs [2,1,3]", run_unary, S, CTX, 3, {2, 1, 3})
#define UNARY_OP_ROWS(KIND, name, cost, check, check_c, value, slope) \
    ROWS_##check(name, KIND, &unary_ctxs[QKV_UNARY_##KIND]),

static const qkv_gradcheck_case cases[] = {
    BINARY_CASES("add", run_add, N),
    BINARY_CASES("sub", run_sub, N),
    BINARY_CASES("mul", run_mul, N),
    BINARY_CASES("div", run_div, P),
    ONE("mul x*x (same tensor twice)", run_square, N, NULL, 2, {3, 4}),
    {.name = "tanh(a*b+c) [2,3,4],[3,1],[4]", .fn = run_chain, .n_inputs = 3, .ndim = {3, 2, 1},
     .shape = {{2, 3, 4}, {3, 1}, {4}}, .init = {N, N, N}},
    QKV_UNARY_OPS(UNARY_OP_ROWS)
    UNARY_CASES("dropout p=0.3", run_dropout, N, &drop_train),
    ONE("dropout p=0 (identity)", run_dropout, N, &drop_zero, 2, {3, 4}),
    ONE("dropout eval mode (identity)", run_dropout, N, &drop_eval, 3, {2, 3, 4}),
};

const qkv_gradcheck_group qkv_checks_elementwise = {"elementwise", cases,
                                                    (int)(sizeof cases / sizeof cases[0])};
