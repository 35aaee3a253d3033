/* checks_set_loss.c — gradient-check cases for the whole set loss (set_loss.h),
 * w.r.t. the logits and the raw boxes (boxes = sigmoid(raw), as in DETR's head).
 *
 * The matching is piecewise constant in the inputs: these cases use random
 * inputs whose optimal matching is far from ties at the fixed seeds (a flip under
 * the 1e-3 step would show as a large error). Targets: a batch of 2 images with
 * 2 and 1 objects, 1 image with 3 of 3 queries, and a batch with an empty image;
 * the sum over 2 decoder layers (auxiliary losses) is checked too. */
#include "layers/check/checks.h"
#include "core/check/gradcheck.h"
#include "core/ops/ops.h"
#include "layers/set_loss.h"

typedef struct set_loss_case {
    qkv_set_targets targets;
    int n_layers;
} set_loss_case;

/* in = {logits layer 0, raw boxes layer 0, logits layer 1, raw boxes layer 1}. */
static qkv_tensor *set_loss_fn(qkv_tape *tape, qkv_tensor *const *in, const void *ctx) {
    const set_loss_case *c = ctx;
    qkv_tensor *logits[2], *boxes[2];
    for (int l = 0; l < c->n_layers; l++) {
        logits[l] = in[2 * l];
        boxes[l] = qkv_sigmoid(tape, in[2 * l + 1]);
    }
    return qkv_set_loss_layers(tape, c->n_layers, logits, boxes, &c->targets, NULL, NULL);
}

static const int counts_2_1[2] = {2, 1};
static const int32_t classes_3[3] = {1, 0, 2};
static const float boxes_3[12] = {0.3f, 0.4f, 0.2f, 0.3f, 0.7f, 0.6f, 0.25f, 0.2f, 0.5f, 0.5f, 0.4f, 0.35f};
static const int counts_3[1] = {3};
static const int counts_0_2[2] = {0, 2};

static const set_loss_case two_images = {{2, counts_2_1, classes_3, boxes_3}, 1};
static const set_loss_case full_image = {{1, counts_3, classes_3, boxes_3}, 1};
static const set_loss_case empty_image = {{2, counts_0_2, classes_3, boxes_3}, 1};
static const set_loss_case two_layers = {{2, counts_2_1, classes_3, boxes_3}, 2};

#define ONE_LAYER(b, n, c1) .fn = set_loss_fn, .n_inputs = 2, .ndim = {3, 3}, .shape = {{b, n, c1}, {b, n, 4}}
#define TWO_LAYERS(b, n, c1)                                                                 \
    .fn = set_loss_fn, .n_inputs = 4, .ndim = {3, 3, 3, 3},                                  \
    .shape = {{b, n, c1}, {b, n, 4}, {b, n, c1}, {b, n, 4}}

static const qkv_gradcheck_case cases[] = {
    {.name = "set_loss B=2 N=4 C=3, 2+1 objects", ONE_LAYER(2, 4, 4), .ctx = &two_images},
    {.name = "set_loss B=1 N=3 C=3, 3 objects", ONE_LAYER(1, 3, 4), .ctx = &full_image},
    {.name = "set_loss B=2 N=3 C=3, 0+2 objects", ONE_LAYER(2, 3, 4), .ctx = &empty_image},
    {.name = "set_loss 2 layers B=2 N=4 C=3", TWO_LAYERS(2, 4, 4), .ctx = &two_layers},
};

const qkv_gradcheck_group qkv_checks_set_loss = {"set_loss", cases, (int)(sizeof cases / sizeof cases[0])};
