/* mha.c — multi-head attention, K/V reuse and the decoding cache. See mha.h. */
#include "layers/mha.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "core/ops/ops.h"

void qkv_mha_init(qkv_mha *mha, qkv_params *params, const char *name, int d_model, int n_heads,
                  int kdim, int vdim, int with_bias, qkv_rng *rng) {
    QKV_CHECK(n_heads >= 1 && d_model >= 1 && d_model % n_heads == 0,
              "mha_init %s: %d heads do not divide d_model %d", name, n_heads, d_model);
    char full[QKV_NAME_MAX];
    mha->d_model = d_model;
    mha->n_heads = n_heads;
    mha->d_head = d_model / n_heads;
    mha->kdim = kdim > 0 ? kdim : d_model;
    mha->vdim = vdim > 0 ? vdim : d_model;
    mha->capture = NULL;
    qkv_name_join(full, name, "wq");
    qkv_linear_init(&mha->wq, params, full, d_model, d_model, with_bias, rng);
    qkv_name_join(full, name, "wk");
    qkv_linear_init(&mha->wk, params, full, mha->kdim, d_model, with_bias, rng);
    qkv_name_join(full, name, "wv");
    qkv_linear_init(&mha->wv, params, full, mha->vdim, d_model, with_bias, rng);
    qkv_name_join(full, name, "wo");
    qkv_linear_init(&mha->wo, params, full, d_model, d_model, with_bias, rng);
}

qkv_tensor *qkv_split_heads(qkv_tape *tape, qkv_tensor *x, int n_heads) {
    char shape[QKV_SHAPE_STR_LEN];
    QKV_CHECK(n_heads >= 1 && x->ndim == 3 && x->shape[2] % n_heads == 0, "split_heads: %s into %d heads",
              qkv_shape_str(x, shape, sizeof shape), n_heads);
    int b = x->shape[0], t = x->shape[1], dh = x->shape[2] / n_heads;
    qkv_tensor *r = qkv_reshape(tape, x, 4, (int[]){b, t, n_heads, dh});
    return qkv_permute(tape, r, (int[]){0, 2, 1, 3});
}

qkv_tensor *qkv_merge_heads(qkv_tape *tape, qkv_tensor *x) {
    char shape[QKV_SHAPE_STR_LEN];
    QKV_CHECK(x->ndim == 4, "merge_heads: %s must be [B,H,T,d_head]", qkv_shape_str(x, shape, sizeof shape));
    int b = x->shape[0], h = x->shape[1], t = x->shape[2], dh = x->shape[3];
    qkv_tensor *p = qkv_permute(tape, x, (int[]){0, 2, 1, 3});
    return qkv_reshape(tape, p, 3, (int[]){b, t, h * dh});
}

static void check_input(const char *what, const qkv_tensor *x, int width) {
    char shape[QKV_SHAPE_STR_LEN];
    QKV_CHECK(x->ndim == 3 && x->shape[2] == width, "mha: %s %s must be [B,T,%d]", what,
              qkv_shape_str(x, shape, sizeof shape), width);
}

qkv_tensor *qkv_heads_view(qkv_tape *tape, qkv_tensor *x, int n_heads) {
    char shape[QKV_SHAPE_STR_LEN];
    QKV_CHECK(n_heads >= 1 && x->ndim == 3 && x->shape[2] % n_heads == 0, "heads_view: %s into %d heads",
              qkv_shape_str(x, shape, sizeof shape), n_heads);
    return qkv_reshape(tape, x, 4, (int[]){x->shape[0], x->shape[1], n_heads, x->shape[2] / n_heads});
}

qkv_tensor *qkv_heads_join(qkv_tape *tape, qkv_tensor *x) {
    char shape[QKV_SHAPE_STR_LEN];
    QKV_CHECK(x->ndim == 4, "heads_join: %s must be [B,T,H,d_head]", qkv_shape_str(x, shape, sizeof shape));
    return qkv_reshape(tape, x, 3, (int[]){x->shape[0], x->shape[1], x->shape[2] * x->shape[3]});
}

/* The heads of [B,T,H*dh]: [B,T,H,dh] in place, or permuted to [B,H,T,dh]. */
static qkv_tensor *heads(qkv_tape *tape, qkv_tensor *x, int n_heads, int heads_last) {
    return heads_last ? qkv_heads_view(tape, x, n_heads) : qkv_split_heads(tape, x, n_heads);
}

static qkv_mha_kv project_kv(qkv_tape *tape, const qkv_mha *mha, qkv_tensor *ctx, qkv_tensor *value_ctx,
                             const qkv_rope_opts *rope, int heads_last) {
    if (!value_ctx) value_ctx = ctx;
    check_input("key context", ctx, mha->kdim);
    check_input("value context", value_ctx, mha->vdim);
    qkv_mha_kv kv = {NULL, NULL, heads_last};
    kv.k = heads(tape, qkv_linear_forward(tape, &mha->wk, ctx), mha->n_heads, heads_last);
    if (rope) kv.k = qkv_rope(tape, kv.k, rope);
    kv.v = heads(tape, qkv_linear_forward(tape, &mha->wv, value_ctx), mha->n_heads, heads_last);
    return kv;
}

qkv_mha_kv qkv_mha_project_kv(qkv_tape *tape, const qkv_mha *mha, qkv_tensor *ctx,
                              qkv_tensor *value_ctx, const qkv_rope_opts *rope) {
    return project_kv(tape, mha, ctx, value_ctx, rope, rope == NULL); /* RoPE rotates [B,H,T,d] */
}

static qkv_attention_opts attention_opts(const qkv_mha_call *call) {
    qkv_attention_opts opts = {0};
    if (call) {
        opts.causal = call->causal;
        opts.key_padding = call->key_padding;
        opts.keep = call->keep;
        opts.bias = call->bias;
        opts.weights = call->weights;
        opts.scale = call->scale;
    }
    return opts;
}

qkv_tensor *qkv_mha_attend(qkv_tape *tape, const qkv_mha *mha, qkv_tensor *x, const qkv_mha_kv *kv,
                           const qkv_mha_call *call) {
    check_input("query input", x, mha->d_model);
    const qkv_rope_opts *rope = call ? call->rope : NULL;
    int heads_last = kv->heads_last && !rope;
    qkv_mha_kv permuted;
    if (kv->heads_last && !heads_last) { /* keys made without RoPE, queries rotated */
        permuted = (qkv_mha_kv){qkv_permute(tape, kv->k, (int[]){0, 2, 1, 3}),
                                qkv_permute(tape, kv->v, (int[]){0, 2, 1, 3}), 0};
        kv = &permuted;
    }
    qkv_tensor *q = heads(tape, qkv_linear_forward(tape, &mha->wq, x), mha->n_heads, heads_last);
    if (rope) q = qkv_rope(tape, q, rope);
    qkv_attention_opts opts = attention_opts(call);
    opts.heads_last = heads_last;
    qkv_tensor **weights_out = call ? call->weights_out : NULL;
    if (mha->capture && !opts.weights) {
        opts.weights = 1;
        weights_out = mha->capture;
    }
    qkv_tensor *o = qkv_attention(tape, q, kv->k, kv->v, &opts, weights_out);
    if (mha->capture && weights_out != mha->capture) *mha->capture = *weights_out;
    o = heads_last ? qkv_heads_join(tape, o) : qkv_merge_heads(tape, o);
    return qkv_linear_forward(tape, &mha->wo, o);
}

qkv_tensor *qkv_mha_forward(qkv_tape *tape, const qkv_mha *mha, qkv_tensor *x, qkv_tensor *ctx,
                            const qkv_mha_call *call) {
    QKV_CHECK(mha->kdim == mha->vdim, "mha_forward: kdim %d != vdim %d: give keys and values separately with "
              "qkv_mha_project_kv, then qkv_mha_attend", mha->kdim, mha->vdim);
    qkv_mha_kv kv = qkv_mha_project_kv(tape, mha, ctx ? ctx : x, NULL, call ? call->rope : NULL);
    return qkv_mha_attend(tape, mha, x, &kv, call);
}

void qkv_kv_cache_init(qkv_kv_cache *cache, const qkv_mha *mha, int batch, int max_len) {
    QKV_CHECK(batch >= 1 && max_len >= 1, "kv_cache_init: batch %d, max_len %d", batch, max_len);
    cache->batch = batch;
    cache->n_heads = mha->n_heads;
    cache->d_head = mha->d_head;
    cache->max_len = max_len;
    cache->len = 0;
    size_t n = (size_t)batch * mha->n_heads * max_len * mha->d_head;
    cache->k = qkv_calloc(n, sizeof(float), "a KV cache");
    cache->v = qkv_calloc(n, sizeof(float), "a KV cache");
}

void qkv_kv_cache_free(qkv_kv_cache *cache) {
    free(cache->k);
    free(cache->v);
    memset(cache, 0, sizeof *cache);
}

/* Copies rows [from, from + n) of every (b, h) between a [B,H,n,dh] tensor and the
 * cache's [B,H,max_len,dh] buffer; to_cache selects the direction. */
static void cache_rows(qkv_kv_cache *c, float *buffer, float *dense, int from, int n, int to_cache) {
    size_t row = (size_t)c->d_head * sizeof(float);
    for (int bh = 0; bh < c->batch * c->n_heads; bh++) {
        float *cached = buffer + ((size_t)bh * c->max_len + from) * c->d_head;
        float *packed = dense + (size_t)bh * n * c->d_head;
        if (to_cache) memcpy(cached, packed, row * n);
        else memcpy(packed, cached, row * n);
    }
}

qkv_tensor *qkv_mha_decode(qkv_tape *tape, const qkv_mha *mha, qkv_tensor *x, qkv_kv_cache *cache,
                           const qkv_mha_call *call) {
    check_input("decode input", x, mha->d_model);
    int b = x->shape[0], tn = x->shape[1], start = cache->len, total = start + tn;
    QKV_CHECK(b == cache->batch && cache->n_heads == mha->n_heads && cache->d_head == mha->d_head,
              "mha_decode: cache made for batch %d, %d heads of %d; got batch %d", cache->batch,
              cache->n_heads, cache->d_head, b);
    QKV_CHECK(total <= cache->max_len, "mha_decode: %d + %d positions exceed the cache's %d", start, tn,
              cache->max_len);
    qkv_rope_opts shifted;
    const qkv_rope_opts *rope = NULL;
    if (call && call->rope) {
        shifted = *call->rope;
        if (shifted.positions) shifted.positions += start;   /* the cache's slots */
        else shifted.offset += start;
        rope = &shifted;
    }
    qkv_mha_kv fresh = project_kv(tape, mha, x, NULL, rope, 0); /* the cache holds [B,H,T,dh] */
    cache_rows(cache, cache->k, fresh.k->data, start, tn, 1);
    cache_rows(cache, cache->v, fresh.v->data, start, tn, 1);
    cache->len = total;

    qkv_mha_kv all = {NULL, NULL, 0};
    int shape[4] = {b, mha->n_heads, total, mha->d_head};
    all.k = qkv_tape_tensor(tape, 4, shape);
    all.v = qkv_tape_tensor(tape, 4, shape);
    cache_rows(cache, cache->k, all.k->data, 0, total, 0);
    cache_rows(cache, cache->v, all.v->data, 0, total, 0);

    qkv_mha_call step = call ? *call : (qkv_mha_call){0};
    step.causal = 1;
    step.rope = rope;
    return qkv_mha_attend(tape, mha, x, &all, &step);
}
