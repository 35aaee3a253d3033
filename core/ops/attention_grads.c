/* attention_grads.c — the matrices inside one fused attention node's backward,
 * computed again with ops (attention_grads.h): P from the op itself (weights on),
 * dP = dO V^T, D = rowsum(dO * O), dS = P * (dP - D), and the gradients that
 * reached q, k and v, all in the [B,H,T,*] layout. */
#include "core/ops/attention_grads.h"

#include <string.h>

#include "core/error.h"
#include "core/ops/ops.h"

/* [B,T,H,d] -> [B,H,T,d] when the node read that layout; x itself otherwise. */
static qkv_tensor *heads_first(qkv_tape *ops, qkv_tensor *x, int heads_last) {
    return heads_last ? qkv_permute(ops, x, (const int[]){0, 2, 1, 3}) : x;
}

/* x's gradient as a tensor of ops (zeros when x has none). */
static qkv_tensor *grad_view(qkv_tape *ops, const qkv_tensor *x) {
    if (!x->grad) return qkv_tape_zeros(ops, x->ndim, x->shape);
    return qkv_tape_view(ops, x->ndim, x->shape, x->grad);
}

void qkv_attention_node_grads(qkv_tape *ops, const qkv_node *node, qkv_attention_grads *g) {
    qkv_attention_opts opts;
    qkv_attention_node_opts(node, &opts);
    int was = qkv_tape_set_grad(ops, 0);
    qkv_tensor *q = node->inputs[0], *k = node->inputs[1], *v = node->inputs[2];
    int heads_last = opts.heads_last;
    opts.weights = 1;
    memset(g, 0, sizeof *g);
    qkv_attention(ops, q, k, v, &opts, &g->p);                   /* P [B,H,Tq,Tk] */
    qkv_tensor *out = heads_first(ops, node->out, heads_last);
    g->d_out = heads_first(ops, grad_view(ops, node->out), heads_last);
    qkv_tensor *values = heads_first(ops, v, heads_last);
    g->dp = qkv_matmul(ops, g->d_out, values, 0, 1);             /* dO V^T */
    g->d_rows = qkv_sum(ops, qkv_mul(ops, g->d_out, out), -1, 1); /* D = rowsum(dO * O) */
    g->ds = qkv_mul(ops, g->p, qkv_sub(ops, g->dp, g->d_rows));  /* P * (dP - D) */
    g->dq = heads_first(ops, grad_view(ops, q), heads_last);
    g->dk = heads_first(ops, grad_view(ops, k), heads_last);
    g->dv = heads_first(ops, grad_view(ops, v), heads_last);
    qkv_tape_set_grad(ops, was);
}
