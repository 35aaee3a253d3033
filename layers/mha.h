/* mha.h — multi-head attention: self-attention, cross-attention, reusable
 * key/value projections, and a key/value cache for incremental causal decoding.
 *
 *   Q = x Wq^T, K = ctx Wk^T, V = ctx Wv^T     (x [B,Tq,d_model], ctx [B,Tk,kdim|vdim])
 *   split into H heads of d_head = d_model / H:  [B,T,H,d_head]
 *   O = attention(Q, K, V, masks)  (core/ops/attention.h, one fused op)
 *   y = O Wo^T                                  [B,Tq,d_model]
 *
 * The heads are read where the projections wrote them (attention's heads_last
 * layout): splitting [B,T,H*d] into [B,T,H,d] is a reshape, not a copy, and O
 * comes out in the layout Wo reads. With RoPE, and for the decoding cache, the
 * heads are permuted to [B,H,T,d_head] instead (the rotation and the cache work
 * per head); both layouts give the same results.
 *
 * Self-attention is ctx = x. Cross-attention lets kdim and vdim differ from
 * d_model (PyTorch's kdim/vdim): Wk is [d_model, kdim] and Wv [d_model, vdim].
 * A head count that does not divide d_model is a programmer error.
 *
 * Masks use the one qkv convention: 1 = may attend (see core/ops/attention.h).
 * RoPE, when given, rotates the queries and keys of every head before the scores;
 * ALiBi and other relative schemes come in through call->bias.
 *
 * Reuse: qkv_mha_project_kv() computes the heads' K and V of a context once (the
 * encoder memory during generation); qkv_mha_attend() runs queries against them
 * as many times as needed.
 *
 * Cache: qkv_kv_cache holds the rotated keys and the values of every position
 * decoded so far. qkv_mha_decode() projects only the new positions, appends them
 * and attends causally over the whole cache; it gives the same outputs as the
 * full causal pass over the same prefix.
 */
#ifndef QKV_MHA_H
#define QKV_MHA_H

#include "core/ops/attention.h"
#include "core/ops/ops_position.h"
#include "layers/linear.h"

typedef struct qkv_mha {
    int d_model, n_heads, d_head, kdim, vdim;
    qkv_linear wq, wk, wv, wo;
    /* Inspection (qkv attn): when not NULL, every forward stores its attention
     * weights here, per head [B,H,Tq,Tk] (or what the call itself asked for), a
     * tape activation valid until the tape's reset. NULL after init: training
     * pays nothing. */
    qkv_tensor **capture;
} qkv_mha;

/* Everything about one call besides the inputs. All fields may be 0/NULL. */
typedef struct qkv_mha_call {
    int causal;
    const qkv_tensor *key_padding;   /* [B,Tk], 1 = real key */
    const qkv_tensor *keep;          /* [Tq,Tk] or [B,H,Tq,Tk], 1 = may attend */
    qkv_tensor *bias;                /* additive, broadcast to [B,H,Tq,Tk] (ALiBi) */
    const qkv_rope_opts *rope;       /* rotate q and k; NULL: no RoPE */
    int weights;                     /* 0, 1 per head, 2 averaged over heads */
    qkv_tensor **weights_out;
    float scale;                     /* scores = scale * q.k; 0: 1/sqrt(d_head) */
} qkv_mha_call;

/* Heads of a projected context: [B,Tk,H,d_head] each (heads_last), or
 * [B,H,Tk,d_head] (with RoPE, and from the decoding cache). */
typedef struct qkv_mha_kv {
    qkv_tensor *k, *v;
    int heads_last;
} qkv_mha_kv;

/* kdim, vdim <= 0 mean d_model. Parameters "<name>.wq.weight", ... */
void qkv_mha_init(qkv_mha *mha, qkv_params *params, const char *name, int d_model, int n_heads,
                  int kdim, int vdim, int with_bias, qkv_rng *rng);

/* ctx NULL: self-attention on x. One context feeds keys and values, so this needs
 * kdim == vdim; with different widths use qkv_mha_project_kv + qkv_mha_attend. */
qkv_tensor *qkv_mha_forward(qkv_tape *tape, const qkv_mha *mha, qkv_tensor *x, qkv_tensor *ctx,
                            const qkv_mha_call *call);

/* K and V heads of ctx (kdim wide, or vdim for the values when value_ctx is
 * given separately: value_ctx NULL means ctx). rope, if not NULL, rotates the
 * keys at positions rope->offset + t. */
qkv_mha_kv qkv_mha_project_kv(qkv_tape *tape, const qkv_mha *mha, qkv_tensor *ctx,
                              qkv_tensor *value_ctx, const qkv_rope_opts *rope);
qkv_tensor *qkv_mha_attend(qkv_tape *tape, const qkv_mha *mha, qkv_tensor *x, const qkv_mha_kv *kv,
                           const qkv_mha_call *call);

/* [B,T,H*dh] <-> [B,H,T,dh] (permutes: copies) */
qkv_tensor *qkv_split_heads(qkv_tape *tape, qkv_tensor *x, int n_heads);
qkv_tensor *qkv_merge_heads(qkv_tape *tape, qkv_tensor *x);
/* [B,T,H*dh] <-> [B,T,H,dh], attention's heads_last layout (reshapes: no copy) */
qkv_tensor *qkv_heads_view(qkv_tape *tape, qkv_tensor *x, int n_heads);
qkv_tensor *qkv_heads_join(qkv_tape *tape, qkv_tensor *x);

typedef struct qkv_kv_cache {
    int batch, n_heads, d_head, max_len, len;
    float *k, *v;   /* [B,H,max_len,d_head], owned */
} qkv_kv_cache;

void qkv_kv_cache_init(qkv_kv_cache *cache, const qkv_mha *mha, int batch, int max_len);
void qkv_kv_cache_free(qkv_kv_cache *cache);
/* x [B,Tn,d_model]: the next Tn positions. Causal over the cache; RoPE, if given,
 * is applied at positions cache->len + t. call->causal is implied. */
qkv_tensor *qkv_mha_decode(qkv_tape *tape, const qkv_mha *mha, qkv_tensor *x, qkv_kv_cache *cache,
                           const qkv_mha_call *call);

#endif
