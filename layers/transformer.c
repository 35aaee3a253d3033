/* transformer.c — see transformer.h. */
#include "layers/transformer.h"

#include <stdio.h>
#include <stdlib.h>

#include "core/alloc.h"
#include "core/error.h"
#include "core/ops/ops.h"

void qkv_block_config_check(const char *name, const qkv_block_config *cfg) {
    QKV_CHECK(cfg->d_model >= 1 && cfg->d_ff >= 1 && cfg->n_heads >= 1 && cfg->d_model % cfg->n_heads == 0,
              "%s: d_model %d, %d heads, d_ff %d (heads must divide d_model)", name, cfg->d_model,
              cfg->n_heads, cfg->d_ff);
    QKV_CHECK(cfg->dropout >= 0.0f && cfg->dropout < 1.0f, "%s: dropout %g outside [0, 1)", name,
              cfg->dropout);
    QKV_CHECK(cfg->ln_eps >= 0.0f && cfg->attn_scale >= 0.0f, "%s: ln_eps %g, attn_scale %g must be >= 0", name,
              cfg->ln_eps, cfg->attn_scale);
}

/* A LayerNorm of the block's width with the block's eps (0 keeps qkv_ln_init's). */
static void block_ln_init(qkv_ln *ln, qkv_params *params, const char *name, const qkv_block_config *cfg) {
    qkv_ln_init(ln, params, name, cfg->d_model);
    if (cfg->ln_eps > 0.0f) ln->eps = cfg->ln_eps;
}

void qkv_ffn_init(qkv_ffn *ffn, qkv_params *params, const char *name, int d_model, int d_ff,
                  qkv_activation activation, qkv_rng *rng) {
    char full[QKV_NAME_MAX];
    qkv_name_join(full, name, "fc1");
    qkv_linear_init(&ffn->fc1, params, full, d_model, d_ff, 1, rng);
    qkv_name_join(full, name, "fc2");
    qkv_linear_init(&ffn->fc2, params, full, d_ff, d_model, 1, rng);
    ffn->activation = activation;
}

qkv_tensor *qkv_ffn_forward(qkv_tape *tape, const qkv_ffn *ffn, qkv_tensor *x) {
    qkv_tensor *h = qkv_linear_forward(tape, &ffn->fc1, x);
    h = qkv_activate(tape, ffn->activation, h);
    return qkv_linear_forward(tape, &ffn->fc2, h);
}

/* One residual sublayer. pre-LN: x + drop(f(LN(x))); post-LN: LN(x + drop(f(x))).
 * The sublayer f is given as a closure: fn(tape, ctx, input). */
typedef qkv_tensor *(*sublayer_fn)(qkv_tape *tape, const void *ctx, qkv_tensor *input);

static qkv_tensor *residual(qkv_tape *tape, const qkv_block_config *cfg, const qkv_ln *ln,
                            qkv_tensor *x, sublayer_fn fn, const void *ctx) {
    if (!cfg->post_ln) {
        qkv_tensor *h = qkv_dropout(tape, fn(tape, ctx, qkv_ln_forward(tape, ln, x)), cfg->dropout);
        return qkv_add(tape, x, h);
    }
    qkv_tensor *h = qkv_dropout(tape, fn(tape, ctx, x), cfg->dropout);
    return qkv_ln_forward(tape, ln, qkv_add(tape, x, h));
}

qkv_tensor *qkv_residual(qkv_tape *tape, const qkv_block_config *cfg, const qkv_ln *ln, qkv_tensor *x,
                         qkv_sublayer_fn fn, const void *ctx) {
    return residual(tape, cfg, ln, x, fn, ctx);
}

typedef struct {
    const qkv_mha *mha;
    const qkv_mha_kv *kv;   /* cross-attention to these K/V; NULL: self-attention */
    const qkv_mha_call *call;
    qkv_kv_cache *cache;    /* self-attention over a decoding cache, or NULL */
} attention_ctx;

static qkv_tensor *attention_sublayer(qkv_tape *tape, const void *ctx, qkv_tensor *x) {
    const attention_ctx *a = ctx;
    if (a->kv) return qkv_mha_attend(tape, a->mha, x, a->kv, a->call);
    if (a->cache) return qkv_mha_decode(tape, a->mha, x, a->cache, a->call);
    return qkv_mha_forward(tape, a->mha, x, NULL, a->call);
}

qkv_tensor *qkv_ffn_sublayer(qkv_tape *tape, const void *ffn, qkv_tensor *x) {
    return qkv_ffn_forward(tape, ffn, x);
}

/* The named parts of a block: "<name>.<part>". */
static void ln_part(qkv_ln *ln, qkv_params *params, const char *name, const char *part,
                    const qkv_block_config *cfg) {
    char full[QKV_NAME_MAX];
    block_ln_init(ln, params, qkv_name_join(full, name, part), cfg);
}

static void attention_part(qkv_mha *mha, qkv_params *params, const char *name, const char *part,
                           const qkv_block_config *cfg, qkv_rng *rng) {
    char full[QKV_NAME_MAX];
    qkv_mha_init(mha, params, qkv_name_join(full, name, part), cfg->d_model, cfg->n_heads, 0, 0, 1, rng);
}

static void ffn_part(qkv_ffn *ffn, qkv_params *params, const char *name, const qkv_block_config *cfg,
                     qkv_rng *rng) {
    char full[QKV_NAME_MAX];
    qkv_ffn_init(ffn, params, qkv_name_join(full, name, "ffn"), cfg->d_model, cfg->d_ff, cfg->activation, rng);
}

void qkv_encoder_block_init(qkv_encoder_block *block, qkv_params *params, const char *name,
                            const qkv_block_config *cfg, qkv_rng *rng) {
    qkv_block_config_check(name, cfg);
    block->cfg = *cfg;
    ln_part(&block->ln1, params, name, "ln1", cfg);
    attention_part(&block->attn, params, name, "attn", cfg, rng);
    ln_part(&block->ln2, params, name, "ln2", cfg);
    ffn_part(&block->ffn, params, name, cfg, rng);
}

qkv_tensor *qkv_encoder_block_forward(qkv_tape *tape, const qkv_encoder_block *block, qkv_tensor *x,
                                      const qkv_mha_call *call, qkv_kv_cache *cache) {
    attention_ctx self = {&block->attn, NULL, call, cache};
    x = residual(tape, &block->cfg, &block->ln1, x, attention_sublayer, &self);
    return residual(tape, &block->cfg, &block->ln2, x, qkv_ffn_sublayer, &block->ffn);
}

void qkv_decoder_block_init(qkv_decoder_block *block, qkv_params *params, const char *name,
                            const qkv_block_config *cfg, qkv_rng *rng) {
    qkv_block_config_check(name, cfg);
    block->cfg = *cfg;
    ln_part(&block->ln1, params, name, "ln1", cfg);
    attention_part(&block->self_attn, params, name, "self_attn", cfg, rng);
    ln_part(&block->ln2, params, name, "ln2", cfg);
    attention_part(&block->cross_attn, params, name, "cross_attn", cfg, rng);
    ln_part(&block->ln3, params, name, "ln3", cfg);
    ffn_part(&block->ffn, params, name, cfg, rng);
}

qkv_tensor *qkv_decoder_block_forward(qkv_tape *tape, const qkv_decoder_block *block, qkv_tensor *x,
                                      const qkv_mha_kv *memory_kv, const qkv_mha_call *self_call,
                                      const qkv_mha_call *cross_call, qkv_kv_cache *cache) {
    attention_ctx self = {&block->self_attn, NULL, self_call, cache};
    attention_ctx cross = {&block->cross_attn, memory_kv, cross_call, NULL};
    x = residual(tape, &block->cfg, &block->ln1, x, attention_sublayer, &self);
    x = residual(tape, &block->cfg, &block->ln2, x, attention_sublayer, &cross);
    return residual(tape, &block->cfg, &block->ln3, x, qkv_ffn_sublayer, &block->ffn);
}

/* ---- stacks ---------------------------------------------------------------- */

static void stack_common_init(const qkv_stack_config *cfg, qkv_positions *pos, qkv_ln *final_ln,
                              qkv_params *params, const char *name, qkv_rng *rng) {
    char full[QKV_NAME_MAX];
    QKV_CHECK(cfg->n_layers >= 1, "%s: n_layers %d must be >= 1", name, cfg->n_layers);
    qkv_name_join(full, name, "pos");
    QKV_CHECK(cfg->rope.offset == 0 && !cfg->rope.positions, "%s: the stack's rope options set an offset",
              name);
    qkv_pos_opts pos_opts = cfg->pos_opts;
    pos_opts.rope = &cfg->rope;   /* rope, p-rope: the stack's layout, base and fraction */
    qkv_positions_init_opts(pos, params, full, cfg->positions, cfg->block.d_model, cfg->max_len,
                            cfg->block.n_heads, &pos_opts, rng);
    if (!cfg->block.post_ln) {
        qkv_name_join(full, name, "ln_final");
        block_ln_init(final_ln, params, full, &cfg->block);
    }
}

void qkv_encoder_init(qkv_encoder *enc, qkv_params *params, const char *name,
                      const qkv_stack_config *cfg, int causal, qkv_rng *rng) {
    enc->cfg = *cfg;
    enc->causal = causal;
    stack_common_init(cfg, &enc->pos, &enc->final_ln, params, name, rng);
    enc->blocks = qkv_calloc((size_t)cfg->n_layers, sizeof *enc->blocks, "the encoder's blocks");
    for (int i = 0; i < cfg->n_layers; i++) {
        char full[QKV_NAME_MAX];
        qkv_name_index(full, name, i);
        qkv_encoder_block_init(&enc->blocks[i], params, full, &cfg->block, rng);
    }
}

void qkv_encoder_free(qkv_encoder *enc) {
    free(enc->blocks);
    enc->blocks = NULL;
}

/* The per-layer attention call of a stack: its positions' RoPE and ALiBi or T5 bias. */
static qkv_mha_call stack_call(qkv_tape *tape, const qkv_stack_config *cfg, const qkv_positions *pos, int tq,
                               int tk, int causal, const qkv_tensor *key_padding) {
    qkv_mha_call call = {0};
    call.scale = cfg->block.attn_scale;
    call.causal = causal;
    call.key_padding = key_padding;
    call.rope = qkv_positions_rope(pos);
    call.bias = qkv_positions_bias(tape, pos, tq, tk, !causal);
    return call;
}

void qkv_stack_caches_init(qkv_kv_cache *caches, int n_layers, const qkv_mha *attn_of_layer0, int batch,
                           int max_len) {
    for (int i = 0; i < n_layers; i++) qkv_kv_cache_init(&caches[i], attn_of_layer0, batch, max_len);
}

void qkv_stack_caches_free(qkv_kv_cache *caches, int n_layers) {
    for (int i = 0; i < n_layers; i++) qkv_kv_cache_free(&caches[i]);
}

/* The encoder stack over x at positions offset.., with caches (decoding) or not. */
static qkv_tensor *run_encoder(qkv_tape *tape, const qkv_encoder *enc, qkv_tensor *x,
                               const qkv_tensor *key_padding, qkv_kv_cache *caches) {
    int offset = caches ? caches[0].len : 0, tn = x->shape[1];
    x = qkv_positions_add(tape, &enc->pos, x, offset);
    qkv_mha_call call = stack_call(tape, &enc->cfg, &enc->pos, tn, offset + tn, enc->causal, key_padding);
    for (int i = 0; i < enc->cfg.n_layers; i++)
        x = qkv_encoder_block_forward(tape, &enc->blocks[i], x, &call, caches ? &caches[i] : NULL);
    return enc->cfg.block.post_ln ? x : qkv_ln_forward(tape, &enc->final_ln, x);
}

qkv_tensor *qkv_encoder_forward(qkv_tape *tape, const qkv_encoder *enc, qkv_tensor *x,
                                const qkv_tensor *key_padding) {
    return run_encoder(tape, enc, x, key_padding, NULL);
}

qkv_tensor *qkv_encoder_decode(qkv_tape *tape, const qkv_encoder *enc, qkv_tensor *x, qkv_kv_cache *caches) {
    QKV_CHECK(enc->causal, "encoder_decode: only a causal stack decodes incrementally");
    return run_encoder(tape, enc, x, NULL, caches);
}

void qkv_decoder_init(qkv_decoder *dec, qkv_params *params, const char *name,
                      const qkv_stack_config *cfg, qkv_rng *rng) {
    dec->cfg = *cfg;
    stack_common_init(cfg, &dec->pos, &dec->final_ln, params, name, rng);
    dec->blocks = qkv_calloc((size_t)cfg->n_layers, sizeof *dec->blocks, "the decoder's blocks");
    for (int i = 0; i < cfg->n_layers; i++) {
        char full[QKV_NAME_MAX];
        qkv_name_index(full, name, i);
        qkv_decoder_block_init(&dec->blocks[i], params, full, &cfg->block, rng);
    }
}

void qkv_decoder_free(qkv_decoder *dec) {
    free(dec->blocks);
    dec->blocks = NULL;
}

void qkv_decoder_memory(qkv_tape *tape, const qkv_decoder *dec, qkv_tensor *memory, qkv_mha_kv *memory_kv) {
    for (int i = 0; i < dec->cfg.n_layers; i++)
        memory_kv[i] = qkv_mha_project_kv(tape, &dec->blocks[i].cross_attn, memory, NULL, NULL);
}

/* The decoder stack over y at positions offset.., with caches (decoding) or not. */
static qkv_tensor *run_decoder(qkv_tape *tape, const qkv_decoder *dec, qkv_tensor *y,
                               const qkv_mha_kv *memory_kv, const qkv_tensor *src_padding,
                               const qkv_tensor *tgt_padding, qkv_kv_cache *caches) {
    int offset = caches ? caches[0].len : 0, tn = y->shape[1];
    y = qkv_positions_add(tape, &dec->pos, y, offset);
    qkv_mha_call self_call = stack_call(tape, &dec->cfg, &dec->pos, tn, offset + tn, 1, tgt_padding);
    qkv_mha_call cross_call = {0};
    cross_call.scale = dec->cfg.block.attn_scale;
    cross_call.key_padding = src_padding;
    for (int i = 0; i < dec->cfg.n_layers; i++)
        y = qkv_decoder_block_forward(tape, &dec->blocks[i], y, &memory_kv[i], &self_call, &cross_call,
                                      caches ? &caches[i] : NULL);
    return dec->cfg.block.post_ln ? y : qkv_ln_forward(tape, &dec->final_ln, y);
}

qkv_tensor *qkv_decoder_forward(qkv_tape *tape, const qkv_decoder *dec, qkv_tensor *y,
                                qkv_tensor *memory, const qkv_tensor *src_padding,
                                const qkv_tensor *tgt_padding) {
    qkv_mha_kv *memory_kv = qkv_tape_alloc(tape, (size_t)dec->cfg.n_layers * sizeof *memory_kv);
    qkv_decoder_memory(tape, dec, memory, memory_kv);
    return run_decoder(tape, dec, y, memory_kv, src_padding, tgt_padding, NULL);
}

qkv_tensor *qkv_decoder_decode(qkv_tape *tape, const qkv_decoder *dec, qkv_tensor *y,
                               const qkv_mha_kv *memory_kv, const qkv_tensor *src_padding,
                               qkv_kv_cache *caches) {
    return run_decoder(tape, dec, y, memory_kv, src_padding, NULL, caches);
}
