/* graph.c — see graph.h. */
#include "layers/graph.h"

#include "core/error.h"

void qkv_graph_attention_init(qkv_graph_attention *layer, qkv_params *params, const char *name,
                              int d_model, int n_heads, qkv_rng *rng) {
    qkv_mha_init(&layer->mha, params, name, d_model, n_heads, 0, 0, 1, rng);
}

/* keep = adjacency != 0, or the diagonal; as [N,N], or [B,H,N,N] for a per-graph
 * adjacency (the attention op takes a batched keep mask per head). */
static qkv_tensor *keep_with_self_loops(qkv_tape *tape, const qkv_tensor *adjacency, int b, int h,
                                        int n) {
    char a[QKV_SHAPE_STR_LEN];
    int shared = adjacency->ndim == 2;
    QKV_CHECK((shared && adjacency->shape[0] == n && adjacency->shape[1] == n) ||
                  (adjacency->ndim == 3 && adjacency->shape[0] == b && adjacency->shape[1] == n &&
                   adjacency->shape[2] == n),
              "graph_attention: adjacency %s must be [%d,%d] or [%d,%d,%d]",
              qkv_shape_str(adjacency, a, sizeof a), n, n, b, n, n);
    qkv_tensor *keep = shared ? qkv_tape_tensor(tape, 2, (int[]){n, n})
                              : qkv_tape_tensor(tape, 4, (int[]){b, h, n, n});
    int graphs = shared ? 1 : b, copies = shared ? 1 : h;
    for (int g = 0; g < graphs; g++)
        for (int c = 0; c < copies; c++)
            for (int i = 0; i < n; i++)
                for (int j = 0; j < n; j++) {
                    float edge = adjacency->data[((size_t)g * n + i) * n + j];
                    keep->data[(((size_t)g * copies + c) * n + i) * n + j] = (edge != 0.0f || i == j) ? 1.0f : 0.0f;
                }
    return keep;
}

qkv_tensor *qkv_graph_attention_forward(qkv_tape *tape, const qkv_graph_attention *layer,
                                        qkv_tensor *x, const qkv_tensor *adjacency,
                                        qkv_tensor **weights_out) {
    char s[QKV_SHAPE_STR_LEN];
    QKV_CHECK(x->ndim == 3, "graph_attention: x %s must be [B,N,d]", qkv_shape_str(x, s, sizeof s));
    qkv_mha_call call = {0};
    call.keep = keep_with_self_loops(tape, adjacency, x->shape[0], layer->mha.n_heads, x->shape[1]);
    call.weights = weights_out ? 1 : 0;
    call.weights_out = weights_out;
    return qkv_mha_forward(tape, &layer->mha, x, NULL, &call);
}
