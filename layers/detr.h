/* detr.h — the DETR decoder (Carion et al. 2020): N learned object queries read an
 * encoder's memory and come out as N (class, box) predictions, at every layer.
 *
 * Parameters (name e.g. "dec"):
 *   "<name>.query_embed"       [N,D]  query positions q_pos, init N(0, 1) as nn.Embedding
 *   "<name>.<i>.self_attn.*", "<name>.<i>.cross_attn.*", "<name>.<i>.ln1|ln2|ln3.*",
 *   "<name>.<i>.ffn.fc1|fc2.*" layer i (a qkv_decoder_block's parameters)
 *   "<name>.norm.*"            the final LayerNorm, shared by every layer's output
 *   "<name>.class_head.*"      Linear D -> C+1 (the last class is "no object")
 *   "<name>.box_head.0|1|2.*"  MLP D -> D -> D -> 4 with ReLU, then a sigmoid
 *
 * Each layer, with tgt [B,N,D] starting at zero and memory [B,S,D]:
 *   self-attention   q = k = tgt + q_pos,       v = tgt
 *   cross-attention  q = tgt + q_pos,  k = memory + memory_pos,  v = memory
 *   feed-forward     FFN(tgt)
 * each a residual sublayer (qkv_residual): pre-LN (block.post_ln 0, the default
 * here) feeds LN(tgt) to the sublayer, q_pos added after the norm, and adds the
 * result; post-LN (block.post_ln 1, the original DETR) normalizes tgt + sublayer.
 * q_pos is added to queries and keys, never to values.
 * After every layer l: h_l = norm(tgt_l) (DETR's shared final norm), then
 *   logits_l = class_head(h_l)               [B,N,C+1]
 *   boxes_l  = sigmoid(box_head(h_l))        [B,N,4]  (cx, cy, w, h) in (0, 1)
 * so auxiliary losses can apply to every layer; the last layer's are the
 * predictions. Nothing in the decoder knows the memory's order: with memory_pos
 * permuted along with the memory the outputs do not change, and permuting the
 * query embeddings permutes the outputs.
 */
#ifndef QKV_DETR_H
#define QKV_DETR_H

#include "layers/linear.h"
#include "layers/norm.h"
#include "layers/transformer.h"

#define QKV_DETR_MAX_LAYERS 16

typedef struct qkv_detr_config {
    qkv_block_config block;  /* d_model D, n_heads, d_ff, activation (DETR: ReLU, the
                              * zero value), post_ln (0: pre-LN), dropout */
    int n_layers;            /* 1 .. QKV_DETR_MAX_LAYERS */
    int n_queries;           /* N */
    int n_classes;           /* C, without "no object" */
} qkv_detr_config;

typedef struct qkv_detr {
    qkv_detr_config cfg;
    qkv_tensor *query_embed;                  /* [N,D] */
    qkv_decoder_block layers[QKV_DETR_MAX_LAYERS];
    qkv_ln norm;
    qkv_linear class_head;
    qkv_mlp box_head;
} qkv_detr;

/* Per decoder layer l (0 .. n_layers-1): logits[l] [B,N,C+1], boxes[l] [B,N,4];
 * hidden is the last layer's normalized output [B,N,D]. */
typedef struct qkv_detr_out {
    int n_layers;
    qkv_tensor *logits[QKV_DETR_MAX_LAYERS];
    qkv_tensor *boxes[QKV_DETR_MAX_LAYERS];
    qkv_tensor *hidden;
} qkv_detr_out;

void qkv_detr_init(qkv_detr *dec, qkv_params *params, const char *name, const qkv_detr_config *cfg,
                   qkv_rng *rng);
/* memory [B,S,D]; memory_pos [S,D] or [B,S,D] or NULL (added to the keys only);
 * memory_padding [B,S] (1 = real token) or NULL. Shapes that do not fit stop with
 * "detr: ..." naming the shapes. */
qkv_detr_out qkv_detr_forward(qkv_tape *tape, const qkv_detr *dec, qkv_tensor *memory, qkv_tensor *memory_pos,
                              const qkv_tensor *memory_padding);

#endif
