/* detr.c — the DETR decoder. See detr.h. The parameters of each layer are a
 * qkv_decoder_block's; only the forward differs from transformer.c's decoder
 * (positions go into queries and keys in every layer instead of the input). */
#include "layers/detr.h"

#include "core/error.h"
#include "core/ops/ops.h"

void qkv_detr_init(qkv_detr *dec, qkv_params *params, const char *name, const qkv_detr_config *cfg,
                   qkv_rng *rng) {
    int d = cfg->block.d_model;
    QKV_CHECK(cfg->n_layers >= 1 && cfg->n_layers <= QKV_DETR_MAX_LAYERS,
              "detr %s: n_layers %d outside 1..%d", name, cfg->n_layers, QKV_DETR_MAX_LAYERS);
    QKV_CHECK(cfg->n_queries >= 1 && cfg->n_classes >= 1, "detr %s: n_queries %d and n_classes %d must be >= 1",
              name, cfg->n_queries, cfg->n_classes);
    char full[QKV_NAME_MAX];
    dec->cfg = *cfg;
    dec->query_embed = qkv_params_new(params, qkv_name_join(full, name, "query_embed"), 2,
                                      (int[]){cfg->n_queries, d});
    qkv_fill_normal(dec->query_embed->data, dec->query_embed->size, rng, 0.0f, 1.0f);
    for (int i = 0; i < cfg->n_layers; i++)
        qkv_decoder_block_init(&dec->layers[i], params, qkv_name_index(full, name, i), &cfg->block, rng);
    qkv_ln_init(&dec->norm, params, qkv_name_join(full, name, "norm"), d);
    qkv_linear_init(&dec->class_head, params, qkv_name_join(full, name, "class_head"), d, cfg->n_classes + 1, 1,
                    rng);
    qkv_mlp_init(&dec->box_head, params, qkv_name_join(full, name, "box_head"), 3, (int[]){d, d, d, 4},
                 QKV_ACT_RELU, rng);
}

/* Self-attention sublayer: q = k = x + q_pos, v = x. */
typedef struct {
    const qkv_mha *mha;
    qkv_tensor *query_pos;
} self_ctx;

static qkv_tensor *self_sublayer(qkv_tape *tape, const void *ctx, qkv_tensor *x) {
    const self_ctx *c = ctx;
    qkv_tensor *qk = qkv_add(tape, x, c->query_pos);
    qkv_mha_kv kv = qkv_mha_project_kv(tape, c->mha, qk, x, NULL);
    return qkv_mha_attend(tape, c->mha, qk, &kv, NULL);
}

/* Cross-attention sublayer: q = x + q_pos against the memory's K/V (keys from
 * memory + memory_pos, projected once per layer). */
typedef struct {
    const qkv_mha *mha;
    qkv_tensor *query_pos;
    const qkv_mha_kv *kv;
    const qkv_mha_call *call;
} cross_ctx;

static qkv_tensor *cross_sublayer(qkv_tape *tape, const void *ctx, qkv_tensor *x) {
    const cross_ctx *c = ctx;
    return qkv_mha_attend(tape, c->mha, qkv_add(tape, x, c->query_pos), c->kv, c->call);
}

static void check_inputs(const qkv_detr *dec, const qkv_tensor *memory, const qkv_tensor *pos,
                         const qkv_tensor *padding) {
    char ms[QKV_SHAPE_STR_LEN], ps[QKV_SHAPE_STR_LEN];
    int d = dec->cfg.block.d_model;
    qkv_tensor_check_live(memory, "detr");
    QKV_CHECK(memory->ndim == 3 && memory->shape[2] == d, "detr: memory %s must be [B,S,%d]",
              qkv_shape_str(memory, ms, sizeof ms), d);
    int b = memory->shape[0], s = memory->shape[1];
    if (pos) {
        qkv_tensor_check_live(pos, "detr");
        int ok = (pos->ndim == 2 && pos->shape[0] == s && pos->shape[1] == d) ||
                 (pos->ndim == 3 && pos->shape[0] == b && pos->shape[1] == s && pos->shape[2] == d);
        QKV_CHECK(ok, "detr: memory_pos %s does not fit memory %s (must be [S,D] or [B,S,D])",
                  qkv_shape_str(pos, ps, sizeof ps), qkv_shape_str(memory, ms, sizeof ms));
    }
    if (padding) {
        qkv_tensor_check_live(padding, "detr");
        QKV_CHECK(padding->ndim == 2 && padding->shape[0] == b && padding->shape[1] == s,
                  "detr: memory_padding %s does not fit memory %s (must be [B,S])",
                  qkv_shape_str(padding, ps, sizeof ps), qkv_shape_str(memory, ms, sizeof ms));
    }
}

qkv_detr_out qkv_detr_forward(qkv_tape *tape, const qkv_detr *dec, qkv_tensor *memory, qkv_tensor *memory_pos,
                              const qkv_tensor *memory_padding) {
    check_inputs(dec, memory, memory_pos, memory_padding);
    const qkv_detr_config *c = &dec->cfg;
    qkv_detr_out out = {.n_layers = c->n_layers};
    qkv_tensor *keys = memory_pos ? qkv_add(tape, memory, memory_pos) : memory;
    qkv_mha_call cross_call = {.key_padding = memory_padding};
    qkv_tensor *tgt = qkv_tape_zeros(tape, 3, (int[]){memory->shape[0], c->n_queries, c->block.d_model});
    for (int l = 0; l < c->n_layers; l++) {
        const qkv_decoder_block *layer = &dec->layers[l];
        qkv_mha_kv kv = qkv_mha_project_kv(tape, &layer->cross_attn, keys, memory, NULL);
        self_ctx self = {&layer->self_attn, dec->query_embed};
        cross_ctx cross = {&layer->cross_attn, dec->query_embed, &kv, &cross_call};
        tgt = qkv_residual(tape, &c->block, &layer->ln1, tgt, self_sublayer, &self);
        tgt = qkv_residual(tape, &c->block, &layer->ln2, tgt, cross_sublayer, &cross);
        tgt = qkv_residual(tape, &c->block, &layer->ln3, tgt, qkv_ffn_sublayer, &layer->ffn);
        qkv_tensor *h = qkv_ln_forward(tape, &dec->norm, tgt);
        out.logits[l] = qkv_linear_forward(tape, &dec->class_head, h);
        out.boxes[l] = qkv_sigmoid(tape, qkv_mlp_forward(tape, &dec->box_head, h));
        out.hidden = h;
    }
    return out;
}
