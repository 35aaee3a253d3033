/* set_loss.h — DETR's set-prediction criterion: Hungarian matching of queries to
 * objects, then cross-entropy + L1 + GIoU on the matched pairs.
 *
 * Inputs, per decoder layer: class logits [B, N, C+1] (class C is "no object")
 * and boxes [B, N, 4] (cx, cy, w, h, already through a sigmoid). Targets are a
 * plain struct (below): per image a count, and the classes and boxes of its
 * objects, concatenated over the batch in image order.
 *
 * Matching, per image, without gradient: cost[q][t] =
 *     - cost_class * softmax(logits[b,q])[class_t]
 *     + cost_bbox  * sum_k |box[b,q,k] - box_t[k]|
 *     - cost_giou  * GIoU(box[b,q], box_t)
 * solved exactly by qkv_hungarian (core/hungarian.h); every object gets its own
 * query, so an image with more objects than queries is a programmer error.
 *
 * Loss (one layer), with M = number of objects in the batch, M' = max(M, 1):
 *     loss_ce   * CE      — cross-entropy over all B*N queries, target = matched
 *                           object's class or "no object"; weights 1, and eos_coef
 *                           for "no object": sum_i w_i ce_i / sum_i w_i (DETR's
 *                           weighted mean; qkv_cross_entropy's per-row weights);
 *   + loss_bbox * sum over matched pairs and 4 coordinates of |pred - target| / M'
 *   + loss_giou * sum over matched pairs of (1 - GIoU) / M'.
 * The gradient flows into logits and boxes (the gather of matched boxes is
 * qkv_embedding over boxes viewed as [B*N, 4]). Objects' order does not matter.
 *
 * A non-finite matching cost (NaN/Inf predictions, a diverged run) is reported,
 * not matched: the loss functions return NULL with qkv_last_error() naming the
 * image, query and object. Bad shapes, classes outside [0, C) and counts above N
 * stop through qkv_fatal naming the shapes.
 */
#ifndef QKV_SET_LOSS_H
#define QKV_SET_LOSS_H

#include <stdint.h>

#include "core/ops/tape.h"

/* The objects of a batch. Image b owns objects [sum_{b'<b} counts[b'], ... +counts[b])
 * of classes[] and boxes[] (4 floats each, cx cy w h). */
typedef struct qkv_set_targets {
    int n_images;              /* B: must equal the logits' batch */
    const int *counts;         /* [B], each 0..N */
    const int32_t *classes;    /* [total], each in [0, C) */
    const float *boxes;        /* [total * 4] */
} qkv_set_targets;

typedef struct qkv_set_loss_config {
    float cost_class, cost_bbox, cost_giou;  /* matching weights: 1, 5, 2 */
    float loss_ce, loss_bbox, loss_giou;     /* loss weights: 1, 5, 2 */
    float eos_coef;                          /* weight of "no object" rows: 0.1 */
} qkv_set_loss_config;

/* DETR's defaults (above). */
qkv_set_loss_config qkv_set_loss_defaults(void);

/* The terms of one layer's loss, each a scalar activation, already weighted:
 * total = ce + bbox + giou. */
typedef struct qkv_set_loss_terms {
    qkv_tensor *total, *ce, *bbox, *giou;
} qkv_set_loss_terms;

/* Matching only (no tape is recorded): match[b * N + q] = the index, within image
 * b, of the object query q is matched to, or -1. cfg NULL: defaults. Returns 0,
 * or -1 (qkv_last_error) on a non-finite cost. */
int qkv_set_match(qkv_tape *tape, qkv_tensor *logits, qkv_tensor *boxes, const qkv_set_targets *targets,
                  const qkv_set_loss_config *cfg, int32_t *match);

/* One layer's loss (scalar). match [B*N] (may be NULL) receives the matching as
 * in qkv_set_match; terms (may be NULL) the weighted parts. NULL on a non-finite
 * cost. */
qkv_tensor *qkv_set_loss(qkv_tape *tape, qkv_tensor *logits, qkv_tensor *boxes,
                         const qkv_set_targets *targets, const qkv_set_loss_config *cfg,
                         int32_t *match, qkv_set_loss_terms *terms);

/* DETR's loss with auxiliary losses: the sum over n_layers decoder layers of
 * qkv_set_loss(logits[l], boxes[l]), each layer matched on its own. match (may be
 * NULL) receives the LAST layer's matching (the model's final predictions). */
qkv_tensor *qkv_set_loss_layers(qkv_tape *tape, int n_layers, qkv_tensor *const *logits,
                                qkv_tensor *const *boxes, const qkv_set_targets *targets,
                                const qkv_set_loss_config *cfg, int32_t *match);

#endif
