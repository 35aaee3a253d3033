/* checks_matmul.c — gradient-check cases of the matmul op (see gradcheck.h).
 *
 * Covers: 2-D with all four transpose combinations; batched 3-D and 4-D; a shared
 * 2-D B with a batched A (the linear layer x W^T, whose gradients take the
 * flattened path) and with trans_a (the summed, stride_c == 0 path); a shared 2-D
 * A with a batched B; size-1 dims (1x1, Mx1, 1xN, K = 1); and K > 256, which spans
 * two of the kernel's K blocks. Then the affine op (x W^T + b): 2-D, 3-D and 1-D
 * inputs, without bias, size-1 widths, and a bias summed over 1024 rows (two
 * column blocks of its reduction).
 */
#include "core/check/gradcheck.h"
#include "core/ops/ops.h"

typedef struct matmul_flags {
    int trans_a, trans_b;
} matmul_flags;

static const matmul_flags NN = {0, 0}, TN = {1, 0}, NT = {0, 1}, TT = {1, 1};

static qkv_tensor *matmul_fn(qkv_tape *tape, qkv_tensor *const *in, const void *ctx) {
    const matmul_flags *f = ctx;
    return qkv_matmul(tape, in[0], in[1], f->trans_a, f->trans_b);
}

/* One case: A of ndim_a dims, B of ndim_b dims, shapes as stored. */
#define MATMUL_CASE(case_name, flags, nda, da, ndb, db) \
    {.name = case_name, .fn = matmul_fn, .n_inputs = 2, .ndim = {nda, ndb}, .shape = {da, db}, \
     .ctx = &flags}
#define S(...) {__VA_ARGS__}

static const qkv_gradcheck_case cases[] = {
    /* 2-D, each transpose combination */
    MATMUL_CASE("matmul [3,4] x [4,5]", NN, 2, S(3, 4), 2, S(4, 5)),
    MATMUL_CASE("matmul [4,3]^T x [4,5]", TN, 2, S(4, 3), 2, S(4, 5)),
    MATMUL_CASE("matmul [3,4] x [5,4]^T", NT, 2, S(3, 4), 2, S(5, 4)),
    MATMUL_CASE("matmul [4,3]^T x [5,4]^T", TT, 2, S(4, 3), 2, S(5, 4)),
    /* batched, equal batch dims */
    MATMUL_CASE("matmul [2,3,4] x [2,4,5]", NN, 3, S(2, 3, 4), 3, S(2, 4, 5)),
    MATMUL_CASE("matmul [2,4,3]^T x [2,5,4]^T", TT, 3, S(2, 4, 3), 3, S(2, 5, 4)),
    MATMUL_CASE("matmul [2,2,3,4] x [2,2,4,2]", NN, 4, S(2, 2, 3, 4), 4, S(2, 2, 4, 2)),
    MATMUL_CASE("matmul [2,3,5,4] x [2,3,5,4]^T (scores)", NT, 4, S(2, 3, 5, 4), 4, S(2, 3, 5, 4)),
    MATMUL_CASE("matmul [2,2,5,3]^T x [2,2,5,4]", TN, 4, S(2, 2, 5, 3), 4, S(2, 2, 5, 4)),
    /* shared 2-D B: linear layers */
    MATMUL_CASE("matmul [2,3,4] x [5,4]^T (linear)", NT, 3, S(2, 3, 4), 2, S(5, 4)),
    MATMUL_CASE("matmul [2,3,4] x [4,5] shared B", NN, 3, S(2, 3, 4), 2, S(4, 5)),
    MATMUL_CASE("matmul [2,4,3]^T x [4,5] shared B", TN, 3, S(2, 4, 3), 2, S(4, 5)),
    MATMUL_CASE("matmul [2,2,3,4] x [5,4]^T shared B", NT, 4, S(2, 2, 3, 4), 2, S(5, 4)),
    /* shared 2-D A */
    MATMUL_CASE("matmul [3,4] x [2,4,5] shared A", NN, 2, S(3, 4), 3, S(2, 4, 5)),
    MATMUL_CASE("matmul [4,3]^T x [3,5,4]^T shared A", TT, 2, S(4, 3), 3, S(3, 5, 4)),
    MATMUL_CASE("matmul [3,4] x [2,2,4,2] shared A", NN, 2, S(3, 4), 4, S(2, 2, 4, 2)),
    /* size-1 dims */
    MATMUL_CASE("matmul [1,1] x [1,1]", NN, 2, S(1, 1), 2, S(1, 1)),
    MATMUL_CASE("matmul [5,1] x [1,4] (K=1)", NN, 2, S(5, 1), 2, S(1, 4)),
    MATMUL_CASE("matmul [4,3] x [3,1] (Mx1)", NN, 2, S(4, 3), 2, S(3, 1)),
    MATMUL_CASE("matmul [1,3] x [3,6] (1xN)", NN, 2, S(1, 3), 2, S(3, 6)),
    MATMUL_CASE("matmul [1,3]^T x [2,1]^T (K=1)", TT, 2, S(1, 3), 2, S(2, 1)),
    MATMUL_CASE("matmul [1,1,3] x [1,3,1]", NN, 3, S(1, 1, 3), 3, S(1, 3, 1)),
    MATMUL_CASE("matmul [3,1,2] x [1,2]^T shared B", NT, 3, S(3, 1, 2), 2, S(1, 2)),
    /* K spans two K blocks of the kernel. Outputs of size ~sqrt(300) make the float
     * rounding noise of the central difference ~4e-3 at eps 1e-3; matmul is linear in
     * each input, so eps 1e-2 adds no truncation error and cuts that noise tenfold. */
    {.name = "matmul [2,300] x [300,3]", .fn = matmul_fn, .n_inputs = 2, .ndim = {2, 2},
     .shape = {{2, 300}, {300, 3}}, .ctx = &NN, .eps = 1e-2f},
};

static qkv_tensor *affine_fn(qkv_tape *tape, qkv_tensor *const *in, const void *ctx) {
    (void)ctx;
    return qkv_affine(tape, in[0], in[1], in[2]);
}

static qkv_tensor *affine_no_bias_fn(qkv_tape *tape, qkv_tensor *const *in, const void *ctx) {
    (void)ctx;
    return qkv_affine(tape, in[0], in[1], NULL);
}

#define AFFINE_CASE(case_name, ndx, dx, n_out, k) \
    {.name = case_name, .fn = affine_fn, .n_inputs = 3, .ndim = {ndx, 2, 1}, \
     .shape = {dx, {n_out, k}, {n_out}}}

static const qkv_gradcheck_case affine_cases[] = {
    AFFINE_CASE("affine [3,4] W[5,4] b[5]", 2, S(3, 4), 5, 4),
    AFFINE_CASE("affine [2,3,4] W[5,4] b[5]", 3, S(2, 3, 4), 5, 4),
    AFFINE_CASE("affine [2,2,3,4] W[2,4] b[2]", 4, S(2, 2, 3, 4), 2, 4),
    AFFINE_CASE("affine [4] W[3,4] b[3] (1-D)", 1, S(4), 3, 4),
    AFFINE_CASE("affine [1,1] W[1,1] b[1]", 2, S(1, 1), 1, 1),
    AFFINE_CASE("affine [64,16,3] W[70,3] b[70] (two bias blocks)", 3, S(64, 16, 3), 70, 3),
    {.name = "affine [2,3,4] W[5,4], no bias", .fn = affine_no_bias_fn, .n_inputs = 2, .ndim = {3, 2},
     .shape = {{2, 3, 4}, {5, 4}}},
};

const qkv_gradcheck_group qkv_checks_affine = {"affine", affine_cases,
                                               (int)(sizeof affine_cases / sizeof affine_cases[0])};

const qkv_gradcheck_group qkv_checks_matmul = {"matmul", cases,
                                               (int)(sizeof cases / sizeof cases[0])};
