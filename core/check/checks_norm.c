/* checks_norm.c — gradient-check cases for layer norm (ops_norm.c).
 *
 * Inputs are x, then gamma and/or beta when the case has them; ctx says which.
 * Shapes cover 1-D to 4-D x, a single row, and D = 1, where xhat is 0, y = beta,
 * and the x and gamma gradients are exactly 0.
 */
#include "core/check/gradcheck.h"
#include "core/ops/ops.h"

typedef struct layer_norm_args {
    int has_gamma, has_beta;
    float eps;
} layer_norm_args;

static const layer_norm_args plain = {0, 0, 1e-5f};
static const layer_norm_args affine = {1, 1, 1e-5f};
static const layer_norm_args gamma_only = {1, 0, 1e-5f};
static const layer_norm_args beta_only = {0, 1, 1e-5f};
/* A large eps, so that eps matters in rstd (checks it is added inside the sqrt). */
static const layer_norm_args affine_big_eps = {1, 1, 0.5f};

static qkv_tensor *layer_norm_fn(qkv_tape *tape, qkv_tensor *const *in, const void *ctx) {
    const layer_norm_args *a = ctx;
    int next = 1;
    qkv_tensor *gamma = a->has_gamma ? in[next++] : NULL;
    qkv_tensor *beta = a->has_beta ? in[next++] : NULL;
    return qkv_layer_norm(tape, in[0], gamma, beta, a->eps);
}

#define X(...) {__VA_ARGS__}
/* Cases with x [shape] and D = its last dim. */
#define LN_PLAIN(nm, nd, ...)                                                                   \
    {.name = nm, .fn = layer_norm_fn, .n_inputs = 1, .ndim = {nd}, .shape = {X(__VA_ARGS__)},    \
     .ctx = &plain}
/* x, gamma [D] and beta [D]. */
#define LN_AFFINE(nm, nd, D, args, ...)                                                         \
    {.name = nm, .fn = layer_norm_fn, .n_inputs = 3, .ndim = {nd, 1, 1},                         \
     .shape = {X(__VA_ARGS__), {D}, {D}}, .ctx = &args}
/* x and one of gamma, beta [D]. */
#define LN_ONE(nm, nd, D, args, ...)                                                            \
    {.name = nm, .fn = layer_norm_fn, .n_inputs = 2, .ndim = {nd, 1},                            \
     .shape = {X(__VA_ARGS__), {D}}, .ctx = &args}

static const qkv_gradcheck_case cases[] = {
    LN_PLAIN("layer_norm [4,8]", 2, 4, 8),
    LN_PLAIN("layer_norm [2,3,5]", 3, 2, 3, 5),
    LN_PLAIN("layer_norm [1,6]", 2, 1, 6),
    LN_PLAIN("layer_norm [7] 1-D", 1, 7),
    LN_PLAIN("layer_norm [2,2,3,4] 4-D", 4, 2, 2, 3, 4),
    LN_PLAIN("layer_norm [3,1] D=1", 2, 3, 1),
    LN_PLAIN("layer_norm [3,2] D=2", 2, 3, 2),
    LN_AFFINE("layer_norm [4,8] gamma beta", 2, 8, affine, 4, 8),
    LN_AFFINE("layer_norm [2,3,5] gamma beta", 3, 5, affine, 2, 3, 5),
    LN_AFFINE("layer_norm [1,6] gamma beta", 2, 6, affine, 1, 6),
    LN_AFFINE("layer_norm [2,1,3,4] 4-D gamma beta", 4, 4, affine, 2, 1, 3, 4),
    LN_AFFINE("layer_norm [3,1] D=1 gamma beta", 2, 1, affine, 3, 1),
    LN_AFFINE("layer_norm [4,8] gamma beta eps 0.5", 2, 8, affine_big_eps, 4, 8),
    LN_ONE("layer_norm [4,8] gamma only", 2, 8, gamma_only, 4, 8),
    LN_ONE("layer_norm [2,3,5] beta only", 3, 5, beta_only, 2, 3, 5),
    /* gamma and beta learn while x is data (no gradient into x). */
    {.name = "layer_norm [5,6] x data, gamma beta", .fn = layer_norm_fn, .n_inputs = 3,
     .ndim = {2, 1, 1}, .shape = {{5, 6}, {6}, {6}}, .no_grad = {1, 0, 0}, .ctx = &affine},
    /* A long row: 300 x 64 elements, sampled by the checker; exercises the column blocks
     * of the gamma/beta gradient (64 = 4 blocks) across many rows. */
    LN_AFFINE("layer_norm [300,64] gamma beta", 2, 64, affine, 300, 64),
};

const qkv_gradcheck_group qkv_checks_norm = {"norm", cases, (int)(sizeof cases / sizeof cases[0])};
