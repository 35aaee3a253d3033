/* linear.c — Linear and MLP modules. See linear.h. */
#include "layers/linear.h"

#include <math.h>
#include <stdio.h>

#include "core/error.h"
#include "core/ops/ops.h"

void qkv_linear_init(qkv_linear *layer, qkv_params *params, const char *name, int in, int out,
                     int with_bias, qkv_rng *rng) {
    QKV_CHECK(in >= 1 && out >= 1, "linear_init %s: widths in=%d out=%d must be >= 1", name, in, out);
    char full[QKV_NAME_MAX];
    float bound = 1.0f / sqrtf((float)in);
    layer->in = in;
    layer->out = out;
    qkv_name_join(full, name, "weight");
    layer->weight = qkv_params_new(params, full, 2, (int[]){out, in});
    qkv_fill_uniform(layer->weight->data, layer->weight->size, rng, -bound, bound);
    layer->bias = NULL;
    if (with_bias) {
        qkv_name_join(full, name, "bias");
        layer->bias = qkv_params_new(params, full, 1, (int[]){out});
        qkv_fill_uniform(layer->bias->data, layer->bias->size, rng, -bound, bound);
    }
}

/* y = x W^T (+ b): one affine op (no separate bias add node or buffers). */
qkv_tensor *qkv_linear_forward(qkv_tape *tape, const qkv_linear *layer, qkv_tensor *x) {
    char shape[QKV_SHAPE_STR_LEN];
    QKV_CHECK(x->ndim >= 1 && x->shape[x->ndim - 1] == layer->in,
              "linear %s: input %s does not end in in=%d", layer->weight->name,
              qkv_shape_str(x, shape, sizeof shape), layer->in);
    return qkv_affine(tape, x, layer->weight, layer->bias);
}

void qkv_mlp_init(qkv_mlp *mlp, qkv_params *params, const char *name, int n_layers,
                  const int *widths, qkv_activation activation, qkv_rng *rng) {
    QKV_CHECK(n_layers >= 1 && n_layers <= QKV_MLP_MAX_LAYERS, "mlp_init %s: %d layers (1..%d)", name,
              n_layers, QKV_MLP_MAX_LAYERS);
    mlp->n_layers = n_layers;
    mlp->activation = activation;
    for (int i = 0; i < n_layers; i++) {
        char full[QKV_NAME_MAX];
        qkv_name_index(full, name, i);
        qkv_linear_init(&mlp->layers[i], params, full, widths[i], widths[i + 1], 1, rng);
    }
}

const char *const qkv_activation_names[] = {"relu", "gelu", "tanh", "gelu-exact", NULL};

qkv_tensor *qkv_activate(qkv_tape *tape, qkv_activation activation, qkv_tensor *x) {
    switch (activation) {
    case QKV_ACT_GELU: return qkv_gelu(tape, x);
    case QKV_ACT_TANH: return qkv_tanh(tape, x);
    case QKV_ACT_GELU_EXACT: return qkv_gelu_exact(tape, x);
    default: return qkv_relu(tape, x);
    }
}

qkv_tensor *qkv_mlp_forward(qkv_tape *tape, const qkv_mlp *mlp, qkv_tensor *x) {
    for (int i = 0; i < mlp->n_layers; i++) {
        x = qkv_linear_forward(tape, &mlp->layers[i], x);
        if (i + 1 < mlp->n_layers) x = qkv_activate(tape, mlp->activation, x);
    }
    return x;
}
