/* tensor.c — owned tensors, shapes, and small utilities. See tensor.h. */
#include "core/ops/tensor.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "core/kernels/multiversion.h"

/* Each dim >= 1, and the byte count size * 4 fits in a size_t (no wrap-around). */
static void check_shape(const char *where, int ndim, const int *shape) {
    QKV_CHECK(ndim >= 0 && ndim <= QKV_MAX_DIMS, "%s: ndim %d outside 0..%d", where, ndim,
              QKV_MAX_DIMS);
    size_t bytes = sizeof(float);
    for (int i = 0; i < ndim; i++) {
        QKV_CHECK(shape[i] >= 1, "%s: dim %d is %d (must be >= 1)", where, i, shape[i]);
        QKV_CHECK(!__builtin_mul_overflow(bytes, (size_t)shape[i], &bytes),
                  "%s: shape too large (dim %d = %d overflows the byte count)", where, i, shape[i]);
    }
}

size_t qkv_shape_size(int ndim, const int *shape) {
    size_t n = 1;
    for (int i = 0; i < ndim; i++) n *= (size_t)shape[i];
    return n;
}


/* One float buffer for a tensor: fatal on failure, or (try_file != NULL) NULL with
 * the error recorded against the input file that asked for it. */
static float *tensor_floats(size_t n, const char *try_file, const char *what) {
    size_t bytes = qkv_size_mul(n, sizeof(float));
    float *p = try_file ? qkv_try_malloc_aligned(bytes, try_file, what) : qkv_malloc_aligned(bytes, what);
    if (p) memset(p, 0, n * sizeof(float));
    return p;
}

static qkv_tensor *tensor_new(const char *try_file, const char *name, int ndim, const int *shape, int requires_grad) {
    check_shape("tensor_create", ndim, shape);
    char what[96];
    snprintf(what, sizeof what, "tensor '%.64s'", name ? name : "(unnamed)");
    qkv_tensor *t = qkv_calloc(1, sizeof *t, what);
    t->ndim = ndim;
    if (ndim > 0) memcpy(t->shape, shape, (size_t)ndim * sizeof(int)); /* a scalar may pass shape NULL */
    t->size = qkv_shape_size(ndim, shape);
    t->requires_grad = requires_grad;
    t->owned = 1;
    t->data = tensor_floats(t->size, try_file, what);
    if (t->data && requires_grad) t->grad = tensor_floats(t->size, try_file, what);
    if (!t->data || (requires_grad && !t->grad)) { /* only a try allocation gets here */
        free(t->data);
        free(t);
        return NULL;
    }
    if (name) t->name = qkv_strdup(name, what);
    return t;
}

qkv_tensor *qkv_tensor_create(const char *name, int ndim, const int *shape, int requires_grad) {
    return tensor_new(NULL, name, ndim, shape, requires_grad);
}

qkv_tensor *qkv_tensor_try_create(const char *file, const char *name, int ndim, const int *shape,
                                  int requires_grad) {
    QKV_CHECK(file != NULL, "tensor_try_create: file is NULL");
    return tensor_new(file, name, ndim, shape, requires_grad);
}

void qkv_tensor_free(qkv_tensor *t) {
    if (!t) return;
    QKV_CHECK(t->owned, "tensor_free: %s is a tape activation; it dies at qkv_tape_reset",
              t->name ? t->name : "tensor");
    free(t->data);
    free(t->grad);
    free((char *)t->name);
    free(t);
}

int qkv_same_shape(const qkv_tensor *a, const qkv_tensor *b) {
    if (a->ndim != b->ndim) return 0;
    for (int i = 0; i < a->ndim; i++)
        if (a->shape[i] != b->shape[i]) return 0;
    return 1;
}

char *qkv_dims_str(int ndim, const int *dims, char *buf, size_t len) {
    ndim = ndim < 0 ? 0 : ndim > QKV_MAX_DIMS ? QKV_MAX_DIMS : ndim;
    size_t used = (size_t)snprintf(buf, len, "[");
    for (int i = 0; i < ndim && used < len; i++)
        used += (size_t)snprintf(buf + used, len - used, i ? ",%d" : "%d", dims[i]);
    if (used < len) snprintf(buf + used, len - used, "]");
    return buf;
}

char *qkv_shape_str(const qkv_tensor *t, char *buf, size_t len) { return qkv_dims_str(t->ndim, t->shape, buf, len); }

int qkv_axis(const char *op, const qkv_tensor *t, int axis) {
    char shape[QKV_SHAPE_STR_LEN];
    int resolved = axis < 0 ? axis + t->ndim : axis;
    QKV_CHECK(resolved >= 0 && resolved < t->ndim, "%s: axis %d out of range for %s", op, axis,
              qkv_shape_str(t, shape, sizeof shape));
    return resolved;
}

void qkv_axis_split(const qkv_tensor *t, int axis, size_t *outer, size_t *len, size_t *inner) {
    *outer = qkv_shape_size(axis, t->shape);
    *len = (size_t)t->shape[axis];
    *inner = qkv_shape_size(t->ndim - axis - 1, t->shape + axis + 1);
}

void qkv_tensor_fill(qkv_tensor *t, float value) {
    for (size_t i = 0; i < t->size; i++) t->data[i] = value;
}

/* Counted in 32 bits per block of 2^16 (the loop's lanes stay 32 bits wide), and
 * compiled per vector width (multiversion.h): the baseline build's loop widened
 * each count to 64 bits, 2 floats a vector. Integer work: the same count anywhere. */
static inline __attribute__((always_inline)) void count_nonfinite_body(const float *restrict x, size_t n,
                                                                       size_t *bad) {
    size_t total = 0;
    for (size_t i0 = 0; i0 < n; i0 += (size_t)1 << 16) {
        size_t end = n - i0 < ((size_t)1 << 16) ? n : i0 + ((size_t)1 << 16);
        uint32_t block = 0;
        for (size_t i = i0; i < end; i++) {
            uint32_t bits;
            memcpy(&bits, x + i, sizeof bits);
            block += (bits & 0x7f800000u) == 0x7f800000u;
        }
        total += block;
    }
    *bad = total;
}
QKV_MULTIVERSION(count_nonfinite, (const float *restrict x, size_t n, size_t *bad), (x, n, bad))

size_t qkv_count_nonfinite(const float *x, size_t n) {
    size_t bad;
    count_nonfinite(x, n, &bad);
    return bad;
}

void qkv_tensor_copy_from(qkv_tensor *t, const float *values) {
    memcpy(t->data, values, t->size * sizeof(float));
}

void qkv_tensor_zero_grad(qkv_tensor *t) {
    if (t->grad) memset(t->grad, 0, t->size * sizeof(float));
}

void qkv_tensor_print(const qkv_tensor *t, FILE *out) {
    char shape[QKV_SHAPE_STR_LEN];
    fprintf(out, "%s%s%s [", t->name ? t->name : "tensor", t->name ? " " : "",
            qkv_shape_str(t, shape, sizeof shape));
    size_t show = t->size < 8 ? t->size : 8;
    for (size_t i = 0; i < show; i++) fprintf(out, i ? ", %.6g" : "%.6g", t->data[i]);
    fprintf(out, "%s]\n", show < t->size ? ", ..." : "");
}

float qkv_at(const qkv_tensor *t, int i0, int i1, int i2, int i3) {
    int idx[QKV_MAX_DIMS] = {i0, i1, i2, i3};
    size_t off = 0;
    for (int d = 0; d < t->ndim; d++) {
        QKV_CHECK(idx[d] >= 0 && idx[d] < t->shape[d], "at: index %d out of range for dim %d of size %d",
                  idx[d], d, t->shape[d]);
        off = off * (size_t)t->shape[d] + (size_t)idx[d];
    }
    return t->data[off];
}

/* Used by tape.c for arena tensors. */
void qkv__check_shape(const char *where, int ndim, const int *shape) { check_shape(where, ndim, shape); }
