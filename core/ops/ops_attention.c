/* ops_attention.c — fused scaled dot-product attention, forward and backward, in
 * memory linear in the sequence length (the FlashAttention algorithm).
 *
 * Contract: see attention.h. In short, per (b,h): S = scale Q K^T + bias,
 * P = softmax of S over each row's allowed keys (masked entries of P are 0, a row
 * with no allowed key is all 0), out = P V.
 *
 * Forward, one task per (b, h, block of BLOCK_Q queries), tasks in parallel: walk
 * the key blocks of BLOCK_K keys with an online softmax. For each block, with
 * S_blk the masked, biased, scaled scores:
 *     m' = max(m, rowmax S_blk);  a = exp(m - m');  P~ = exp(S_blk - m')
 *     l  = a l + rowsum P~;       O = a O + P~ V_blk;  m = m'
 * and finally O /= l. Only O and, per row, m and 1/l are kept (2 floats a row):
 * no [Tq,Tk] matrix lives on the tape.
 * Backward, one task per (b, h): D_i = rowsum(dO_i * O_i); for each key block j,
 * for each query block i, recompute S_ij (bitwise as in the forward: same blocks,
 * same kernel), P_ij = exp(S_ij - m_i) / l_i, then
 *     dV_j += P^T dO_i;  dP = dO_i V_j^T;  dS = P * (dP - D_i)
 *     dQ_i += scale dS K_j;  dK_j += scale dS^T Q_i.
 * dS over all rows is materialized only when the bias needs a gradient (the bias
 * is then [.., Tq, Tk] itself); weights are materialized only when asked for.
 * Short keys (Tk <= BLOCK_K, one key block, and at most KEEP_P_MAX scores): the
 * forward's P~ = exp(S - m) is final, and it is kept for backward, which then
 * scales it by 1/l instead of recomputing S and the exponentials: the same bits,
 * a block product and an exp pass less per head (the reversal and text steps).
 *
 * Block products go through qkv_block_product (block_product.h), a register-
 * tiled kernel that reads the blocks in place, and the row loops (max, exp, sum,
 * scale) through the kernel table (kernels.h). Each task runs on one thread in a
 * fixed order, and the kernels depend on the shapes only, so results are bitwise
 * independent of the thread count and the instruction set.
 */
#include <math.h>
#include "core/kernels/omp_shim.h"
#include <stdint.h>
#include <string.h>

#include "core/cancel.h"
#include "core/ops/attention.h"
#include "core/ops/attention_grads.h"
#include "core/error.h"
#include "core/kernels/fastmath.h"
#include "core/kernels/block_product.h"
#include "core/kernels/kernels.h"
#include "core/kernels/parallel.h"

#define OP "attention"
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

static int min_int(int a, int b) { return a < b ? a : b; }
static int max_int(int a, int b) { return a > b ? a : b; }

/* The block shapes of one attention (attn_dims below): the forward's query block
 * (its key block is BLOCK_K, or Tk when shorter) and the backward's. */
typedef struct block_shape { int fq, bq, bk; } block_shape;

/* Test hook (tests/test_attention.c): 1 forces 64 x 64 blocks everywhere, and
 * the backward's recomputation of P (no P~ kept). */
int qkv__attention_square_blocks = 0;

typedef struct attn_dims {
    int B, H, Tq, Tk, dk, dv;
    int heads_last; /* q, k, v, out (and their gradients) are [B,T,H,d], not [B,H,T,d] */
} attn_dims;

static size_t n_heads(const attn_dims *d) { return (size_t)d->B * d->H; }

static block_shape block_shape_of(const attn_dims *d) {
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
static size_t n_scores(const attn_dims *d) { return n_heads(d) * d->Tq * d->Tk; }

/* The useful products of forward and backward (the FLOP floor's count, tape.h):
 * per visible (query, key) pair, S = Q K^T and O = P V forward (2 dk + 2 dv), and
 * dP = dO V^T, dV = P^T dO, dQ = dS K, dK = dS^T Q backward (2 dv + 2 dv + 2 dk +
 * 2 dk): 6 (dk + dv) in all. The backward's recomputation of S is not counted, nor
 * are keys a padding mask hides. */
static double attention_flops(const attn_dims *d, int causal) {
    double pairs = (double)d->Tq * d->Tk;
    if (causal) { /* query i sees keys j <= i + (Tk - Tq) */
        pairs = 0;
        for (int i = 0; i < d->Tq; i++) {
            long seen = (long)i + (d->Tk - d->Tq) + 1;
            pairs += (double)(seen < 0 ? 0 : seen > d->Tk ? d->Tk : seen);
        }
    }
    return (double)n_heads(d) * pairs * 6.0 * (d->dk + d->dv);
}

/* The bias seen as [B,H,Tq,Tk]: its shape right-aligned to 4 dims (padded with 1)
 * and element strides that are 0 along its broadcast dims. */
typedef struct bias_view {
    const float *data; /* NULL: no bias */
    int shape[4];
    size_t stride[4];
} bias_view;

/* What decides whether query row (b,h,i) may attend to key j. */
typedef struct key_mask {
    int last_key;          /* causal: keys j > last_key are masked (Tk - 1 otherwise) */
    const float *padding;  /* key_padding[b, :], or NULL */
    const float *keep;     /* keep[i, :] or keep[b,h,i, :], or NULL */
} key_mask;

typedef struct attn_masks {
    int causal;
    const qkv_tensor *key_padding, *keep;
} attn_masks;

/* ---- validation --------------------------------------------------------------- */

static char *shape_of(const qkv_tensor *t, char *buf) { return qkv_shape_str(t, buf, QKV_SHAPE_STR_LEN); }

/* Dims of q, k, v as [B,H,T,d] whatever the layout: dim a of the [B,H,T,d] view. */
static int dim_of(const qkv_tensor *t, int heads_last, int a) {
    static const int from_bthd[4] = {0, 2, 1, 3};
    return t->shape[heads_last ? from_bthd[a] : a];
}

static attn_dims check_qkv(const qkv_tensor *q, const qkv_tensor *k, const qkv_tensor *v,
                           int heads_last) {
    char qs[QKV_SHAPE_STR_LEN], ks[QKV_SHAPE_STR_LEN], vs[QKV_SHAPE_STR_LEN];
    qkv_tensor_check_live(q, OP);
    qkv_tensor_check_live(k, OP);
    qkv_tensor_check_live(v, OP);
    shape_of(q, qs);
    shape_of(k, ks);
    shape_of(v, vs);
    const char *layout = heads_last ? " (heads_last: [B,T,H,d])" : "";
    QKV_CHECK(q->ndim == 4 && k->ndim == 4 && v->ndim == 4,
              OP ": q %s k %s v %s: q, k and v must be 4-D %s", qs, ks, vs,
              heads_last ? "[B,T,H,d] (heads_last)" : "[B,H,T,d]");
#define QDIM(t, a) dim_of(t, heads_last, a)
    QKV_CHECK(QDIM(q, 0) == QDIM(k, 0) && QDIM(q, 1) == QDIM(k, 1),
              OP ": q %s k %s%s: B,H %d,%d != %d,%d", qs, ks, layout, QDIM(q, 0), QDIM(q, 1),
              QDIM(k, 0), QDIM(k, 1));
    QKV_CHECK(QDIM(q, 3) == QDIM(k, 3), OP ": q %s k %s: dk %d != %d", qs, ks, QDIM(q, 3), QDIM(k, 3));
    QKV_CHECK(QDIM(k, 0) == QDIM(v, 0) && QDIM(k, 1) == QDIM(v, 1) && QDIM(k, 2) == QDIM(v, 2),
              OP ": k %s v %s%s: B,H,Tk %d,%d,%d != %d,%d,%d", ks, vs, layout, QDIM(k, 0),
              QDIM(k, 1), QDIM(k, 2), QDIM(v, 0), QDIM(v, 1), QDIM(v, 2));
    attn_dims d = {QDIM(q, 0), QDIM(q, 1), QDIM(q, 2), QDIM(k, 2), QDIM(q, 3), QDIM(v, 3), heads_last};
#undef QDIM
    return d;
}

/* Masks are data: live tensors of exactly the documented shapes. */
static void check_masks(const attn_masks *m, const attn_dims *d) {
    char ms[QKV_SHAPE_STR_LEN];
    if (m->key_padding) {
        const qkv_tensor *p = m->key_padding;
        qkv_tensor_check_live(p, OP);
        QKV_CHECK(p->ndim == 2 && p->shape[0] == d->B && p->shape[1] == d->Tk,
                  OP ": key_padding %s must be [B,Tk] = [%d,%d]", shape_of(p, ms), d->B, d->Tk);
    }
    if (m->keep) {
        const qkv_tensor *p = m->keep;
        qkv_tensor_check_live(p, OP);
        int is_2d = p->ndim == 2 && p->shape[0] == d->Tq && p->shape[1] == d->Tk;
        int is_4d = p->ndim == 4 && p->shape[0] == d->B && p->shape[1] == d->H &&
                    p->shape[2] == d->Tq && p->shape[3] == d->Tk;
        QKV_CHECK(is_2d || is_4d, OP ": keep %s must be [Tq,Tk] = [%d,%d] or [B,H,Tq,Tk] = [%d,%d,%d,%d]",
                  shape_of(p, ms), d->Tq, d->Tk, d->B, d->H, d->Tq, d->Tk);
    }
}

/* The view of a bias that was already validated (or NULL). */
static bias_view view_bias(const qkv_tensor *bias) {
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

static void check_bias(const qkv_tensor *bias, const attn_dims *d) {
    if (!bias) return;
    char bs[QKV_SHAPE_STR_LEN];
    qkv_tensor_check_live(bias, OP);
    const int full[4] = {d->B, d->H, d->Tq, d->Tk};
    int fits = bias->ndim <= 4;
    for (int a = 0; fits && a < bias->ndim; a++) {
        int dim = bias->shape[a], target = full[4 - bias->ndim + a];
        fits = dim == target || dim == 1;
    }
    QKV_CHECK(fits, OP ": bias %s does not broadcast to [B,H,Tq,Tk] = [%d,%d,%d,%d]",
              shape_of(bias, bs), d->B, d->H, d->Tq, d->Tk);
}

static void check_opts(const qkv_attention_opts *opts, qkv_tensor **weights_out) {
    QKV_CHECK(isfinite(opts->scale), OP ": scale %g is not finite", (double)opts->scale);
    QKV_CHECK(opts->weights >= 0 && opts->weights <= 2,
              OP ": opts->weights %d is not 0 (none), 1 (per head) or 2 (head mean)", opts->weights);
    QKV_CHECK(opts->weights == 0 || weights_out != NULL,
              OP ": opts->weights %d asks for weights but weights_out is NULL", opts->weights);
}

/* ---- masks and scores ------------------------------------------------------------ */

static key_mask mask_of_row(const attn_masks *m, const attn_dims *d, int b, int h, int i) {
    key_mask km = {m->causal ? i + (d->Tk - d->Tq) : d->Tk - 1, NULL, NULL};
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
static size_t head_index(const attn_ctx *c, int b, int h) { return (size_t)b * c->d.H + h; }

/* Where row t of head (b,h) starts in q, k, v, out or a gradient of one (T rows
 * of `width` floats per head), and the distance from one row to the next:
 * [B,H,T,d] keeps a head's rows together, [B,T,H,d] interleaves the heads. */
static size_t row_offset(const attn_dims *d, int b, int h, int T, int t, int width) {
    return d->heads_last ? (((size_t)b * T + t) * d->H + h) * width
                         : (((size_t)b * d->H + h) * T + t) * width;
}
static int row_stride(const attn_dims *d, int width) { return d->heads_last ? d->H * width : width; }

/* Causal: the block has no allowed key when its first key is past the last key of
 * its last query. */
static int block_is_masked(const attn_ctx *c, const attn_block *blk) {
    return c->masks.causal && blk->j0 > blk->i0 + blk->nq - 1 + (c->d.Tk - c->d.Tq);
}

/* s[r, j] = scale q_(i0+r) . k_(j0+j) + bias, or -inf where the key is masked.
 * One vectorizable pass per kind of mask (the bias is added everywhere first;
 * masked entries are then overwritten). */
static void block_scores(const attn_ctx *c, const attn_block *blk, float *s, int lds) {
    const attn_dims *d = &c->d;
    qkv_block_product(0, 1, blk->nq, blk->nk, d->dk, c->scale,
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
        for (int j = km.last_key + 1 - blk->j0 < 0 ? 0 : km.last_key + 1 - blk->j0; j < nk; j++)
            row[j] = -INFINITY;
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

/* The block's probabilities from the saved row statistics: P = exp(S - m) / l,
 * 0 where masked and on rows with no allowed key (m = -inf). */
static void block_probs(const attn_ctx *c, const attn_block *blk, const float *row_max,
                        const float *row_inv_sum, float *p, int ldp) {
    block_scores(c, blk, p, ldp);
    for (int r = 0; r < blk->nq; r++) {
        float *row = p + (size_t)r * ldp;
        float m = row_max[r], inv = row_inv_sum[r];
        if (m == -INFINITY) {
            memset(row, 0, (size_t)blk->nk * sizeof(float));
            continue;
        }
        c->kern->row_exp_shifted(row, blk->nk, m);
        c->kern->row_scale(row, blk->nk, inv);
    }
}

/* ---- forward ---------------------------------------------------------------------- */

/* Per-thread scratch of the forward: one score block and the rows' running sums. */
typedef struct fwd_scratch {
    float s[BLOCK_AREA];   /* nq rows of min(Tk, BLOCK_K) */
    double sum[BLOCK_MAX];
} fwd_scratch;

/* out rows [i0, i0+nq) of head (b,h), and their m and 1/l (row_max, row_inv_sum:
 * the block's slice of the saved statistics). */
static void forward_query_block(const attn_ctx *c, int b, int h, int i0, int nq, float *out,
                                float *max_so_far, float *row_inv_sum, float *kept, fwd_scratch *w) {
    const attn_dims *d = &c->d;
    const qkv_kernels *kern = c->kern;
    float *o = out + row_offset(d, b, h, d->Tq, i0, d->dv);
    const int ldo = row_stride(d, d->dv);
    for (int r = 0; r < nq; r++) memset(o + (size_t)r * ldo, 0, (size_t)d->dv * sizeof(float));
    for (int r = 0; r < nq; r++) {
        max_so_far[r] = -INFINITY;
        w->sum[r] = 0.0;
    }
    const int lds = min_int(d->Tk, BLOCK_K);
    for (int j0 = 0; j0 < d->Tk; j0 += BLOCK_K) {
        attn_block blk = {b, h, i0, nq, j0, d->Tk - j0 < BLOCK_K ? d->Tk - j0 : BLOCK_K};
        if (block_is_masked(c, &blk)) break; /* and so are all later key blocks */
        if (qkv_cancel_point()) break; /* core/cancel.h: the rows stay finite, the caller drops them */
        block_scores(c, &blk, w->s, lds);
        for (int r = 0; r < nq; r++) {
            float *row = w->s + r * lds, m = kern->row_max(row, blk.nk);
            m = m > max_so_far[r] ? m : max_so_far[r];
            if (m == -INFINITY) { /* nothing allowed yet: P~ = 0, O and l stay 0 */
                memset(row, 0, (size_t)blk.nk * sizeof(float));
                continue;
            }
            float rescale = qkv_fast_exp_nonpositive(max_so_far[r] - m); /* 0 when m was -inf */
            kern->row_exp_shifted(row, blk.nk, m);
            w->sum[r] = w->sum[r] * rescale + kern->row_sum(row, blk.nk);
            if (rescale != 1.0f) kern->row_scale(o + (size_t)r * ldo, d->dv, rescale);
            max_so_far[r] = m;
        }
        if (kept) /* one key block (Tk <= BLOCK_K): these rows of P~ are final */
            for (int r = 0; r < nq; r++) memcpy(kept + (size_t)r * d->Tk, w->s + r * lds, (size_t)blk.nk * sizeof(float));
        qkv_block_product(0, 0, nq, d->dv, blk.nk, 1.0f, w->s, lds,
                          c->v + row_offset(d, b, h, d->Tk, j0, d->dv), row_stride(d, d->dv), 1.0f, o,
                          ldo);
    }
    if (kept && (d->Tk == 0 || block_is_masked(c, &(attn_block){b, h, i0, nq, 0, d->Tk})))
        memset(kept, 0, (size_t)nq * d->Tk * sizeof(float)); /* no block ran: P~ = 0 */
    for (int r = 0; r < nq; r++) {
        float inv = w->sum[r] > 0.0 ? (float)(1.0 / w->sum[r]) : 0.0f;
        row_inv_sum[r] = inv;
        kern->row_scale(o + (size_t)r * ldo, d->dv, inv);
    }
}

static int n_query_blocks(const attn_dims *d, int rows) { return (d->Tq + rows - 1) / rows; }

/* Flops of one pass over all score blocks, for the parallel threshold. */
static size_t attention_work(const attn_dims *d) {
    return n_scores(d) * (size_t)(2 * (d->dk + d->dv) + EXP_WORK);
}

/* Per-thread scratch from the arena, one slot per possible thread (allocated
 * before the parallel region: the arena is not thread-safe). */
static void *thread_slots(qkv_tape *tape, size_t bytes_each, size_t *stride) {
    *stride = (bytes_each + 63) / 64 * 64;
    return qkv_tape_alloc(tape, *stride * (size_t)qkv_threads());
}

/* The slot of the calling thread: its team number on QKV_FOR's parallel branch,
 * else 0 (a worker of the parallel step runs the loop alone). */
static size_t thread_slot(int parallel) { return parallel ? (size_t)omp_get_thread_num() : 0; }

static void attention_forward(qkv_tape *tape, const attn_ctx *c, float *out, float *row_max,
                              float *row_inv_sum, float *kept) {
    const attn_dims *d = &c->d;
    const int fq = block_shape_of(d).fq, n_qb = n_query_blocks(d, fq);
    size_t n_tasks = n_heads(d) * (size_t)n_qb, slot;
    char *scratch = thread_slots(tape, sizeof(fwd_scratch), &slot);
    const int parallel = QKV_PARALLEL(attention_work(d));
    QKV_FOR(parallel, schedule(static, 1), (size_t t = 0; t < n_tasks; t++), {
        size_t head = t / n_qb;
        int i0 = (int)(t % n_qb) * fq, nq = d->Tq - i0 < fq ? d->Tq - i0 : fq;
        size_t row = head * d->Tq + i0;
        forward_query_block(c, (int)(head / d->H), (int)(head % d->H), i0, nq, out, row_max + row,
                            row_inv_sum + row, kept ? kept + row * d->Tk : NULL,
                            (fwd_scratch *)(scratch + slot * thread_slot(parallel)));
    });
}

/* The attention weights [B,H,Tq,Tk] into probs, from the saved row statistics. */
static void attention_probs(const attn_ctx *c, const float *row_max, const float *row_inv_sum,
                            float *probs) {
    const attn_dims *d = &c->d;
    int n_qb = n_query_blocks(d, BLOCK_Q);
    size_t n_tasks = n_heads(d) * (size_t)n_qb;
    QKV_FOR(QKV_PARALLEL(attention_work(d)), schedule(static), (size_t t = 0; t < n_tasks; t++), {
        size_t head = t / n_qb;
        int i0 = (int)(t % n_qb) * BLOCK_Q, nq = d->Tq - i0 < BLOCK_Q ? d->Tq - i0 : BLOCK_Q;
        size_t row = head * d->Tq + i0;
        attn_block blk = {(int)(head / d->H), (int)(head % d->H), i0, nq, 0, d->Tk};
        block_probs(c, &blk, row_max + row, row_inv_sum + row, probs + row * d->Tk, d->Tk);
    });
}

/* A copy of P for the caller: per head [B,H,Tq,Tk] (mode 1) or the mean over heads
 * [B,Tq,Tk] (mode 2, heads summed in order). */
static qkv_tensor *attention_weights(qkv_tape *tape, const attn_ctx *c, const float *row_max,
                                     const float *row_inv_sum, int mode) {
    const attn_dims *d = &c->d;
    if (mode == 1) {
        qkv_tensor *w = qkv_tape_tensor(tape, 4, (const int[]){d->B, d->H, d->Tq, d->Tk});
        attention_probs(c, row_max, row_inv_sum, w->data);
        return w;
    }
    float *probs = qkv_tape_alloc(tape, n_scores(d) * sizeof(float));
    attention_probs(c, row_max, row_inv_sum, probs);
    qkv_tensor *w = qkv_tape_tensor(tape, 3, (const int[]){d->B, d->Tq, d->Tk});
    size_t rows = (size_t)d->B * d->Tq, head_stride = (size_t)d->Tq * d->Tk;
    QKV_FOR(QKV_PARALLEL(n_scores(d)), schedule(static), (size_t r = 0; r < rows; r++), {
        size_t b = r / d->Tq, i = r % d->Tq;
        const float *first = probs + b * d->H * head_stride + i * d->Tk;
        for (int j = 0; j < d->Tk; j++) {
            double sum = 0.0;
            for (int h = 0; h < d->H; h++) sum += first[h * head_stride + j];
            w->data[r * d->Tk + j] = (float)(sum / d->H);
        }
    });
    return w;
}

/* ---- backward ------------------------------------------------------------------ */

/* Indices of the full dim that map to index `at` of a bias dim of size `dim`. */
static void broadcast_range(int dim, int full, int at, int *lo, int *hi) {
    *lo = dim == 1 ? 0 : at;
    *hi = dim == 1 ? full : at + 1;
}

/* bias broadcast to [B,H,Tq,Tk]  =>  dbias += dS summed over the broadcast dims.
 * Partitioned by destination row of the bias; each row sums its sources in order. */
static void bias_grad(const bias_view *bv, const float *dscores, const attn_dims *d, float *dbias) {
    const int *bs = bv->shape;
    size_t dest_rows = (size_t)bs[0] * bs[1] * bs[2];
    QKV_FOR(QKV_PARALLEL(n_scores(d)), schedule(static), (size_t r = 0; r < dest_rows; r++), {
        int b0, b1, h0, h1, i0, i1;
        broadcast_range(bs[0], d->B, (int)(r / ((size_t)bs[1] * bs[2])), &b0, &b1);
        broadcast_range(bs[1], d->H, (int)(r / bs[2] % bs[1]), &h0, &h1);
        broadcast_range(bs[2], d->Tq, (int)(r % bs[2]), &i0, &i1);
        float *g = dbias + r * bs[3];
        for (int b = b0; b < b1; b++)
            for (int h = h0; h < h1; h++)
                for (int i = i0; i < i1; i++) {
                    const float *ds = dscores + (((size_t)b * d->H + h) * d->Tq + i) * d->Tk;
                    if (bs[3] == 1) {
                        double sum = 0.0;
                        for (int j = 0; j < d->Tk; j++) sum += ds[j];
                        g[0] += (float)sum;
                    } else {
                        for (int j = 0; j < d->Tk; j++) g[j] += ds[j];
                    }
                }
    });
}

/* Where the backward writes (NULL: that input needs no gradient). */
typedef struct attn_grads {
    const float *out, *dout, *row_max, *row_inv_sum;
    const float *kept;             /* the forward's P~, or NULL: recompute it */
    float *dq, *dk, *dv, *dscores; /* dscores: all of dS [B,H,Tq,Tk], for the bias */
} attn_grads;

typedef struct bwd_scratch {
    float p[BLOCK_AREA], ds[BLOCK_AREA]; /* blocks of block_shape bq x bk */
} bwd_scratch;

/* One query block against one key block (see the file comment). dsum: D_i. */
static void backward_block(const attn_ctx *c, const attn_block *blk, const attn_grads *g,
                           const float *dsum, int ldp, bwd_scratch *w) {
    const attn_dims *d = &c->d;
    const int b = blk->b, h = blk->h;
    const size_t qrow = head_index(c, b, h) * d->Tq + blk->i0; /* statistics and dS */
    const size_t q_at = row_offset(d, b, h, d->Tq, blk->i0, d->dk), k_at = row_offset(d, b, h, d->Tk, blk->j0, d->dk);
    const size_t o_at = row_offset(d, b, h, d->Tq, blk->i0, d->dv), v_at = row_offset(d, b, h, d->Tk, blk->j0, d->dv);
    const int ldk = row_stride(d, d->dk), ldv = row_stride(d, d->dv);
    const float *dout = g->dout + o_at;
    if (g->kept) /* P = P~ / l, P~ as the forward made it */
        for (int r = 0; r < blk->nq; r++) {
            float *row = w->p + (size_t)r * ldp;
            memcpy(row, g->kept + (qrow + r) * d->Tk + blk->j0, (size_t)blk->nk * sizeof(float));
            if (g->row_max[qrow + r] != -INFINITY) c->kern->row_scale(row, blk->nk, g->row_inv_sum[qrow + r]);
        }
    else
        block_probs(c, blk, g->row_max + qrow, g->row_inv_sum + qrow, w->p, ldp);
    if (g->dv) /* dV_j += P^T dO_i */
        qkv_block_product(1, 0, blk->nk, d->dv, blk->nq, 1.0f, w->p, ldp, dout, ldv, 1.0f,
                          g->dv + v_at, ldv);
    if (!g->dq && !g->dk && !g->dscores) return;
    /* dP = dO_i V_j^T, then dS = P * (dP - D_i) in place. */
    qkv_block_product(0, 1, blk->nq, blk->nk, d->dv, 1.0f, dout, ldv, c->v + v_at, ldv, 0.0f, w->ds,
                      ldp);
    for (int r = 0; r < blk->nq; r++) {
        float *ds = w->ds + r * ldp;
        const float *p = w->p + r * ldp;
        for (int j = 0; j < blk->nk; j++) ds[j] = p[j] * (ds[j] - dsum[r]);
        if (g->dscores)
            memcpy(g->dscores + (qrow + r) * d->Tk + blk->j0, ds, (size_t)blk->nk * sizeof(float));
    }
    if (g->dq) /* dQ_i += scale dS K_j */
        qkv_block_product(0, 0, blk->nq, d->dk, blk->nk, c->scale, w->ds, ldp, c->k + k_at, ldk,
                          1.0f, g->dq + q_at, ldk);
    if (g->dk) /* dK_j += scale dS^T Q_i */
        qkv_block_product(1, 0, blk->nk, d->dk, blk->nq, c->scale, w->ds, ldp, c->q + q_at, ldk,
                          1.0f, g->dk + k_at, ldk);
}

/* All of head (b,h): dsum gets D_i = rowsum(dO_i * O_i), then the key blocks in
 * order, each against the query blocks in order. */
static void backward_head(const attn_ctx *c, int b, int h, const attn_grads *g, float *dsum,
                          bwd_scratch *w) {
    const block_shape shape = block_shape_of(&c->d);
    const int bq = shape.bq, bk = shape.bk;
    const attn_dims *d = &c->d;
    /* Each D_i one sum in double over e in order; DSUM_ROWS rows at a time so that
     * their chains of dependent additions overlap (one chain at a time waited on
     * each addition's latency: 3.6% of the Set Transformer's step). */
    enum { DSUM_ROWS = 8 };
    const int ldo = row_stride(d, d->dv);
    for (int i0 = 0; i0 < d->Tq; i0 += DSUM_ROWS) {
        int rows = d->Tq - i0 < DSUM_ROWS ? d->Tq - i0 : DSUM_ROWS;
        size_t at = row_offset(d, b, h, d->Tq, i0, d->dv);
        const float *o = g->out + at, *dout = g->dout + at;
        double dot[DSUM_ROWS] = {0.0};
        if (rows == DSUM_ROWS)
            for (int e = 0; e < d->dv; e++)
                for (int r = 0; r < DSUM_ROWS; r++) dot[r] += (double)o[(size_t)r * ldo + e] * dout[(size_t)r * ldo + e];
        else
            for (int e = 0; e < d->dv; e++)
                for (int r = 0; r < rows; r++) dot[r] += (double)o[(size_t)r * ldo + e] * dout[(size_t)r * ldo + e];
        for (int r = 0; r < rows; r++) dsum[i0 + r] = (float)dot[r];
    }
    for (int j0 = 0; j0 < d->Tk && !qkv_cancel_point(); j0 += bk) /* core/cancel.h */
        for (int i0 = 0; i0 < d->Tq; i0 += bq) {
            attn_block blk = {b, h, i0, d->Tq - i0 < bq ? d->Tq - i0 : bq, j0, d->Tk - j0 < bk ? d->Tk - j0 : bk};
            if (!block_is_masked(c, &blk)) backward_block(c, &blk, g, dsum + i0, bk, w);
        }
}

/* The saved forward state of one attention node. */
typedef struct attn_saved {
    attn_masks masks;     /* pointers to the caller's masks: copied into the arena */
    float *row_max, *row_inv_sum;
    float *kept;          /* P~ [B,H,Tq,Tk] for short keys (see the file comment), or NULL */
} attn_saved;

/* out = P V with P = softmax(scale Q K^T + bias)  =>
 *   dV += P^T dO;  dS = P * (dP - D) with dP = dO V^T, D = rowsum(dO * out);
 *   dQ += scale dS K;  dK += scale dS^T Q;  dbias += dS summed over broadcast dims. */
static void attention_backward(qkv_node *node) {
    qkv_tensor *q = node->inputs[0], *k = node->inputs[1], *v = node->inputs[2];
    qkv_tensor *bias = node->inputs[3];
    qkv_tape *tape = node->out->tape;
    const attn_saved *saved = node->saved;
    const attn_ctx c = {{node->iarg[0], node->iarg[1], node->iarg[2], node->iarg[3], node->iarg[4],
                         node->iarg[5], node->iarg[6]},
                        node->farg[0], saved->masks, view_bias(bias), q->data, k->data, v->data,
                        qkv_kernels_active()};
    const attn_dims *d = &c.d;
    /* Gradient buffers are allocated from the arena here, before the threads. */
    attn_grads g = {node->out->data, node->out->grad, saved->row_max, saved->row_inv_sum, saved->kept,
                    q->requires_grad ? qkv_tensor_grad(q) : NULL,
                    k->requires_grad ? qkv_tensor_grad(k) : NULL,
                    v->requires_grad ? qkv_tensor_grad(v) : NULL, NULL};
    int bias_needs_grad = bias && bias->requires_grad;
    if (bias_needs_grad) /* zeroed: blocks skipped as causally masked have dS = 0 */
        g.dscores = qkv_tape_calloc(tape, n_scores(d) * sizeof(float));

    size_t slot;
    char *scratch = thread_slots(tape, sizeof(bwd_scratch) + (size_t)d->Tq * sizeof(float), &slot);
    int heads = (int)n_heads(d);
    const int parallel = QKV_PARALLEL(attention_work(d) * 2);
    QKV_FOR(parallel, schedule(static, 1), (int head = 0; head < heads; head++), {
        char *mine = scratch + slot * thread_slot(parallel);
        backward_head(&c, head / d->H, head % d->H, &g, (float *)(mine + sizeof(bwd_scratch)),
                      (bwd_scratch *)mine);
    });
    if (bias_needs_grad) bias_grad(&c.bias, g.dscores, d, qkv_tensor_grad(bias));
}

/* The mask as backward will read it: the caller's mask need not outlive the call,
 * so one that is not an activation of this tape is copied into the arena. */
static const qkv_tensor *keep_mask(qkv_tape *tape, const qkv_tensor *mask) {
    if (!mask || (!mask->owned && mask->tape == tape)) return mask;
    qkv_tensor *copy = qkv_tape_tensor(tape, mask->ndim, mask->shape);
    qkv_tensor_copy_from(copy, mask->data);
    return copy;
}

/* ---- the op ---------------------------------------------------------------------- */

qkv_tensor *qkv_attention(qkv_tape *tape, qkv_tensor *q, qkv_tensor *k, qkv_tensor *v,
                          const qkv_attention_opts *opts, qkv_tensor **weights_out) {
    static const qkv_attention_opts defaults = {0};
    if (!opts) opts = &defaults;
    const attn_dims d = check_qkv(q, k, v, opts->heads_last != 0);
    const attn_masks masks = {opts->causal, opts->key_padding, opts->keep};
    check_masks(&masks, &d);
    check_bias(opts->bias, &d);
    check_opts(opts, weights_out);
    if (weights_out) *weights_out = NULL;

    const float scale = opts->scale != 0.0f ? opts->scale : 1.0f / sqrtf((float)d.dk);
    const attn_ctx c = {d, scale, masks, view_bias(opts->bias), q->data, k->data, v->data,
                        qkv_kernels_active()};
    size_t rows = n_heads(&d) * d.Tq;
    attn_saved *saved = qkv_tape_alloc(tape, sizeof *saved);
    saved->row_max = qkv_tape_alloc(tape, 2 * rows * sizeof(float));
    saved->row_inv_sum = saved->row_max + rows;
    qkv_tensor *out = d.heads_last ? qkv_tape_tensor(tape, 4, (const int[]){d.B, d.Tq, d.H, d.dv})
                                   : qkv_tape_tensor(tape, 4, (const int[]){d.B, d.H, d.Tq, d.dv});
    int records = tape->grad_enabled && (q->requires_grad || k->requires_grad || v->requires_grad ||
                                         (opts->bias && opts->bias->requires_grad));
    saved->kept = records && !qkv__attention_square_blocks && d.Tk <= BLOCK_K && n_scores(&d) <= KEEP_P_MAX
                      ? qkv_tape_alloc(tape, n_scores(&d) * sizeof(float)) : NULL;
    attention_forward(tape, &c, out->data, saved->row_max, saved->row_inv_sum, saved->kept);
    if (opts->weights)
        *weights_out = attention_weights(tape, &c, saved->row_max, saved->row_inv_sum, opts->weights);

    /* The masks are inputs too (no gradient: the printed tape and graph show them);
     * backward reads its own copies of them from saved. */
    static const char *const input_names[6] = {"q", "k", "v", "bias", "key_padding", "keep"};
    qkv_tensor *inputs[6] = {q, k, v, opts->bias, NULL, NULL};
    qkv_node *node = qkv_tape_record(tape, OP, out, attention_backward, 6, inputs);
    if (node) {
        saved->masks = (attn_masks){masks.causal, keep_mask(tape, masks.key_padding),
                                    keep_mask(tape, masks.keep)};
        node->inputs[4] = (qkv_tensor *)saved->masks.key_padding;
        node->inputs[5] = (qkv_tensor *)saved->masks.keep;
        node->input_names = input_names;
        node->note = masks.causal ? "causal" : NULL;
        node->saved = saved;
        const int dims[7] = {d.B, d.H, d.Tq, d.Tk, d.dk, d.dv, d.heads_last};
        memcpy(node->iarg, dims, sizeof dims);
        node->farg[0] = scale;
        node->flops = attention_flops(&d, masks.causal);
    }
    return out;
}

/* The options the node was recorded with (core/ops/attention_grads.h). */
void qkv_attention_node_opts(const qkv_node *node, qkv_attention_opts *opts) {
    QKV_CHECK(strcmp(node->op, OP) == 0 && node->saved, "attention_node_opts: node %s is not an " OP " node", node->op);
    const attn_saved *saved = node->saved;
    memset(opts, 0, sizeof *opts);
    opts->scale = node->farg[0];
    opts->causal = saved->masks.causal;
    opts->key_padding = saved->masks.key_padding;
    opts->keep = saved->masks.keep;
    opts->bias = node->inputs[3];
    opts->heads_last = node->iarg[6];
}
