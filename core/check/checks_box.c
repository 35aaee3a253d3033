/* checks_box.c — gradient-check cases for the GIoU loss (ops_box.c).
 *
 * Random cases draw both box sets from uniform [0.5, 2) (mostly overlapping boxes
 * of varied shapes), one with a data target. The geometry cases place fixed boxes
 * with every corner at least 0.01 from any tie (far beyond the 1e-3 step):
 * overlapping, disjoint, apart on one axis only, nested both ways, and all of them
 * in one batch; their setup makes pred and target parameters, so both are checked. */
#include <stdlib.h>
#include <string.h>

#include "core/ops/boxes.h"
#include "core/check/gradcheck.h"
#include "core/ops/ops.h"

static qkv_tensor *giou_inputs_fn(qkv_tape *tape, qkv_tensor *const *in, const void *ctx) {
    (void)ctx;
    return qkv_giou_loss(tape, in[0], in[1]);
}

/* A geometry case: n box pairs (pred, target), cx cy w h each. */
typedef struct box_pairs {
    int n;
    float pred[6][4], target[6][4];
} box_pairs;

typedef struct box_module {
    qkv_tensor *pred, *target;
} box_module;

static void *box_setup(qkv_params *params, qkv_rng *rng, const void *ctx) {
    (void)rng;
    const box_pairs *p = ctx;
    box_module *m = malloc(sizeof *m);
    int shape[2] = {p->n, 4};
    m->pred = qkv_params_new(params, "pred", 2, shape);
    m->target = qkv_params_new(params, "target", 2, shape);
    memcpy(m->pred->data, p->pred, (size_t)p->n * 4 * sizeof(float));
    memcpy(m->target->data, p->target, (size_t)p->n * 4 * sizeof(float));
    return m;
}

static void box_teardown(void *module) { free(module); }

static qkv_tensor *giou_pairs_fn(qkv_tape *tape, qkv_tensor *const *in, const void *ctx) {
    (void)in;
    const box_module *m = ctx;
    return qkv_giou_loss(tape, m->pred, m->target);
}

static const box_pairs overlapping = {1, {{0.5f, 0.5f, 0.4f, 0.3f}}, {{0.56f, 0.45f, 0.3f, 0.5f}}};
static const box_pairs disjoint = {1, {{0.2f, 0.2f, 0.1f, 0.1f}}, {{0.7f, 0.8f, 0.2f, 0.15f}}};
static const box_pairs apart_in_y = {1, {{0.4f, 0.2f, 0.3f, 0.1f}}, {{0.5f, 0.7f, 0.2f, 0.3f}}};
static const box_pairs target_inside = {1, {{0.5f, 0.5f, 0.6f, 0.6f}}, {{0.52f, 0.47f, 0.2f, 0.1f}}};
static const box_pairs pred_inside = {1, {{0.31f, 0.62f, 0.12f, 0.2f}}, {{0.3f, 0.6f, 0.5f, 0.4f}}};
static const box_pairs all_kinds = {
    5,
    {{0.5f, 0.5f, 0.4f, 0.3f}, {0.2f, 0.2f, 0.1f, 0.1f}, {0.4f, 0.2f, 0.3f, 0.1f},
     {0.5f, 0.5f, 0.6f, 0.6f}, {0.31f, 0.62f, 0.12f, 0.2f}},
    {{0.56f, 0.45f, 0.3f, 0.5f}, {0.7f, 0.8f, 0.2f, 0.15f}, {0.5f, 0.7f, 0.2f, 0.3f},
     {0.52f, 0.47f, 0.2f, 0.1f}, {0.3f, 0.6f, 0.5f, 0.4f}},
};

#define RANDOM_PAIRS(n)                                                                  \
    .fn = giou_inputs_fn, .n_inputs = 2, .ndim = {2, 2}, .shape = {{n, 4}, {n, 4}},      \
    .init = {QKV_INIT_POSITIVE, QKV_INIT_POSITIVE}
#define FIXED_PAIRS(p) .fn = giou_pairs_fn, .ctx = &(p), .setup = box_setup, .teardown = box_teardown

static const qkv_gradcheck_case cases[] = {
    {.name = "giou_loss [1,4] random", RANDOM_PAIRS(1)},
    {.name = "giou_loss [7,4] random", RANDOM_PAIRS(7)},
    {.name = "giou_loss [5,4] random, data target", RANDOM_PAIRS(5), .no_grad = {0, 1}},
    {.name = "giou_loss [1,4] overlapping", FIXED_PAIRS(overlapping)},
    {.name = "giou_loss [1,4] disjoint", FIXED_PAIRS(disjoint)},
    {.name = "giou_loss [1,4] apart in y only", FIXED_PAIRS(apart_in_y)},
    {.name = "giou_loss [1,4] target inside pred", FIXED_PAIRS(target_inside)},
    {.name = "giou_loss [1,4] pred inside target", FIXED_PAIRS(pred_inside)},
    {.name = "giou_loss [5,4] all kinds", FIXED_PAIRS(all_kinds)},
};

const qkv_gradcheck_group qkv_checks_box = {"box", cases, (int)(sizeof cases / sizeof cases[0])};
