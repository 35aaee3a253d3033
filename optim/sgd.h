/* sgd.h — stochastic gradient descent with optional momentum.
 *
 *   v <- momentum * v + g;   p <- p - lr * v      (momentum 0: p <- p - lr * g)
 *
 * The velocity buffers are allocated on the first step, one per parameter.
 */
#ifndef QKV_SGD_H
#define QKV_SGD_H

#include "core/params.h"

typedef struct qkv_sgd {
    float lr, momentum;
    float **velocity; /* one buffer per parameter, or NULL before the first step */
    int n;
} qkv_sgd;

void qkv_sgd_init(qkv_sgd *opt, float lr, float momentum);
void qkv_sgd_step(qkv_sgd *opt, const qkv_params *params);
void qkv_sgd_free(qkv_sgd *opt);

#endif
