/* checks_reduce.c — gradient-check cases for ops_reduce.c: sum, mean and max over
 * first, middle, last and negative axes with keepdim both ways, size-1 dims and
 * 4-D inputs; sum_all and mean_all. Max uses QKV_INIT_SPREAD so that no two
 * values tie and no finite-difference step crosses an argmax change. */
#include "core/check/gradcheck.h"
#include "core/ops/ops.h"

typedef struct reduce_args {
    int axis, keepdim;
} reduce_args;

static qkv_tensor *sum_fn(qkv_tape *tape, qkv_tensor *const *in, const void *ctx) {
    const reduce_args *a = ctx;
    return qkv_sum(tape, in[0], a->axis, a->keepdim);
}

static qkv_tensor *mean_fn(qkv_tape *tape, qkv_tensor *const *in, const void *ctx) {
    const reduce_args *a = ctx;
    return qkv_mean(tape, in[0], a->axis, a->keepdim);
}

static qkv_tensor *max_fn(qkv_tape *tape, qkv_tensor *const *in, const void *ctx) {
    const reduce_args *a = ctx;
    return qkv_max(tape, in[0], a->axis, a->keepdim);
}

static qkv_tensor *sum_all_fn(qkv_tape *tape, qkv_tensor *const *in, const void *ctx) {
    (void)ctx;
    return qkv_sum_all(tape, in[0]);
}

static qkv_tensor *mean_all_fn(qkv_tape *tape, qkv_tensor *const *in, const void *ctx) {
    (void)ctx;
    return qkv_mean_all(tape, in[0]);
}

#define AXIS(axis, keepdim) .ctx = &(const reduce_args){axis, keepdim}
#define ONE_INPUT(op, nd, ...) .fn = op, .n_inputs = 1, .ndim = {nd}, .shape = {{__VA_ARGS__}}
#define SPREAD .init = {QKV_INIT_SPREAD}

static const qkv_gradcheck_case cases[] = {
    {.name = "sum [3,4] axis 0", ONE_INPUT(sum_fn, 2, 3, 4), AXIS(0, 0)},
    {.name = "sum [3,4] axis -1 keepdim", ONE_INPUT(sum_fn, 2, 3, 4), AXIS(-1, 1)},
    {.name = "sum [2,3,4] middle axis", ONE_INPUT(sum_fn, 3, 2, 3, 4), AXIS(1, 0)},
    {.name = "sum [1,5] axis 0 size-1", ONE_INPUT(sum_fn, 2, 1, 5), AXIS(0, 1)},
    {.name = "sum [5] to scalar", ONE_INPUT(sum_fn, 1, 5), AXIS(0, 0)},
    {.name = "sum [2,3,4,5] axis -2 keepdim", ONE_INPUT(sum_fn, 4, 2, 3, 4, 5), AXIS(-2, 1)},
    {.name = "sum [3,2,70] axis 0 (inner > tile)", ONE_INPUT(sum_fn, 3, 3, 2, 70), AXIS(0, 0)},
    {.name = "mean [3,4] axis 1", ONE_INPUT(mean_fn, 2, 3, 4), AXIS(1, 0)},
    {.name = "mean [2,1,3] axis 1 keepdim", ONE_INPUT(mean_fn, 3, 2, 1, 3), AXIS(1, 1)},
    {.name = "mean [2,3,4,2] axis 0", ONE_INPUT(mean_fn, 4, 2, 3, 4, 2), AXIS(0, 0)},
    {.name = "mean [2,3,4] axis -3 keepdim", ONE_INPUT(mean_fn, 3, 2, 3, 4), AXIS(-3, 1)},
    {.name = "sum_all [3,4]", ONE_INPUT(sum_all_fn, 2, 3, 4)},
    {.name = "sum_all [1]", ONE_INPUT(sum_all_fn, 1, 1)},
    {.name = "sum_all [2,3,4,5]", ONE_INPUT(sum_all_fn, 4, 2, 3, 4, 5)},
    {.name = "mean_all [3,4]", ONE_INPUT(mean_all_fn, 2, 3, 4)},
    {.name = "mean_all [2,1,3,1]", ONE_INPUT(mean_all_fn, 4, 2, 1, 3, 1)},
    {.name = "max [3,4] axis 1", ONE_INPUT(max_fn, 2, 3, 4), SPREAD, AXIS(1, 0)},
    {.name = "max [3,4] axis 0 keepdim", ONE_INPUT(max_fn, 2, 3, 4), SPREAD, AXIS(0, 1)},
    {.name = "max [2,3,4] axis -2", ONE_INPUT(max_fn, 3, 2, 3, 4), SPREAD, AXIS(-2, 0)},
    {.name = "max [2,3,1,4] size-1 axis 2", ONE_INPUT(max_fn, 4, 2, 3, 1, 4), SPREAD, AXIS(2, 0)},
    {.name = "max [2,2,3,4] axis 3 keepdim", ONE_INPUT(max_fn, 4, 2, 2, 3, 4), SPREAD, AXIS(3, 1)},
    {.name = "max [5] to scalar", ONE_INPUT(max_fn, 1, 5), SPREAD, AXIS(-1, 0)},
    {.name = "max [4,70] axis 0 (inner > tile)", ONE_INPUT(max_fn, 2, 4, 70), SPREAD, AXIS(0, 0)},
};

const qkv_gradcheck_group qkv_checks_reduce = {"reduce", cases, (int)(sizeof cases / sizeof cases[0])};
