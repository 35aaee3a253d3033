/* detect_model.h — the detection model: a patch encoder and a DETR decoder,
 * trained with the Hungarian set loss (the task: train/tasks/detect.h), and its
 * predictions and metrics.
 *
 * Model, images [B,3,S,S] -> per decoder layer (class logits, boxes):
 *   tokens = patch_embed(images)      P x P patches, width D, 2-D sinusoidal
 *                                     positions pos [T,D] added (T = (S/P)^2)
 *   memory = encoder(tokens)          enc_layers pre-LN blocks (heads, ff), final LN
 *   out    = detr(memory, pos)        dec_layers layers, N learned queries; pos is
 *                                     added to the cross-attention keys; per layer
 *                                     logits [B,N,C+1] (C = 3 + "no object") and
 *                                     boxes [B,N,4] (cx, cy, w, h in (0, 1))
 * Parameters: "patch.*", "enc.*", "dec.*".
 *
 * Predictions: the last layer's queries whose no-object probability is below a
 * threshold (0.5 in evaluation); class = argmax over the real classes, score =
 * its probability. Metrics (qkv_detect_count over the held-out images): taking
 * the predictions of an image by decreasing score, each is matched to the
 * unmatched object of its class with the highest IoU, if that IoU >= 0.5 (a true
 * positive). precision = TP / predictions (0 with none), recall = TP / objects,
 * f1 = 2PR / (P + R) (0 when both are 0), miou = mean IoU of the matched pairs.
 */
#ifndef QKV_TASKS_DETECT_MODEL_H
#define QKV_TASKS_DETECT_MODEL_H

#include "data/detect.h"
#include "layers/detr.h"
#include "layers/patch.h"
#include "layers/transformer.h"
#include "train/trainer.h"

#define QKV_DETECT_IOU_MATCH 0.5

typedef struct qkv_detect_model_config {
    int image_size;              /* S: square images, a multiple of patch */
    int patch, width, heads, ff; /* P, D, heads (divide D), feed-forward width */
    int enc_layers, dec_layers, queries;
    float dropout;               /* residual dropout in every block */
} qkv_detect_model_config;

typedef struct qkv_detect_model {
    qkv_detect_model_config cfg;
    qkv_params params;
    qkv_patch_embed patch;
    qkv_encoder encoder;
    qkv_detr decoder;
} qkv_detect_model;

/* 32x32 images, 4x4 patches, width 64, 4 heads, ff 128, 2 + 2 layers, 8 queries
 * (the detect task's field table, train/tasks/detect.c). */
void qkv_detect_model_default_config(qkv_detect_model_config *c);
/* 0, or -1 with a one-line qkv_last_error() naming the setting that does not fit. */
int qkv_detect_model_check(const qkv_detect_model_config *c);
void qkv_detect_model_init(qkv_detect_model *m, const qkv_detect_model_config *c, unsigned long long seed);
void qkv_detect_model_free(qkv_detect_model *m);
/* images [B,3,S,S] -> every decoder layer's logits and boxes. */
qkv_detr_out qkv_detect_model_forward(qkv_tape *tape, const qkv_detect_model *m, qkv_tensor *images);

/* ---- predictions and metrics ------------------------------------------------------- */

typedef struct qkv_detection {
    int query, cls;
    float score;      /* probability of cls */
    float box[4];     /* cx, cy, w, h in [0, 1] */
} qkv_detection;

/* One image's predictions from its logits [N, C+1] and boxes [N, 4]: the queries
 * with p(no object) < threshold, sorted by decreasing score (ties: lower query
 * first). out holds N entries; returns how many were written. */
int qkv_detect_decode(const float *logits, const float *boxes, int n_queries, int n_classes, float threshold,
                      qkv_detection *out);

typedef struct qkv_detect_counts {
    long predictions, objects, matched;
    double iou_sum;   /* over matched pairs */
} qkv_detect_counts;

/* Adds one image: its predictions (sorted as qkv_detect_decode gives them) against
 * its n_objects objects (classes [n], boxes [n, 4]). */
void qkv_detect_count(const qkv_detection *pred, int n_pred, const int32_t *classes, const float *boxes,
                      int n_objects, qkv_detect_counts *counts);
/* precision, recall, f1, miou (see the top of this file). */
void qkv_detect_counts_metrics(const qkv_detect_counts *c, qkv_metrics *metrics);

#endif
