/* ops_attention.c — fused scaled dot-product attention: the op and its forward, in
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
 * and finally O /= l. Only O and, per row, m and 1/l are kept (2 floats a row),
 * besides the scores kept for the backward when they are few (below).
 * Backward (attention_backward.c), one task per (b, h): recompute each block's P
 * from the saved m and 1/l. When the scores are few (at most KEEP_P_MAX) the
 * forward keeps what saves the backward most: with short keys (Tk <= BLOCK_K, one
 * key block) P~ = exp(S - m), which the backward scales by 1/l; with longer keys S
 * itself (P~ is relative to a running max there), so that the backward takes
 * exp(S - m) / l without computing S again. A key block the forward skips as
 * masked leaves its part of S unwritten: with more keys than one block the
 * backward's blocks are the forward's 64 x 64 grid, and it skips the same ones
 * (tests/test_attention.c: 130 x 100, causal). The same bits either way. Then dV,
 * dP, dS = P * (dP - D), dQ and dK block by block. dS over all rows is
 * materialized only when the bias needs a gradient; weights only when asked for.
 * What both halves share (block sizes, masks, one block of scores) is
 * attention_blocks.h.
 *
 * Block products go through qkv_block_product (block_product.h), a register-
 * tiled kernel that reads the blocks in place, and the row loops (max, exp, sum,
 * scale) through the kernel table (kernels.h). Each task runs on one thread in a
 * fixed order, and the kernels depend on the shapes only, so results are bitwise
 * independent of the thread count and the instruction set.
 */
#include "core/cancel.h"
#include "core/error.h"
#include "core/ops/attention_blocks.h"
#include "core/ops/attention_grads.h"

#define OP "attention"

int qkv__attention_square_blocks = 0; /* attention_blocks.h */

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

/* ---- forward ---------------------------------------------------------------------- */

/* Per-thread scratch of the forward: one score block and the rows' running sums. */
typedef struct fwd_scratch {
    float s[BLOCK_AREA];   /* nq rows of min(Tk, BLOCK_K) */
    double sum[BLOCK_MAX];
    int seen[BLOCK_MAX];   /* the keys of the block each row sees (block_keys_seen) */
} fwd_scratch;

/* out rows [i0, i0+nq) of head (b,h), and their m and 1/l (row_max, row_inv_sum:
 * the block's slice of the saved statistics). */
static void forward_query_block(const attn_ctx *c, int b, int h, int i0, int nq, float *out,
                                float *max_so_far, float *row_inv_sum, float *kept, float *kept_scores,
                                fwd_scratch *w) {
    const attn_dims *d = &c->d;
    const qkv_kernels *kern = c->kern;
    float *o = out + row_offset(d, b, h, d->Tq, i0, d->dv);
    const int ldo = row_stride(d, d->dv);
    for (int r = 0; r < nq; r++) {
        max_so_far[r] = -INFINITY;
        w->sum[r] = 0.0;
    }
    const int lds = min_int(d->Tk, BLOCK_K);
    /* P~ where backward reads it when it keeps it (kept: one key block, so lds is
     * Tk), else in the scratch; the scores in kept_scores when it keeps those, else
     * where P~ goes: no row is copied */
    float *p = kept ? kept : w->s;
    const int ld_s = kept_scores ? d->Tk : lds;
    int wrote = 0;
    for (int j0 = 0; j0 < d->Tk; j0 += BLOCK_K) {
        attn_block blk = {b, h, i0, nq, j0, d->Tk - j0 < BLOCK_K ? d->Tk - j0 : BLOCK_K};
        if (block_is_masked(c, &blk)) break; /* and so are all later key blocks */
        if (qkv_cancel_point()) break; /* core/cancel.h: the rows stay finite, the caller drops them */
        float *s = kept_scores ? kept_scores + j0 : p;
        block_scores(c, &blk, s, ld_s);
        /* past the causal diagonal S is -inf and P~ exactly 0: not computed, and the
         * sum of the keys a row sees is the whole row's (its partial sums add +0 there) */
        for (int r = 0; r < nq; r++) w->seen[r] = block_keys_seen(c, &blk, r);
        kern->softmax_block(s, ld_s, p, lds, nq, blk.nk, w->seen, max_so_far, w->sum, o, ldo, d->dv);
        /* the first block assigns O (beta 0: the same bits as adding to zeros) */
        qkv_block_product_band(block_band(c, QKV_BAND_K_UPTO), block_diag(c, &blk), 0, 0, nq, d->dv, blk.nk, 1.0f, p, lds,
                          c->v + row_offset(d, b, h, d->Tk, j0, d->dv), row_stride(d, d->dv),
                          wrote ? 1.0f : 0.0f, o, ldo);
        wrote = 1;
    }
    if (!wrote) /* no block ran: O = 0 */
        zero_rows(o, ldo, nq, d->dv);
    if (kept && (d->Tk == 0 || block_is_masked(c, &(attn_block){b, h, i0, nq, 0, d->Tk})))
        memset(kept, 0, (size_t)nq * d->Tk * sizeof(float)); /* no block ran: P~ = 0 */
    for (int r = 0; r < nq; r++) {
        float inv = w->sum[r] > 0.0 ? (float)(1.0 / w->sum[r]) : 0.0f;
        row_inv_sum[r] = inv;
        kern->row_scale(o + (size_t)r * ldo, d->dv, inv);
    }
}

static int n_query_blocks(const attn_dims *d, int rows) { return (d->Tq + rows - 1) / rows; }

static void attention_forward(qkv_tape *tape, const attn_ctx *c, float *out, float *row_max,
                              float *row_inv_sum, float *kept, float *kept_scores) {
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
                            kept_scores ? kept_scores + row * d->Tk : NULL,
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
    int keeps = records && !qkv__attention_square_blocks && n_scores(&d) <= KEEP_P_MAX;
    float *kept = keeps ? qkv_tape_alloc(tape, n_scores(&d) * sizeof(float)) : NULL;
    saved->kept = d.Tk <= BLOCK_K ? kept : NULL;
    saved->kept_scores = d.Tk <= BLOCK_K ? NULL : kept;
    attention_forward(tape, &c, out->data, saved->row_max, saved->row_inv_sum, saved->kept,
                      saved->kept_scores);
    if (opts->weights)
        *weights_out = attention_weights(tape, &c, saved->row_max, saved->row_inv_sum, opts->weights);

    /* The masks are inputs too (no gradient: the printed tape and graph show them);
     * backward reads its own copies of them from saved. */
    static const char *const input_names[6] = {"q", "k", "v", "bias", "key_padding", "keep"};
    qkv_tensor *inputs[6] = {q, k, v, opts->bias, NULL, NULL};
    qkv_node *node = qkv_tape_record(tape, OP, out, qkv_attention_backward, 6, inputs);
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
