/* attention_blocks.h — what the fused attention op's forward (ops_attention.c)
 * and backward (attention_backward.c) share: the block sizes, the op's dims,
 * masks and bias as the blocks read them, one block of scores and of
 * probabilities, per-thread scratch, and the state the forward saves for the
 * backward. Internal to those two files; the contract is attention.h.
 *
 * The helpers are static inline so that each file compiles them as it did when
 * the op was one file: the same code, so the same bits.
 */
#ifndef QKV_ATTENTION_BLOCKS_H
#define QKV_ATTENTION_BLOCKS_H

#include <math.h>
#include <string.h>

#include "core/kernels/block_product.h"
#include "core/kernels/kernels.h"
#include "core/kernels/omp_shim.h"
#include "core/kernels/parallel.h"
#include "core/ops/attention.h"

/* Rough cost of one score in a row loop, in flops (one exp dominates). */
#define EXP_WORK 16
/* Queries and keys per block: a 64 x 64 score block (16 KB) and the 64-row
 * slices of q, k, v, dO stay in L2 while they are reused. */
#define BLOCK_Q 64
#define BLOCK_K 64
/* Short sequences. Only the forward's key blocks fix the bits (its online softmax
 * rescales from one key block to the next); every other extent is free, because
 * each query row's work and each product's chain over its contraction index run
 * in the same order whatever the blocking. So when one side is short, the other
 * grows to fill BLOCK_AREA scores (at most BLOCK_MAX long): one block product
 * per head instead of many narrow ones (a Set Transformer's 16 inducing points
 * against 256 points: 16 x 256 and 256 x 16 blocks, not 16 x 64 and 64 x 16).
 * tests/test_attention.c checks the result is the same bits as 64 x 64 blocks. */
#define BLOCK_AREA (BLOCK_Q * BLOCK_K)
#define BLOCK_MAX 512
/* The most scores a node keeps P~ for (16 MB): a batch of short sequences. */
#define KEEP_P_MAX ((size_t)1 << 22)

static inline int min_int(int a, int b) { return a < b ? a : b; }
static inline int max_int(int a, int b) { return a > b ? a : b; }

/* The block shapes of one attention (attn_dims below): the forward's query block
 * (its key block is BLOCK_K, or Tk when shorter) and the backward's. */
typedef struct block_shape { int fq, bq, bk; } block_shape;

/* Test hook (tests/test_attention.c), defined in ops_attention.c: 1 forces 64 x 64
 * blocks everywhere, and the backward's recomputation of P (no P~ kept). */
extern int qkv__attention_square_blocks;

typedef struct attn_dims {
    int B, H, Tq, Tk, dk, dv;
    int heads_last; /* q, k, v, out (and their gradients) are [B,T,H,d], not [B,H,T,d] */
} attn_dims;

static inline size_t n_heads(const attn_dims *d) { return (size_t)d->B * d->H; }

static inline block_shape block_shape_of(const attn_dims *d) {
    block_shape s = {BLOCK_Q, BLOCK_Q, BLOCK_K};
    if (qkv__attention_square_blocks) return s;
    int fk = min_int(d->Tk, BLOCK_K);
    s.fq = min_int(d->Tq, max_int(BLOCK_Q, min_int(BLOCK_MAX, BLOCK_AREA / fk)));
    if (d->Tk <= BLOCK_K) { /* few keys: tall blocks */
        s.bk = d->Tk;
        s.bq = min_int(d->Tq, max_int(BLOCK_Q, min_int(BLOCK_MAX, BLOCK_AREA / s.bk)));
    } else if (d->Tq <= BLOCK_Q) { /* few queries: wide blocks */
        s.bq = d->Tq;
        s.bk = min_int(d->Tk, max_int(BLOCK_K, min_int(BLOCK_MAX, BLOCK_AREA / s.bq)));
    }
    return s;
}
static inline size_t n_scores(const attn_dims *d) { return n_heads(d) * d->Tq * d->Tk; }

/* The bias seen as [B,H,Tq,Tk]: its shape right-aligned to 4 dims (padded with 1)
 * and element strides that are 0 along its broadcast dims. */
typedef struct bias_view {
    const float *data; /* NULL: no bias */
    int shape[4];
    size_t stride[4];
} bias_view;

/* The padding and keep masks of query row (b,h,i); the causal mask is each
 * block's band (block_keys_seen). */
typedef struct key_mask {
    const float *padding;  /* key_padding[b, :], or NULL */
    const float *keep;     /* keep[i, :] or keep[b,h,i, :], or NULL */
} key_mask;

typedef struct attn_masks {
    int causal;
    const qkv_tensor *key_padding, *keep;
} attn_masks;

/* The view of a bias that was already validated (or NULL). */
static inline bias_view view_bias(const qkv_tensor *bias) {
    bias_view bv = {NULL, {1, 1, 1, 1}, {0, 0, 0, 0}};
    if (!bias) return bv;
    bv.data = bias->data;
    int pad = 4 - bias->ndim;
    for (int a = 0; a < bias->ndim; a++) bv.shape[pad + a] = bias->shape[a];
    size_t stride = 1;
    for (int a = 3; a >= 0; a--) {
        bv.stride[a] = bv.shape[a] == 1 ? 0 : stride;
        stride *= (size_t)bv.shape[a];
    }
    return bv;
}

/* ---- masks and scores ------------------------------------------------------------ */

static inline key_mask mask_of_row(const attn_masks *m, const attn_dims *d, int b, int h, int i) {
    key_mask km = {NULL, NULL};
    if (m->key_padding) km.padding = m->key_padding->data + (size_t)b * d->Tk;
    if (m->keep) {
        size_t row = m->keep->ndim == 2 ? (size_t)i : ((size_t)b * d->H + h) * d->Tq + i;
        km.keep = m->keep->data + row * d->Tk;
    }
    return km;
}

/* Everything a block of attention needs to know. */
typedef struct attn_ctx {
    attn_dims d;
    float scale;
    attn_masks masks;
    bias_view bias;
    const float *q, *k, *v;
    const qkv_kernels *kern; /* the path in use, read once per op (kernels.h) */
} attn_ctx;

/* A block of queries [i0, i0+nq) and keys [j0, j0+nk) of head (b,h). */
typedef struct attn_block {
    int b, h, i0, nq, j0, nk;
} attn_block;

/* Head (b,h) in [B,H] order: its rows of the saved statistics, of dS and of the
 * weights start at head_index * Tq. */
static inline size_t head_index(const attn_ctx *c, int b, int h) { return (size_t)b * c->d.H + h; }

/* Where row t of head (b,h) starts in q, k, v, out or a gradient of one (T rows
 * of `width` floats per head), and the distance from one row to the next:
 * [B,H,T,d] keeps a head's rows together, [B,T,H,d] interleaves the heads. */
static inline size_t row_offset(const attn_dims *d, int b, int h, int T, int t, int width) {
    return d->heads_last ? (((size_t)b * T + t) * d->H + h) * width
                         : (((size_t)b * d->H + h) * T + t) * width;
}
static inline int row_stride(const attn_dims *d, int width) { return d->heads_last ? d->H * width : width; }

/* rows rows of width floats, ld apart, set to 0 (a head's rows of a [B,H,T,w] or
 * [B,T,H,w] buffer: x at row_offset, ld row_stride). */
static inline void zero_rows(float *x, int ld, int rows, int width) {
    for (int r = 0; r < rows; r++) memset(x + (size_t)r * ld, 0, (size_t)width * sizeof(float));
}

/* Causal: the block has no allowed key when its first key is past the last key of
 * its last query. */
static inline int block_is_masked(const attn_ctx *c, const attn_block *blk) {
    return c->masks.causal && blk->j0 > blk->i0 + blk->nq - 1 + (c->d.Tk - c->d.Tq);
}

/* The block's causal band for its products (block_product.h): row r sees key
 * column j when j <= r + diag. Without the causal mask, no band. */
static inline int block_band(const attn_ctx *c, int kind) { return c->masks.causal ? kind : QKV_BAND_NONE; }
static inline int block_diag(const attn_ctx *c, const attn_block *blk) {
    return blk->i0 + (c->d.Tk - c->d.Tq) - blk->j0;
}

/* The block's keys [0, seen) that row r may see under the causal mask (query i
 * sees keys j <= i + Tk - Tq), all nk without it. */
static inline int block_keys_seen(const attn_ctx *c, const attn_block *blk, int r) {
    if (!c->masks.causal) return blk->nk;
    int seen = r + block_diag(c, blk) + 1;
    return seen < 0 ? 0 : seen > blk->nk ? blk->nk : seen;
}

/* s[r, j] = scale q_(i0+r) . k_(j0+j) + bias, or -inf where the key is masked.
 * One vectorizable pass per kind of mask (the bias is added everywhere first;
 * masked entries are then overwritten). */
static inline void block_scores(const attn_ctx *c, const attn_block *blk, float *s, int lds) {
    const attn_dims *d = &c->d;
    qkv_block_product_band(block_band(c, QKV_BAND_COLS), block_diag(c, blk), 0, 1, blk->nq, blk->nk, d->dk, c->scale,
                      c->q + row_offset(d, blk->b, blk->h, d->Tq, blk->i0, d->dk), row_stride(d, d->dk),
                      c->k + row_offset(d, blk->b, blk->h, d->Tk, blk->j0, d->dk), row_stride(d, d->dk),
                      0.0f, s, lds);
    const bias_view *bv = &c->bias;
    const int nk = blk->nk;
    for (int r = 0; r < blk->nq; r++) {
        int i = blk->i0 + r;
        float *restrict row = s + (size_t)r * lds;
        key_mask km = mask_of_row(&c->masks, d, blk->b, blk->h, i);
        if (bv->data) {
            const float *bias_row = bv->data + blk->b * bv->stride[0] + blk->h * bv->stride[1] +
                                    i * bv->stride[2] + blk->j0 * bv->stride[3];
            if (bv->stride[3] == 1)
                for (int j = 0; j < nk; j++) row[j] += bias_row[j];
            else
                for (int j = 0; j < nk; j++) row[j] += bias_row[0];
        }
        for (int j = block_keys_seen(c, blk, r); j < nk; j++) row[j] = -INFINITY;
        if (km.padding) {
            const float *pad = km.padding + blk->j0;
            for (int j = 0; j < nk; j++) row[j] = pad[j] != 0.0f ? row[j] : -INFINITY;
        }
        if (km.keep) {
            const float *keep = km.keep + blk->j0;
            for (int j = 0; j < nk; j++) row[j] = keep[j] != 0.0f ? row[j] : -INFINITY;
        }
    }
}

/* The block's probabilities from its scores in p and the saved row statistics:
 * P = exp(S - m) / l, 0 where masked and on rows with no allowed key (m = -inf). */
static inline void probs_of_scores(const attn_ctx *c, const attn_block *blk, const float *row_max,
                                   const float *row_inv_sum, float *p, int ldp) {
    for (int r = 0; r < blk->nq; r++) {
        float *row = p + (size_t)r * ldp;
        float m = row_max[r], inv = row_inv_sum[r];
        if (m == -INFINITY) {
            memset(row, 0, (size_t)blk->nk * sizeof(float));
            continue;
        }
        c->kern->row_exp_shifted(row, row, blk->nk, m);
        c->kern->row_scale(row, blk->nk, inv);
    }
}

/* The same, the scores computed first. */
static inline void block_probs(const attn_ctx *c, const attn_block *blk, const float *row_max,
                               const float *row_inv_sum, float *p, int ldp) {
    block_scores(c, blk, p, ldp);
    probs_of_scores(c, blk, row_max, row_inv_sum, p, ldp);
}

/* Flops of one pass over all score blocks, for the parallel threshold. */
static inline size_t attention_work(const attn_dims *d) {
    return n_scores(d) * (size_t)(2 * (d->dk + d->dv) + EXP_WORK);
}

/* Per-thread scratch from the arena, one slot per possible thread (allocated
 * before the parallel region: the arena is not thread-safe). */
static inline void *thread_slots(qkv_tape *tape, size_t bytes_each, size_t *stride) {
    *stride = (bytes_each + 63) / 64 * 64;
    return qkv_tape_alloc(tape, *stride * (size_t)qkv_threads());
}

/* The slot of the calling thread: its team number on QKV_FOR's parallel branch,
 * else 0 (a worker of the parallel step runs the loop alone). */
static inline size_t thread_slot(int parallel) { return parallel ? (size_t)omp_get_thread_num() : 0; }

/* The saved forward state of one attention node. */
typedef struct attn_saved {
    attn_masks masks;     /* pointers to the caller's masks: copied into the arena */
    float *row_max, *row_inv_sum;
    float *kept;          /* P~ [B,H,Tq,Tk] for short keys (ops_attention.c's file comment), or NULL */
    float *kept_scores;   /* S [B,H,Tq,Tk] for longer keys, or NULL */
} attn_saved;

/* The node's backward (attention_backward.c), recorded by qkv_attention. */
void qkv_attention_backward(qkv_node *node);

#endif
