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
#include "optim/optimizer.h"

#include <math.h>
#include <stdlib.h>

#include "core/alloc.h"
#include "core/error.h"
#include "core/kernels/parallel.h"

/* Both passes go over the model's pieces (core/ops/params.h) of QKV_REDUCE_CHUNK
 * elements, in parallel: a piece is the chunk the fixed sum uses, so the norm's
 * arithmetic (each chunk's squares in double, chunks in order into their
 * parameter's sum, parameters in order) is the same whatever the threads. */

static int min_int(int a, int b) { return a < b ? a : b; }

double qkv_grad_norm(const qkv_params *params) {
    for (int i = 0; i < params->n; i++)
        QKV_CHECK(params->items[i]->grad, "grad_norm: parameter %s has no gradient buffer", params->items[i]->name);
    int n;
    qkv_param_piece *pieces = qkv_params_pieces(params, QKV_REDUCE_CHUNK, &n);
    double *partial = qkv_malloc((size_t)(n > 0 ? n : 1) * sizeof *partial, "the gradient norm's partial sums");
    int n_groups = (n + QKV_SUM_LANES - 1) / QKV_SUM_LANES; /* pieces summed together */
    QKV_FOR(QKV_PARALLEL(qkv_params_count(params)), schedule(static), (int grp = 0; grp < n_groups; grp++), {
        int first = grp * QKV_SUM_LANES, count = min_int(QKV_SUM_LANES, n - first);
        const float *g[QKV_SUM_LANES];
        size_t len[QKV_SUM_LANES];
        for (int c = 0; c < count; c++) {
            const qkv_param_piece *piece = &pieces[first + c];
            g[c] = params->items[piece->param]->grad + piece->begin;
            len[c] = piece->end - piece->begin;
        }
        qkv_sum_squares_each(count, g, len, partial + first); /* each piece one chunk: its plain sum */
    });
    double total = 0.0;
    for (int k = 0; k < n;) { /* parameter by parameter: its chunks in order, then into the total */
        double param_sum = 0.0;
        int param = pieces[k].param;
        for (; k < n && pieces[k].param == param; k++) param_sum += partial[k];
        total += param_sum;
    }
    free(partial);
    free(pieces);
    return sqrt(total);
}

double qkv_clip_grad_norm(const qkv_params *params, double max_norm) {
    QKV_CHECK(max_norm > 0.0 && isfinite(max_norm), "clip_grad_norm: max_norm = %g must be finite and > 0",
              max_norm);
    double norm = qkv_grad_norm(params);
    if (!isfinite(norm) || norm <= max_norm) return norm;
    float factor = (float)(max_norm / norm);
    int n;
    qkv_param_piece *pieces = qkv_params_pieces(params, QKV_REDUCE_CHUNK, &n);
    QKV_FOR(QKV_PARALLEL(qkv_params_count(params)), schedule(static), (int k = 0; k < n; k++), {
        float *g = params->items[pieces[k].param]->grad;
        for (size_t j = pieces[k].begin; j < pieces[k].end; j++) g[j] *= factor;
    });
    free(pieces);
    return norm;
}
