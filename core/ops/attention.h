/* attention.h — fused scaled dot-product attention: one op on the tape, with a
 * hand-written backward.
 *
 * Shapes: q [B,H,Tq,dk], k [B,H,Tk,dk], v [B,H,Tk,dv] -> out [B,H,Tq,dv].
 * Tq may differ from Tk (cross-attention, decoding with a cache) and dk from dv.
 * With opts->heads_last every one of them is [B,T,H,d] instead: a projection's
 * output [B,T,H*d] seen per head, read in place, and the output in the layout
 * the output projection reads, so no permute is copied forward or backward. The
 * layout changes where rows are, never what is computed: both layouts give the
 * same bits (the block products read rows with a stride).
 * Per (batch b, head h):
 *     S = scale * Q K^T + bias               logits [Tq,Tk]
 *     P = softmax of each row of S over the keys the row may attend to
 *     out = P V
 *
 * Masks: ONE convention everywhere: 1 = may attend, 0 = masked out (any nonzero
 * value counts as 1). This matches the boolean attn_mask of PyTorch's
 * F.scaled_dot_product_attention (True = take part). It is the OPPOSITE of the
 * booleans of PyTorch's nn.MultiheadAttention (key_padding_mask and attn_mask,
 * True = masked out): invert those when porting. A key is allowed for query i of
 * (b,h) when all of these hold (logical AND):
 *   - causal:       j <= i + (Tk - Tq)  (the last query is aligned with the last
 *                   key, so a Tq = 1 call on a cache of Tk keys sees all of them);
 *   - key_padding:  key_padding[b,j] != 0     ([B,Tk]; 1 = real key, 0 = padding);
 *   - keep:         keep[i,j] or keep[b,h,i,j] != 0  ([Tq,Tk] or [B,H,Tq,Tk]).
 * bias is added to the scaled scores before masking (ALiBi, learned relative
 * biases); it broadcasts to [B,H,Tq,Tk] numpy-style (ndim <= 4, right-aligned,
 * each dim equal or 1) and must be finite or -inf (-inf acts like a mask). If it
 * requires a gradient it gets one, summed over its broadcast dims.
 *
 * Numerics: each row's softmax subtracts the max over its allowed keys only, so
 * logits of +-1e4 neither overflow nor underflow to a NaN. A row with no allowed
 * key (or only -inf logits) gives P = 0, out = 0 and passes 0 gradient: no NaN or
 * Inf anywhere, forward or backward. The exponential is a vectorizable polynomial
 * within 1e-7 relative of expf (exactly 1 at the row max, exactly 0 when masked).
 *
 * Memory is linear in the sequence length (FlashAttention): the forward walks the
 * keys in blocks of 64 with an online softmax and keeps only the output and two
 * floats per query row (its max logit and 1/sum) for backward, which recomputes
 * P block by block. No [Tq,Tk] matrix is kept, except the returned weights when
 * asked for and, during backward, dS when the bias needs a gradient (the bias is
 * then that size itself). (1,8,8192,64) trains in ~150 MB of peak RSS.
 *
 * Gradients (dO = dL/dout, per (b,h)), all added (+=) into the inputs' gradients:
 *     dV = P^T dO;  dP = dO V^T;  dS = P * (dP - rowsum(dP * P));
 *     dQ = scale dS K;  dK = scale dS^T Q;  dbias = dS summed over broadcast dims.
 *     (computed per block as D = rowsum(dO * out), dS = P * (dP - D).)
 * Parallel above QKV_PAR_MIN_WORK over (batch, head, query block) in the forward
 * and over (batch, head) in the backward; results are bitwise independent of the
 * thread count. The masks are data (no gradient) and need not outlive the call.
 *
 * Bad shapes and arguments stop through qkv_fatal with messages that start with
 * "attention:" and give the shapes, e.g.
 *     "attention: q [2,4,5,8] k [2,4,6,7]: dk 8 != 7"
 */
#ifndef QKV_ATTENTION_H
#define QKV_ATTENTION_H

#include "core/ops/tape.h"

typedef struct qkv_attention_opts {
    float scale;                   /* 0: 1/sqrt(dk) */
    int causal;                    /* query i sees keys j <= i + (Tk - Tq) */
    const qkv_tensor *key_padding; /* [B,Tk], 1 = real key (may be attended), 0 = padding; or NULL */
    const qkv_tensor *keep;        /* [Tq,Tk] or [B,H,Tq,Tk]: 1 = may attend, 0 = masked; or NULL */
    qkv_tensor *bias;              /* additive, broadcastable to [B,H,Tq,Tk]; or NULL */
    int weights;                   /* 0: none; 1: per-head weights [B,H,Tq,Tk]; 2: head mean [B,Tq,Tk] */
    int heads_last;                /* q, k, v and out are [B,T,H,d] (see above) */
} qkv_attention_opts;

/* opts may be NULL (defaults: scale 1/sqrt(dk), no mask, no bias, no weights).
 * When opts->weights != 0, *weights_out receives a copy of the attention weights
 * (rows sum to 1, or to 0 when fully masked): a new tape activation that is not on
 * the gradient path. weights_out may be NULL only when opts->weights is 0; when
 * weights is 0 and weights_out is not NULL, *weights_out is set to NULL. */
qkv_tensor *qkv_attention(qkv_tape *tape, qkv_tensor *q, qkv_tensor *k, qkv_tensor *v,
                          const qkv_attention_opts *opts, qkv_tensor **weights_out);

#endif
