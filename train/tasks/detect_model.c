/* detect_model.c — the detection model, its predictions and metrics, and the
 * trainer task. See detect_model.h. */
#include "train/tasks/detect_model.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/boxes.h"
#include "core/error.h"
#include "layers/set_loss.h"

#define BATCH_STREAM 0xba7cULL   /* seed offsets of the batch-index and flip streams */
#define FLIP_STREAM 0xf11bULL
#define EVAL_BATCH 100

/* ---- the model ----------------------------------------------------------------------- */

void qkv_detect_model_default_config(qkv_detect_model_config *c) {
    *c = (qkv_detect_model_config){.image_size = 32, .patch = 4, .width = 64, .heads = 4, .ff = 128,
                                   .enc_layers = 2, .dec_layers = 2, .queries = 8, .dropout = 0.0f};
}

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

void qkv_detect_model_describe(const qkv_detect_model_config *c, qkv_config_kv *out) {
    qkv_config_add(out, "size", "%d", c->image_size);
    qkv_config_add(out, "classes", "%d", QKV_DETECT_CLASSES);
    qkv_config_add(out, "patch", "%d", c->patch);
    qkv_config_add(out, "width", "%d", c->width);
    qkv_config_add(out, "heads", "%d", c->heads);
    qkv_config_add(out, "ff", "%d", c->ff);
    qkv_config_add(out, "enc_layers", "%d", c->enc_layers);
    qkv_config_add(out, "dec_layers", "%d", c->dec_layers);
    qkv_config_add(out, "queries", "%d", c->queries);
    qkv_config_add(out, "dropout", "%g", c->dropout);
}

/* qkv_config_get_int into an int field. */
static int config_int(const qkv_config_kv *kv, const char *key, int lo, int hi, int *out) {
    long long v;
    if (qkv_config_get_int(kv, key, lo, hi, &v) != 0) return -1;
    *out = (int)v;
    return 0;
}

int qkv_detect_model_config_from(const qkv_config_kv *kv, qkv_detect_model_config *c) {
    int classes = 0;
    qkv_detect_model_default_config(c);
    if (config_int(kv, "size", QKV_DETECT_MIN_SIZE, QKV_DETECT_MAX_SIZE, &c->image_size) ||
        config_int(kv, "classes", QKV_DETECT_CLASSES, QKV_DETECT_CLASSES, &classes) ||
        config_int(kv, "patch", 1, QKV_DETECT_MAX_SIZE, &c->patch) ||
        config_int(kv, "width", 4, 8192, &c->width) || config_int(kv, "heads", 1, 1024, &c->heads) ||
        config_int(kv, "ff", 1, 65536, &c->ff) || config_int(kv, "enc_layers", 0, 64, &c->enc_layers) ||
        config_int(kv, "dec_layers", 1, QKV_DETR_MAX_LAYERS, &c->dec_layers) ||
        config_int(kv, "queries", 1, 4096, &c->queries))
        return -1;
    const char *dropout = qkv_config_get(kv, "dropout");
    char *end = NULL;
    c->dropout = dropout ? strtof(dropout, &end) : 0.0f;
    if (!dropout || end == dropout || *end || !(c->dropout >= 0.0f && c->dropout < 1.0f)) {
        qkv_set_error("config dropout is %s, expected a number in [0, 1)", dropout ? dropout : "missing");
        return -1;
    }
    return qkv_detect_model_check(c);
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
        for (int k = 0; k <= n_classes; k++) sum += exp((double)row[k] - max);
        double no_object = exp((double)row[n_classes] - max) / sum;
        if (!(no_object < threshold)) continue;
        int cls = qkv_argmax(row, n_classes);
        qkv_detection d = {.query = q, .cls = cls, .score = (float)(exp((double)row[cls] - max) / sum)};
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

/* ---- the task ---------------------------------------------------------------------- */

/* Mirrors image i of the batch left-right: pixel (c, y, x) <-> (c, y, S-1-x), cx -> 1 - cx. */
static void flip_image(float *pixels, float *boxes, int n_objects, int size) {
    for (int row = 0; row < 3 * size; row++) {
        float *r = pixels + (size_t)row * size;
        for (int x = 0; x < size / 2; x++) {
            float v = r[x];
            r[x] = r[size - 1 - x];
            r[size - 1 - x] = v;
        }
    }
    for (int o = 0; o < n_objects; o++) boxes[o * 4] = 1.0f - boxes[o * 4];
}

/* The set-loss targets of b images: their objects packed end to end. */
static qkv_set_targets pack_targets(qkv_detect_task *t, int b) {
    int total = 0;
    for (int i = 0; i < b; i++) {
        t->counts[i] = t->n_objects[i];
        for (int o = 0; o < t->n_objects[i]; o++, total++) {
            t->packed_classes[total] = t->classes[i * QKV_DETECT_MAX_OBJECTS + o];
            memcpy(t->packed_boxes + (size_t)total * 4, t->boxes + ((size_t)i * QKV_DETECT_MAX_OBJECTS + o) * 4,
                   4 * sizeof(float));
        }
    }
    return (qkv_set_targets){.n_images = b, .counts = t->counts, .classes = t->packed_classes,
                             .boxes = t->packed_boxes};
}

static qkv_tensor *images_tensor(qkv_tape *tape, const qkv_detect_task *t, float *pixels, int b) {
    int s = t->config.model.image_size;
    return qkv_tape_view(tape, 4, (int[]){b, 3, s, s}, pixels);
}

/* The tape's slice of the global batch (all of it in one process; a rank's rows
 * under MPI, train/dist.h): example i of step s is drawn from (seed, s*batch + i). */
static qkv_tensor *detect_loss(void *self, qkv_tape *tape, long step) {
    qkv_detect_task *t = self;
    int s = t->config.model.image_size, row, b;
    qkv_tape_batch_slice(tape, t->config.batch, &row, &b);
    int idx[b];
    uint64_t first = (uint64_t)step * (uint64_t)t->config.batch + (uint64_t)row;
    uint64_t index_seed = qkv_rng_make(t->config.seed ^ BATCH_STREAM).seed;
    uint64_t flip_seed = qkv_rng_make(t->config.seed ^ FLIP_STREAM).seed;
    for (int i = 0; i < b; i++) idx[i] = (int)(qkv_rng_at(index_seed, first + (uint64_t)i) % (uint64_t)t->train.n);
    qkv_detect_batch(&t->train, idx, b, t->pixels, t->n_objects, t->classes, t->boxes);
    for (int i = 0; t->config.flip && i < b; i++)
        if (qkv_rng_at(flip_seed, first + (uint64_t)i) & 1)
            flip_image(t->pixels + (size_t)i * 3 * s * s, t->boxes + (size_t)i * QKV_DETECT_MAX_OBJECTS * 4,
                       t->n_objects[i], s);
    qkv_set_targets targets = pack_targets(t, b);
    qkv_detr_out out = qkv_detect_model_forward(tape, &t->model, images_tensor(tape, t, t->pixels, b));
    qkv_set_loss_config loss_cfg = qkv_set_loss_defaults();
    loss_cfg.eos_coef = t->config.eos_coef;
    qkv_tensor *loss = qkv_set_loss_layers(tape, out.n_layers, out.logits, out.boxes, &targets, &loss_cfg, NULL);
    if (!loss) qkv_set_error("detect: step %ld: %s (the run diverged: try a lower --lr or --clip)", step + 1,
                             qkv_last_error());
    return loss;
}

static void detect_evaluate(void *self, qkv_tape *tape, qkv_metrics *metrics) {
    qkv_detect_task *t = self;
    const qkv_detect_set *test = &t->test;
    int s = t->config.model.image_size, nq = t->config.model.queries, c = QKV_DETECT_CLASSES;
    size_t image = (size_t)3 * s * s;
    qkv_detect_counts counts = {0};
    qkv_detection *pred = qkv_malloc((size_t)nq * sizeof *pred, "detect: decoded boxes");
    for (int first = 0; first < test->n; first += EVAL_BATCH) {
        int b = test->n - first < EVAL_BATCH ? test->n - first : EVAL_BATCH;
        qkv_tensor *images = images_tensor(tape, t, test->pixels + first * image, b);
        qkv_detr_out out = qkv_detect_model_forward(tape, &t->model, images);
        const qkv_tensor *logits = out.logits[out.n_layers - 1], *boxes = out.boxes[out.n_layers - 1];
        for (int i = 0; i < b; i++) {
            int n = qkv_detect_decode(logits->data + (size_t)i * nq * (c + 1), boxes->data + (size_t)i * nq * 4, nq,
                                      c, 0.5f, pred);
            size_t k = (size_t)(first + i) * QKV_DETECT_MAX_OBJECTS;
            qkv_detect_count(pred, n, test->classes + k, test->boxes + k * 4, test->n_objects[first + i], &counts);
        }
        qkv_tape_reset(tape);
    }
    free(pred);
    qkv_detect_counts_metrics(&counts, metrics);
}

static void detect_describe(void *self, qkv_config_kv *out) {
    const qkv_detect_task_config *c = &((qkv_detect_task *)self)->config;
    qkv_config_add(out, "task", "detect");
    qkv_config_add(out, "data", "%s", c->data);
    qkv_config_add(out, "train", "%d", c->n_train);
    qkv_config_add(out, "test", "%d", c->n_test);
    qkv_config_add(out, "min_objects", "%d", c->min_objects);
    qkv_config_add(out, "max_objects", "%d", c->max_objects);
    qkv_detect_model_describe(&c->model, out);
    qkv_config_add(out, "batch", "%d", c->batch);
    qkv_config_add(out, "flip", "%d", c->flip);
    qkv_config_add(out, "eos_coef", "%g", c->eos_coef);
    qkv_config_add(out, "seed", "%llu", c->seed);
}

void qkv_detect_task_init(qkv_detect_task *t, const qkv_detect_task_config *config, qkv_detect_set *train,
                          qkv_detect_set *test) {
    memset(t, 0, sizeof *t);
    t->config = *config;
    int s = config->model.image_size, b = config->batch;
    QKV_CHECK(test->height == s && test->width == s && (train->n == 0 || (train->height == s && train->width == s)),
              "detect task: images %dx%d / %dx%d, model %dx%d", train->width, train->height, test->width,
              test->height, s, s);
    t->train = *train;
    t->test = *test;
    memset(train, 0, sizeof *train);
    memset(test, 0, sizeof *test);
    t->pixels = qkv_malloc((size_t)b * 3 * s * s * sizeof(float), "detect: a training batch");
    t->boxes = qkv_malloc((size_t)b * QKV_DETECT_MAX_OBJECTS * 4 * sizeof(float), "detect: a training batch");
    t->packed_boxes = qkv_malloc((size_t)b * QKV_DETECT_MAX_OBJECTS * 4 * sizeof(float), "detect: a training batch");
    t->n_objects = qkv_malloc((size_t)b * sizeof(int32_t), "detect: a training batch");
    t->classes = qkv_malloc((size_t)b * QKV_DETECT_MAX_OBJECTS * sizeof(int32_t), "detect: a training batch");
    t->packed_classes = qkv_malloc((size_t)b * QKV_DETECT_MAX_OBJECTS * sizeof(int32_t), "detect: a training batch");
    t->counts = qkv_malloc((size_t)b * sizeof(int), "detect: a training batch");
    qkv_detect_model_init(&t->model, &config->model, config->seed);
    /* Under MPI the ranks' losses are averaged with equal weights (loss_terms 0): each
     * slice normalizes its box terms by its own object count, as DETR's per-process loss does. */
    t->task = (qkv_task){"detect", t, &t->model.params, detect_loss, detect_evaluate, detect_describe,
                         config->batch, 0};
}

void qkv_detect_task_free(qkv_detect_task *t) {
    qkv_detect_model_free(&t->model);
    qkv_detect_set_free(&t->train);
    qkv_detect_set_free(&t->test);
    free(t->pixels);
    free(t->boxes);
    free(t->packed_boxes);
    free(t->n_objects);
    free(t->classes);
    free(t->packed_classes);
    free(t->counts);
}
