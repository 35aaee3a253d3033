/* ops_attention.c — fused scaled dot-product attention, forward and backward.
 *
 * Contract: see attention.h. In short, per (b,h): S = scale Q K^T + bias,
 * P = softmax of S over each row's allowed keys (masked entries of P are 0, a row
 * with no allowed key is all 0), out = P V. P is kept in the arena for backward.
 *
 * Layout of the work:
 *   1. one batched gemm over the B*H heads writes scale * Q K^T into the P buffer;
 *   2. one parallel loop over the B*H*Tq rows adds the bias, masks, and turns each
 *      row into probabilities in place (max over allowed keys subtracted first);
 *   3. one batched gemm computes out = P V.
 * Backward mirrors it: gemms for dV and dP, a parallel row loop for dS, gemms for
 * dQ and dK, and a bias-gradient loop partitioned by destination element. Each
 * output element is computed by one thread in a fixed order, and the gemm kernel
 * sums in a fixed order, so results are bitwise independent of the thread count.
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "attention.h"
#include "error.h"
#include "fastmath.h"
#include "gemm.h"
#include "parallel.h"

#define OP "attention"
/* Rough cost of one score in a row loop, in flops (one exp dominates). */
#define EXP_WORK 16

typedef struct attn_dims {
    int B, H, Tq, Tk, dk, dv;
} attn_dims;

static size_t n_heads(const attn_dims *d) { return (size_t)d->B * d->H; }
static size_t n_scores(const attn_dims *d) { return n_heads(d) * d->Tq * d->Tk; }

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

static attn_dims check_qkv(const qkv_tensor *q, const qkv_tensor *k, const qkv_tensor *v) {
    char qs[QKV_SHAPE_STR_LEN], ks[QKV_SHAPE_STR_LEN], vs[QKV_SHAPE_STR_LEN];
    qkv_tensor_check_live(q, OP);
    qkv_tensor_check_live(k, OP);
    qkv_tensor_check_live(v, OP);
    shape_of(q, qs);
    shape_of(k, ks);
    shape_of(v, vs);
    QKV_CHECK(q->ndim == 4 && k->ndim == 4 && v->ndim == 4,
              OP ": q %s k %s v %s: q, k and v must be 4-D [B,H,T,d]", qs, ks, vs);
    QKV_CHECK(q->shape[0] == k->shape[0] && q->shape[1] == k->shape[1],
              OP ": q %s k %s: B,H %d,%d != %d,%d", qs, ks, q->shape[0], q->shape[1], k->shape[0],
              k->shape[1]);
    QKV_CHECK(q->shape[3] == k->shape[3], OP ": q %s k %s: dk %d != %d", qs, ks, q->shape[3],
              k->shape[3]);
    QKV_CHECK(k->shape[0] == v->shape[0] && k->shape[1] == v->shape[1] && k->shape[2] == v->shape[2],
              OP ": k %s v %s: B,H,Tk %d,%d,%d != %d,%d,%d", ks, vs, k->shape[0], k->shape[1],
              k->shape[2], v->shape[0], v->shape[1], v->shape[2]);
    return (attn_dims){q->shape[0], q->shape[1], q->shape[2], k->shape[2], q->shape[3], v->shape[3]};
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

/* ---- the masked softmax rows --------------------------------------------------- */

static key_mask mask_of_row(const attn_masks *m, const attn_dims *d, int b, int h, int i) {
    key_mask km = {m->causal ? i + (d->Tk - d->Tq) : d->Tk - 1, NULL, NULL};
    if (m->key_padding) km.padding = m->key_padding->data + (size_t)b * d->Tk;
    if (m->keep) {
        size_t row = m->keep->ndim == 2 ? (size_t)i : ((size_t)b * d->H + h) * d->Tq + i;
        km.keep = m->keep->data + row * d->Tk;
    }
    return km;
}

static int key_allowed(const key_mask *km, int j) {
    return j <= km->last_key && (!km->padding || km->padding[j] != 0.0f) &&
           (!km->keep || km->keep[j] != 0.0f);
}

/* s holds scale * q_i . k_j; on return the row's probabilities: bias added, the max
 * over allowed keys subtracted, masked keys 0, and all 0 when no key is allowed
 * (or every allowed logit is -inf). */
static void masked_softmax_row(float *s, int Tk, const key_mask *km, const float *bias,
                               size_t bias_step) {
    float max = -INFINITY;
    for (int j = 0; j < Tk; j++) {
        if (!key_allowed(km, j)) {
            s[j] = -INFINITY; /* exp(-inf - max) = 0 below */
            continue;
        }
        float x = bias ? s[j] + bias[j * bias_step] : s[j];
        s[j] = x;
        if (x > max) max = x;
    }
    if (max == -INFINITY) {
        memset(s, 0, (size_t)Tk * sizeof(float));
        return;
    }
    for (int j = 0; j < Tk; j++) s[j] = qkv_fast_exp_nonpositive(s[j] - max);
    double sum = 0.0;
    for (int j = 0; j < Tk; j++) sum += s[j];
    float inv = (float)(1.0 / sum);
    for (int j = 0; j < Tk; j++) s[j] *= inv;
}

/* Every row (b,h,i) of the [B*H*Tq, Tk] scores, in place. */
static void masked_softmax(float *scores, const attn_dims *d, const attn_masks *m,
                           const bias_view *bv) {
    size_t rows = n_heads(d) * d->Tq;
    #pragma omp parallel for if (QKV_PARALLEL(n_scores(d) * EXP_WORK)) schedule(static)
    for (size_t r = 0; r < rows; r++) {
        int i = (int)(r % d->Tq), h = (int)(r / d->Tq % d->H), b = (int)(r / d->Tq / d->H);
        key_mask km = mask_of_row(m, d, b, h, i);
        const float *bias_row = bv->data ? bv->data + b * bv->stride[0] + h * bv->stride[1] +
                                               i * bv->stride[2]
                                         : NULL;
        masked_softmax_row(scores + r * d->Tk, d->Tk, &km, bias_row, bv->stride[3]);
    }
}

/* A copy of P for the caller: per head [B,H,Tq,Tk] (mode 1) or the mean over heads
 * [B,Tq,Tk] (mode 2, heads summed in order). */
static qkv_tensor *attention_weights(qkv_tape *tape, const float *probs, const attn_dims *d,
                                     int mode) {
    if (mode == 1) {
        qkv_tensor *w = qkv_tape_tensor(tape, 4, (const int[]){d->B, d->H, d->Tq, d->Tk});
        memcpy(w->data, probs, w->size * sizeof(float));
        return w;
    }
    qkv_tensor *w = qkv_tape_tensor(tape, 3, (const int[]){d->B, d->Tq, d->Tk});
    size_t rows = (size_t)d->B * d->Tq, head_stride = (size_t)d->Tq * d->Tk;
    #pragma omp parallel for if (QKV_PARALLEL(n_scores(d))) schedule(static)
    for (size_t r = 0; r < rows; r++) {
        size_t b = r / d->Tq, i = r % d->Tq;
        const float *first = probs + b * d->H * head_stride + i * d->Tk;
        for (int j = 0; j < d->Tk; j++) {
            double sum = 0.0;
            for (int h = 0; h < d->H; h++) sum += first[h * head_stride + j];
            w->data[r * d->Tk + j] = (float)(sum / d->H);
        }
    }
    return w;
}

/* ---- backward ------------------------------------------------------------------ */

/* P = softmax(S) per row  =>  dS = P * (dP - sum_j dP_j P_j), in place over dP.
 * Masked entries have P = 0, so they (and fully masked rows) get dS = 0. */
static void softmax_grad_rows(float *dprobs, const float *probs, size_t rows, int Tk) {
    #pragma omp parallel for if (QKV_PARALLEL(rows * Tk * 4)) schedule(static)
    for (size_t r = 0; r < rows; r++) {
        float *g = dprobs + r * Tk;
        const float *p = probs + r * Tk;
        double dot = 0.0;
        for (int j = 0; j < Tk; j++) dot += (double)g[j] * p[j];
        for (int j = 0; j < Tk; j++) g[j] = p[j] * (g[j] - (float)dot);
    }
}

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
    #pragma omp parallel for if (QKV_PARALLEL(n_scores(d))) schedule(static)
    for (size_t r = 0; r < dest_rows; r++) {
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
    }
}

/* out = P V with P = softmax(scale Q K^T + bias)  =>
 *   dV += P^T dO;  dS = P * (dP - rowsum(dP * P)) with dP = dO V^T;
 *   dQ += scale dS K;  dK += scale dS^T Q;  dbias += dS summed over broadcast dims. */
static void attention_backward(qkv_node *node) {
    qkv_tensor *q = node->inputs[0], *k = node->inputs[1], *v = node->inputs[2];
    qkv_tensor *bias = node->inputs[3];
    const attn_dims d = {node->iarg[0], node->iarg[1], node->iarg[2],
                         node->iarg[3], node->iarg[4], node->iarg[5]};
    const float scale = node->farg[0];
    const float *probs = node->saved, *dout = node->out->grad;
    const int heads = (int)n_heads(&d);
    const size_t p_stride = (size_t)d.Tq * d.Tk, q_stride = (size_t)d.Tq * d.dk,
                 k_stride = (size_t)d.Tk * d.dk, v_stride = (size_t)d.Tk * d.dv,
                 o_stride = (size_t)d.Tq * d.dv;

    if (v->requires_grad)
        qkv_gemm_batched(heads, 1, 0, d.Tk, d.dv, d.Tq, 1.0f, probs, d.Tk, p_stride, dout, d.dv,
                         o_stride, 1.0f, qkv_tensor_grad(v), d.dv, v_stride);
    int need_scores = q->requires_grad || k->requires_grad || (bias && bias->requires_grad);
    if (!need_scores) return;

    float *dscores = qkv_tape_alloc(node->out->tape, n_scores(&d) * sizeof(float));
    qkv_gemm_batched(heads, 0, 1, d.Tq, d.Tk, d.dv, 1.0f, dout, d.dv, o_stride, v->data, d.dv,
                     v_stride, 0.0f, dscores, d.Tk, p_stride);
    softmax_grad_rows(dscores, probs, n_heads(&d) * d.Tq, d.Tk);
    if (q->requires_grad)
        qkv_gemm_batched(heads, 0, 0, d.Tq, d.dk, d.Tk, scale, dscores, d.Tk, p_stride, k->data,
                         d.dk, k_stride, 1.0f, qkv_tensor_grad(q), d.dk, q_stride);
    if (k->requires_grad)
        qkv_gemm_batched(heads, 1, 0, d.Tk, d.dk, d.Tq, scale, dscores, d.Tk, p_stride, q->data,
                         d.dk, q_stride, 1.0f, qkv_tensor_grad(k), d.dk, k_stride);
    if (bias && bias->requires_grad) {
        bias_view bv = view_bias(bias);
        bias_grad(&bv, dscores, &d, qkv_tensor_grad(bias));
    }
}

/* ---- forward ------------------------------------------------------------------- */

qkv_tensor *qkv_attention(qkv_tape *tape, qkv_tensor *q, qkv_tensor *k, qkv_tensor *v,
                          const qkv_attention_opts *opts, qkv_tensor **weights_out) {
    static const qkv_attention_opts defaults = {0};
    if (!opts) opts = &defaults;
    const attn_dims d = check_qkv(q, k, v);
    const attn_masks masks = {opts->causal, opts->key_padding, opts->keep};
    check_masks(&masks, &d);
    check_bias(opts->bias, &d);
    check_opts(opts, weights_out);
    if (weights_out) *weights_out = NULL;

    const float scale = opts->scale != 0.0f ? opts->scale : 1.0f / sqrtf((float)d.dk);
    const int heads = (int)n_heads(&d);
    const size_t p_stride = (size_t)d.Tq * d.Tk;
    float *probs = qkv_tape_alloc(tape, n_scores(&d) * sizeof(float));
    /* S = scale Q K^T, then P = masked softmax(S + bias), in place. */
    qkv_gemm_batched(heads, 0, 1, d.Tq, d.Tk, d.dk, scale, q->data, d.dk, (size_t)d.Tq * d.dk,
                     k->data, d.dk, (size_t)d.Tk * d.dk, 0.0f, probs, d.Tk, p_stride);
    const bias_view bv = view_bias(opts->bias);
    masked_softmax(probs, &d, &masks, &bv);
    /* out = P V. */
    qkv_tensor *out = qkv_tape_tensor(tape, 4, (const int[]){d.B, d.H, d.Tq, d.dv});
    qkv_gemm_batched(heads, 0, 0, d.Tq, d.dv, d.Tk, 1.0f, probs, d.Tk, p_stride, v->data, d.dv,
                     (size_t)d.Tk * d.dv, 0.0f, out->data, d.dv, (size_t)d.Tq * d.dv);
    if (opts->weights) *weights_out = attention_weights(tape, probs, &d, opts->weights);

    qkv_tensor *inputs[4] = {q, k, v, opts->bias};
    qkv_node *node = qkv_tape_record(tape, OP, out, attention_backward, 4, inputs);
    if (node) {
        node->saved = probs;
        const int dims[6] = {d.B, d.H, d.Tq, d.Tk, d.dk, d.dv};
        memcpy(node->iarg, dims, sizeof dims);
        node->farg[0] = scale;
    }
    return out;
}
