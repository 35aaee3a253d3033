/* gradcheck.c — the finite-difference checker. See gradcheck.h. */
#include "core/check/gradcheck.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "core/rng.h"

#define SAMPLE_LIMIT 256

static double weighted_sum(const qkv_tensor *out, const float *weights) {
    double s = 0.0;
    for (size_t i = 0; i < out->size; i++) s += (double)out->data[i] * (double)weights[i];
    return s;
}

/* One evaluation of L = sum(f(inputs) * R) without recording. */
static double eval_loss(qkv_tape *tape, qkv_gradcheck_fn fn, qkv_tensor *const *inputs,
                        const void *ctx, const float *weights, uint64_t seed, size_t out_size) {
    qkv_tape_reset(tape);
    tape->rng = qkv_rng_make(seed);
    int was = qkv_tape_set_grad(tape, 0);
    qkv_tensor *out = fn(tape, inputs, ctx);
    qkv_tape_set_grad(tape, was);
    QKV_CHECK(out->size == out_size, "gradcheck: output size changed between evaluations");
    return weighted_sum(out, weights);
}

/* Compares analytic and numeric gradients over the elements of x (sampled). */
static void check_tensor(qkv_gradcheck_result *result, int index, qkv_tensor *x, qkv_tape *tape,
                         qkv_gradcheck_fn fn, qkv_tensor *const *inputs, const void *ctx,
                         const float *weights, float eps, uint64_t seed, size_t out_size) {
    size_t n = x->size;
    size_t stride = n > SAMPLE_LIMIT ? n / SAMPLE_LIMIT : 1;
    for (size_t j = 0; j < n; j += stride) {
        float saved = x->data[j];
        x->data[j] = saved + eps;
        double plus = eval_loss(tape, fn, inputs, ctx, weights, seed, out_size);
        x->data[j] = saved - eps;
        double minus = eval_loss(tape, fn, inputs, ctx, weights, seed, out_size);
        x->data[j] = saved;
        /* The actual step is (saved+eps) - (saved-eps) in float, not 2*eps. */
        double step = (double)(saved + eps) - (double)(saved - eps);
        double numeric = (plus - minus) / step;
        double analytic = x->grad[j];
        double scale = fmax(1.0, fmax(fabs(analytic), fabs(numeric)));
        double err = fabs(analytic - numeric) / scale;
        if (err > result->max_err || result->n_checked == 0) {
            result->max_err = err;
            result->worst_input = index;
            result->worst_index = j;
            result->worst_analytic = analytic;
            result->worst_numeric = numeric;
        }
        result->n_checked++;
    }
}

qkv_gradcheck_result qkv_gradcheck(qkv_gradcheck_fn fn, int n_inputs, qkv_tensor *const *inputs,
                                   const qkv_params *params, const void *ctx, float eps, uint64_t seed) {
    qkv_gradcheck_result result = {0};
    qkv_tape *tape = qkv_tape_create(seed);
    qkv_rng rng = qkv_rng_make(seed ^ 0xc0ffeeULL);

    /* Analytic gradients: one backward pass seeded with R. */
    for (int i = 0; i < n_inputs; i++) qkv_tensor_zero_grad(inputs[i]);
    if (params) qkv_params_zero_grad(params);
    tape->rng = qkv_rng_make(seed);
    qkv_tensor *out = fn(tape, inputs, ctx);
    size_t out_size = out->size;
    float *weights = qkv_malloc(qkv_size_mul(out_size, sizeof(float)), "gradcheck's output weights");
    qkv_fill_normal(weights, out_size, &rng, 0.0f, 1.0f);
    if (out->requires_grad) qkv_backward_seeded(tape, out, weights);

    for (int i = 0; i < n_inputs; i++)
        if (inputs[i]->requires_grad)
            check_tensor(&result, i, inputs[i], tape, fn, inputs, ctx, weights, eps, seed, out_size);
    for (int i = 0; params && i < params->n; i++)
        check_tensor(&result, n_inputs + i, params->items[i], tape, fn, inputs, ctx, weights, eps, seed,
                     out_size);
    free(weights);
    qkv_tape_free(tape);
    return result;
}

static void fill_input(qkv_tensor *t, int init, qkv_rng *rng) {
    switch (init) {
    case QKV_INIT_POSITIVE:
        qkv_fill_uniform(t->data, t->size, rng, 0.5f, 2.0f);
        break;
    case QKV_INIT_SPREAD: {
        /* A shuffled ramp 0.1 k + 0.05 for integer k around 0: distinct values
         * 0.1 apart, none within 0.05 of zero (relu's kink). */
        long half = (long)(t->size / 2);
        for (size_t i = 0; i < t->size; i++) t->data[i] = 0.1f * (float)((long)i - half) + 0.05f;
        for (size_t i = t->size; i > 1; i--) {
            size_t j = qkv_rng_below(rng, (uint32_t)i);
            float tmp = t->data[i - 1]; t->data[i - 1] = t->data[j]; t->data[j] = tmp;
        }
        break;
    }
    default:
        qkv_fill_normal(t->data, t->size, rng, 0.0f, 1.0f);
    }
}

float qkv_gradcheck_tolerance(const qkv_gradcheck_case *c) { return c->tol > 0 ? c->tol : 1e-2f; }

qkv_gradcheck_result qkv_gradcheck_run_case(const qkv_gradcheck_case *c, uint64_t seed) {
    qkv_tensor *inputs[QKV_GRADCHECK_MAX_INPUTS];
    qkv_rng rng = qkv_rng_make(seed);
    for (int i = 0; i < c->n_inputs; i++) {
        inputs[i] = qkv_tensor_create(NULL, c->ndim[i], c->shape[i], !c->no_grad[i]);
        fill_input(inputs[i], c->init[i], &rng);
    }
    qkv_params params = {0};
    void *module = c->setup ? c->setup(&params, &rng, c->ctx) : NULL;
    qkv_gradcheck_result r = qkv_gradcheck(c->fn, c->n_inputs, inputs, c->setup ? &params : NULL,
                                           c->setup ? module : c->ctx, c->eps > 0 ? c->eps : 1e-3f, seed);
    if (c->teardown) c->teardown(module);
    qkv_params_free(&params);
    for (int i = 0; i < c->n_inputs; i++) qkv_tensor_free(inputs[i]);
    return r;
}
