/* checks_softmax.c — gradient-check cases for ops_softmax.c: softmax and
 * log-softmax on [1,1], [5], [3,7], [2,3,4] and 4-D; cross-entropy with targets,
 * an ignored row, per-row weights, 3-D logits and every row ignored; mse with both
 * inputs checked, and with a data target. Targets and weights travel in ctx. */
#include <stddef.h>

#include "core/check/gradcheck.h"
#include "core/ops/ops.h"

static qkv_tensor *softmax_fn(qkv_tape *tape, qkv_tensor *const *in, const void *ctx) {
    (void)ctx;
    return qkv_softmax(tape, in[0]);
}

static qkv_tensor *log_softmax_fn(qkv_tape *tape, qkv_tensor *const *in, const void *ctx) {
    (void)ctx;
    return qkv_log_softmax(tape, in[0]);
}

typedef struct ce_args {
    const int32_t *targets;
    int32_t ignore_index;
    const float *weights;
} ce_args;

static qkv_tensor *cross_entropy_fn(qkv_tape *tape, qkv_tensor *const *in, const void *ctx) {
    const ce_args *a = ctx;
    return qkv_cross_entropy(tape, in[0], a->targets, a->ignore_index, a->weights);
}

static qkv_tensor *mse_fn(qkv_tape *tape, qkv_tensor *const *in, const void *ctx) {
    (void)ctx;
    return qkv_mse(tape, in[0], in[1]);
}

#define IGNORE (-100)
static const int32_t targets_6[6] = {0, 4, 2, 1, 3, 2};
static const int32_t targets_6_one_ignored[6] = {0, 4, IGNORE, 1, 3, 2};
static const int32_t targets_6_all_ignored[6] = {IGNORE, IGNORE, IGNORE, IGNORE, IGNORE, IGNORE};
static const int32_t targets_2x3[6] = {3, 0, 1, IGNORE, 2, 3};
static const float weights_6[6] = {0.5f, 1.0f, 2.0f, 1.5f, 1.0f, 0.25f};

static const ce_args ce_plain = {targets_6, IGNORE, NULL};
static const ce_args ce_one_ignored = {targets_6_one_ignored, IGNORE, NULL};
static const ce_args ce_weighted = {targets_6_one_ignored, IGNORE, weights_6};
static const ce_args ce_all_ignored = {targets_6_all_ignored, IGNORE, NULL};
static const ce_args ce_3d = {targets_2x3, IGNORE, weights_6};

#define ONE_INPUT(op, nd, ...) .fn = op, .n_inputs = 1, .ndim = {nd}, .shape = {{__VA_ARGS__}}
#define CE(nd, ...) ONE_INPUT(cross_entropy_fn, nd, __VA_ARGS__)
#define TWO_SAME(op, nd, ...) \
    .fn = op, .n_inputs = 2, .ndim = {nd, nd}, .shape = {{__VA_ARGS__}, {__VA_ARGS__}}

static const qkv_gradcheck_case cases[] = {
    {.name = "softmax [1,1]", ONE_INPUT(softmax_fn, 2, 1, 1)},
    {.name = "softmax [5]", ONE_INPUT(softmax_fn, 1, 5)},
    {.name = "softmax [3,7]", ONE_INPUT(softmax_fn, 2, 3, 7)},
    {.name = "softmax [2,3,4]", ONE_INPUT(softmax_fn, 3, 2, 3, 4)},
    {.name = "softmax [2,1,3,4]", ONE_INPUT(softmax_fn, 4, 2, 1, 3, 4)},
    {.name = "log_softmax [1,1]", ONE_INPUT(log_softmax_fn, 2, 1, 1)},
    {.name = "log_softmax [5]", ONE_INPUT(log_softmax_fn, 1, 5)},
    {.name = "log_softmax [3,7]", ONE_INPUT(log_softmax_fn, 2, 3, 7)},
    {.name = "log_softmax [2,3,4]", ONE_INPUT(log_softmax_fn, 3, 2, 3, 4)},
    {.name = "cross_entropy [6,5]", CE(2, 6, 5), .ctx = &ce_plain},
    {.name = "cross_entropy [6,5] one row ignored", CE(2, 6, 5), .ctx = &ce_one_ignored},
    {.name = "cross_entropy [6,5] weighted", CE(2, 6, 5), .ctx = &ce_weighted},
    {.name = "cross_entropy [6,5] all ignored", CE(2, 6, 5), .ctx = &ce_all_ignored},
    {.name = "cross_entropy [2,3,4] weighted, one ignored", CE(3, 2, 3, 4), .ctx = &ce_3d},
    {.name = "mse [3,4] both inputs", TWO_SAME(mse_fn, 2, 3, 4)},
    {.name = "mse [2,3,4] both inputs", TWO_SAME(mse_fn, 3, 2, 3, 4)},
    {.name = "mse [1] both inputs", TWO_SAME(mse_fn, 1, 1)},
    {.name = "mse scalar both inputs", .fn = mse_fn, .n_inputs = 2, .ndim = {0, 0}},
    {.name = "mse [5] data target", TWO_SAME(mse_fn, 1, 5), .no_grad = {0, 1}},
};

const qkv_gradcheck_group qkv_checks_softmax = {"softmax", cases, (int)(sizeof cases / sizeof cases[0])};
