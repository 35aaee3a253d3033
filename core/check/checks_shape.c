/* checks_shape.c — gradient-check cases for the shape and indexing ops (ops_shape.c).
 *
 * Each op's extra arguments (target shape, permutation, axis and range, ids) come
 * through a static const struct in ctx. The ops only move elements, so their
 * gradients are exact; the cases make sure every element lands in the right place
 * (3-D and 4-D layouts, first/middle/last axes, size-1 dims, repeated ids).
 */
#include "core/check/gradcheck.h"
#include "core/ops/ops.h"

/* ---- reshape ---- */
typedef struct reshape_args { int ndim; int shape[4]; } reshape_args;

static qkv_tensor *reshape_fn(qkv_tape *tape, qkv_tensor *const *in, const void *ctx) {
    const reshape_args *a = ctx;
    return qkv_reshape(tape, in[0], a->ndim, a->shape);
}

static const reshape_args to_6x4 = {2, {6, 4}};
static const reshape_args to_2_infer_3 = {3, {2, -1, 3}};
static const reshape_args to_1x5x1 = {3, {1, 5, 1}};
static const reshape_args to_scalar = {0, {0}};
static const reshape_args to_2x3x2x2 = {4, {2, 3, 2, 2}};

/* ---- permute and transpose ---- */
typedef struct permute_args { int perm[4]; } permute_args;

static qkv_tensor *permute_fn(qkv_tape *tape, qkv_tensor *const *in, const void *ctx) {
    const permute_args *a = ctx;
    return qkv_permute(tape, in[0], a->perm);
}

static const permute_args perm_201 = {{2, 0, 1}};
static const permute_args perm_102 = {{1, 0, 2}};
static const permute_args perm_0213 = {{0, 2, 1, 3}};
static const permute_args perm_3102 = {{3, 1, 0, 2}};
static const permute_args perm_10 = {{1, 0}};

typedef struct transpose_args { int dim0, dim1; } transpose_args;

static qkv_tensor *transpose_fn(qkv_tape *tape, qkv_tensor *const *in, const void *ctx) {
    const transpose_args *a = ctx;
    return qkv_transpose(tape, in[0], a->dim0, a->dim1);
}

static const transpose_args swap_01 = {0, 1};
static const transpose_args swap_last_two = {-1, -2};
static const transpose_args swap_03 = {0, 3};

/* ---- slice ---- */
typedef struct slice_args { int axis, start, end; } slice_args;

static qkv_tensor *slice_fn(qkv_tape *tape, qkv_tensor *const *in, const void *ctx) {
    const slice_args *a = ctx;
    return qkv_slice(tape, in[0], a->axis, a->start, a->end);
}

static const slice_args first_row = {0, 0, 1};
static const slice_args middle_cols = {1, 1, 4};
static const slice_args last_two = {-1, 3, 5};
static const slice_args whole_axis1 = {1, 0, 3};
static const slice_args axis2_of_4d = {2, 1, 3};

/* ---- concat: the case's n inputs along one axis (n repeated in ctx, since the
 * function sees only the input array) ---- */
typedef struct concat_args { int n, axis; } concat_args;

static qkv_tensor *concat_fn(qkv_tape *tape, qkv_tensor *const *in, const void *ctx) {
    const concat_args *a = ctx;
    return qkv_concat(tape, a->n, in, a->axis);
}

static const concat_args cat2_axis0 = {2, 0}, cat3_axis1 = {3, 1}, cat3_last = {3, -1},
                         cat2_axis2 = {2, 2}, cat1_axis0 = {1, 0}, cat2_last = {2, -1};

/* ---- embedding ---- */
typedef struct embedding_args {
    int ids_ndim;
    int ids_shape[3];
    int32_t ids[12];
} embedding_args;

static qkv_tensor *embedding_fn(qkv_tape *tape, qkv_tensor *const *in, const void *ctx) {
    const embedding_args *a = ctx;
    return qkv_embedding(tape, in[0], a->ids, a->ids_ndim, a->ids_shape);
}

/* Repeated ids (2 three times, 0 twice) make the scatter-add accumulate; id 1 and 3 are unused. */
static const embedding_args ids_1d = {1, {6}, {0, 2, 2, 4, 0, 2}};
static const embedding_args ids_2d = {2, {3, 4}, {1, 0, 1, 3, 3, 3, 2, 0, 1, 4, 4, 1}};
static const embedding_args ids_scalar = {0, {0}, {3}};
static const embedding_args ids_3d = {3, {2, 2, 2}, {0, 1, 0, 1, 1, 1, 0, 0}};

#define X(...) {__VA_ARGS__}
#define UNARY(nm, f, args, nd, ...)                                                             \
    {.name = nm, .fn = f, .n_inputs = 1, .ndim = {nd}, .shape = {X(__VA_ARGS__)}, .ctx = &args}
/* n inputs with ndims nds and shapes shs; no_grad marks data inputs. */
#define CONCAT(nm, args, n, nds, shs, data)                                                     \
    {.name = nm, .fn = concat_fn, .n_inputs = n, .ndim = nds, .shape = shs, .no_grad = data,    \
     .ctx = &args}

static const qkv_gradcheck_case cases[] = {
    UNARY("reshape [2,3,4] -> [6,4]", reshape_fn, to_6x4, 3, 2, 3, 4),
    UNARY("reshape [4,6] -> [2,-1,3]", reshape_fn, to_2_infer_3, 2, 4, 6),
    UNARY("reshape [5] -> [1,5,1]", reshape_fn, to_1x5x1, 1, 5),
    UNARY("reshape [1,1] -> []", reshape_fn, to_scalar, 2, 1, 1),
    UNARY("reshape [6,4] -> [2,3,2,2]", reshape_fn, to_2x3x2x2, 2, 6, 4),

    UNARY("permute [2,3,4] (2,0,1)", permute_fn, perm_201, 3, 2, 3, 4),
    UNARY("permute [2,3,4] (1,0,2)", permute_fn, perm_102, 3, 2, 3, 4),
    UNARY("permute [2,3,4,5] (0,2,1,3)", permute_fn, perm_0213, 4, 2, 3, 4, 5),
    UNARY("permute [2,1,3,2] (3,1,0,2)", permute_fn, perm_3102, 4, 2, 1, 3, 2),
    UNARY("permute [1,4] (1,0)", permute_fn, perm_10, 2, 1, 4),

    UNARY("transpose [3,4] (0,1)", transpose_fn, swap_01, 2, 3, 4),
    UNARY("transpose [2,3,4] (-1,-2)", transpose_fn, swap_last_two, 3, 2, 3, 4),
    UNARY("transpose [2,3,4,2] (0,3)", transpose_fn, swap_03, 4, 2, 3, 4, 2),

    UNARY("slice [4,5] axis 0 [0,1) first", slice_fn, first_row, 2, 4, 5),
    UNARY("slice [3,6] axis 1 [1,4) middle", slice_fn, middle_cols, 2, 3, 6),
    UNARY("slice [2,3,5] axis -1 [3,5) last", slice_fn, last_two, 3, 2, 3, 5),
    UNARY("slice [2,3,4] axis 1 [0,3) whole", slice_fn, whole_axis1, 3, 2, 3, 4),
    UNARY("slice [2,2,4,3] axis 2 [1,3)", slice_fn, axis2_of_4d, 4, 2, 2, 4, 3),

    CONCAT("concat [2,3]+[1,3] axis 0", cat2_axis0, 2, X(2, 2), X({2, 3}, {1, 3}), {0}),
    CONCAT("concat [2,1,4]+[2,3,4]+[2,2,4] axis 1", cat3_axis1, 3, X(3, 3, 3),
           X({2, 1, 4}, {2, 3, 4}, {2, 2, 4}), {0}),
    CONCAT("concat [3,2]+[3,5]+[3,1] axis -1", cat3_last, 3, X(2, 2, 2), X({3, 2}, {3, 5}, {3, 1}), {0}),
    CONCAT("concat [2,1,3,2]+[2,1,1,2] axis 2", cat2_axis2, 2, X(4, 4), X({2, 1, 3, 2}, {2, 1, 1, 2}), {0}),
    CONCAT("concat [4,3] alone", cat1_axis0, 1, X(2), X({4, 3}), {0}),
    /* The first input is data: only the second receives a gradient. */
    CONCAT("concat [2,3](data)+[2,2] axis -1", cat2_last, 2, X(2, 2), X({2, 3}, {2, 2}), X(1, 0)),

    UNARY("embedding [5,3] ids [6] repeated", embedding_fn, ids_1d, 2, 5, 3),
    UNARY("embedding [5,4] ids [3,4] repeated", embedding_fn, ids_2d, 2, 5, 4),
    UNARY("embedding [4,2] ids [] scalar", embedding_fn, ids_scalar, 2, 4, 2),
    UNARY("embedding [2,1] ids [2,2,2]", embedding_fn, ids_3d, 2, 2, 1),
};

const qkv_gradcheck_group qkv_checks_shape = {"shape", cases, (int)(sizeof cases / sizeof cases[0])};
