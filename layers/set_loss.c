/* set_loss.c — DETR's set-prediction criterion (see set_loss.h for the contract).
 *
 * Per layer: (1) class probabilities by qkv_softmax with recording off; (2) per
 * image a [N x count] cost matrix in double, solved by qkv_hungarian; (3) the
 * loss from existing ops: qkv_cross_entropy with per-row weights (1 for matched
 * rows, eos_coef for "no object"), the matched boxes gathered by qkv_embedding
 * from boxes viewed as [B*N, 4], L1 as sum |pred - target| and qkv_giou_loss,
 * both summed and scaled by weight / max(M, 1).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/alloc.h"
#include "core/ops/boxes.h"
#include "core/error.h"
#include "core/hungarian.h"
#include "core/ops/ops.h"
#include "layers/set_loss.h"

qkv_set_loss_config qkv_set_loss_defaults(void) {
    return (qkv_set_loss_config){.cost_class = 1.0f, .cost_bbox = 5.0f, .cost_giou = 2.0f,
                                 .loss_ce = 1.0f, .loss_bbox = 5.0f, .loss_giou = 2.0f,
                                 .eos_coef = 0.1f};
}

/* Checks the shapes and targets; returns the total number of objects. */
static int check_inputs(const qkv_tensor *logits, const qkv_tensor *boxes, const qkv_set_targets *t) {
    char ls[QKV_SHAPE_STR_LEN], bs[QKV_SHAPE_STR_LEN];
    qkv_tensor_check_live(logits, "set_loss");
    qkv_tensor_check_live(boxes, "set_loss");
    qkv_shape_str(logits, ls, sizeof ls);
    qkv_shape_str(boxes, bs, sizeof bs);
    QKV_CHECK(logits->ndim == 3 && logits->shape[2] >= 2,
              "set_loss: logits %s must be [B,N,C+1] with C >= 1", ls);
    QKV_CHECK(boxes->ndim == 3 && boxes->shape[0] == logits->shape[0] &&
                  boxes->shape[1] == logits->shape[1] && boxes->shape[2] == 4,
              "set_loss: logits %s and boxes %s: boxes must be [B,N,4] with the same B and N", ls, bs);
    QKV_CHECK(t != NULL, "set_loss: logits %s: targets is NULL", ls);
    QKV_CHECK(t->n_images == logits->shape[0], "set_loss: logits %s: targets describe %d images, not %d",
              ls, t->n_images, logits->shape[0]);
    QKV_CHECK(t->counts != NULL, "set_loss: logits %s: targets->counts is NULL", ls);
    int n_queries = logits->shape[1], n_classes = logits->shape[2] - 1, total = 0;
    for (int b = 0; b < t->n_images; b++) {
        QKV_CHECK(t->counts[b] >= 0 && t->counts[b] <= n_queries,
                  "set_loss: logits %s: image %d has %d objects, outside 0..%d queries", ls, b,
                  t->counts[b], n_queries);
        total += t->counts[b];
    }
    QKV_CHECK(total == 0 || (t->classes && t->boxes), "set_loss: logits %s: %d objects but classes or boxes is NULL",
              ls, total);
    for (int i = 0; i < total; i++)
        QKV_CHECK(t->classes[i] >= 0 && t->classes[i] < n_classes,
                  "set_loss: logits %s: object %d has class %d outside [0,%d)", ls, i, (int)t->classes[i],
                  n_classes);
    return total;
}

/* Fills match[B*N] and, if query_of_object is not NULL, the global query index
 * (b * N + q) of every object in target order. 0, or -1 on a non-finite cost. */
static int match_batch(qkv_tape *tape, qkv_tensor *logits, qkv_tensor *boxes, const qkv_set_targets *t,
                       const qkv_set_loss_config *cfg, int32_t *match, int32_t *query_of_object) {
    int B = logits->shape[0], N = logits->shape[1], C1 = logits->shape[2];
    int was_recording = qkv_tape_set_grad(tape, 0);
    const float *prob = qkv_softmax(tape, logits)->data;
    qkv_tape_set_grad(tape, was_recording);
    double *cost = qkv_malloc(qkv_size_mul((size_t)N * (size_t)N, sizeof *cost), "set_loss: matching costs");
    int *query_of = qkv_malloc((size_t)N * sizeof *query_of, "set_loss: matching");
    int *target_of = qkv_malloc((size_t)N * sizeof *target_of, "set_loss: matching");
    int first = 0, status = 0;
    for (int b = 0; b < B && status == 0; b++) {
        int n = t->counts[b];
        for (int q = 0; q < N; q++) {
            const float *pb = boxes->data + ((size_t)b * N + q) * 4;
            const float *pp = prob + ((size_t)b * N + q) * C1;
            for (int j = 0; j < n; j++) {
                const float *tb = t->boxes + (size_t)(first + j) * 4;
                double l1 = 0.0;
                for (int k = 0; k < 4; k++) l1 += fabs((double)pb[k] - tb[k]);
                cost[(size_t)q * n + j] = -(double)cfg->cost_class * pp[t->classes[first + j]] +
                                          cfg->cost_bbox * l1 - cfg->cost_giou * qkv_box_giou(pb, tb);
            }
        }
        if (qkv_hungarian(N, n, cost, query_of, target_of) != 0) {
            char reason[256];  /* copied: qkv_set_error reuses the buffer qkv_last_error reads */
            snprintf(reason, sizeof reason, "%s", qkv_last_error());
            qkv_set_error("set_loss: image %d: matching failed: %s", b, reason);
            status = -1;
            break;
        }
        for (int q = 0; q < N; q++)
            if (match) match[(size_t)b * N + q] = target_of[q];
        if (query_of_object)
            for (int j = 0; j < n; j++) query_of_object[first + j] = b * N + query_of[j];
        first += n;
    }
    free(cost);
    free(query_of);
    free(target_of);
    return status;
}

int qkv_set_match(qkv_tape *tape, qkv_tensor *logits, qkv_tensor *boxes, const qkv_set_targets *targets,
                  const qkv_set_loss_config *cfg, int32_t *match) {
    qkv_set_loss_config defaults = qkv_set_loss_defaults();
    check_inputs(logits, boxes, targets);
    return match_batch(tape, logits, boxes, targets, cfg ? cfg : &defaults, match, NULL);
}

qkv_tensor *qkv_set_loss(qkv_tape *tape, qkv_tensor *logits, qkv_tensor *boxes,
                         const qkv_set_targets *targets, const qkv_set_loss_config *cfg,
                         int32_t *match, qkv_set_loss_terms *terms) {
    qkv_set_loss_config defaults = qkv_set_loss_defaults();
    if (!cfg) cfg = &defaults;
    int total = check_inputs(logits, boxes, targets);
    int B = logits->shape[0], N = logits->shape[1], C = logits->shape[2] - 1;
    size_t rows = (size_t)B * N;
    int32_t *query_of_object = qkv_tape_alloc(tape, (size_t)(total > 0 ? total : 1) * sizeof(int32_t));
    if (match_batch(tape, logits, boxes, targets, cfg, match, query_of_object) != 0) return NULL;

    /* classification: every query, "no object" (class C, weight eos_coef) unless matched */
    int32_t *classes = qkv_tape_alloc(tape, rows * sizeof *classes);
    float *weights = qkv_tape_alloc(tape, rows * sizeof *weights);
    for (size_t r = 0; r < rows; r++) {
        classes[r] = C;
        weights[r] = cfg->eos_coef;
    }
    for (int i = 0; i < total; i++) {
        classes[query_of_object[i]] = targets->classes[i];
        weights[query_of_object[i]] = 1.0f;
    }
    qkv_tensor *ce = qkv_scale(tape, qkv_cross_entropy(tape, logits, classes, -1, weights), cfg->loss_ce);

    /* boxes: matched pairs only, each sum divided by max(M, 1) */
    qkv_tensor *bbox, *giou;
    if (total > 0) {
        double per_object = 1.0 / (double)total;
        qkv_tensor *flat = qkv_reshape(tape, boxes, 2, (int[]){B * N, 4});
        qkv_tensor *pred = qkv_embedding(tape, flat, query_of_object, 1, &total);
        qkv_tensor *target = qkv_tape_tensor(tape, 2, (int[]){total, 4});
        qkv_tensor_copy_from(target, targets->boxes);
        bbox = qkv_scale(tape, qkv_sum_all(tape, qkv_abs(tape, qkv_sub(tape, pred, target))),
                         (float)(cfg->loss_bbox * per_object));
        giou = qkv_scale(tape, qkv_sum_all(tape, qkv_giou_loss(tape, pred, target)),
                         (float)(cfg->loss_giou * per_object));
    } else {
        const int scalar[1] = {1};
        bbox = qkv_tape_zeros(tape, 0, scalar);
        giou = qkv_tape_zeros(tape, 0, scalar);
    }
    qkv_tensor *loss = qkv_add(tape, qkv_add(tape, ce, bbox), giou);
    if (terms) *terms = (qkv_set_loss_terms){loss, ce, bbox, giou};
    return loss;
}

qkv_tensor *qkv_set_loss_layers(qkv_tape *tape, int n_layers, qkv_tensor *const *logits,
                                qkv_tensor *const *boxes, const qkv_set_targets *targets,
                                const qkv_set_loss_config *cfg, int32_t *match) {
    QKV_CHECK(n_layers >= 1 && logits && boxes, "set_loss_layers: %d layers (need >= 1, non-NULL arrays)",
              n_layers);
    qkv_tensor *sum = NULL;
    for (int l = 0; l < n_layers; l++) {
        qkv_tensor *layer = qkv_set_loss(tape, logits[l], boxes[l], targets, cfg,
                                         l == n_layers - 1 ? match : NULL, NULL);
        if (!layer) return NULL;
        sum = sum ? qkv_add(tape, sum, layer) : layer;
    }
    return sum;
}
