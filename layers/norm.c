/* norm.c — see norm.h. */
#include "layers/norm.h"

#include <stdio.h>

#include "core/ops/ops.h"

void qkv_ln_init(qkv_ln *ln, qkv_params *params, const char *name, int d) {
    char full[QKV_NAME_MAX];
    ln->d = d;
    ln->eps = 1e-5f;
    qkv_name_join(full, name, "weight");
    ln->gamma = qkv_params_new(params, full, 1, (int[]){d});
    qkv_tensor_fill(ln->gamma, 1.0f);
    qkv_name_join(full, name, "bias");
    ln->beta = qkv_params_new(params, full, 1, (int[]){d});
}

qkv_tensor *qkv_ln_forward(qkv_tape *tape, const qkv_ln *ln, qkv_tensor *x) {
    return qkv_layer_norm(tape, x, ln->gamma, ln->beta, ln->eps);
}
