/* ops.h — every differentiable op, grouped by family (one .c file per family).
 *
 * Contract shared by all ops:
 *  - inputs are live tensors (owned, or activations of this tape); outputs are new
 *    activations from the tape's arena; inputs are never modified.
 *  - every input is validated first; a bad shape or argument stops through
 *    qkv_fatal() with the op's name and the shapes, e.g.
 *        "matmul: [4,3] x [5,2]: inner dims 3 != 5"
 *  - if the tape records and an input requires a gradient, a node is appended;
 *    its backward adds (+=) into the inputs' gradients.
 *  - axes may be negative (-1 is the last axis).
 *  - results are bitwise independent of the thread count.
 */
#ifndef QKV_OPS_H
#define QKV_OPS_H

#include <stdint.h>

#include "core/ops/tape.h"
#include "core/ops/unary_ops.h"

/* ---- ops_elementwise.c ------------------------------------------------------
 * Binary ops broadcast numpy-style: shapes are right-aligned and each pair of dims
 * must be equal or one of them 1. Backward sums the gradient over broadcast dims. */
qkv_tensor *qkv_add(qkv_tape *tape, qkv_tensor *a, qkv_tensor *b);
qkv_tensor *qkv_sub(qkv_tape *tape, qkv_tensor *a, qkv_tensor *b);
qkv_tensor *qkv_mul(qkv_tape *tape, qkv_tensor *a, qkv_tensor *b);
qkv_tensor *qkv_div(qkv_tape *tape, qkv_tensor *a, qkv_tensor *b);
qkv_tensor *qkv_scale(qkv_tape *tape, qkv_tensor *x, float s);        /* s * x */
qkv_tensor *qkv_add_scalar(qkv_tape *tape, qkv_tensor *x, float c);   /* x + c */
qkv_tensor *qkv_relu(qkv_tape *tape, qkv_tensor *x);
qkv_tensor *qkv_abs(qkv_tape *tape, qkv_tensor *x);       /* |x|; gradient sign(x), 0 at 0 */
qkv_tensor *qkv_gelu(qkv_tape *tape, qkv_tensor *x);       /* tanh approximation */
qkv_tensor *qkv_gelu_exact(qkv_tape *tape, qkv_tensor *x); /* x * Phi(x), with erf */
qkv_tensor *qkv_tanh(qkv_tape *tape, qkv_tensor *x);
qkv_tensor *qkv_sigmoid(qkv_tape *tape, qkv_tensor *x);
qkv_tensor *qkv_exp(qkv_tape *tape, qkv_tensor *x);
qkv_tensor *qkv_log(qkv_tape *tape, qkv_tensor *x);
qkv_tensor *qkv_sqrt(qkv_tape *tape, qkv_tensor *x);
qkv_tensor *qkv_silu(qkv_tape *tape, qkv_tensor *x);       /* x * sigmoid(x) (SiLU, swish) */
/* Op `op` of the table (core/ops/unary_ops.h) with the constant c (ignored by
 * ops without one): what the wrappers above call, and what the gradient checks
 * run every row of the table through. */
qkv_tensor *qkv_unary(qkv_tape *tape, qkv_unary_kind op, qkv_tensor *x, float c);
/* The unary ops above, one row each of the table, in its order: name (the tape's
 * op name) and rough flops per element. Tests walk it. */
typedef struct qkv_unary_op {
    const char *name;
    int cost;
} qkv_unary_op;
extern const qkv_unary_op qkv_unary_ops[];
extern const int qkv_unary_op_count;
/* Inverted dropout: when tape->training, zeroes each element with probability p
 * and scales the rest by 1/(1-p), with a mask drawn from the tape's RNG;
 * otherwise (or p == 0) the identity. */
qkv_tensor *qkv_dropout(qkv_tape *tape, qkv_tensor *x, float p);

/* ---- ops_reduce.c -----------------------------------------------------------
 * keepdim 1 keeps the reduced axis with size 1; 0 removes it. */
qkv_tensor *qkv_sum(qkv_tape *tape, qkv_tensor *x, int axis, int keepdim);
qkv_tensor *qkv_mean(qkv_tape *tape, qkv_tensor *x, int axis, int keepdim);
qkv_tensor *qkv_sum_all(qkv_tape *tape, qkv_tensor *x);   /* scalar */
qkv_tensor *qkv_mean_all(qkv_tape *tape, qkv_tensor *x);  /* scalar */
/* Max over an axis; the gradient goes to the (first) argmax. */
qkv_tensor *qkv_max(qkv_tape *tape, qkv_tensor *x, int axis, int keepdim);

/* ---- ops_matmul.c -----------------------------------------------------------
 * C = op(A) op(B), op = transpose of the last two dims when trans_* is 1.
 * A [..., M, K] and B [..., K, N] (before transposing). Batch dims (all but the
 * last two) must be equal, or one operand is 2-D and is shared across the batch. */
qkv_tensor *qkv_matmul(qkv_tape *tape, qkv_tensor *a, qkv_tensor *b, int trans_a, int trans_b);
/* The linear map y = x W^T + b in one op: x [..., K], W [N, K], b [N] or NULL ->
 * y [..., N]. Bitwise the same values as qkv_add(qkv_matmul(x, W, 0, 1), b), but
 * one node and one output buffer (no separate add activation and gradient);
 * backward: dx += dy W, dW += dy^T x (rows flattened), db += column sums of dy. */
qkv_tensor *qkv_affine(qkv_tape *tape, qkv_tensor *x, qkv_tensor *w, qkv_tensor *b);

/* ---- ops_softmax.c: softmax and losses --------------------------------------- */
qkv_tensor *qkv_softmax(qkv_tape *tape, qkv_tensor *x);      /* over the last axis */
qkv_tensor *qkv_log_softmax(qkv_tape *tape, qkv_tensor *x);  /* over the last axis */
/* Cross-entropy from logits [..., C] and integer targets (one per row, logits->size/C
 * of them). Rows whose target == ignore_index contribute nothing. weights (one per
 * row, may be NULL) scale each row's loss. Returns the scalar
 *     sum_i w_i * (-log softmax(logits_i)[t_i]) / sum_i w_i   over non-ignored rows
 * (0 when no row counts). Fused and stable: log-sum-exp with the row max removed.
 * A target outside [0, C) that is not ignore_index is a programmer error. */
qkv_tensor *qkv_cross_entropy(qkv_tape *tape, qkv_tensor *logits, const int32_t *targets,
                              int32_t ignore_index, const float *weights);
/* Mean squared error, mean over all elements; shapes must be equal. */
qkv_tensor *qkv_mse(qkv_tape *tape, qkv_tensor *pred, qkv_tensor *target);

/* ---- ops_norm.c -------------------------------------------------------------
 * Layer norm over the last axis: y = (x - mean) / sqrt(var + eps) * gamma + beta,
 * biased variance as in PyTorch. gamma and beta are [D] and may be NULL. */
qkv_tensor *qkv_layer_norm(qkv_tape *tape, qkv_tensor *x, qkv_tensor *gamma, qkv_tensor *beta,
                           float eps);

/* ---- ops_shape.c: shape and indexing ----------------------------------------- */
/* Same data, new shape; one dim may be -1 (inferred). */
qkv_tensor *qkv_reshape(qkv_tape *tape, qkv_tensor *x, int ndim, const int *shape);
/* out.shape[i] = x.shape[perm[i]]. */
qkv_tensor *qkv_permute(qkv_tape *tape, qkv_tensor *x, const int *perm);
qkv_tensor *qkv_transpose(qkv_tape *tape, qkv_tensor *x, int dim0, int dim1);
/* Elements [start, end) along axis. */
qkv_tensor *qkv_slice(qkv_tape *tape, qkv_tensor *x, int axis, int start, int end);
/* Joins n tensors along axis; all other dims must agree. */
qkv_tensor *qkv_concat(qkv_tape *tape, int n, qkv_tensor *const *xs, int axis);
/* Gathers rows of table [V, D]: out[..., :] = table[ids[...], :], shape
 * ids_shape + [D]. Backward scatter-adds into the table's gradient. An id outside
 * [0, V) is a programmer error. */
qkv_tensor *qkv_embedding(qkv_tape *tape, qkv_tensor *table, const int32_t *ids, int ids_ndim,
                          const int *ids_shape);

/* ---- ops_image.c ------------------------------------------------------------
 * Patches as tokens: images [B,C,H,W] -> [B, (H/P)*(W/P), C*P*P]. Patches go
 * row-major over the grid (t = row * (W/P) + col); each is flattened C-major,
 * then its rows, then its columns (a stride-P Conv2d weight's order):
 *     out[b, t, (c*P + i)*P + j] = x[b, c, row*P + i, col*P + j].
 * H or W not divisible by P stops, naming the shapes. */
qkv_tensor *qkv_patchify(qkv_tape *tape, qkv_tensor *images, int p);

#endif
