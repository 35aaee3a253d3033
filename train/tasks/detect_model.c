/* detect_model.c — the detection model, its predictions and metrics. See
 * detect_model.h. */
#include "train/tasks/detect_model.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/mathfn.h"
#include "core/alloc.h"
#include "core/ops/boxes.h"
#include "core/error.h"
#include "layers/set_loss.h"

/* ---- the model ----------------------------------------------------------------------- */

int qkv_detect_model_check(const qkv_detect_model_config *c) {
    if (c->image_size % c->patch != 0) {
        qkv_set_error("--patch %d does not divide the image size %d", c->patch, c->image_size);
        return -1;
    }
    if (c->width % c->heads != 0) {
        qkv_set_error("--heads %d does not divide --width %d", c->heads, c->width);
        return -1;
    }
    if (c->width % 4 != 0) { /* 2-D sinusoidal positions: D/2 columns per axis, each sin/cos pairs */
        qkv_set_error("--width %d: 2-D positions need a multiple of 4", c->width);
        return -1;
    }
    if (c->dec_layers > QKV_DETR_MAX_LAYERS) {
        qkv_set_error("--dec-layers %d: at most %d", c->dec_layers, QKV_DETR_MAX_LAYERS);
        return -1;
    }
    return 0;
}

void qkv_detect_model_init(qkv_detect_model *m, const qkv_detect_model_config *c, unsigned long long seed) {
    memset(m, 0, sizeof *m);
    m->cfg = *c;
    qkv_rng rng = qkv_rng_make(seed);
    qkv_block_config block = {.d_model = c->width, .n_heads = c->heads, .d_ff = c->ff,
                              .activation = QKV_ACT_RELU, .dropout = c->dropout};
    qkv_patch_config pc = {.channels = 3, .patch = c->patch, .d_model = c->width,
                           .positions = QKV_PATCH_POS_SINUSOIDAL};
    qkv_patch_embed_init(&m->patch, &m->params, "patch", &pc, &rng);
    qkv_stack_config sc = {.block = block, .n_layers = c->enc_layers, .positions = QKV_POS_NONE};
    qkv_encoder_init(&m->encoder, &m->params, "enc", &sc, 0, &rng);
    qkv_detr_config dc = {.block = block, .n_layers = c->dec_layers, .n_queries = c->queries,
                          .n_classes = QKV_DETECT_CLASSES};
    qkv_detr_init(&m->decoder, &m->params, "dec", &dc, &rng);
}

void qkv_detect_model_free(qkv_detect_model *m) {
    qkv_encoder_free(&m->encoder);
    qkv_params_free(&m->params);
}

qkv_detr_out qkv_detect_model_forward(qkv_tape *tape, const qkv_detect_model *m, qkv_tensor *images) {
    qkv_tensor *pos = NULL;
    qkv_tensor *tokens = qkv_patch_embed_forward(tape, &m->patch, images, &pos);
    qkv_tensor *memory = qkv_encoder_forward(tape, &m->encoder, tokens, NULL);
    return qkv_detr_forward(tape, &m->decoder, memory, pos, NULL);
}

/* ---- predictions and metrics ------------------------------------------------------- */

int qkv_detect_decode(const float *logits, const float *boxes, int n_queries, int n_classes, float threshold,
                      qkv_detection *out) {
    int n = 0;
    for (int q = 0; q < n_queries; q++) {
        const float *row = logits + (size_t)q * (n_classes + 1);
        /* softmax in double: p_k = exp(l_k - max) / sum_j exp(l_j - max) */
        double max = row[0], sum = 0.0;
        for (int k = 1; k <= n_classes; k++) max = row[k] > max ? row[k] : max;
        for (int k = 0; k <= n_classes; k++) sum += qkv_math_exp((double)row[k] - max);
        double no_object = qkv_math_exp((double)row[n_classes] - max) / sum;
        if (!(no_object < threshold)) continue;
        int cls = qkv_argmax(row, n_classes);
        qkv_detection d = {.query = q, .cls = cls, .score = (float)(qkv_math_exp((double)row[cls] - max) / sum)};
        memcpy(d.box, boxes + (size_t)q * 4, sizeof d.box);
        int at = n++;
        while (at > 0 && out[at - 1].score < d.score) { /* insertion: stable, by decreasing score */
            out[at] = out[at - 1];
            at--;
        }
        out[at] = d;
    }
    return n;
}

void qkv_detect_count(const qkv_detection *pred, int n_pred, const int32_t *classes, const float *boxes,
                      int n_objects, qkv_detect_counts *counts) {
    int taken[QKV_DETECT_MAX_OBJECTS] = {0};
    QKV_CHECK(n_objects >= 0 && n_objects <= QKV_DETECT_MAX_OBJECTS, "detect_count: %d objects (at most %d)",
              n_objects, QKV_DETECT_MAX_OBJECTS);
    counts->predictions += n_pred;
    counts->objects += n_objects;
    for (int p = 0; p < n_pred; p++) {
        int best = -1;
        double best_iou = QKV_DETECT_IOU_MATCH;
        for (int o = 0; o < n_objects; o++) {
            if (taken[o] || classes[o] != pred[p].cls) continue;
            double iou = qkv_box_iou(pred[p].box, boxes + (size_t)o * 4);
            if (iou >= best_iou) {
                best = o;
                best_iou = iou;
            }
        }
        if (best < 0) continue;
        taken[best] = 1;
        counts->matched++;
        counts->iou_sum += best_iou;
    }
}

void qkv_detect_counts_metrics(const qkv_detect_counts *c, qkv_metrics *metrics) {
    double precision = c->predictions ? (double)c->matched / (double)c->predictions : 0.0;
    double recall = c->objects ? (double)c->matched / (double)c->objects : 0.0;
    double f1 = precision + recall > 0 ? 2.0 * precision * recall / (precision + recall) : 0.0;
    qkv_metrics_set(metrics, "f1", f1);
    qkv_metrics_set(metrics, "precision", precision);
    qkv_metrics_set(metrics, "recall", recall);
    qkv_metrics_set(metrics, "miou", c->matched ? c->iou_sum / (double)c->matched : 0.0);
}

