/* ops_reduce.c — reductions: sum, mean and max over one axis; sum and mean of all
 * elements to a 0-dim scalar.
 *
 * Contract (see ops.h):
 *  - the input is viewed as [outer, len, inner] around the reduced axis (negative
 *    axes count from the end); keepdim 1 keeps the axis with size 1, 0 drops it.
 *  - each output element is reduced sequentially over the axis in index order,
 *    accumulated in double, by exactly one thread: results do not depend on the
 *    thread count. Loops over outputs run in parallel when the input is large.
 *  - sum_all / mean_all return a 0-dim scalar computed with qkv_sum_fixed.
 *  - mean is sum scaled by 1/len (one shared loop); max sends its gradient to the
 *    first argmax of each reduced line, whose index is saved for backward.
 */
#include <stdint.h>

#include "core/error.h"
#include "core/ops/ops.h"
#include "core/kernels/parallel.h"

/* Outputs are reduced in tiles of up to REDUCE_TILE consecutive inner positions,
 * so the loop over the reduced axis reads contiguous runs of the input. */
#define REDUCE_TILE 64

/* The input seen as [outer, len, inner] around the reduced axis. */
typedef struct axis_view {
    size_t outer, len, inner;
} axis_view;

/* What backward needs: the view, the scale (sum 1, mean 1/len), and for max the
 * argmax of each output element along the axis. */
typedef struct reduce_saved {
    axis_view view;
    float scale;
    int32_t *argmax;
} reduce_saved;

/* ---- shared helpers ------------------------------------------------------- */

/* Checks the input and keepdim; returns the non-negative axis. */
static int resolve_axis(const char *op, const qkv_tensor *x, int axis, int keepdim) {
    char shape[QKV_SHAPE_STR_LEN];
    qkv_tensor_check_live(x, op);
    QKV_CHECK(keepdim == 0 || keepdim == 1, "%s: %s axis %d: keepdim %d must be 0 or 1", op,
              qkv_shape_str(x, shape, sizeof shape), axis, keepdim);
    return qkv_axis(op, x, axis);
}

static axis_view view_around(const qkv_tensor *x, int axis) {
    axis_view v;
    qkv_axis_split(x, axis, &v.outer, &v.len, &v.inner);
    return v;
}

/* The output: x's shape with the axis set to 1 (keepdim) or removed. */
static qkv_tensor *reduced_output(qkv_tape *tape, const qkv_tensor *x, int axis, int keepdim) {
    int shape[QKV_MAX_DIMS], ndim = 0;
    for (int d = 0; d < x->ndim; d++) {
        if (d != axis) shape[ndim++] = x->shape[d];
        else if (keepdim) shape[ndim++] = 1;
    }
    return qkv_tape_tensor(tape, ndim, shape);
}

/* Reduces up to REDUCE_TILE neighbouring lines: x points at line 0's first element,
 * line i's k-th element is x[k * stride + i]. Results go to output index first + i. */
typedef void (*tile_kernel)(const float *x, size_t len, size_t stride, size_t n, size_t first,
                            void *args);

/* Runs the kernel over every tile of the view. Tiles write disjoint outputs. */
static void reduce_tiles(const float *x, axis_view v, tile_kernel kernel, void *args) {
    size_t tiles_per_outer = (v.inner + REDUCE_TILE - 1) / REDUCE_TILE;
    size_t n_tiles = v.outer * tiles_per_outer;
    QKV_FOR(QKV_PARALLEL(v.outer * v.len * v.inner), schedule(static), (size_t t = 0; t < n_tiles; t++), {
        size_t o = t / tiles_per_outer, i0 = (t % tiles_per_outer) * REDUCE_TILE;
        size_t n = v.inner - i0 < REDUCE_TILE ? v.inner - i0 : REDUCE_TILE;
        kernel(x + o * v.len * v.inner + i0, v.len, v.inner, n, o * v.inner + i0, args);
    });
}

static reduce_saved *save_view(qkv_tape *tape, qkv_node *node, axis_view v, float scale) {
    reduce_saved *saved = qkv_tape_alloc(tape, sizeof *saved);
    saved->view = v;
    saved->scale = scale;
    saved->argmax = NULL;
    node->saved = saved;
    return saved;
}

/* ---- sum and mean over an axis, sum_all and mean_all ------------------------ */

typedef struct sum_args {
    float *out;
    double scale;
} sum_args;

/* out[first + i] = scale * sum_k x[k * stride + i], k in order, in double. */
static void sum_tile(const float *x, size_t len, size_t stride, size_t n, size_t first, void *args) {
    const sum_args *a = args;
    double acc[REDUCE_TILE];
    for (size_t i = 0; i < n; i++) acc[i] = 0.0;
    for (size_t k = 0; k < len; k++)
        for (size_t i = 0; i < n; i++) acc[i] += x[k * stride + i];
    for (size_t i = 0; i < n; i++) a->out[first + i] = (float)(acc[i] * a->scale);
}

/* y[o,i] = scale * sum_k x[o,k,i]  =>  dx[o,k,i] += scale * dy[o,i]
 * (sum_all / mean_all use the view [1, size, 1]). */
static void sum_backward(qkv_node *node) {
    qkv_tensor *x = node->inputs[0];
    if (!x->requires_grad) return;
    const reduce_saved *s = node->saved;
    const float *dy = node->out->grad;
    float *dx = qkv_tensor_grad(x);
    size_t len = s->view.len, inner = s->view.inner, rows = s->view.outer * len;
    float scale = s->scale;
    QKV_FOR(QKV_PARALLEL(x->size), schedule(static), (size_t r = 0; r < rows; r++), {
        const float *dy_line = dy + (r / len) * inner;
        float *dx_row = dx + r * inner;
        for (size_t i = 0; i < inner; i++) dx_row[i] += scale * dy_line[i];
    });
}

/* Sum over an axis, scaled by 1/len when mean is set. */
static qkv_tensor *sum_axis(qkv_tape *tape, const char *op, qkv_tensor *x, int axis, int keepdim,
                            int mean) {
    axis = resolve_axis(op, x, axis, keepdim);
    axis_view v = view_around(x, axis);
    qkv_tensor *out = reduced_output(tape, x, axis, keepdim);
    sum_args args = {out->data, mean ? 1.0 / (double)v.len : 1.0};
    reduce_tiles(x->data, v, sum_tile, &args);
    qkv_node *node = qkv_tape_record(tape, op, out, sum_backward, 1, &x);
    if (node) save_view(tape, node, v, (float)args.scale);
    return out;
}

/* Sum of every element to a 0-dim scalar, scaled by 1/size when mean is set. */
static qkv_tensor *sum_every(qkv_tape *tape, const char *op, qkv_tensor *x, int mean) {
    qkv_tensor_check_live(x, op);
    const int no_dims[1] = {1};
    qkv_tensor *out = qkv_tape_tensor(tape, 0, no_dims);
    double scale = mean ? 1.0 / (double)x->size : 1.0;
    out->data[0] = (float)(qkv_sum_fixed(x->data, x->size) * scale);
    qkv_node *node = qkv_tape_record(tape, op, out, sum_backward, 1, &x);
    if (node) save_view(tape, node, (axis_view){1, x->size, 1}, (float)scale);
    return out;
}

qkv_tensor *qkv_sum(qkv_tape *tape, qkv_tensor *x, int axis, int keepdim) {
    return sum_axis(tape, "sum", x, axis, keepdim, 0);
}

qkv_tensor *qkv_mean(qkv_tape *tape, qkv_tensor *x, int axis, int keepdim) {
    return sum_axis(tape, "mean", x, axis, keepdim, 1);
}

qkv_tensor *qkv_sum_all(qkv_tape *tape, qkv_tensor *x) { return sum_every(tape, "sum_all", x, 0); }

qkv_tensor *qkv_mean_all(qkv_tape *tape, qkv_tensor *x) { return sum_every(tape, "mean_all", x, 1); }

/* ---- max over an axis ------------------------------------------------------- */

typedef struct max_args {
    float *out;
    int32_t *argmax;
} max_args;

/* out[first + i] = max_k x[k * stride + i]; argmax keeps the first k reaching it. */
static void max_tile(const float *x, size_t len, size_t stride, size_t n, size_t first, void *args) {
    const max_args *a = args;
    float best[REDUCE_TILE];
    int32_t best_k[REDUCE_TILE];
    for (size_t i = 0; i < n; i++) {
        best[i] = x[i];
        best_k[i] = 0;
    }
    for (size_t k = 1; k < len; k++)
        for (size_t i = 0; i < n; i++) {
            float value = x[k * stride + i];
            if (value > best[i]) {
                best[i] = value;
                best_k[i] = (int32_t)k;
            }
        }
    for (size_t i = 0; i < n; i++) {
        a->out[first + i] = best[i];
        a->argmax[first + i] = best_k[i];
    }
}

/* y[o,i] = x[o, argmax[o,i], i]  =>  dx[o, argmax[o,i], i] += dy[o,i]; other elements
 * get nothing. Each output feeds a distinct input element, so outputs run in parallel. */
static void max_backward(qkv_node *node) {
    qkv_tensor *x = node->inputs[0];
    if (!x->requires_grad) return;
    const reduce_saved *s = node->saved;
    const float *dy = node->out->grad;
    float *dx = qkv_tensor_grad(x);
    size_t len = s->view.len, inner = s->view.inner, n_out = s->view.outer * inner;
    QKV_FOR(QKV_PARALLEL(n_out), schedule(static), (size_t j = 0; j < n_out; j++), {
        size_t o = j / inner, i = j % inner;
        dx[(o * len + (size_t)s->argmax[j]) * inner + i] += dy[j];
    });
}

qkv_tensor *qkv_max(qkv_tape *tape, qkv_tensor *x, int axis, int keepdim) {
    axis = resolve_axis("max", x, axis, keepdim);
    axis_view v = view_around(x, axis);
    qkv_tensor *out = reduced_output(tape, x, axis, keepdim);
    int32_t *argmax = qkv_tape_alloc(tape, out->size * sizeof(int32_t));
    max_args args = {out->data, argmax};
    reduce_tiles(x->data, v, max_tile, &args);
    qkv_node *node = qkv_tape_record(tape, "max", out, max_backward, 1, &x);
    if (node) save_view(tape, node, v, 1.0f)->argmax = argmax;
    return out;
}
