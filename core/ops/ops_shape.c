/* ops_shape.c — shape and indexing ops: reshape, permute, transpose, slice,
 * concat, embedding; forward and backward side by side.
 *
 * Contract (see ops.h): inputs are validated first and a bad shape or argument
 * stops through qkv_fatal() naming the op and the shapes. Outputs are new
 * activations, except that reshape's output shares its input's data (no op
 * modifies its inputs, so the data never needs copying); so does its gradient when
 * the input is an activation (a parameter's gradient accumulates across backward
 * passes while activation gradients restart at zero, so a parameter's is not shared).
 *
 * permute, slice and concat only move elements. Each describes the move as a
 * strided layout (a 4-D index space with a stride on the input side and on the
 * output side); one routine gathers forward (out = in) and scatter-adds backward
 * (d_in += d_out) through it. Every destination element is written by exactly one
 * iteration, so these loops are parallel and bitwise independent of the thread
 * count. Embedding backward sums repeated ids in id order, per block of columns.
 */
#include <limits.h>
#include <string.h>

#include "core/error.h"
#include "core/ops/ops.h"
#include "core/kernels/parallel.h"

/* ---- strided layouts ------------------------------------------------------ */

/* Element (i0,i1,i2,i3), i < count, is in[in_offset + sum i_k * in_stride[k]] on
 * the op's input side and out[out_offset + sum i_k * out_stride[k]] on its output. */
typedef struct strided_layout {
    size_t count[4];
    size_t in_stride[4], out_stride[4];
    size_t in_offset, out_offset;
} strided_layout;

/* Row-major strides of a shape. */
static void contiguous_strides(int ndim, const int *shape, size_t *stride) {
    size_t s = 1;
    for (int k = ndim - 1; k >= 0; k--) {
        stride[k] = s;
        s *= (size_t)shape[k];
    }
}

/* Drops size-1 dims and merges neighbours that are contiguous on both sides, so the
 * innermost loop is as long as possible; leaves the dims right-aligned in count[]. */
static void coalesce(strided_layout *l) {
    size_t count[4], in[4], out[4];
    int n = 0;
    for (int k = 0; k < 4; k++) {
        if (l->count[k] == 1) continue;
        if (n > 0 && in[n - 1] == l->count[k] * l->in_stride[k] &&
            out[n - 1] == l->count[k] * l->out_stride[k]) {
            count[n - 1] *= l->count[k];
            in[n - 1] = l->in_stride[k];
            out[n - 1] = l->out_stride[k];
            continue;
        }
        count[n] = l->count[k], in[n] = l->in_stride[k], out[n] = l->out_stride[k];
        n++;
    }
    for (int k = 0; k < 4; k++) {
        int from = k - (4 - n);
        l->count[k] = from >= 0 ? count[from] : 1;
        l->in_stride[k] = from >= 0 ? in[from] : 0;
        l->out_stride[k] = from >= 0 ? out[from] : 0;
    }
}

/* dst[j * dst_step] (+)= src[j * src_step] for j < n. */
static void move_row(float *dst, size_t dst_step, const float *src, size_t src_step, size_t n,
                     int accumulate) {
    if (dst_step == 1 && src_step == 1) {
        if (accumulate)
            for (size_t j = 0; j < n; j++) dst[j] += src[j];
        else
            memcpy(dst, src, n * sizeof(float));
    } else if (accumulate) {
        for (size_t j = 0; j < n; j++) dst[j * dst_step] += src[j * src_step];
    } else {
        for (size_t j = 0; j < n; j++) dst[j * dst_step] = src[j * src_step];
    }
}

/* Elements per task of strided_move: long rows are cut into segments this long. */
#define MOVE_SEGMENT 8192

/* dst (+)= src over the whole index space, in parallel over segments of rows of
 * the last dim (each destination element belongs to one segment). */
static void strided_move(float *dst, const size_t *dst_stride, const float *src,
                         const size_t *src_stride, const size_t *count, int accumulate) {
    size_t rows = count[0] * count[1] * count[2], len = count[3];
    size_t segments = (len + MOVE_SEGMENT - 1) / MOVE_SEGMENT;
    QKV_FOR(QKV_PARALLEL(rows * len), schedule(static), (size_t task = 0; task < rows * segments; task++), {
        size_t r = task / segments, begin = task % segments * MOVE_SEGMENT;
        size_t n = len - begin < MOVE_SEGMENT ? len - begin : MOVE_SEGMENT;
        size_t i2 = r % count[2], i1 = r / count[2] % count[1], i0 = r / count[2] / count[1];
        move_row(dst + i0 * dst_stride[0] + i1 * dst_stride[1] + i2 * dst_stride[2] + begin * dst_stride[3],
                 dst_stride[3],
                 src + i0 * src_stride[0] + i1 * src_stride[1] + i2 * src_stride[2] + begin * src_stride[3],
                 src_stride[3], n, accumulate);
    });
}

/* Forward: out = in through the layout. */
static void layout_gather(strided_layout l, const float *in, float *out) {
    coalesce(&l);
    strided_move(out + l.out_offset, l.out_stride, in + l.in_offset, l.in_stride, l.count, 0);
}

/* Backward: d_in += d_out through the layout. */
static void layout_scatter_add(strided_layout l, const float *d_out, float *d_in) {
    coalesce(&l);
    strided_move(d_in + l.in_offset, l.in_stride, d_out + l.out_offset, l.out_stride, l.count, 1);
}

/* A block [outer, n, inner] that sits at [in_start, in_start + n) of the middle
 * axis on the input side (length in_len) and at [out_start, out_start + n) on the
 * output side (length out_len). Slice and concat are both this: a slice reads a
 * window of its input, a concat input fills a window of the output. */
static strided_layout window_layout(size_t outer, size_t n, size_t inner, size_t in_len,
                                    size_t in_start, size_t out_len, size_t out_start) {
    strided_layout l = {
        .count = {1, outer, n, inner},
        .in_stride = {0, in_len * inner, inner, 1},
        .out_stride = {0, out_len * inner, inner, 1},
        .in_offset = in_start * inner,
        .out_offset = out_start * inner,
    };
    return l;
}

/* ---- reshape -------------------------------------------------------------- */

/* Same elements, same order: dx += dy, unless dy is dx's own buffer (an
 * activation's gradient is shared, qkv_reshape). */
static void reshape_backward(qkv_node *node) {
    qkv_tensor *x = node->inputs[0];
    if (!x->requires_grad || node->out->grad == x->grad) return;
    size_t count[4] = {1, 1, 1, x->size}, unit[4] = {0, 0, 0, 1};
    strided_move(qkv_tensor_grad(x), unit, node->out->grad, unit, count, 1);
}

/* Fills out[] from shape[], inferring one -1; stops on anything invalid. */
static void resolve_reshape(const qkv_tensor *x, int ndim, const int *shape, int *out) {
    char xs[QKV_SHAPE_STR_LEN], ns[QKV_SHAPE_STR_LEN];
    qkv_shape_str(x, xs, sizeof xs);
    QKV_CHECK(ndim >= 0 && ndim <= QKV_MAX_DIMS, "reshape: %s -> ndim %d outside 0..%d", xs, ndim,
              QKV_MAX_DIMS);
    QKV_CHECK(ndim == 0 || shape, "reshape: %s -> NULL shape", xs);
    qkv_dims_str(ndim, shape, ns, sizeof ns);
    int inferred = -1;
    size_t known = 1;
    for (int k = 0; k < ndim; k++) {
        QKV_CHECK(shape[k] >= 1 || shape[k] == -1, "reshape: %s -> %s: dim %d is %d", xs, ns, k, shape[k]);
        if (shape[k] == -1) {
            QKV_CHECK(inferred < 0, "reshape: %s -> %s: more than one -1", xs, ns);
            inferred = k;
        } else {
            known *= (size_t)shape[k];
        }
        out[k] = shape[k];
    }
    if (inferred >= 0) {
        QKV_CHECK(x->size % known == 0 && x->size / known <= INT_MAX,
                  "reshape: %s -> %s: %zu elements do not fit", xs, ns, x->size);
        out[inferred] = (int)(x->size / known);
        known *= (size_t)out[inferred];
    }
    QKV_CHECK(known == x->size, "reshape: %s -> %s: sizes differ (%zu vs %zu)", xs, ns, x->size, known);
}

qkv_tensor *qkv_reshape(qkv_tape *tape, qkv_tensor *x, int ndim, const int *shape) {
    qkv_tensor_check_live(x, "reshape");
    int resolved[QKV_MAX_DIMS];
    resolve_reshape(x, ndim, shape, resolved);
    qkv_tensor *y = qkv_tape_view(tape, ndim, resolved, x->data); /* shares x's data */
    qkv_node *node = qkv_tape_record(tape, "reshape", y, reshape_backward, 1, &x);
    if (node && x->requires_grad && !x->owned)
        y->grad_of = x; /* one buffer: no copy, no second gradient */
    return y;
}

/* ---- permute and transpose ------------------------------------------------ */

/* out[i] = x[i permuted]: walks out in order, reads x with permuted strides. */
static strided_layout permute_layout(const qkv_tensor *x, const int *perm) {
    size_t x_stride[QKV_MAX_DIMS], out_stride[QKV_MAX_DIMS];
    int out_shape[QKV_MAX_DIMS];
    for (int k = 0; k < x->ndim; k++) out_shape[k] = x->shape[perm[k]];
    contiguous_strides(x->ndim, x->shape, x_stride);
    contiguous_strides(x->ndim, out_shape, out_stride);
    strided_layout l = {.count = {1, 1, 1, 1}};
    int pad = 4 - x->ndim;
    for (int k = 0; k < x->ndim; k++) {
        l.count[pad + k] = (size_t)out_shape[k];
        l.in_stride[pad + k] = x_stride[perm[k]];
        l.out_stride[pad + k] = out_stride[k];
    }
    return l;
}

/* A permutation only moves elements: d_x[i permuted] += d_out[i]. */
static void permute_backward(qkv_node *node) {
    qkv_tensor *x = node->inputs[0];
    if (!x->requires_grad) return;
    layout_scatter_add(permute_layout(x, node->iarg), node->out->grad, qkv_tensor_grad(x));
}

/* Permute under the name op (permute or transpose); perm is already validated. */
static qkv_tensor *permute_as(const char *op, qkv_tape *tape, qkv_tensor *x, const int *perm) {
    int out_shape[QKV_MAX_DIMS];
    for (int k = 0; k < x->ndim; k++) out_shape[k] = x->shape[perm[k]];
    qkv_tensor *y = qkv_tape_tensor(tape, x->ndim, out_shape);
    layout_gather(permute_layout(x, perm), x->data, y->data);
    qkv_node *node = qkv_tape_record(tape, op, y, permute_backward, 1, &x);
    for (int k = 0; node && k < x->ndim; k++) node->iarg[k] = perm[k];
    return y;
}

qkv_tensor *qkv_permute(qkv_tape *tape, qkv_tensor *x, const int *perm) {
    qkv_tensor_check_live(x, "permute");
    char xs[QKV_SHAPE_STR_LEN], ps[QKV_SHAPE_STR_LEN];
    qkv_shape_str(x, xs, sizeof xs);
    QKV_CHECK(x->ndim == 0 || perm, "permute: x %s: perm is NULL", xs);
    int seen[QKV_MAX_DIMS] = {0};
    for (int k = 0; k < x->ndim; k++) {
        int p = perm[k];
        QKV_CHECK(p >= 0 && p < x->ndim && !seen[p], "permute: %s is not a permutation of 0..%d for x %s",
                  qkv_dims_str(x->ndim, perm, ps, sizeof ps), x->ndim - 1, xs);
        seen[p] = 1;
    }
    return permute_as("permute", tape, x, perm);
}

qkv_tensor *qkv_transpose(qkv_tape *tape, qkv_tensor *x, int dim0, int dim1) {
    qkv_tensor_check_live(x, "transpose");
    int a = qkv_axis("transpose", x, dim0), b = qkv_axis("transpose", x, dim1);
    int perm[QKV_MAX_DIMS] = {0, 1, 2, 3};
    perm[a] = b;
    perm[b] = a;
    return permute_as("transpose", tape, x, perm);
}

/* ---- slice ---------------------------------------------------------------- */

/* The window [start, start + out.shape[axis]) of x along axis. */
static strided_layout slice_layout(const qkv_tensor *x, int axis, int start, int n) {
    size_t outer, len, inner;
    qkv_axis_split(x, axis, &outer, &len, &inner);
    return window_layout(outer, (size_t)n, inner, len, (size_t)start, (size_t)n, 0);
}

/* d_x[window] += d_out; zero elsewhere. */
static void slice_backward(qkv_node *node) {
    qkv_tensor *x = node->inputs[0];
    if (!x->requires_grad) return;
    int axis = node->iarg[0], start = node->iarg[1], n = node->out->shape[axis];
    layout_scatter_add(slice_layout(x, axis, start, n), node->out->grad, qkv_tensor_grad(x));
}

qkv_tensor *qkv_slice(qkv_tape *tape, qkv_tensor *x, int axis, int start, int end) {
    qkv_tensor_check_live(x, "slice");
    int a = qkv_axis("slice", x, axis);
    char xs[QKV_SHAPE_STR_LEN];
    QKV_CHECK(0 <= start && start < end && end <= x->shape[a],
              "slice: [%d,%d) is not a non-empty range inside axis %d (size %d) of %s", start, end,
              axis, x->shape[a], qkv_shape_str(x, xs, sizeof xs));
    int out_shape[QKV_MAX_DIMS];
    memcpy(out_shape, x->shape, (size_t)x->ndim * sizeof(int));
    out_shape[a] = end - start;
    qkv_tensor *y = qkv_tape_tensor(tape, x->ndim, out_shape);
    layout_gather(slice_layout(x, a, start, end - start), x->data, y->data);
    qkv_node *node = qkv_tape_record(tape, "slice", y, slice_backward, 1, &x);
    if (node) {
        node->iarg[0] = a;
        node->iarg[1] = start;
    }
    return y;
}

/* ---- concat --------------------------------------------------------------- */

/* Input x fills the window [offset, offset + x.shape[axis]) of out along axis. */
static strided_layout concat_layout(const qkv_tensor *x, const qkv_tensor *out, int axis, int offset) {
    size_t outer, len, inner;
    qkv_axis_split(x, axis, &outer, &len, &inner);
    return window_layout(outer, len, inner, len, 0, (size_t)out->shape[axis], (size_t)offset);
}

/* Each input's gradient is its window of d_out: d_x_i += d_out[window_i]. */
static void concat_backward(qkv_node *node) {
    int axis = node->iarg[0], offset = 0;
    for (int i = 0; i < node->n_inputs; i++) {
        qkv_tensor *x = node->inputs[i];
        if (x->requires_grad)
            layout_scatter_add(concat_layout(x, node->out, axis, offset), node->out->grad,
                               qkv_tensor_grad(x));
        offset += x->shape[axis];
    }
}

/* Stops unless every input is live and matches xs[0] outside axis; returns the
 * total length along axis. */
static int check_concat(int n, qkv_tensor *const *xs, int axis) {
    char s0[QKV_SHAPE_STR_LEN], si[QKV_SHAPE_STR_LEN];
    qkv_shape_str(xs[0], s0, sizeof s0);
    long total = 0;
    for (int i = 0; i < n; i++) {
        qkv_tensor_check_live(xs[i], "concat");
        const qkv_tensor *x = xs[i];
        qkv_shape_str(x, si, sizeof si);
        int same = x->ndim == xs[0]->ndim;
        for (int k = 0; same && k < x->ndim; k++) same = k == axis || x->shape[k] == xs[0]->shape[k];
        QKV_CHECK(same, "concat: input %d %s does not match input 0 %s outside axis %d", i, si, s0, axis);
        total += x->shape[axis];
        QKV_CHECK(total <= INT_MAX, "concat: total length along axis %d exceeds INT_MAX", axis);
    }
    return (int)total;
}

qkv_tensor *qkv_concat(qkv_tape *tape, int n, qkv_tensor *const *xs, int axis) {
    QKV_CHECK(n >= 1 && xs, "concat: needs at least one input (n = %d)", n);
    qkv_tensor_check_live(xs[0], "concat");
    int a = qkv_axis("concat", xs[0], axis);
    int out_shape[QKV_MAX_DIMS];
    memcpy(out_shape, xs[0]->shape, (size_t)xs[0]->ndim * sizeof(int));
    out_shape[a] = check_concat(n, xs, a);
    qkv_tensor *y = qkv_tape_tensor(tape, xs[0]->ndim, out_shape);
    int offset = 0;
    for (int i = 0; i < n; i++) {
        layout_gather(concat_layout(xs[i], y, a, offset), xs[i]->data, y->data);
        offset += xs[i]->shape[a];
    }
    qkv_node *node = qkv_tape_record(tape, "concat", y, concat_backward, n, xs);
    if (node) node->iarg[0] = a;
    return y;
}

/* ---- embedding ------------------------------------------------------------ */

/* Columns per task of the embedding backward: one 64-byte cache line. */
#define EMBEDDING_COLUMN_BLOCK 16

/* d_table[ids[p], d] += d_out[p, d]: several positions may share an id, so each
 * block of columns walks the positions in order (deterministic for any threads). */
static void embedding_backward(qkv_node *node) {
    qkv_tensor *table = node->inputs[0];
    if (!table->requires_grad) return;
    const int32_t *ids = node->saved;
    size_t n_ids = node->out->size / (size_t)table->shape[1];
    int D = table->shape[1];
    const float *g = node->out->grad;
    float *dtable = qkv_tensor_grad(table);
    int n_blocks = (D + EMBEDDING_COLUMN_BLOCK - 1) / EMBEDDING_COLUMN_BLOCK;
    QKV_FOR(n_blocks > 1 && QKV_PARALLEL(node->out->size), schedule(static), (int b = 0; b < n_blocks; b++), {
        int d0 = b * EMBEDDING_COLUMN_BLOCK;
        int width = D - d0 < EMBEDDING_COLUMN_BLOCK ? D - d0 : EMBEDDING_COLUMN_BLOCK;
        for (size_t p = 0; p < n_ids; p++)
            move_row(dtable + (size_t)ids[p] * (size_t)D + d0, 1, g + p * (size_t)D + d0, 1,
                     (size_t)width, 1);
    });
}

/* Stops unless table is [V, D], the ids shape is valid and every id is in [0, V). */
static void check_embedding(const qkv_tensor *table, const int32_t *ids, int ids_ndim,
                            const int *ids_shape) {
    char ts[QKV_SHAPE_STR_LEN], is[QKV_SHAPE_STR_LEN];
    qkv_shape_str(table, ts, sizeof ts);
    QKV_CHECK(table->ndim == 2, "embedding: table %s must be [V, D]", ts);
    QKV_CHECK(ids_ndim >= 0 && ids_ndim <= QKV_MAX_DIMS - 1, "embedding: ids ndim %d outside 0..%d (table %s)",
              ids_ndim, QKV_MAX_DIMS - 1, ts);
    QKV_CHECK(ids_ndim == 0 || ids_shape, "embedding: ids_shape is NULL (table %s)", ts);
    qkv_dims_str(ids_ndim, ids_shape, is, sizeof is);
    for (int k = 0; k < ids_ndim; k++)
        QKV_CHECK(ids_shape[k] >= 1, "embedding: ids shape %s: dim %d is %d (table %s)", is, k,
                  ids_shape[k], ts);
    QKV_CHECK(ids, "embedding: ids is NULL (ids %s, table %s)", is, ts);
    size_t n_ids = qkv_shape_size(ids_ndim, ids_shape);
    int V = table->shape[0];
    for (size_t p = 0; p < n_ids; p++)
        QKV_CHECK(ids[p] >= 0 && ids[p] < V,
                  "embedding: id %d at position %zu of ids %s is outside [0,%d) for table %s",
                  (int)ids[p], p, is, V, ts);
}

qkv_tensor *qkv_embedding(qkv_tape *tape, qkv_tensor *table, const int32_t *ids, int ids_ndim,
                          const int *ids_shape) {
    qkv_tensor_check_live(table, "embedding");
    check_embedding(table, ids, ids_ndim, ids_shape);
    int D = table->shape[1], out_shape[QKV_MAX_DIMS];
    if (ids_ndim) memcpy(out_shape, ids_shape, (size_t)ids_ndim * sizeof(int));
    out_shape[ids_ndim] = D;
    qkv_tensor *y = qkv_tape_tensor(tape, ids_ndim + 1, out_shape);
    size_t n_ids = y->size / (size_t)D;
    /* out[p, :] = table[ids[p], :], one row per position. */
    QKV_FOR(QKV_PARALLEL(y->size), schedule(static), (size_t p = 0; p < n_ids; p++), {
        memcpy(y->data + p * (size_t)D, table->data + (size_t)ids[p] * (size_t)D, (size_t)D * sizeof(float));
    });
    qkv_node *node = qkv_tape_record(tape, "embedding", y, embedding_backward, 1, &table);
    if (node) {
        int32_t *saved_ids = qkv_tape_alloc(tape, n_ids * sizeof(int32_t));
        memcpy(saved_ids, ids, n_ids * sizeof(int32_t));
        node->saved = saved_ids;
    }
    return y;
}
