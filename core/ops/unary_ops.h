/* unary_ops.h — THE TABLE of unary elementwise ops: one row per op, from which
 * everything else about it is generated: the enum qkv_unary_kind, the engine's
 * value and slope switches, cost and tape name (core/ops/ops_elementwise.c) and
 * its gradient-check rows (core/check/checks_elementwise.c). Adding an op is its
 * row here, its public wrapper in ops_elementwise.c and that wrapper's line in
 * ops.h; the registries suite fails for an op defined elsewhere without a check.
 *   X(KIND, name, cost, check, check_c, value, slope)
 * name is the tape's op name (and qkv_unary_ops[], which the tests walk); cost is
 * rough flops per element (cheap maps stay on one thread for longer); value is
 * y = f(x) and slope dy/dx, C expressions in x, y = f(x) and the op's constant c
 * (the scale or the added constant), which only ops_elementwise.c expands (their
 * helpers, gelu_tanh_inner ..., live there). Each becomes a case of a switch that
 * stands outside the loops, so every inner loop is a tight loop of one constant
 * op, vectorized per instruction set (core/kernels/multiversion.h).
 * check says where a finite-difference check may draw x (checks_elementwise.c
 * makes the rows at [1], [3,4], [2,1,3], [2,3,4,5] from it):
 *   SMOOTH    anywhere: N(0, 1);
 *   POSITIVE  x > 0 only (log, sqrt): uniform [0.5, 2);
 *   KINK      not differentiable at 0 (relu): values at least 0.05 from 0, except
 *             the one value of [1], N(0, 1) (a single draw far from 0);
 *   LISTED    its rows are listed by hand in checks_elementwise.c
 *             (LISTED_ROWS_<KIND>): abs, checked at 2-D and 3-D only since it
 *             was added (a case more would move every later case's seed).
 * check_c is the constant c the check passes (0 for ops without one). */
#ifndef QKV_UNARY_OPS_H
#define QKV_UNARY_OPS_H

#define QKV_UNARY_OPS(X)                                                                                    \
    X(SCALE, "scale", 1, SMOOTH, -2.5f, c * x, c)                     /* d(c x) = c */                      \
    X(ADD_SCALAR, "add_scalar", 1, SMOOTH, 0.75f, x + c, 1.0f)        /* d(x + c) = 1 */                    \
    X(RELU, "relu", 1, KINK, 0, x < 0.0f ? 0.0f : x,                  /* NaN passes through */              \
      x > 0.0f ? 1.0f : 0.0f)                                         /* 1[x > 0] */                        \
    X(ABS, "abs", 1, LISTED, 0, fabsf(x), x > 0.0f ? 1.0f : (x < 0.0f ? -1.0f : 0.0f)) /* sign(x), 0 at 0 */ \
    X(GELU, "gelu", 16, SMOOTH, 0, 0.5f * x * (1.0f + gelu_tanh_inner(x)), gelu_tanh_slope(x)) /* tanh form */ \
    X(GELU_EXACT, "gelu_exact", 16, SMOOTH, 0, 0.5f * x * (1.0f + qkv_math_erff(x * (float)M_SQRT1_2)), /* x Phi(x) */ \
      phi_cdf(x) + x * INV_SQRT_2PI * qkv_fast_exp_nonpositive(-0.5f * x * x)) /* Phi + x phi */           \
    X(TANH, "tanh", 16, SMOOTH, 0, qkv_fast_tanhf(x), 1.0f - y * y)   /* 1 - tanh^2 */                      \
    X(SIGMOID, "sigmoid", 16, SMOOTH, 0, sigmoid_value(x), y * (1.0f - y)) /* s (1 - s) */                  \
    X(EXP, "exp", 16, SMOOTH, 0, qkv_math_expf(x), y)                          /* exp */                             \
    X(LOG, "log", 16, POSITIVE, 0, qkv_math_logf(x), 1.0f / x)                 /* 1 / x */                           \
    X(SQRT, "sqrt", 16, POSITIVE, 0, sqrtf(x), 0.5f / y)              /* 1 / (2 sqrt x) */                  \
    X(SILU, "silu", 16, SMOOTH, 0, x * sigmoid_value(x), silu_slope(x)) /* x sigmoid(x) */

#define QKV_UNARY_ENUM_(KIND, name, cost, check, check_c, value, slope) QKV_UNARY_##KIND,
typedef enum qkv_unary_kind { QKV_UNARY_OPS(QKV_UNARY_ENUM_) QKV_UNARY_COUNT } qkv_unary_kind;
#undef QKV_UNARY_ENUM_

#endif
