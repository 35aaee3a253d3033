/* attention_grads.h — what happens inside one fused attention op's backward,
 * made visible: for an "attention" node of a tape after qkv_backward, the
 * matrices its hand-written backward forms block by block and never keeps
 * (core/ops/attention.h), computed again with ops on another tape:
 *     P  = the op's weights (qkv_attention with weights on the node's inputs and
 *          options: the same bits as its forward)
 *     dO = the node's output gradient;  D = rowsum(dO * O)
 *     dP = dO V^T;  dS = P * (dP - D)
 *     dQ, dK, dV = the gradients that reached the node's q, k and v (the op's own
 *          when nothing else reads those tensors, as in qkv's layers; zeros for an
 *          input that needs none).
 * Every tensor is [B,H,T,*] whatever the node's layout (heads_last is permuted),
 * an activation of ops valid until its reset. Used by `qkv attn --grads`
 * (train/tasks/sequence_attention.c) and the page.
 */
#ifndef QKV_ATTENTION_GRADS_H
#define QKV_ATTENTION_GRADS_H

#include "core/ops/attention.h"

typedef struct qkv_attention_grads {
    qkv_tensor *p, *dp, *ds;          /* [B,H,Tq,Tk] */
    qkv_tensor *d_out, *d_rows;       /* [B,H,Tq,dv], D [B,H,Tq,1] */
    qkv_tensor *dq, *dk, *dv;         /* [B,H,Tq,dk], [B,H,Tk,dk], [B,H,Tk,dv] */
} qkv_attention_grads;

/* The options node was recorded with (scale, causal, masks, bias, layout). */
void qkv_attention_node_opts(const qkv_node *node, qkv_attention_opts *opts);

/* node: an "attention" node (a programmer error otherwise) of a tape whose
 * backward has run; ops: a tape with gradients off. */
void qkv_attention_node_grads(qkv_tape *ops, const qkv_node *node, qkv_attention_grads *g);

#endif
