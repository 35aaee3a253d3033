/* qkv_probe.c — the C side of `make test-torch` (python/test_qkv_torch.py): one
 * forward and backward of a checkpoint's model on given inputs, written out for
 * the comparison with PyTorch.
 *
 *   qkv_probe CKPT DIR [TORCH.safetensors]
 * reads DIR/src.npy [B,S] (token ids as floats), DIR/src_mask.npy [B,S] (1 = real),
 * for seq2seq also DIR/tgt_in.npy and DIR/tgt_mask.npy [B,T], and DIR/targets.npy
 * ([B,T] of the output positions, -1 = ignored); a text checkpoint reads only
 * src.npy and targets.npy. With TORCH.safetensors the weights come from that
 * PyTorch-named state_dict instead (qkv_params_load_torch). Writes DIR/logits.npy,
 * DIR/loss.npy (mean cross-entropy over the targets) and DIR/grads.safetensors
 * (every parameter's gradient, under qkv's names). Exit 2 with one line on bad
 * input. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qkv.h"
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
        fail(qkv_last_error());
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
    printf("qkv_probe: %s loss %.6f\n", argv[1], loss->data[0]);
    return 0;
}
