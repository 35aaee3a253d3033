/* linear.h — fully connected layer and a small MLP.
 *
 * Linear: y = x W^T + b, x [..., in] -> y [..., out]. W is [out, in] and b [out],
 * PyTorch's layout, so weights move between the two unchanged. Initialization is
 * PyTorch's default: W and b uniform in [-1/sqrt(in), 1/sqrt(in)].
 *
 * MLP: Linear, activation, Linear, activation, ..., Linear (no activation after
 * the last layer).
 */
#ifndef QKV_LINEAR_H
#define QKV_LINEAR_H

#include "core/ops/params.h"
#include "core/rng.h"
#include "core/ops/tape.h"

typedef struct qkv_linear {
    int in, out;
    qkv_tensor *weight; /* [out, in] */
    qkv_tensor *bias;   /* [out], or NULL */
} qkv_linear;

/* Registers "<name>.weight" and "<name>.bias" in params. */
void qkv_linear_init(qkv_linear *layer, qkv_params *params, const char *name, int in, int out,
                     int with_bias, qkv_rng *rng);
qkv_tensor *qkv_linear_forward(qkv_tape *tape, const qkv_linear *layer, qkv_tensor *x);

typedef enum qkv_activation { QKV_ACT_RELU, QKV_ACT_GELU, QKV_ACT_TANH, QKV_ACT_GELU_EXACT } qkv_activation;
/* Names in enum order, NULL-terminated: "relu", "gelu", "tanh", "gelu-exact". */
extern const char *const qkv_activation_names[];

/* The activation op for a kind: gelu is the tanh approximation (PyTorch's
 * approximate='tanh'), gelu-exact x * Phi(x) with erf (PyTorch's default GELU). */
qkv_tensor *qkv_activate(qkv_tape *tape, qkv_activation activation, qkv_tensor *x);

#define QKV_MLP_MAX_LAYERS 8
typedef struct qkv_mlp {
    int n_layers;
    qkv_activation activation;
    qkv_linear layers[QKV_MLP_MAX_LAYERS];
} qkv_mlp;

/* widths has n_layers + 1 entries: input, hidden..., output. Names "<name>.<i>". */
void qkv_mlp_init(qkv_mlp *mlp, qkv_params *params, const char *name, int n_layers,
                  const int *widths, qkv_activation activation, qkv_rng *rng);
qkv_tensor *qkv_mlp_forward(qkv_tape *tape, const qkv_mlp *mlp, qkv_tensor *x);

#endif
