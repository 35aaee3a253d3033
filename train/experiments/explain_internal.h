/* explain_internal.h — shared by explain.c (the worked example's walk) and
 * explain_step.c (a step of typed inputs), not by their callers: the state of one
 * step and the one forward pass both walks print from, so that the attention
 * step is composed of ops in one place.
 */
#ifndef QKV_EXPERIMENTS_EXPLAIN_INTERNAL_H
#define QKV_EXPERIMENTS_EXPLAIN_INTERNAL_H

#include "core/ops/tape.h"
#include "layers/positions.h"
#include "train/experiments/explain.h"

/* The problem: leaves and everything that stays fixed while L is differentiated. */
typedef struct qkv_explain_state {
    const qkv_explain_input *in;
    int H, d, dvh, symmetric;
    float scale;
    qkv_params params;           /* t5's table, fire's MLP */
    qkv_positions pos;
    qkv_tensor *q, *k, *v;       /* owned leaves [1,T,cols], requiring gradients */
    qkv_tensor *target;          /* [1,Tq,dv] */
    qkv_tensor *mask;            /* [Tq,Tk] of 0 and -inf, or NULL */
    qkv_tensor *key_padding, *keep;   /* the same mask for the fused op */
} qkv_explain_state;

/* The activations of one pass (fused: s0, s and logits NULL, p the op's weights). */
typedef struct qkv_explain_pass {
    qkv_tensor *qh, *kh, *vh, *qr, *kr, *bias, *s0, *s, *logits, *p, *oh, *o, *loss;
} qkv_explain_pass;

/* in must have passed qkv_explain_check_input and outlive the state. */
void qkv_explain_state_build(qkv_explain_state *st, const qkv_explain_input *in);
void qkv_explain_state_free(qkv_explain_state *st);

/* The whole step on tape (explain_step.c's contract): composed of primitive ops,
 * or (fused) with the fused qkv_attention op in their place. */
void qkv_explain_forward(qkv_tape *tape, const qkv_explain_state *st, int fused, qkv_explain_pass *f);

#endif
