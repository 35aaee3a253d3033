/* ops_matmul.c — the matmul op: C = op(A) op(B), forward and backward.
 *
 * op transposes the last two dims when trans_a / trans_b is set. A is [..., M, K]
 * (or [..., K, M] with trans_a), B is [..., K, N] (or [..., N, K] with trans_b).
 * The batch dims (all but the last two) of A and B must be equal, or one operand is
 * 2-D and shared by every matrix of the other; C is [batch dims..., M, N].
 *
 * Every product, forward and backward, goes through qkv_gemm_batched, via one
 * helper (batched_product) that also flattens a batch into one large product when
 * the memory layout allows it (the linear-layer case x W^T, and its weight
 * gradient), which parallelizes better than many small products.
 */
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>

#include "core/error.h"
#include "core/kernels/multiversion.h"
#include "core/kernels/gemm.h"
#include "core/ops/ops.h"
#include "core/kernels/parallel.h"

/* A batch of row-major matrices stored in a tensor: matrix b starts at
 * data + b * stride; stride 0 means one matrix shared by the whole batch. */
typedef struct mat_view {
    float *data;
    int rows, cols;   /* as stored, before any transpose */
    size_t stride;
} mat_view;

static mat_view view_of(float *data, const qkv_tensor *t, int batch) {
    mat_view v = {data, t->shape[t->ndim - 2], t->shape[t->ndim - 1], 0};
    size_t matrix = (size_t)v.rows * v.cols;
    v.stride = t->ndim == 2 && batch > 1 ? 0 : matrix;
    return v;
}

/* out_b (+)= op(X_b) op(Y_b) for b in [0, batch); beta 0 overwrites, 1 adds.
 * out_stride 0 sums the whole batch into one matrix, in batch order. */
static void batched_product(int batch, mat_view x, int tx, mat_view y, int ty, float *out,
                            size_t out_stride, float beta) {
    int M = tx ? x.cols : x.rows, K = tx ? x.rows : x.cols, N = ty ? y.rows : y.cols;
    int summed = batch > 1 && out_stride == 0, batched_x = x.stride != 0, batched_y = y.stride != 0;
    if (summed && tx && !ty && batched_x && batched_y && (long long)batch * K <= INT_MAX) {
        /* sum_b X_b^T Y_b = X_all^T Y_all, with X_all, Y_all the batch stacked by rows */
        K *= batch;
        batch = 1;
    } else if (!summed && !tx && batched_x && !batched_y && (long long)batch * M <= INT_MAX) {
        /* X_b Y for every b = X_all Y: one product over all batch rows */
        M *= batch;
        batch = 1;
    }
    qkv_gemm_batched(batch, tx, ty, M, N, K, 1.0f, x.data, x.cols, x.stride, y.data, y.cols,
                     y.stride, beta, out, N, batch > 1 ? out_stride : 0);
}

/* ---- shape checking ------------------------------------------------------------- */

typedef struct matmul_dims {
    int batch, M, N, K;
    int ndim, shape[QKV_MAX_DIMS];   /* of C */
} matmul_dims;

/* Stops with "matmul: [4,3] x [5,2]^T: <reason>"; ^T marks a transposed operand. */
__attribute__((format(printf, 5, 6))) _Noreturn static void
matmul_fail(const qkv_tensor *a, const qkv_tensor *b, int ta, int tb, const char *fmt, ...) {
    char sa[QKV_SHAPE_STR_LEN], sb[QKV_SHAPE_STR_LEN], reason[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(reason, sizeof reason, fmt, ap);
    va_end(ap);
    qkv_fatal("matmul: %s%s x %s%s: %s", qkv_shape_str(a, sa, sizeof sa), ta ? "^T" : "",
              qkv_shape_str(b, sb, sizeof sb), tb ? "^T" : "", reason);
}

static matmul_dims matmul_dims_of(const qkv_tensor *a, const qkv_tensor *b, int ta, int tb) {
    if (a->ndim < 2 || b->ndim < 2)
        matmul_fail(a, b, ta, tb, "operands need at least 2 dims, got %d and %d", a->ndim, b->ndim);
    int a_rows = a->shape[a->ndim - 2], a_cols = a->shape[a->ndim - 1];
    int b_rows = b->shape[b->ndim - 2], b_cols = b->shape[b->ndim - 1];
    matmul_dims d;
    d.M = ta ? a_cols : a_rows;
    d.K = ta ? a_rows : a_cols;
    d.N = tb ? b_rows : b_cols;
    int b_inner = tb ? b_cols : b_rows;
    if (d.K != b_inner) matmul_fail(a, b, ta, tb, "inner dims %d != %d", d.K, b_inner);

    const qkv_tensor *batched = a->ndim >= b->ndim ? a : b;
    if (a->ndim > 2 && b->ndim > 2) {
        int equal = a->ndim == b->ndim;
        for (int i = 0; equal && i < a->ndim - 2; i++) equal = a->shape[i] == b->shape[i];
        if (!equal)
            matmul_fail(a, b, ta, tb, "batch dims differ (they must be equal, or one operand 2-D)");
    }
    d.ndim = batched->ndim;
    d.batch = 1;
    for (int i = 0; i < d.ndim - 2; i++) {
        d.shape[i] = batched->shape[i];
        d.batch *= batched->shape[i];
    }
    d.shape[d.ndim - 2] = d.M;
    d.shape[d.ndim - 1] = d.N;
    return d;
}

/* ---- forward and backward -------------------------------------------------------- */

/* With G = dL/dC:  dL/dop(A) = G op(B)^T   and   dL/dop(B) = op(A)^T G.
 * A transposed operand receives the transpose: dL/dA = op(B) G^T (trans_a),
 * dL/dB = G^T op(A) (trans_b). A shared 2-D operand sums over the batch. */
static void matmul_backward(qkv_node *node) {
    qkv_tensor *a = node->inputs[0], *b = node->inputs[1], *c = node->out;
    int ta = node->iarg[0], tb = node->iarg[1], batch = node->iarg[2];
    mat_view va = view_of(a->data, a, batch), vb = view_of(b->data, b, batch);
    mat_view grad_c = view_of(c->grad, c, 1);
    float beta;
    if (a->requires_grad) { /* every element of dA is written: the first write assigns */
        float *grad_a = qkv_tensor_grad_to_write(a, &beta);
        if (!ta) batched_product(batch, grad_c, 0, vb, !tb, grad_a, va.stride, beta);
        else batched_product(batch, vb, tb, grad_c, 1, grad_a, va.stride, beta);
    }
    if (b->requires_grad) {
        float *grad_b = qkv_tensor_grad_to_write(b, &beta);
        if (!tb) batched_product(batch, va, !ta, grad_c, 0, grad_b, vb.stride, beta);
        else batched_product(batch, grad_c, 1, va, ta, grad_b, vb.stride, beta);
    }
}

qkv_tensor *qkv_matmul(qkv_tape *tape, qkv_tensor *a, qkv_tensor *b, int trans_a, int trans_b) {
    qkv_tensor_check_live(a, "matmul");
    qkv_tensor_check_live(b, "matmul");
    int ta = trans_a != 0, tb = trans_b != 0;
    matmul_dims d = matmul_dims_of(a, b, ta, tb);
    qkv_tensor *c = qkv_tape_tensor(tape, d.ndim, d.shape);
    batched_product(d.batch, view_of(a->data, a, d.batch), ta, view_of(b->data, b, d.batch), tb,
                    c->data, (size_t)d.M * d.N, 0.0f);
    qkv_tensor *inputs[2] = {a, b};
    qkv_node *node = qkv_tape_record(tape, "matmul", c, matmul_backward, 2, inputs);
    if (node) {
        /* 2 M N K per product: the forward's, and one for each input's gradient */
        node->flops = 2.0 * d.batch * d.M * d.N * (double)d.K * (1 + a->requires_grad + b->requires_grad);
        node->iarg[0] = ta;
        node->iarg[1] = tb;
        node->iarg[2] = d.batch;
    }
    return c;
}

/* ---- affine: y = x W^T + b in one node --------------------------------------------- */

#define BIAS_COLS 64 /* bias-gradient columns per work item */

static inline __attribute__((always_inline)) void add_bias_row_body(float *restrict row,
                                                                    const float *restrict b, int n) {
    for (int j = 0; j < n; j++) row[j] = row[j] + b[j];
}
QKV_MULTIVERSION(add_bias_row, (float *restrict row, const float *restrict b, int n), (row, b, n))

/* y[r, :] += b for every row r: the same float additions as qkv_add's broadcast. */
static void add_bias_rows(float *y, const float *b, size_t rows, int n) {
    QKV_FOR(QKV_PARALLEL(rows * (size_t)n), schedule(static), (size_t r = 0; r < rows; r++), {
        add_bias_row(y + r * (size_t)n, b, n);
    });
}

/* db[j] += (float) sum_r g[r, j], summed in double in row order: the order and
 * precision of qkv_add's broadcast reduction, so the two agree bitwise. Parallel
 * over blocks of BIAS_COLS columns, each summed by one thread. */
static inline __attribute__((always_inline)) void bias_grad_block_body(float *db, const float *g,
                                                                       size_t rows, int n, int j0,
                                                                       int j1) {
    double acc[BIAS_COLS] = {0};
    for (size_t r = 0; r < rows; r++) {
        const float *row = g + r * (size_t)n;
        for (int j = j0; j < j1; j++) acc[j - j0] += row[j];
    }
    for (int j = j0; j < j1; j++) db[j] += (float)acc[j - j0];
}
QKV_MULTIVERSION(bias_grad_block, (float *db, const float *g, size_t rows, int n, int j0, int j1),
                 (db, g, rows, n, j0, j1))

static void bias_grad(float *db, const float *g, size_t rows, int n) {
    int blocks = (n + BIAS_COLS - 1) / BIAS_COLS;
    QKV_FOR(QKV_PARALLEL(rows * (size_t)n), schedule(static), (int blk = 0; blk < blocks; blk++), {
        int j0 = blk * BIAS_COLS, j1 = j0 + BIAS_COLS < n ? j0 + BIAS_COLS : n;
        bias_grad_block(db, g, rows, n, j0, j1);
    });
}

/* With G = dL/dy as a [rows, N] matrix and X the input as [rows, K]:
 * dX = G W, dW = G^T X, db = sum over rows of G (each added into the gradient). */
static void affine_backward(qkv_node *node) {
    qkv_tensor *x = node->inputs[0], *w = node->inputs[1], *y = node->out;
    qkv_tensor *b = node->n_inputs > 2 ? node->inputs[2] : NULL;
    int N = w->shape[0], K = w->shape[1];
    size_t rows = x->size / (size_t)K;
    const float *g = y->grad;
    if (x->requires_grad) { /* every element of dX is written: the first write assigns */
        float beta, *dx = qkv_tensor_grad_to_write(x, &beta);
        qkv_gemm(0, 0, (int)rows, K, N, 1.0f, g, N, w->data, K, beta, dx, K);
    }
    if (w->requires_grad) { /* dW assigned when new (a redirected parameter, tape.h), else added */
        float beta, *dw = qkv_tensor_grad_to_write(w, &beta);
        qkv_gemm(1, 0, N, K, (int)rows, 1.0f, g, N, x->data, K, beta, dw, K);
    }
    if (b && b->requires_grad) bias_grad(qkv_tensor_grad(b), g, rows, N);
}

qkv_tensor *qkv_affine(qkv_tape *tape, qkv_tensor *x, qkv_tensor *w, qkv_tensor *b) {
    char sx[QKV_SHAPE_STR_LEN], sw[QKV_SHAPE_STR_LEN], sb[QKV_SHAPE_STR_LEN];
    qkv_tensor_check_live(x, "affine");
    qkv_tensor_check_live(w, "affine");
    if (b) qkv_tensor_check_live(b, "affine");
    QKV_CHECK(w->ndim == 2 && x->ndim >= 1 && x->shape[x->ndim - 1] == w->shape[1],
              "affine: %s x %s^T: inner dims do not match (W must be [out, in])",
              qkv_shape_str(x, sx, sizeof sx), qkv_shape_str(w, sw, sizeof sw));
    int N = w->shape[0], K = w->shape[1];
    QKV_CHECK(!b || (b->ndim == 1 && b->shape[0] == N), "affine: bias %s for W %s: expected [%d]",
              b ? qkv_shape_str(b, sb, sizeof sb) : "-", qkv_shape_str(w, sw, sizeof sw), N);
    size_t rows = x->size / (size_t)K;
    QKV_CHECK(rows <= INT_MAX, "affine: %s has too many rows", qkv_shape_str(x, sx, sizeof sx));
    int shape[QKV_MAX_DIMS];
    for (int i = 0; i < x->ndim; i++) shape[i] = x->shape[i];
    shape[x->ndim - 1] = N;
    qkv_tensor *y = qkv_tape_tensor(tape, x->ndim, shape);
    qkv_gemm(0, 1, (int)rows, N, K, 1.0f, x->data, K, w->data, K, 0.0f, y->data, N);
    if (b) add_bias_rows(y->data, b->data, rows, N);
    qkv_tensor *inputs[3] = {x, w, b};
    qkv_node *node = qkv_tape_record(tape, "affine", y, affine_backward, b ? 3 : 2, inputs);
    if (node) /* 2 rows N K: forward, dX when x needs it, dW when W does */
        node->flops = 2.0 * (double)rows * N * K * (1 + x->requires_grad + w->requires_grad);
    return y;
}
