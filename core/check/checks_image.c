/* checks_image.c — gradient-check cases for the image ops (ops_image.c).
 * patchify only moves elements, so its gradient is exact; the cases cover one
 * and several channels, square and non-square grids, P = 1 (every pixel a token)
 * and P = H = W (one token per image). */
#include "core/check/gradcheck.h"
#include "core/ops/ops.h"

typedef struct patch_args { int p; } patch_args;

static qkv_tensor *patchify_fn(qkv_tape *tape, qkv_tensor *const *in, const void *ctx) {
    return qkv_patchify(tape, in[0], ((const patch_args *)ctx)->p);
}

static const patch_args p1 = {1}, p2 = {2}, p3 = {3}, p4 = {4};

static const qkv_gradcheck_case cases[] = {
    {"patchify [1,1,2,2] P=1", patchify_fn, 1, {4}, {{1, 1, 2, 2}}, .ctx = &p1},
    {"patchify [2,3,4,6] P=2", patchify_fn, 1, {4}, {{2, 3, 4, 6}}, .ctx = &p2},
    {"patchify [1,2,6,3] P=3", patchify_fn, 1, {4}, {{1, 2, 6, 3}}, .ctx = &p3},
    {"patchify [2,1,4,4] P=4 one token", patchify_fn, 1, {4}, {{2, 1, 4, 4}}, .ctx = &p4},
};

const qkv_gradcheck_group qkv_checks_image = {"image", cases, (int)(sizeof cases / sizeof cases[0])};
