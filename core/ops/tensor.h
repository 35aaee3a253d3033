/* tensor.h — float32 tensors of at most 4 dimensions, row-major and contiguous.
 *
 * Two lifetimes:
 *  - owned tensors (parameters, data sets) come from qkv_tensor_create(); they own
 *    their data and, if requires_grad, a gradient buffer of the same size. They live
 *    until qkv_tensor_free(). A parameter has a dotted name ("enc.0.attn.wq").
 *  - activations come from a tape's arena (qkv_tape_tensor() in tape.h) and all die
 *    together at qkv_tape_reset(). Their gradient buffer is allocated lazily, from
 *    the same arena, the first time backward needs it (qkv_tensor_grad() in tape.h:
 *    what reads a tape is the tape's, so tensor.c never calls tape.c).
 *
 * A 0-dimensional tensor is a scalar of size 1 (losses are scalars).
 * Shapes are validated: each dim >= 1, ndim 0..4; anything else is a programmer
 * error (qkv_fatal).
 */
#ifndef QKV_TENSOR_H
#define QKV_TENSOR_H

#include <stddef.h>
#include <stdio.h>

#define QKV_MAX_DIMS 4

struct qkv_tape;

typedef struct qkv_tensor {
    int ndim;
    int shape[QKV_MAX_DIMS];
    size_t size;             /* product of the shape */
    float *data;
    float *grad;             /* NULL until needed for activations; owned tensors with requires_grad have it */
    int requires_grad;       /* gradients flow into this tensor */
    int owned;               /* 1: heap (qkv_tensor_create), 0: tape arena */
    const char *name;        /* optional: shown by qkv_tape_print, used by checkpoints */
    struct qkv_tape *tape;   /* the arena this activation lives in (NULL for owned) */
    unsigned long generation;/* tape generation at allocation; stale after a reset */
    /* A parameter's copy on a redirecting tape (tape.h): where its gradient goes.
     * grad stays NULL until the first backward write, which then assigns (a gemm
     * with beta 0) instead of adding into a zeroed buffer. */
    float *grad_home;
    /* A reshape of an activation (qkv_reshape): its gradient is this tensor's
     * buffer, taken when backward first needs it (not at the forward, so that the
     * first write can assign: qkv_tensor_grad_to_write). */
    struct qkv_tensor *grad_of;
} qkv_tensor;

/* Heap-owned tensor, zero-filled. name is copied; it may be NULL. */
qkv_tensor *qkv_tensor_create(const char *name, int ndim, const int *shape, int requires_grad);
/* The same for a tensor whose size an input file asked for: when memory runs out
 * it returns NULL with qkv_last_error() = "<file>: out of memory allocating N
 * bytes for tensor '<name>'" instead of stopping (core/alloc.h). */
qkv_tensor *qkv_tensor_try_create(const char *file, const char *name, int ndim, const int *shape,
                                  int requires_grad);
void qkv_tensor_free(qkv_tensor *t);

/* Shape helpers. qkv_shape_str writes "[4,3]" into buf and returns buf. */
size_t qkv_shape_size(int ndim, const int *shape);
int qkv_same_shape(const qkv_tensor *a, const qkv_tensor *b);
char *qkv_shape_str(const qkv_tensor *t, char *buf, size_t len);
/* The same for a bare shape (ndim clamped to 0..4): "[2,3]". */
char *qkv_dims_str(int ndim, const int *dims, char *buf, size_t len);
#define QKV_SHAPE_STR_LEN 64

/* Resolves a possibly negative axis (-1 = last) or stops naming op and shape. */
int qkv_axis(const char *op, const qkv_tensor *t, int axis);
/* Views t as [outer, len, inner] around axis: len = shape[axis]. */
void qkv_axis_split(const qkv_tensor *t, int axis, size_t *outer, size_t *len, size_t *inner);


/* Filling. */
void qkv_tensor_fill(qkv_tensor *t, float value);
void qkv_tensor_copy_from(qkv_tensor *t, const float *values); /* t->size floats */
void qkv_tensor_zero_grad(qkv_tensor *t);

/* How many of x[0..n) are NaN or Inf (the exponent bits all set): one vectorized
 * pass, the check the trainer runs on every parameter and optimizer value after
 * each step and checkpoints run on every tensor they write or read. */
size_t qkv_count_nonfinite(const float *x, size_t n);

/* Prints shape and the first few values, for debugging and teaching. */
void qkv_tensor_print(const qkv_tensor *t, FILE *out);

/* Element access by multi-index, for tests and small tools (bounds-checked). */
float qkv_at(const qkv_tensor *t, int i0, int i1, int i2, int i3);

#endif
