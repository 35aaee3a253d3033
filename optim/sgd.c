/* sgd.c — see sgd.h. */
#include "sgd.h"

#include <stdlib.h>

#include "core/error.h"
#include "core/parallel.h"

void qkv_sgd_init(qkv_sgd *opt, float lr, float momentum) {
    opt->lr = lr;
    opt->momentum = momentum;
    opt->velocity = NULL;
    opt->n = 0;
}

void qkv_sgd_step(qkv_sgd *opt, const qkv_params *params) {
    if (opt->momentum != 0.0f && !opt->velocity) {
        opt->n = params->n;
        opt->velocity = calloc((size_t)params->n, sizeof(float *));
        for (int i = 0; i < params->n; i++) {
            opt->velocity[i] = calloc(params->items[i]->size, sizeof(float));
            if (!opt->velocity[i]) qkv_fatal("sgd: out of memory");
        }
    }
    QKV_CHECK(!opt->velocity || opt->n == params->n,
              "sgd: optimizer made for %d parameters, stepped with %d", opt->n, params->n);
    for (int i = 0; i < params->n; i++) {
        qkv_tensor *p = params->items[i];
        const float *g = p->grad;
        float *v = opt->velocity ? opt->velocity[i] : NULL;
        const float lr = opt->lr, momentum = opt->momentum;
        #pragma omp parallel for if (QKV_PARALLEL(p->size)) schedule(static)
        for (size_t j = 0; j < p->size; j++) {
            float step = g[j];
            if (v) step = v[j] = momentum * v[j] + g[j];
            p->data[j] -= lr * step;
        }
    }
}

void qkv_sgd_free(qkv_sgd *opt) {
    for (int i = 0; opt->velocity && i < opt->n; i++) free(opt->velocity[i]);
    free(opt->velocity);
    opt->velocity = NULL;
}
