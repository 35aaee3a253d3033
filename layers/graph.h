/* graph.h — graph attention: multi-head attention restricted to the edges of a
 * graph. Node i attends to node j only if adjacency[i][j] != 0 (an edge j -> i,
 * "i listens to j"); a self-loop (i, i) is always added, so no node is left
 * without keys. This is message passing in which every node aggregates its
 * neighbours' values with learned, input-dependent weights.
 */
#ifndef QKV_GRAPH_H
#define QKV_GRAPH_H

#include "layers/mha.h"

typedef struct qkv_graph_attention {
    qkv_mha mha;
} qkv_graph_attention;

void qkv_graph_attention_init(qkv_graph_attention *layer, qkv_params *params, const char *name,
                              int d_model, int n_heads, qkv_rng *rng);
/* x [B,N,d_model]; adjacency [N,N] shared by the batch, or [B,N,N]. */
qkv_tensor *qkv_graph_attention_forward(qkv_tape *tape, const qkv_graph_attention *layer,
                                        qkv_tensor *x, const qkv_tensor *adjacency,
                                        qkv_tensor **weights_out);

#endif
