/* checks_elementwise.c — gradient-check cases for ops_elementwise.c.
 *
 * Every unary op of the table in ops_elementwise.c (qkv_unary_ops) has rows here
 * named "<op> [shape]": tests/test_registries.c fails for one that has none.
 * Every binary op runs on the same list of shape pairs: equal shapes, size-1 dims,
 * scalar-ish [1] and 0-d operands, broadcasts in both directions (the smaller
 * operand first too) up to 4-D. div's denominator is QKV_INIT_POSITIVE. Every
 * unary op runs on 1-D to 4-D shapes; relu uses QKV_INIT_SPREAD (no input near
 * the kink, see its cases), log and sqrt QKV_INIT_POSITIVE. Dropout runs in training mode with
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

static qkv_tensor *run_scale(qkv_tape *t, qkv_tensor *const *in, const void *ctx) { return qkv_scale(t, in[0], *(const float *)ctx); }
static qkv_tensor *run_add_scalar(qkv_tape *t, qkv_tensor *const *in, const void *ctx) { return qkv_add_scalar(t, in[0], *(const float *)ctx); }
static qkv_tensor *run_relu(qkv_tape *t, qkv_tensor *const *in, const void *ctx) { (void)ctx; return qkv_relu(t, in[0]); }
static qkv_tensor *run_abs(qkv_tape *t, qkv_tensor *const *in, const void *ctx) { (void)ctx; return qkv_abs(t, in[0]); }
static qkv_tensor *run_gelu(qkv_tape *t, qkv_tensor *const *in, const void *ctx) { (void)ctx; return qkv_gelu(t, in[0]); }
static qkv_tensor *run_gelu_exact(qkv_tape *t, qkv_tensor *const *in, const void *ctx) { (void)ctx; return qkv_gelu_exact(t, in[0]); }
static qkv_tensor *run_tanh(qkv_tape *t, qkv_tensor *const *in, const void *ctx) { (void)ctx; return qkv_tanh(t, in[0]); }
static qkv_tensor *run_sigmoid(qkv_tape *t, qkv_tensor *const *in, const void *ctx) { (void)ctx; return qkv_sigmoid(t, in[0]); }
static qkv_tensor *run_exp(qkv_tape *t, qkv_tensor *const *in, const void *ctx) { (void)ctx; return qkv_exp(t, in[0]); }
static qkv_tensor *run_log(qkv_tape *t, qkv_tensor *const *in, const void *ctx) { (void)ctx; return qkv_log(t, in[0]); }
static qkv_tensor *run_sqrt(qkv_tape *t, qkv_tensor *const *in, const void *ctx) { (void)ctx; return qkv_sqrt(t, in[0]); }
static qkv_tensor *run_silu(qkv_tape *t, qkv_tensor *const *in, const void *ctx) { (void)ctx; return qkv_silu(t, in[0]); }

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

static const float scale_by = -2.5f, shift_by = 0.75f;
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

static const qkv_gradcheck_case cases[] = {
    BINARY_CASES("add", run_add, N),
    BINARY_CASES("sub", run_sub, N),
    BINARY_CASES("mul", run_mul, N),
    BINARY_CASES("div", run_div, P),
    ONE("mul x*x (same tensor twice)", run_square, N, NULL, 2, {3, 4}),
    {.name = "tanh(a*b+c) [2,3,4],[3,1],[4]", .fn = run_chain, .n_inputs = 3, .ndim = {3, 2, 1},
     .shape = {{2, 3, 4}, {3, 1}, {4}}, .init = {N, N, N}},
    UNARY_CASES("scale", run_scale, N, &scale_by),
    UNARY_CASES("add_scalar", run_add_scalar, N, &shift_by),
    /* relu: SPREAD keeps inputs away from the kink, except that its ramp puts an
     * exact 0 in tensors of odd size, so [1] uses NORMAL (its one draw is far from 0). */
    ONE("relu [1]", run_relu, N, NULL, 1, {1}),
    ONE("relu [3,4]", run_relu, S, NULL, 2, {3, 4}),
    ONE("relu [2,1,3]", run_relu, S, NULL, 3, {2, 1, 3}),
    ONE("relu [2,3,4,5]", run_relu, S, NULL, 4, {2, 3, 4, 5}),
    /* abs: the same kink at 0, the same SPREAD init */
    ONE("abs [3,4]", run_abs, S, NULL, 2, {3, 4}),
    ONE("abs [2,1,3]", run_abs, S, NULL, 3, {2, 1, 3}),
    UNARY_CASES("gelu", run_gelu, N, NULL),
    UNARY_CASES("gelu_exact", run_gelu_exact, N, NULL),
    UNARY_CASES("tanh", run_tanh, N, NULL),
    UNARY_CASES("sigmoid", run_sigmoid, N, NULL),
    UNARY_CASES("exp", run_exp, N, NULL),
    UNARY_CASES("log", run_log, P, NULL),
    UNARY_CASES("sqrt", run_sqrt, P, NULL),
    UNARY_CASES("silu", run_silu, N, NULL),
    UNARY_CASES("dropout p=0.3", run_dropout, N, &drop_train),
    ONE("dropout p=0 (identity)", run_dropout, N, &drop_zero, 2, {3, 4}),
    ONE("dropout eval mode (identity)", run_dropout, N, &drop_eval, 3, {2, 3, 4}),
};

const qkv_gradcheck_group qkv_checks_elementwise = {"elementwise", cases,
                                                    (int)(sizeof cases / sizeof cases[0])};
