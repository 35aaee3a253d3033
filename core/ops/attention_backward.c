/* attention_backward.c — the fused attention op's backward (attention.h; the
 * forward and the blocks both read are ops_attention.c and attention_blocks.h).
 *
 * One task per (b, h): D_i = rowsum(dO_i * O_i); for each key block j, for each
 * query block i, recompute S_ij (bitwise as in the forward: same blocks, same
 * kernel), P_ij = exp(S_ij - m_i) / l_i, then
 *     dV_j += P^T dO_i;  dP = dO_i V_j^T;  dS = P * (dP - D_i)
 *     dQ_i += scale dS K_j;  dK_j += scale dS^T Q_i.
 * With short keys the forward kept P~ = exp(S - m), and P is P~ scaled by 1/l:
 * no scores or exponentials recomputed; with longer keys it may have kept S, and
 * P = exp(S - m) / l without the product. The same bits. dS over all rows is
 * materialized only when the bias needs a gradient (the bias is then
 * [.., Tq, Tk] itself). Each head runs on one thread in a fixed order, so the
 * gradients are bitwise independent of the thread count.
 */
#include "core/cancel.h"
#include "core/ops/attention_blocks.h"

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
    const float *kept_scores;      /* the forward's S, or NULL */
    float *dq, *dk, *dv, *dscores; /* dscores: all of dS [B,H,Tq,Tk], for the bias */
    float from_q, from_k, from_v;  /* 1: add to the sum so far; 0: not yet written */
} attn_grads;

/* Each block's products add (beta 1) into dQ, dK and dV; the first products into
 * a buffer no one has written yet assign instead (beta 0: the same bits as adding
 * to zeros). */
typedef struct block_betas {
    float q, k, v;
} block_betas;

typedef struct bwd_scratch {
    float p[BLOCK_AREA], ds[BLOCK_AREA]; /* blocks of block_shape bq x bk */
} bwd_scratch;

/* One query block against one key block (see the file comment). dsum: D_i. */
static void backward_block(const attn_ctx *c, const attn_block *blk, const attn_grads *g,
                           block_betas beta, const float *dsum, int ldp, bwd_scratch *w) {
    const attn_dims *d = &c->d;
    const int b = blk->b, h = blk->h;
    const size_t qrow = head_index(c, b, h) * d->Tq + blk->i0; /* statistics and dS */
    const size_t q_at = row_offset(d, b, h, d->Tq, blk->i0, d->dk), k_at = row_offset(d, b, h, d->Tk, blk->j0, d->dk);
    const size_t o_at = row_offset(d, b, h, d->Tq, blk->i0, d->dv), v_at = row_offset(d, b, h, d->Tk, blk->j0, d->dv);
    const int ldk = row_stride(d, d->dk), ldv = row_stride(d, d->dv);
    const float *dout = g->dout + o_at;
    if (g->kept) { /* P = P~ / l, P~ as the forward made it */
        for (int r = 0; r < blk->nq; r++) {
            float *row = w->p + (size_t)r * ldp;
            memcpy(row, g->kept + (qrow + r) * d->Tk + blk->j0, (size_t)blk->nk * sizeof(float));
            if (g->row_max[qrow + r] != -INFINITY) c->kern->row_scale(row, blk->nk, g->row_inv_sum[qrow + r]);
        }
    } else if (g->kept_scores) { /* P = exp(S - m) / l, S as the forward made it */
        for (int r = 0; r < blk->nq; r++)
            memcpy(w->p + (size_t)r * ldp, g->kept_scores + (qrow + r) * d->Tk + blk->j0,
                   (size_t)blk->nk * sizeof(float));
        probs_of_scores(c, blk, g->row_max + qrow, g->row_inv_sum + qrow, w->p, ldp);
    } else {
        block_probs(c, blk, g->row_max + qrow, g->row_inv_sum + qrow, w->p, ldp);
    }
    const int diag = block_diag(c, blk);
    if (g->dv) /* dV_j += P^T dO_i */
        qkv_block_product_band(block_band(c, QKV_BAND_K_FROM), diag, 1, 0, blk->nk, d->dv, blk->nq, 1.0f,
                               w->p, ldp, dout, ldv, beta.v, g->dv + v_at, ldv);
    if (!g->dq && !g->dk && !g->dscores) return;
    /* dP = dO_i V_j^T, then dS = P * (dP - D_i) in place. Past the causal band P is
     * 0 and dP is not computed: dS is +0 there, and the products below skip it
     * (all of dS is kept as P * (dP - D) when the bias needs it). */
    const int band = block_band(c, g->dscores ? QKV_BAND_NONE : QKV_BAND_COLS);
    qkv_block_product_band(band, diag, 0, 1, blk->nq, blk->nk, d->dv, 1.0f, dout, ldv, c->v + v_at, ldv,
                           0.0f, w->ds, ldp);
    /* Both products below take scale dS: scaled here once, rounded as the block
     * product rounds alpha A (block_product.h), so the same bits and no copy there. */
    const int scaled = (g->dq || g->dk) && c->scale != 1.0f;
    for (int r = 0; r < blk->nq; r++) {
        float *ds = w->ds + r * ldp;
        const float *p = w->p + r * ldp;
        int seen = band == QKV_BAND_NONE ? blk->nk : block_keys_seen(c, blk, r);
        for (int j = 0; j < seen; j++) ds[j] = p[j] * (ds[j] - dsum[r]);
        for (int j = seen; j < blk->nk; j++) ds[j] = 0.0f;
        if (g->dscores)
            memcpy(g->dscores + (qrow + r) * d->Tk + blk->j0, ds, (size_t)blk->nk * sizeof(float));
        if (scaled)
            for (int j = 0; j < blk->nk; j++) ds[j] = c->scale * ds[j];
    }
    if (g->dq) /* dQ_i += scale dS K_j */
        qkv_block_product_band(block_band(c, QKV_BAND_K_UPTO), diag, 0, 0, blk->nq, d->dk, blk->nk, 1.0f,
                               w->ds, ldp, c->k + k_at, ldk, beta.q, g->dq + q_at, ldk);
    if (g->dk) /* dK_j += scale dS^T Q_i */
        qkv_block_product_band(block_band(c, QKV_BAND_K_FROM), diag, 1, 0, blk->nk, d->dk, blk->nq, 1.0f,
                               w->ds, ldp, c->q + q_at, ldk, beta.k, g->dk + k_at, ldk);
}

/* Head (b,h)'s rows of each gradient buffer whose beta is 0 (not yet written) set to 0. */
static void zero_new_rows(const attn_ctx *c, int b, int h, const attn_grads *g, block_betas beta) {
    const attn_dims *d = &c->d;
    const int ldk = row_stride(d, d->dk), ldv = row_stride(d, d->dv);
    if (g->dq && beta.q == 0.0f) zero_rows(g->dq + row_offset(d, b, h, d->Tq, 0, d->dk), ldk, d->Tq, d->dk);
    if (g->dk && beta.k == 0.0f) zero_rows(g->dk + row_offset(d, b, h, d->Tk, 0, d->dk), ldk, d->Tk, d->dk);
    if (g->dv && beta.v == 0.0f) zero_rows(g->dv + row_offset(d, b, h, d->Tk, 0, d->dv), ldv, d->Tk, d->dv);
}

/* The betas of head (b,h)'s blocks. When one block covers the head and has a key
 * allowed, its products are the first and only writes to the head's rows and
 * assign where the buffer is new; otherwise the head's rows of a new buffer are
 * zeroed first (on the head's thread, just before its blocks add to them). */
static block_betas head_betas(const attn_ctx *c, int b, int h, const attn_grads *g, block_shape shape) {
    const attn_dims *d = &c->d;
    attn_block whole = {b, h, 0, d->Tq, 0, d->Tk};
    block_betas first = {g->from_q, g->from_k, g->from_v};
    if (d->Tq <= shape.bq && d->Tk <= shape.bk && !block_is_masked(c, &whole)) return first;
    zero_new_rows(c, b, h, g, first);
    return (block_betas){1.0f, 1.0f, 1.0f};
}

/* All of head (b,h): dsum gets D_i = rowsum(dO_i * O_i), then the key blocks in
 * order, each against the query blocks in order. */
static void backward_head(const attn_ctx *c, int b, int h, const attn_grads *g, float *dsum,
                          bwd_scratch *w) {
    const block_shape shape = block_shape_of(&c->d);
    const int bq = shape.bq, bk = shape.bk;
    const attn_dims *d = &c->d;
    const block_betas beta = head_betas(c, b, h, g, shape);
    /* Each D_i one sum in double over e in order, the rows side by side (kernels.h) */
    const size_t at = row_offset(d, b, h, d->Tq, 0, d->dv);
    c->kern->row_dots(g->out + at, g->dout + at, row_stride(d, d->dv), d->Tq, d->dv, dsum);
    int ran = 0;
    for (int j0 = 0; j0 < d->Tk && !qkv_cancel_point(); j0 += bk) /* core/cancel.h */
        for (int i0 = 0; i0 < d->Tq; i0 += bq) {
            attn_block blk = {b, h, i0, d->Tq - i0 < bq ? d->Tq - i0 : bq, j0, d->Tk - j0 < bk ? d->Tk - j0 : bk};
            if (!block_is_masked(c, &blk)) backward_block(c, &blk, g, beta, dsum + i0, bk, w);
            ran = 1;
        }
    if (!ran) zero_new_rows(c, b, h, g, beta); /* cancelled before its one block: still defined */
}

/* out = P V with P = softmax(scale Q K^T + bias)  =>
 *   dV += P^T dO;  dS = P * (dP - D) with dP = dO V^T, D = rowsum(dO * out);
 *   dQ += scale dS K;  dK += scale dS^T Q;  dbias += dS summed over broadcast dims. */
void qkv_attention_backward(qkv_node *node) {
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
                    saved->kept_scores, NULL, NULL, NULL, NULL, 1.0f, 1.0f, 1.0f};
    if (q->requires_grad) g.dq = qkv_tensor_grad_to_write(q, &g.from_q);
    if (k->requires_grad) g.dk = qkv_tensor_grad_to_write(k, &g.from_k);
    if (v->requires_grad) g.dv = qkv_tensor_grad_to_write(v, &g.from_v);
    if ((g.dq && (g.dq == g.dk || g.dq == g.dv)) || (g.dk && g.dk == g.dv)) {
        /* two inputs with one gradient buffer (q = k, or views of one tensor): the
         * first writes may not assign, the second adds to them */
        size_t sizes[3] = {q->size, k->size, v->size};
        float *bufs[3] = {g.dq, g.dk, g.dv}, *from[3] = {&g.from_q, &g.from_k, &g.from_v};
        for (int i = 0; i < 3; i++) {
            if (bufs[i] && *from[i] == 0.0f) memset(bufs[i], 0, sizes[i] * sizeof(float));
            *from[i] = 1.0f;
        }
    }
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
