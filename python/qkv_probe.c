/* qkv_probe.c — the C side of `make test-torch` (python/test_qkv_torch.py): one
 * forward and backward of a checkpoint's model on given inputs, written out for
 * the comparison with PyTorch.
 *
 *   qkv_probe CKPT DIR [TORCH.safetensors]
 * reads DIR/src.npy [B,S] (token ids as floats), DIR/src_mask.npy [B,S] (1 = real),
 * for seq2seq also DIR/tgt_in.npy and DIR/tgt_mask.npy [B,T], and DIR/targets.npy
 * ([B,T] of the output positions, -1 = ignored); a text checkpoint reads only
 * src.npy and targets.npy; a set checkpoint (points, maxreg) reads DIR/x.npy
 * [B,N,d_in], DIR/mask.npy [B,N] (optional) and DIR/r.npy [B,n_outputs], and its
 * loss is sum(out * r); a detect checkpoint reads DIR/images.npy [B,3,S,S],
 * DIR/r.npy [B,N,C+1] and DIR/r_boxes.npy [B,N,4], its loss is the sum over the
 * decoder layers of sum(logits * r) + sum(boxes * r_boxes), and it writes the
 * last layer's boxes to DIR/boxes.npy too. With TORCH.safetensors the weights come from that
 * PyTorch-named state_dict instead (qkv_params_load_torch). Writes DIR/logits.npy,
 * DIR/loss.npy (mean cross-entropy over the targets) and DIR/grads.safetensors
 * (every parameter's gradient, under qkv's names). Exit 2 with one line on bad
 * input. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qkv.h"
#include "layers/set_models.h"
#include "train/tasks/detect_model.h"
#include "train/tasks/sequence.h"
#include "train/tasks/text.h"

static qkv_tensor *load(const char *dir, const char *name, int required) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "rb");
    if (!f && !required) return NULL;
    if (f) fclose(f);
    qkv_tensor *t = qkv_npy_load(path, 0);
    if (!t) {
        fprintf(stderr, "qkv_probe: %s\n", qkv_last_error());
        exit(2);
    }
    return t;
}

static int32_t *ids_of(const qkv_tensor *t) {
    int32_t *ids = malloc(t->size * sizeof *ids);
    for (size_t i = 0; i < t->size; i++) ids[i] = (int32_t)t->data[i];
    return ids;
}

static void fail(const char *what) {
    fprintf(stderr, "qkv_probe: %s\n", what);
    exit(2);
}

/* DIR/logits.npy, DIR/loss.npy and DIR/grads.safetensors (qkv's names). */
static void write_outputs(const char *ckpt, const char *dir, const qkv_params *params, const qkv_tensor *logits,
                          const qkv_tensor *loss) {
    char path[1024];
    snprintf(path, sizeof path, "%s/logits.npy", dir);
    if (qkv_npy_save(path, logits) != 0) fail(qkv_last_error());
    snprintf(path, sizeof path, "%s/loss.npy", dir);
    if (qkv_npy_save(path, loss) != 0) fail(qkv_last_error());
    qkv_st_tensor *grads = calloc((size_t)params->n, sizeof *grads);
    for (int i = 0; i < params->n; i++) {
        const qkv_tensor *p = params->items[i];
        grads[i] = (qkv_st_tensor){p->name, p->ndim, {0}, p->grad};
        memcpy(grads[i].shape, p->shape, sizeof grads[i].shape);
    }
    snprintf(path, sizeof path, "%s/grads.safetensors", dir);
    if (qkv_safetensors_save(path, params->n, grads, 0, NULL) != 0) fail(qkv_last_error());
    printf("qkv_probe: %s loss %.6f\n", ckpt, loss->data[0]);
}

/* The set model of a points or maxreg checkpoint, its parameters loaded: 0 or -1. */
static int load_set_model(const char *path, qkv_set_model *model, qkv_params *params) {
    static qkv_config_kv config;
    if (qkv_checkpoint_read_config(path, &config) != 0) return -1;
    const char *task = qkv_config_get(&config, "task"), *kind = qkv_config_get(&config, "model");
    if (!task || (strcmp(task, "points") && strcmp(task, "maxreg")) || !kind) return -1;
    long long width, heads, layers, inducing, layer_norm, classes = 1;
    if (qkv_config_get_int(&config, "width", 1, 8192, &width) || qkv_config_get_int(&config, "heads", 1, 1024, &heads) ||
        qkv_config_get_int(&config, "layers", 1, 8, &layers) || qkv_config_get_int(&config, "inducing", 1, 4096, &inducing) ||
        qkv_config_get_int(&config, "layer_norm", 0, 1, &layer_norm) ||
        (!strcmp(task, "points") && qkv_config_get_int(&config, "classes", 1, 100000, &classes)))
        return -1;
    qkv_set_model_config c = {.kind = (qkv_set_model_kind)qkv_set_model_kind_parse(kind), .d_in = strcmp(task, "points") ? 1 : 3,
                              .width = (int)width, .n_heads = (int)heads, .n_outputs = (int)classes,
                              .n_layers = (int)layers, .n_inducing = (int)inducing, .layer_norm = (int)layer_norm};
    qkv_rng rng = qkv_rng_make(1);
    qkv_set_model_init(model, params, "set", &c, &rng);
    return qkv_checkpoint_load(path, params, NULL, NULL, NULL);
}

/* One forward and backward of a set model: loss = sum(out * r). */
static int probe_set(const char *ckpt, const char *dir, const char *torch_weights) {
    static qkv_set_model model;
    static qkv_params params;
    if (load_set_model(ckpt, &model, &params) != 0) return -1;
    if (torch_weights && qkv_params_load_torch(&params, torch_weights) != 0) fail(qkv_last_error());
    qkv_tensor *x = load(dir, "x.npy", 1), *mask = load(dir, "mask.npy", 0), *r = load(dir, "r.npy", 1);
    qkv_tape *tape = qkv_tape_create(1);
    qkv_tensor *out = qkv_set_model_forward(tape, &model, x, mask);
    if (out->size != r->size) fail("r.npy does not have the model's output shape");
    qkv_tensor *loss = qkv_sum_all(tape, qkv_mul(tape, out, r));
    qkv_params_zero_grad(&params);
    qkv_backward(tape, loss);
    write_outputs(ckpt, dir, &params, out, loss);
    return 0;
}

/* One forward and backward of a detect checkpoint's model (see the contract above). */
static int probe_detect(const char *ckpt, const char *dir, const char *torch_weights) {
    static qkv_config_kv config;
    static qkv_detect_model model;
    if (qkv_checkpoint_read_config(ckpt, &config) != 0) return -1;
    const char *task = qkv_config_get(&config, "task");
    if (!task || strcmp(task, "detect")) return -1;
    static const char *const keys[] = {"size", "patch", "width", "heads", "ff", "enc_layers", "dec_layers", "queries"};
    long long v[8];
    for (int i = 0; i < 8; i++)
        if (qkv_config_get_int(&config, keys[i], 1, 100000, &v[i]) != 0) return -1;
    qkv_detect_model_config c = {(int)v[0], (int)v[1], (int)v[2], (int)v[3], (int)v[4], (int)v[5], (int)v[6], (int)v[7],
                                 0.0f};
    if (qkv_detect_model_check(&c) != 0) return -1;
    qkv_detect_model_init(&model, &c, 1);
    if (qkv_checkpoint_load(ckpt, &model.params, NULL, NULL, NULL) != 0) fail(qkv_last_error());
    if (torch_weights && qkv_params_load_torch(&model.params, torch_weights) != 0) fail(qkv_last_error());
    qkv_tensor *images = load(dir, "images.npy", 1), *r = load(dir, "r.npy", 1), *rb = load(dir, "r_boxes.npy", 1);
    qkv_tape *tape = qkv_tape_create(1);
    qkv_detr_out out = qkv_detect_model_forward(tape, &model, images);
    qkv_tensor *loss = NULL;
    for (int l = 0; l < out.n_layers; l++) {
        qkv_tensor *term = qkv_add(tape, qkv_sum_all(tape, qkv_mul(tape, out.logits[l], r)),
                                   qkv_sum_all(tape, qkv_mul(tape, out.boxes[l], rb)));
        loss = loss ? qkv_add(tape, loss, term) : term;
    }
    qkv_params_zero_grad(&model.params);
    qkv_backward(tape, loss);
    write_outputs(ckpt, dir, &model.params, out.logits[out.n_layers - 1], loss);
    char path[1024];
    snprintf(path, sizeof path, "%s/boxes.npy", dir);
    if (qkv_npy_save(path, out.boxes[out.n_layers - 1]) != 0) fail(qkv_last_error());
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 3 || argc > 4) fail("usage: qkv_probe CKPT DIR [TORCH.safetensors]");
    const char *dir = argv[2];
    static qkv_seq_model seq;
    static qkv_text_model text;
    const qkv_params *params;
    int is_text = 0;
    if (qkv_seq_model_load(&seq, argv[1], NULL) == 0) {
        params = &seq.params;
    } else if (qkv_text_model_load(&text, argv[1], NULL) == 0) {
        params = &text.params;
        is_text = 1;
    } else {
        char reason[512];
        snprintf(reason, sizeof reason, "%s", qkv_last_error());
        if (probe_set(argv[1], dir, argc == 4 ? argv[3] : NULL) == 0) return 0;
        if (probe_detect(argv[1], dir, argc == 4 ? argv[3] : NULL) == 0) return 0;
        fail(reason);
    }
    if (argc == 4 && qkv_params_load_torch(params, argv[3]) != 0) fail(qkv_last_error());

    qkv_tensor *src = load(dir, "src.npy", 1), *targets = load(dir, "targets.npy", 1);
    qkv_tape *tape = qkv_tape_create(1);
    int b = src->shape[0], s = src->shape[1];
    int32_t *src_ids = ids_of(src), *target_ids = ids_of(targets);
    qkv_tensor *logits;
    if (is_text) {
        logits = qkv_text_model_logits(tape, &text, src_ids, b, s);
    } else {
        qkv_tensor *src_mask = load(dir, "src_mask.npy", 1);
        qkv_tensor *h = qkv_encoder_forward(tape, &seq.encoder, qkv_embedding(tape, seq.embed, src_ids, 2,
                                                                              (int[]){b, s}), src_mask);
        if (seq.config.data.arch == QKV_ARCH_SEQ2SEQ) {
            qkv_tensor *tgt_in = load(dir, "tgt_in.npy", 1), *tgt_mask = load(dir, "tgt_mask.npy", 1);
            int32_t *tgt_ids = ids_of(tgt_in);
            qkv_tensor *y = qkv_embedding(tape, seq.embed, tgt_ids, 2, (int[]){b, tgt_in->shape[1]});
            h = qkv_decoder_forward(tape, &seq.decoder, y, h, src_mask, tgt_mask);
        }
        logits = qkv_linear_forward(tape, &seq.head, h);
    }
    int rows = logits->shape[0] * logits->shape[1], classes = logits->shape[2];
    if ((size_t)rows != targets->size) fail("targets.npy does not have one entry per output position");
    qkv_tensor *flat = qkv_reshape(tape, logits, 2, (int[]){rows, classes});
    qkv_tensor *loss = qkv_cross_entropy(tape, flat, target_ids, -1, NULL);
    qkv_params_zero_grad(params);
    qkv_backward(tape, loss);

    write_outputs(argv[1], dir, params, logits, loss);
    return 0;
}
