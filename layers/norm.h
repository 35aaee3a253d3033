/* norm.h — LayerNorm as a module: learned gain gamma (init 1) and bias beta
 * (init 0) over the last axis, y = (x - mean) / sqrt(var + eps) * gamma + beta.
 * Parameters "<name>.weight" and "<name>.bias", as in PyTorch. */
#ifndef QKV_NORM_H
#define QKV_NORM_H

#include "core/ops/params.h"
#include "core/ops/tape.h"

typedef struct qkv_ln {
    int d;
    float eps;
    qkv_tensor *gamma, *beta;
} qkv_ln;

void qkv_ln_init(qkv_ln *ln, qkv_params *params, const char *name, int d);
qkv_tensor *qkv_ln_forward(qkv_tape *tape, const qkv_ln *ln, qkv_tensor *x);

#endif
