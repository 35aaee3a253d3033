/* perceiver.c — Perceiver block and Perceiver IO decoder. See perceiver.h. Both
 * are "learned queries cross-attend to a context, then a feed-forward", so they
 * share read_context(); the block adds latent self-attention after it. */
#include "layers/perceiver.h"

#include "core/error.h"
#include "core/ops/ops.h"
#include "layers/sets.h"

/* A learned [n,d] query table, N(0, 0.02) as in the Perceiver's latent init. */
static qkv_tensor *learned_queries(qkv_params *params, const char *name, const char *part, int n, int d,
                                   qkv_rng *rng) {
    char full[QKV_NAME_MAX];
    qkv_tensor *t = qkv_params_new(params, qkv_name_join(full, name, part), 2, (int[]){n, d});
    qkv_fill_normal(t->data, t->size, rng, 0.0f, 0.02f);
    return t;
}

static void ln_part(qkv_ln *ln, qkv_params *params, const char *name, const char *part, int d) {
    char full[QKV_NAME_MAX];
    qkv_ln_init(ln, params, qkv_name_join(full, name, part), d);
}

/* The reader's parameters: "<name>.cross_attn", ".ffn", ".<queries_part>" [n,D],
 * ".<ctx_ln_part>" (width d_ctx), ".ln_q", ".ln_ffn", in that order. */
static void reader_init(qkv_query_reader *r, qkv_params *params, const char *name, const char *queries_part, int n,
                        const char *ctx_ln_part, const qkv_block_config *cfg, int d_ctx, qkv_rng *rng) {
    char full[QKV_NAME_MAX];
    qkv_block_config_check(name, cfg);
    QKV_CHECK(d_ctx >= 1, "%s: context width %d < 1", name, d_ctx);
    qkv_mha_init(&r->cross_attn, params, qkv_name_join(full, name, "cross_attn"), cfg->d_model, cfg->n_heads, d_ctx,
                 d_ctx, 1, rng);
    qkv_ffn_init(&r->ffn, params, qkv_name_join(full, name, "ffn"), cfg->d_model, cfg->d_ff, cfg->activation, rng);
    r->queries = learned_queries(params, name, queries_part, n, cfg->d_model, rng);
    ln_part(&r->ln_ctx, params, name, ctx_ln_part, d_ctx);
    ln_part(&r->ln_q, params, name, "ln_q", cfg->d_model);
    ln_part(&r->ln_ffn, params, name, "ln_ffn", cfg->d_model);
}

typedef struct {
    const qkv_mha *attn;
    const qkv_mha_kv *kv;
    const qkv_mha_call *call;
} cross_ctx;

static qkv_tensor *cross_sublayer(qkv_tape *tape, const void *ctx, qkv_tensor *q) {
    const cross_ctx *c = ctx;
    return qkv_mha_attend(tape, c->attn, q, c->kv, c->call);
}

/* r's queries read context [B,T,d_ctx] (qkv_query_reader has the formula). */
static qkv_tensor *read_context(qkv_tape *tape, const qkv_block_config *cfg, const qkv_query_reader *r,
                                qkv_tensor *context, const qkv_tensor *key_padding) {
    qkv_tensor *y = qkv_expand_batch(tape, r->queries, context->shape[0]);
    qkv_tensor *ctx = qkv_ln_forward(tape, &r->ln_ctx, context);
    qkv_mha_kv kv = qkv_mha_project_kv(tape, &r->cross_attn, ctx, NULL, NULL);
    qkv_mha_call call = {.key_padding = key_padding};
    cross_ctx cross = {&r->cross_attn, &kv, &call};
    y = qkv_residual(tape, cfg, &r->ln_q, y, cross_sublayer, &cross);
    return qkv_residual(tape, cfg, &r->ln_ffn, y, qkv_ffn_sublayer, &r->ffn);
}

void qkv_perceiver_init(qkv_perceiver *p, qkv_params *params, const char *name, const qkv_perceiver_config *cfg,
                        qkv_rng *rng) {
    const qkv_block_config *b = &cfg->block;
    QKV_CHECK(cfg->n_latents >= 1 && cfg->n_self_layers >= 0 && cfg->n_self_layers <= QKV_PERCEIVER_MAX_LAYERS,
              "perceiver %s: n_latents %d must be >= 1 and n_self_layers %d within 0..%d", name, cfg->n_latents,
              cfg->n_self_layers, QKV_PERCEIVER_MAX_LAYERS);
    char full[QKV_NAME_MAX];
    p->cfg = *cfg;
    reader_init(&p->read, params, name, "latents", cfg->n_latents, "ln_in", b, cfg->d_input, rng);
    for (int j = 0; j < cfg->n_self_layers; j++) {
        char self[QKV_NAME_MAX];
        qkv_name_join(self, name, "self");
        qkv_encoder_block_init(&p->self[j], params, qkv_name_index(full, self, j), b, rng);
    }
    ln_part(&p->ln_out, params, name, "ln_out", b->d_model);
}

/* x [B,N,width] and key_padding [B,N] or NULL, or stop naming the layer. */
static void check_context(const char *layer, const qkv_tensor *x, int width, const qkv_tensor *key_padding) {
    char xs[QKV_SHAPE_STR_LEN], ms[QKV_SHAPE_STR_LEN];
    qkv_tensor_check_live(x, layer);
    QKV_CHECK(x->ndim == 3 && x->shape[2] == width, "%s: input %s must be [B,N,%d]", layer,
              qkv_shape_str(x, xs, sizeof xs), width);
    if (!key_padding) return;
    qkv_tensor_check_live(key_padding, layer);
    QKV_CHECK(key_padding->ndim == 2 && key_padding->shape[0] == x->shape[0] && key_padding->shape[1] == x->shape[1],
              "%s: key_padding %s does not fit the input %s (must be [B,N])", layer,
              qkv_shape_str(key_padding, ms, sizeof ms), qkv_shape_str(x, xs, sizeof xs));
}

qkv_tensor *qkv_perceiver_forward(qkv_tape *tape, const qkv_perceiver *p, qkv_tensor *x,
                                  const qkv_tensor *key_padding) {
    check_context("perceiver", x, p->cfg.d_input, key_padding);
    qkv_tensor *z = read_context(tape, &p->cfg.block, &p->read, x, key_padding);
    for (int j = 0; j < p->cfg.n_self_layers; j++) z = qkv_encoder_block_forward(tape, &p->self[j], z, NULL, NULL);
    return qkv_ln_forward(tape, &p->ln_out, z);
}

void qkv_perceiver_decoder_init(qkv_perceiver_decoder *dec, qkv_params *params, const char *name,
                                const qkv_perceiver_decoder_config *cfg, qkv_rng *rng) {
    const qkv_block_config *b = &cfg->block;
    QKV_CHECK(cfg->n_queries >= 1 && cfg->d_out >= 1, "perceiver_decoder %s: n_queries %d and d_out %d must be >= 1",
              name, cfg->n_queries, cfg->d_out);
    char full[QKV_NAME_MAX];
    dec->cfg = *cfg;
    reader_init(&dec->read, params, name, "queries", cfg->n_queries, "ln_latent", b, cfg->d_latent, rng);
    ln_part(&dec->ln_out, params, name, "ln_out", b->d_model);
    qkv_linear_init(&dec->out, params, qkv_name_join(full, name, "out"), b->d_model, cfg->d_out, 1, rng);
}

qkv_tensor *qkv_perceiver_decoder_forward(qkv_tape *tape, const qkv_perceiver_decoder *dec, qkv_tensor *latents) {
    check_context("perceiver_decoder", latents, dec->cfg.d_latent, NULL);
    qkv_tensor *y = read_context(tape, &dec->cfg.block, &dec->read, latents, NULL);
    return qkv_linear_forward(tape, &dec->out, qkv_ln_forward(tape, &dec->ln_out, y));
}
