/* ops_softmax.c — softmax, log-softmax, cross-entropy and mean squared error.
 *
 * Contract (see ops.h):
 *  - softmax and log-softmax work on rows: the last axis of x, any leading shape.
 *    Every row is made stable by subtracting its max before exp, so huge or
 *    equal logits give no NaN or Inf.
 *  - cross_entropy is fused: per row, loss_i = log sum_j exp(x_ij) - x_i,t_i, computed
 *    as (max - x_i,t_i) + log sum_j exp(x_ij - max). Rows whose target is
 *    ignore_index count for nothing; the scalar is sum_i w_i loss_i / sum_i w_i over
 *    the counted rows (w_i = 1 when weights is NULL), and 0 with a zero gradient
 *    when no row counts. Targets and weights are copied to the arena for backward.
 *    With NULL weights this is PyTorch's F.cross_entropy(reduction='mean', ignore_index).
 *  - mse is the mean over all elements of (pred - target)^2.
 *  - each row is processed by one thread; whole-tensor sums use qkv_sum_fixed, so
 *    results do not depend on the thread count.
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "core/error.h"
#include "core/mathfn.h"
#include "core/kernels/fastmath.h"
#include "core/kernels/multiversion.h"
#include "core/ops/ops.h"
#include "core/kernels/parallel.h"

/* Rough cost of one element of a row loop, in flops (one exp dominates). */
#define EXP_WORK 16
/* A row's exponentials made this many at a time (on the stack), then summed. */
#define EXP_CHUNK 256

/* ---- the shared row loop ---------------------------------------------------- */

/* A row's max and sum_j exp(x_j - max). */
typedef struct row_exp {
    float max;
    double sum;
} row_exp;

/* Max and shifted exp-sum of a row; the exponentials go to exps unless it is NULL.
 * They are made EXP_CHUNK at a time in a loop of their own, which the compiler
 * vectorizes for the path's width, and then added in order in double: the sum
 * is a chain of dependent additions, which kept the loop that did both scalar. */
static inline __attribute__((always_inline)) void row_exp_sum_into_body(const float *x, size_t n,
                                                                        float *exps, row_exp *out) {
    float max = x[0];
    for (size_t j = 1; j < n; j++)
        if (x[j] > max) max = x[j];
    double sum = 0.0;
    for (size_t j0 = 0; j0 < n; j0 += EXP_CHUNK) {
        size_t m = n - j0 < EXP_CHUNK ? n - j0 : EXP_CHUNK;
        float chunk[EXP_CHUNK], *e = exps ? exps + j0 : chunk;
        for (size_t j = 0; j < m; j++) e[j] = qkv_fast_exp_nonpositive(x[j0 + j] - max);
        for (size_t j = 0; j < m; j++) sum += e[j];
    }
    *out = (row_exp){max, sum};
}
QKV_MULTIVERSION(row_exp_sum_into, (const float *x, size_t n, float *exps, row_exp *out), (x, n, exps, out))

static row_exp row_exp_sum(const float *x, size_t n, float *exps) {
    row_exp r;
    row_exp_sum_into(x, n, exps, &r);
    return r;
}

/* y = exp(x - max) / sum. */
static void softmax_row(const float *x, float *y, size_t n) {
    row_exp r = row_exp_sum(x, n, y);
    float inv = (float)(1.0 / r.sum);
    for (size_t j = 0; j < n; j++) y[j] *= inv;
}

/* y = (x - max) - log sum. */
static void log_softmax_row(const float *x, float *y, size_t n) {
    row_exp r = row_exp_sum(x, n, NULL);
    float log_sum = (float)qkv_math_log(r.sum);
    for (size_t j = 0; j < n; j++) y[j] = (x[j] - r.max) - log_sum;
}

/* Checks x and views it as rows of its last axis. */
static void rows_of(const char *op, const qkv_tensor *x, size_t *rows, size_t *cols) {
    qkv_tensor_check_live(x, op);
    int last = qkv_axis(op, x, -1);
    *cols = (size_t)x->shape[last];
    *rows = x->size / *cols;
}

/* ---- softmax and log-softmax ------------------------------------------------ */

/* y = softmax(x)  =>  dx = y * (dy - sum_j dy_j y_j), per row. */
static void softmax_backward(qkv_node *node) {
    qkv_tensor *x = node->inputs[0];
    if (!x->requires_grad) return;
    const float *y = node->out->data, *dy = node->out->grad;
    float *dx = qkv_tensor_grad(x);
    size_t cols = (size_t)x->shape[x->ndim - 1], rows = x->size / cols;
    QKV_FOR(QKV_PARALLEL(x->size * 4), schedule(static), (size_t r = 0; r < rows; r++), {
        const float *y_r = y + r * cols, *dy_r = dy + r * cols;
        double dot = 0.0;
        for (size_t j = 0; j < cols; j++) dot += (double)dy_r[j] * y_r[j];
        float *dx_r = dx + r * cols;
        for (size_t j = 0; j < cols; j++) dx_r[j] += y_r[j] * (dy_r[j] - (float)dot);
    });
}

/* y = log_softmax(x)  =>  dx = dy - softmax(x) * sum_j dy_j, with softmax = exp(y). */
static void log_softmax_backward(qkv_node *node) {
    qkv_tensor *x = node->inputs[0];
    if (!x->requires_grad) return;
    const float *y = node->out->data, *dy = node->out->grad;
    float *dx = qkv_tensor_grad(x);
    size_t cols = (size_t)x->shape[x->ndim - 1], rows = x->size / cols;
    QKV_FOR(QKV_PARALLEL(x->size * EXP_WORK), schedule(static), (size_t r = 0; r < rows; r++), {
        const float *y_r = y + r * cols, *dy_r = dy + r * cols;
        double dy_sum = 0.0;
        for (size_t j = 0; j < cols; j++) dy_sum += dy_r[j];
        float *dx_r = dx + r * cols;
        for (size_t j = 0; j < cols; j++) dx_r[j] += dy_r[j] - qkv_fast_exp_nonpositive(y_r[j]) * (float)dy_sum;
    });
}

/* Softmax (as_log 0) or log-softmax (as_log 1) over the last axis. */
static qkv_tensor *softmax_family(qkv_tape *tape, qkv_tensor *x, int as_log) {
    const char *op = as_log ? "log_softmax" : "softmax";
    size_t rows, cols;
    rows_of(op, x, &rows, &cols);
    qkv_tensor *y = qkv_tape_tensor(tape, x->ndim, x->shape);
    QKV_FOR(QKV_PARALLEL(x->size * EXP_WORK), schedule(static), (size_t r = 0; r < rows; r++), {
        if (as_log) log_softmax_row(x->data + r * cols, y->data + r * cols, cols);
        else softmax_row(x->data + r * cols, y->data + r * cols, cols);
    });
    qkv_tape_record(tape, op, y, as_log ? log_softmax_backward : softmax_backward, 1, &x);
    return y;
}

qkv_tensor *qkv_softmax(qkv_tape *tape, qkv_tensor *x) { return softmax_family(tape, x, 0); }

qkv_tensor *qkv_log_softmax(qkv_tape *tape, qkv_tensor *x) { return softmax_family(tape, x, 1); }

/* ---- cross-entropy ----------------------------------------------------------- */

/* Per row: its max and log sum_j exp(x_j - max), so log softmax_j = (x_j - max) - log_sum. */
typedef struct row_lse {
    float max, log_sum;
} row_lse;

typedef struct ce_saved {
    int32_t *targets;
    float *weights;      /* NULL: every row weighs 1 */
    row_lse *lse;        /* per row; unused for ignored rows */
    double sum_w;        /* sum of the counted rows' weights */
    int32_t ignore_index;
} ce_saved;

/* Every target is ignore_index or a class in [0, cols). */
static void check_targets(const qkv_tensor *logits, const int32_t *targets, size_t rows,
                          size_t cols, int32_t ignore_index) {
    char shape[QKV_SHAPE_STR_LEN];
    QKV_CHECK(targets != NULL, "cross_entropy: logits %s: targets is NULL",
              qkv_shape_str(logits, shape, sizeof shape));
    for (size_t r = 0; r < rows; r++) {
        int32_t t = targets[r];
        if (t == ignore_index) continue;
        QKV_CHECK(t >= 0 && (size_t)t < cols,
                  "cross_entropy: logits %s: row %zu target %d outside [0,%zu) and not ignore_index %d",
                  qkv_shape_str(logits, shape, sizeof shape), r, (int)t, cols, (int)ignore_index);
    }
}

static void *arena_copy(qkv_tape *tape, const void *src, size_t bytes) {
    return memcpy(qkv_tape_alloc(tape, bytes), src, bytes);
}

/* dx_j += coef * (softmax_j - [j == t]) for one row, softmax_j from the row's lse. */
static inline __attribute__((always_inline)) void cross_entropy_dx_row_body(const float *x, size_t n, row_lse lse,
                                                                            float coef, size_t t, float *dx) {
    for (size_t j = 0; j < n; j++) {
        float p = qkv_fast_exp_nonpositive((x[j] - lse.max) - lse.log_sum);
        dx[j] += coef * (p - (j == t ? 1.0f : 0.0f));
    }
}
QKV_MULTIVERSION(cross_entropy_dx_row, (const float *x, size_t n, row_lse lse, float coef, size_t t, float *dx),
                 (x, n, lse, coef, t, dx))

/* loss = sum_i w_i l_i / sum_w  =>  dx_ij += dloss * w_i / sum_w * (softmax_ij - [j == t_i])
 * over counted rows; nothing when sum_w is 0. */
static void cross_entropy_backward(qkv_node *node) {
    qkv_tensor *logits = node->inputs[0];
    const ce_saved *s = node->saved;
    if (!logits->requires_grad || s->sum_w == 0.0) return;
    float *dx = qkv_tensor_grad(logits);
    size_t cols = (size_t)logits->shape[logits->ndim - 1], rows = logits->size / cols;
    double dloss = node->out->grad[0];
    QKV_FOR(QKV_PARALLEL(logits->size * EXP_WORK), schedule(static), (size_t r = 0; r < rows; r++), {
        int32_t t = s->targets[r];
        if (t == s->ignore_index) continue;
        float coef = (float)(dloss * (s->weights ? s->weights[r] : 1.0f) / s->sum_w);
        cross_entropy_dx_row(logits->data + r * cols, cols, s->lse[r], coef, (size_t)t, dx + r * cols);
    });
}

qkv_tensor *qkv_cross_entropy(qkv_tape *tape, qkv_tensor *logits, const int32_t *targets,
                              int32_t ignore_index, const float *weights) {
    size_t rows, cols;
    rows_of("cross_entropy", logits, &rows, &cols);
    check_targets(logits, targets, rows, cols, ignore_index);
    row_lse *lse = qkv_tape_alloc(tape, rows * sizeof *lse);
    float *row_loss = qkv_tape_alloc(tape, rows * sizeof(float)); /* w_i * l_i, 0 if ignored */
    float *row_w = qkv_tape_alloc(tape, rows * sizeof(float));    /* w_i, 0 if ignored */
    QKV_FOR(QKV_PARALLEL(logits->size * EXP_WORK), schedule(static), (size_t r = 0; r < rows; r++), {
        const float *x_r = logits->data + r * cols;
        int32_t t = targets[r];
        if (t == ignore_index) {
            lse[r] = (row_lse){0.0f, 0.0f};
            row_loss[r] = row_w[r] = 0.0f;
            continue;
        }
        row_exp e = row_exp_sum(x_r, cols, NULL);
        lse[r] = (row_lse){e.max, (float)qkv_math_log(e.sum)};
        row_w[r] = weights ? weights[r] : 1.0f;
        row_loss[r] = row_w[r] * ((e.max - x_r[t]) + lse[r].log_sum);
    });
    double sum_w = qkv_sum_fixed(row_w, rows);
    double sum_loss = qkv_sum_fixed(row_loss, rows);
    const int no_dims[1] = {1};
    qkv_tensor *out = qkv_tape_tensor(tape, 0, no_dims);
    out->data[0] = sum_w != 0.0 ? (float)(sum_loss / sum_w) : 0.0f;

    qkv_node *node = qkv_tape_record(tape, "cross_entropy", out, cross_entropy_backward, 1, &logits);
    if (node) {
        ce_saved *s = qkv_tape_alloc(tape, sizeof *s);
        s->targets = arena_copy(tape, targets, rows * sizeof(int32_t));
        s->weights = weights ? arena_copy(tape, weights, rows * sizeof(float)) : NULL;
        s->lse = lse;
        s->sum_w = sum_w;
        s->ignore_index = ignore_index;
        node->saved = s;
    }
    return out;
}

/* ---- mean squared error ------------------------------------------------------ */

/* loss = sum_i (p_i - t_i)^2 / n  =>  dp_i += 2 (p_i - t_i) / n * dloss, dt_i -= the same. */
static void mse_backward(qkv_node *node) {
    qkv_tensor *pred = node->inputs[0], *target = node->inputs[1];
    float *dp = pred->requires_grad ? qkv_tensor_grad(pred) : NULL;
    float *dt = target->requires_grad ? qkv_tensor_grad(target) : NULL;
    const float *diff = node->saved;  /* p - t, kept by the forward */
    size_t n = pred->size;
    float coef = (float)(2.0 * node->out->grad[0] / (double)n);
    QKV_FOR(QKV_PARALLEL(n), schedule(static), (size_t i = 0; i < n; i++), {
        float d = coef * diff[i];
        if (dp) dp[i] += d;
        if (dt) dt[i] -= d;
    });
}

qkv_tensor *qkv_mse(qkv_tape *tape, qkv_tensor *pred, qkv_tensor *target) {
    char pred_shape[QKV_SHAPE_STR_LEN], target_shape[QKV_SHAPE_STR_LEN];
    qkv_tensor_check_live(pred, "mse");
    qkv_tensor_check_live(target, "mse");
    QKV_CHECK(qkv_same_shape(pred, target), "mse: pred %s vs target %s: shapes differ",
              qkv_shape_str(pred, pred_shape, sizeof pred_shape),
              qkv_shape_str(target, target_shape, sizeof target_shape));
    size_t n = pred->size;
    float *diff = qkv_tape_alloc(tape, n * sizeof(float));
    QKV_FOR(QKV_PARALLEL(n), schedule(static), (size_t i = 0; i < n; i++), {
        diff[i] = pred->data[i] - target->data[i];
    });
    const int no_dims[1] = {1};
    qkv_tensor *out = qkv_tape_tensor(tape, 0, no_dims);
    out->data[0] = (float)(qkv_sum_squares_fixed(diff, n) / (double)n); /* squares in double */
    qkv_tensor *inputs[2] = {pred, target};
    qkv_node *node = qkv_tape_record(tape, "mse", out, mse_backward, 2, inputs);
    if (node) node->saved = diff;
    return out;
}
