/* clip.c — gradient clipping by global norm; see optimizer.h.
 *
 * Contract: norm = sqrt(sum over every parameter's gradient of g^2), squares summed
 * in double, in chunks of QKV_REDUCE_CHUNK elements, chunk by chunk and parameter
 * by parameter in list order, so the norm is bitwise the same for any thread
 * count. If norm > max_norm, every gradient is multiplied by max_norm / norm, so
 * the new norm is max_norm up to float rounding (torch divides by norm + 1e-6
 * instead, which leaves it slightly below). Gradients with norm <= max_norm are
 * not touched, and neither are non-finite ones (norm inf or NaN): the norm is
 * returned for the caller to act on (e.g. skip the step). max_norm must be > 0.
 */
#include "optimizer.h"

#include <math.h>

#include "core/error.h"
#include "core/parallel.h"

static void scale(float *x, size_t n, float factor) {
    QKV_FOR(QKV_PARALLEL(n), schedule(static), (size_t i = 0; i < n; i++), {
        x[i] *= factor;
    });
}

double qkv_grad_norm(const qkv_params *params) {
    double total = 0.0;
    for (int i = 0; i < params->n; i++) {
        const qkv_tensor *p = params->items[i];
        QKV_CHECK(p->grad, "grad_norm: parameter %s has no gradient buffer", p->name);
        total += qkv_sum_squares_fixed(p->grad, p->size);
    }
    return sqrt(total);
}

double qkv_clip_grad_norm(const qkv_params *params, double max_norm) {
    QKV_CHECK(max_norm > 0.0 && isfinite(max_norm), "clip_grad_norm: max_norm = %g must be finite and > 0",
              max_norm);
    double norm = qkv_grad_norm(params);
    if (!isfinite(norm) || norm <= max_norm) return norm;
    float factor = (float)(max_norm / norm);
    for (int i = 0; i < params->n; i++) scale(params->items[i]->grad, params->items[i]->size, factor);
    return norm;
}
