/* boxes.h — axis-aligned boxes (cx, cy, w, h): IoU and generalized IoU as plain
 * functions, and the GIoU loss as a differentiable op.
 *
 * A box (cx, cy, w, h) spans [cx - w/2, cx + w/2] x [cy - h/2, cy + h/2]; w and h
 * are expected >= 0 (DETR's boxes come out of a sigmoid). With
 *     I = intersection area, U = area(a) + area(b) - I, E = enclosing box's area,
 *     IoU  = I / (U + eps),
 *     GIoU = IoU - (E - U) / (E + eps),       eps = QKV_BOX_EPS = 1e-7,
 * exactly torchvision's generalized_box_iou_loss. The eps keeps degenerate boxes
 * (zero width or height, identical zero-area boxes, points) finite: their IoU is
 * 0 instead of 0/0, and every gradient is finite (possibly large, ~1/eps, for
 * zero-area boxes). GIoU lies in (-1, 1]; disjoint boxes have IoU 0 and GIoU < 0.
 * All arithmetic is in double.
 */
#ifndef QKV_BOXES_H
#define QKV_BOXES_H

#include "core/ops/tape.h"

#define QKV_BOX_EPS 1e-7

/* Plain values, no tape: for matching costs and metrics. a and b are 4 floats each. */
double qkv_box_iou(const float *a, const float *b);
double qkv_box_giou(const float *a, const float *b);

/* out[i] = 1 - GIoU(pred_i, target_i) for pred, target [N, 4]: out is [N].
 * Gradients flow into both inputs (whichever require them). */
qkv_tensor *qkv_giou_loss(qkv_tape *tape, qkv_tensor *pred, qkv_tensor *target);

#endif
