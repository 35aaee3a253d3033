/* checks_attention.c — gradient-check cases for the fused attention op
 * (ops_attention.c): no mask; causal with Tq == Tk, Tq < Tk and Tq > Tk; key
 * padding; keep masks [Tq,Tk] and [B,H,Tq,Tk]; learned biases broadcast from
 * [1,H,Tq,Tk], [Tq,Tk], [B,1,1,Tk] and [Tk], and a fixed (data) bias; mask and bias
 * combinations; fully masked rows; Tq != Tk with dk != dv; B = H = 1 and T = 1
 * edges; custom scales; sequences longer than one 64-key block; the heads_last
 * layout ([B,T,H,d]) with masks, a bias and several blocks. Inputs are q, k, v (and the bias as input 3); the masks
 * are data, rebuilt on the tape from the case's ctx at every evaluation.
 * (A bias constant along the keys, e.g. [H,Tq,1], has an exactly zero gradient,
 * since softmax ignores a per-row shift; it would check nothing, so none is here.) */
#include <string.h>

#include "core/ops/attention.h"
#include "core/check/gradcheck.h"

typedef struct attention_case {
    float scale;           /* 0: 1/sqrt(dk) */
    int causal;
    const float *padding;  /* [B,Tk] values, or NULL */
    const float *keep;     /* [Tq,Tk] (keep_per_head 0) or [B,H,Tq,Tk] values, or NULL */
    int keep_per_head;
    int has_bias;          /* input 3 is the bias */
    int heads_last;        /* q, k, v are [B,T,H,d] */
} attention_case;

static const qkv_tensor *mask_tensor(qkv_tape *tape, int ndim, const int *shape, const float *values) {
    qkv_tensor *m = qkv_tape_tensor(tape, ndim, shape);
    memcpy(m->data, values, m->size * sizeof(float));
    return m;
}

static qkv_tensor *attention_fn(qkv_tape *tape, qkv_tensor *const *in, const void *ctx) {
    static const attention_case plain = {0};
    const attention_case *c = ctx ? ctx : &plain;
    const int hl = c->heads_last, B = in[0]->shape[0], H = in[0]->shape[hl ? 2 : 1];
    const int Tq = in[0]->shape[hl ? 1 : 2], Tk = in[1]->shape[hl ? 1 : 2];
    qkv_attention_opts opts = {.scale = c->scale, .causal = c->causal, .heads_last = hl};
    if (c->padding) opts.key_padding = mask_tensor(tape, 2, (const int[]){B, Tk}, c->padding);
    if (c->keep && c->keep_per_head)
        opts.keep = mask_tensor(tape, 4, (const int[]){B, H, Tq, Tk}, c->keep);
    else if (c->keep)
        opts.keep = mask_tensor(tape, 2, (const int[]){Tq, Tk}, c->keep);
    if (c->has_bias) opts.bias = in[3];
    return qkv_attention(tape, in[0], in[1], in[2], &opts, NULL);
}

/* ---- masks ---------------------------------------------------------------------- */

/* [B=2, Tk=3]: batch 0 pads its last key, batch 1 its middle one. */
static const float padding_2x3[] = {1, 1, 0, 1, 0, 1};
/* [B=2, Tk=4]: batch 1 has a single real key. */
static const float padding_2x4[] = {1, 1, 1, 0, 0, 1, 0, 0};
/* [B=2, Tk=3]: batch 1 is all padding, so every one of its rows is fully masked. */
static const float padding_2x3_empty[] = {1, 0, 1, 0, 0, 0};
/* [Tq=3, Tk=4]: a band. */
static const float keep_3x4[] = {1, 1, 0, 0, 0, 1, 1, 0, 0, 0, 1, 1};
/* [Tq=3, Tk=3]: row 1 attends to nothing. */
static const float keep_3x3_row1_empty[] = {1, 0, 1, 0, 0, 0, 1, 1, 1};
/* [B=2, H=2, Tq=3, Tk=3]: a different pattern per head. */
static const float keep_2x2x3x3[] = {
    1, 0, 0, 1, 1, 0, 1, 1, 1,   0, 1, 1, 1, 0, 1, 1, 1, 0,
    1, 1, 1, 0, 1, 0, 1, 0, 1,   0, 0, 1, 0, 1, 1, 1, 1, 1,
};

#define CTX(...) .ctx = &(const attention_case){__VA_ARGS__}
/* q [B,H,Tq,dk], k [B,H,Tk,dk], v [B,H,Tk,dv]. */
#define QKV(B, H, Tq, Tk, dk, dv)                                                          \
    .fn = attention_fn, .n_inputs = 3, .ndim = {4, 4, 4},                                  \
    .shape = {{B, H, Tq, dk}, {B, H, Tk, dk}, {B, H, Tk, dv}}
/* The same plus a bias of ndim bias_ndim and the given shape as input 3. */
#define QKV_BIAS(B, H, Tq, Tk, dk, dv, bias_ndim, ...)                                      \
    .fn = attention_fn, .n_inputs = 4, .ndim = {4, 4, 4, bias_ndim},                       \
    .shape = {{B, H, Tq, dk}, {B, H, Tk, dk}, {B, H, Tk, dv}, {__VA_ARGS__}}
#define BIAS_IS_DATA .no_grad = {0, 0, 0, 1}
/* heads_last: q [B,Tq,H,dk], k [B,Tk,H,dk], v [B,Tk,H,dv] (and a bias as input 3). */
#define QKV_HL(B, H, Tq, Tk, dk, dv)                                                       \
    .fn = attention_fn, .n_inputs = 3, .ndim = {4, 4, 4},                                  \
    .shape = {{B, Tq, H, dk}, {B, Tk, H, dk}, {B, Tk, H, dv}}
#define QKV_HL_BIAS(B, H, Tq, Tk, dk, dv, bias_ndim, ...)                                   \
    .fn = attention_fn, .n_inputs = 4, .ndim = {4, 4, 4, bias_ndim},                       \
    .shape = {{B, Tq, H, dk}, {B, Tk, H, dk}, {B, Tk, H, dv}, {__VA_ARGS__}}

static const qkv_gradcheck_case cases[] = {
    {.name = "attention [2,2,3,4]", QKV(2, 2, 3, 3, 4, 4)},
    {.name = "attention causal [2,2,4,3]", QKV(2, 2, 4, 4, 3, 3), CTX(.causal = 1)},
    {.name = "attention causal Tq<Tk q [1,2,2,3] k [1,2,5,3]", QKV(1, 2, 2, 5, 3, 3),
     CTX(.causal = 1)},
    {.name = "attention causal Tq>Tk (rows fully masked) q [1,2,4,3] k [1,2,2,3]",
     QKV(1, 2, 4, 2, 3, 3), CTX(.causal = 1)},
    {.name = "attention padding [2,2,3,4]", QKV(2, 2, 3, 3, 4, 4), CTX(.padding = padding_2x3)},
    {.name = "attention keep [Tq,Tk] [1,2,3,4] k [1,2,4,4]", QKV(1, 2, 3, 4, 4, 4),
     CTX(.keep = keep_3x4)},
    {.name = "attention keep [B,H,Tq,Tk] [2,2,3,4]", QKV(2, 2, 3, 3, 4, 4),
     CTX(.keep = keep_2x2x3x3, .keep_per_head = 1)},
    {.name = "attention bias [1,H,Tq,Tk] [2,2,3,4]", QKV_BIAS(2, 2, 3, 3, 4, 4, 4, 1, 2, 3, 3),
     CTX(.has_bias = 1)},
    {.name = "attention bias [Tq,Tk] [2,2,3,4] k [2,2,4,4]", QKV_BIAS(2, 2, 3, 4, 4, 4, 2, 3, 4),
     CTX(.has_bias = 1)},
    {.name = "attention bias [B,1,1,Tk] [2,2,3,4]", QKV_BIAS(2, 2, 3, 3, 4, 4, 4, 2, 1, 1, 3),
     CTX(.has_bias = 1)},
    {.name = "attention bias [Tk] [2,3,2,4] k [2,3,5,4]", QKV_BIAS(2, 3, 2, 5, 4, 4, 1, 5),
     CTX(.has_bias = 1)},
    {.name = "attention bias data [B,H,Tq,Tk] [2,2,3,4]",
     QKV_BIAS(2, 2, 3, 3, 4, 4, 4, 2, 2, 3, 3), BIAS_IS_DATA, CTX(.has_bias = 1)},
    {.name = "attention causal+padding+bias [2,2,3,4]", QKV_BIAS(2, 2, 3, 3, 4, 4, 4, 1, 2, 3, 3),
     CTX(.causal = 1, .padding = padding_2x3, .has_bias = 1)},
    {.name = "attention causal+padding+keep+bias [2,1,3,2] k [2,1,4,2]",
     QKV_BIAS(2, 1, 3, 4, 2, 2, 2, 3, 4),
     CTX(.causal = 1, .padding = padding_2x4, .keep = keep_3x4, .has_bias = 1)},
    {.name = "attention fully masked row (keep) [2,2,3,4]", QKV_BIAS(2, 2, 3, 3, 4, 4, 2, 3, 3),
     CTX(.keep = keep_3x3_row1_empty, .has_bias = 1)},
    {.name = "attention fully masked batch (padding) [2,2,3,4]",
     QKV_BIAS(2, 2, 3, 3, 4, 4, 4, 2, 1, 3, 3),
     CTX(.causal = 1, .padding = padding_2x3_empty, .has_bias = 1)},
    {.name = "attention Tq!=Tk dk!=dv q [2,1,3,5] k [2,1,4,5] v [2,1,4,2]", QKV(2, 1, 3, 4, 5, 2)},
    {.name = "attention B=H=1 [1,1,4,3]", QKV(1, 1, 4, 4, 3, 3)},
    {.name = "attention T=1 [1,1,1,3]", QKV(1, 1, 1, 1, 3, 3)},
    {.name = "attention Tq=1 causal q [2,2,1,3] k [2,2,4,3]", QKV(2, 2, 1, 4, 3, 3),
     CTX(.causal = 1)},
    {.name = "attention Tk=1 q [1,2,3,2] k [1,2,1,2]", QKV(1, 2, 3, 1, 2, 2)},
    {.name = "attention scale 0.9 [2,2,3,4]", QKV(2, 2, 3, 3, 4, 4), CTX(.scale = 0.9f)},
    {.name = "attention scale -0.3 causal [1,2,4,3]", QKV(1, 2, 4, 4, 3, 3),
     CTX(.scale = -0.3f, .causal = 1)},
    {.name = "attention causal+bias [H,Tq,Tk] q [2,3,6,16] k [2,3,7,16] v [2,3,7,8]",
     QKV_BIAS(2, 3, 6, 7, 16, 8, 3, 3, 6, 7), CTX(.causal = 1, .has_bias = 1)},
    /* Longer than one 64-key block: the online softmax across blocks and causal
     * block skipping, with the plain-loop kernel (d 2) and the gemm kernel (64 x 64 x 16 score blocks). */
    {.name = "attention multi-block causal+bias [Tq,Tk] q [1,1,66,2] k [1,1,70,2]",
     QKV_BIAS(1, 1, 66, 70, 2, 2, 2, 66, 70), CTX(.causal = 1, .has_bias = 1)},
    {.name = "attention multi-block causal [1,1,65,16] v [1,1,65,2]", QKV(1, 1, 65, 65, 16, 2),
     CTX(.causal = 1)},
    {.name = "attention heads_last q [2,3,2,4]", QKV_HL(2, 2, 3, 3, 4, 4), CTX(.heads_last = 1)},
    {.name = "attention heads_last causal+padding+bias q [2,3,2,4] k [2,4,2,4] v [2,4,2,3]",
     QKV_HL_BIAS(2, 2, 3, 4, 4, 3, 4, 1, 2, 3, 4),
     CTX(.causal = 1, .padding = padding_2x4, .has_bias = 1, .heads_last = 1)},
    {.name = "attention heads_last keep [B,H,Tq,Tk] q [2,3,2,4]", QKV_HL(2, 2, 3, 3, 4, 4),
     CTX(.keep = keep_2x2x3x3, .keep_per_head = 1, .heads_last = 1)},
    {.name = "attention heads_last multi-block causal q [1,66,2,16] v [1,66,2,2]",
     QKV_HL(1, 2, 66, 66, 16, 2), CTX(.causal = 1, .heads_last = 1)},
};

const qkv_gradcheck_group qkv_checks_attention = {"attention", cases,
                                                  (int)(sizeof cases / sizeof cases[0])};
