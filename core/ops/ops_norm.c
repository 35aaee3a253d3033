/* ops_norm.c — layer norm over the last axis, forward and backward.
 *
 * Contract: qkv_layer_norm(tape, x, gamma, beta, eps) takes x [..., D] (ndim >= 1)
 * and returns y of x's shape,
 *     y = (x - mean) * rstd * gamma + beta,   rstd = 1 / sqrt(var + eps),
 * per row of D elements, with the biased variance (divided by D) as in PyTorch.
 * gamma and beta are [D] or NULL (then 1 and 0); eps >= 0.
 *
 * Each row's mean and variance are accumulated in double, in two passes (mean,
 * then squared deviations), in 4 lanes combined in a fixed order (so the loops
 * vectorize), and saved as float (mean, rstd) for backward. Rows are
 * independent and run in parallel; the gamma/beta gradients are column sums over
 * rows, computed per block of columns with the rows summed in order, so every
 * result is bitwise independent of the thread count.
 */
#include <math.h>
#include <string.h>

#include "core/error.h"
#include "core/kernels/multiversion.h"
#include "core/ops/ops.h"
#include "core/kernels/parallel.h"

#define OP "layer_norm"
/* Columns per task of the gamma/beta gradient: one 64-byte cache line. */
#define COLUMN_BLOCK 16

typedef struct layer_norm_saved {
    float *mean;   /* [rows] */
    float *rstd;   /* [rows]: 1 / sqrt(var + eps) */
} layer_norm_saved;

/* Stops unless p (gamma or beta) is NULL or a live [D] tensor. */
static void check_affine(const char *what, const qkv_tensor *p, const qkv_tensor *x, int D) {
    if (!p) return;
    qkv_tensor_check_live(p, OP);
    char ps[QKV_SHAPE_STR_LEN], xs[QKV_SHAPE_STR_LEN];
    QKV_CHECK(p->ndim == 1 && p->shape[0] == D, OP ": %s %s does not match the last dim %d of x %s",
              what, qkv_shape_str(p, ps, sizeof ps), D, qkv_shape_str(x, xs, sizeof xs));
}

/* Row sums in LANES double accumulators (element i goes to lane i % LANES),
 * combined in a fixed order: vectorized, and the same for any thread count. */
#define LANES 4

static double combine_lanes(const double *lane) { return (lane[0] + lane[1]) + (lane[2] + lane[3]); }

/* Mean and 1 / sqrt(var + eps) of one row, two passes in double. */
static inline __attribute__((always_inline)) void row_stats_body(const float *x, int D, float eps,
                                                                 float *mean, float *rstd) {
    double lane[LANES] = {0};
    int i = 0;
    for (; i + LANES <= D; i += LANES)
        for (int l = 0; l < LANES; l++) lane[l] += x[i + l];
    for (; i < D; i++) lane[0] += x[i];
    double m = combine_lanes(lane) / D;
    double squares[LANES] = {0};
    for (i = 0; i + LANES <= D; i += LANES)
        for (int l = 0; l < LANES; l++) {
            double dev = x[i + l] - m;
            squares[l] += dev * dev;
        }
    for (; i < D; i++) squares[0] += (x[i] - m) * (x[i] - m);
    *mean = (float)m;
    *rstd = (float)(1.0 / sqrt(combine_lanes(squares) / D + (double)eps));
}
QKV_MULTIVERSION(row_stats, (const float *x, int D, float eps, float *mean, float *rstd),
                 (x, D, eps, mean, rstd))

/* y = xhat * gamma + beta for one row, xhat = (x - mean) * rstd. */
static inline __attribute__((always_inline)) void normalize_row_body(
    const float *x, int D, float mean, float rstd, const float *gamma, const float *beta, float *y) {
    for (int i = 0; i < D; i++) {
        float v = (x[i] - mean) * rstd;
        if (gamma) v *= gamma[i];
        if (beta) v += beta[i];
        y[i] = v;
    }
}
QKV_MULTIVERSION(normalize_row, (const float *x, int D, float mean, float rstd, const float *gamma,
                                 const float *beta, float *y), (x, D, mean, rstd, gamma, beta, y))

/* LANES floats and LANES doubles as one value: GCC and Clang vector types, whose
 * operations are the scalar ones lane by lane (the same bits), written out
 * because the compiler left the loop below scalar (about 4 cycles an element). */
typedef float lanes_f __attribute__((vector_size(LANES * sizeof(float))));
typedef double lanes_d __attribute__((vector_size(LANES * sizeof(double))));

static inline __attribute__((always_inline)) lanes_f load_lanes(const float *p) {
    lanes_f v;
    memcpy(&v, p, sizeof v);
    return v;
}

/* dx = from + rstd * (gh - mean(gh) - xhat * mean(gh * xhat)) for one row, gh = g *
 * gamma, from dx's sum so far (add) or 0 (dx not yet written: the same bits as
 * adding into a zeroed row, as 0 + t is t's value with -0 made +0). */
static inline __attribute__((always_inline)) void layer_norm_dx_row_body(
    const float *x, const float *g, const float *gamma, int D, float mean, float rstd, int add,
    float *dx) {
    lanes_d sum_gh = {0}, sum_gh_xhat = {0};
    int i = 0;
    for (; i + LANES <= D; i += LANES) {
        lanes_f gh = gamma ? load_lanes(g + i) * load_lanes(gamma + i) : load_lanes(g + i);
        lanes_f xhat = (load_lanes(x + i) - mean) * rstd;
        lanes_d gh_d = __builtin_convertvector(gh, lanes_d);
        sum_gh += gh_d;
        sum_gh_xhat += gh_d * __builtin_convertvector(xhat, lanes_d);
    }
    for (; i < D; i++) {
        float gh = gamma ? g[i] * gamma[i] : g[i];
        float xhat = (x[i] - mean) * rstd;
        sum_gh[0] += gh;
        sum_gh_xhat[0] += (double)gh * xhat;
    }
    double lanes_gh[LANES], lanes_gh_xhat[LANES];
    memcpy(lanes_gh, &sum_gh, sizeof lanes_gh);
    memcpy(lanes_gh_xhat, &sum_gh_xhat, sizeof lanes_gh_xhat);
    float mean_gh = (float)(combine_lanes(lanes_gh) / D);
    float mean_gh_xhat = (float)(combine_lanes(lanes_gh_xhat) / D);
    for (i = 0; i < D; i++) {
        float gh = gamma ? g[i] * gamma[i] : g[i];
        float xhat = (x[i] - mean) * rstd;
        float t = rstd * (gh - mean_gh - xhat * mean_gh_xhat);
        if (add)
            dx[i] += t;
        else
            dx[i] = 0.0f + t;
    }
}
QKV_MULTIVERSION(layer_norm_dx_row, (const float *x, const float *g, const float *gamma, int D,
                                     float mean, float rstd, int add, float *dx),
                 (x, g, gamma, D, mean, rstd, add, dx))

/* dgamma[d] += sum_r g[r,d] * xhat[r,d] and dbeta[d] += sum_r g[r,d] for the columns
 * [d0, d1) (at most COLUMN_BLOCK), summing rows in order. Either output may be NULL. */
static inline __attribute__((always_inline)) void affine_grad_block_body(
    const float *x, const float *g, const layer_norm_saved *s, size_t rows, int D, int d0, int d1,
    float *dgamma, float *dbeta) {
    double sum_g_xhat[COLUMN_BLOCK] = {0}, sum_g[COLUMN_BLOCK] = {0};
    int width = d1 - d0;
    for (size_t r = 0; r < rows; r++) {
        const float *xr = x + r * (size_t)D + d0, *gr = g + r * (size_t)D + d0;
        float mean = s->mean[r], rstd = s->rstd[r];
        for (int j = 0; j < width; j++) {
            float xhat = (xr[j] - mean) * rstd;
            sum_g_xhat[j] += (double)gr[j] * xhat;
            sum_g[j] += gr[j];
        }
    }
    for (int j = 0; j < width; j++) {
        if (dgamma) dgamma[d0 + j] += (float)sum_g_xhat[j];
        if (dbeta) dbeta[d0 + j] += (float)sum_g[j];
    }
}
QKV_MULTIVERSION(affine_grad_block, (const float *x, const float *g, const layer_norm_saved *s,
                                     size_t rows, int D, int d0, int d1, float *dgamma, float *dbeta),
                 (x, g, s, rows, D, d0, d1, dgamma, dbeta))

/* dx (rows in parallel), then dgamma = sum_rows g * xhat and dbeta = sum_rows g
 * (column blocks in parallel). */
static void layer_norm_backward(qkv_node *node) {
    qkv_tensor *x = node->inputs[0], *gamma = node->inputs[1], *beta = node->inputs[2];
    const layer_norm_saved *s = node->saved;
    const float *g = node->out->grad;
    int D = x->shape[x->ndim - 1];
    size_t rows = x->size / (size_t)D;

    if (x->requires_grad) {
        float from, *dx = qkv_tensor_grad_to_write(x, &from);
        const float *gamma_data = gamma ? gamma->data : NULL;
        int add = from != 0.0f;
        QKV_FOR(QKV_PARALLEL(x->size * 8), schedule(static), (size_t r = 0; r < rows; r++), {
            size_t at = r * (size_t)D;
            layer_norm_dx_row(x->data + at, g + at, gamma_data, D, s->mean[r], s->rstd[r], add, dx + at);
        });
    }
    float *dgamma = gamma && gamma->requires_grad ? qkv_tensor_grad(gamma) : NULL;
    float *dbeta = beta && beta->requires_grad ? qkv_tensor_grad(beta) : NULL;
    if (!dgamma && !dbeta) return;
    int n_blocks = (D + COLUMN_BLOCK - 1) / COLUMN_BLOCK;
    QKV_FOR(n_blocks > 1 && QKV_PARALLEL(x->size * 4), schedule(static), (int b = 0; b < n_blocks; b++), {
        int d0 = b * COLUMN_BLOCK, d1 = d0 + COLUMN_BLOCK < D ? d0 + COLUMN_BLOCK : D;
        affine_grad_block(x->data, g, s, rows, D, d0, d1, dgamma, dbeta);
    });
}

qkv_tensor *qkv_layer_norm(qkv_tape *tape, qkv_tensor *x, qkv_tensor *gamma, qkv_tensor *beta,
                           float eps) {
    qkv_tensor_check_live(x, OP);
    char xs[QKV_SHAPE_STR_LEN];
    QKV_CHECK(x->ndim >= 1, OP ": x %s is a scalar; it needs a last axis to normalize",
              qkv_shape_str(x, xs, sizeof xs));
    int D = x->shape[x->ndim - 1];
    check_affine("gamma", gamma, x, D);
    check_affine("beta", beta, x, D);
    QKV_CHECK(eps >= 0.0f, OP ": eps %g must be >= 0 (x %s)", (double)eps,
              qkv_shape_str(x, xs, sizeof xs));

    size_t rows = x->size / (size_t)D;
    qkv_tensor *y = qkv_tape_tensor(tape, x->ndim, x->shape);
    layer_norm_saved *s = qkv_tape_alloc(tape, sizeof *s);
    s->mean = qkv_tape_alloc(tape, rows * sizeof(float));
    s->rstd = qkv_tape_alloc(tape, rows * sizeof(float));
    const float *gamma_data = gamma ? gamma->data : NULL, *beta_data = beta ? beta->data : NULL;

    QKV_FOR(QKV_PARALLEL(x->size * 8), schedule(static), (size_t r = 0; r < rows; r++), {
        size_t at = r * (size_t)D;
        row_stats(x->data + at, D, eps, &s->mean[r], &s->rstd[r]);
        normalize_row(x->data + at, D, s->mean[r], s->rstd[r], gamma_data, beta_data, y->data + at);
    });

    qkv_tensor *inputs[3] = {x, gamma, beta};
    qkv_node *node = qkv_tape_record(tape, OP, y, layer_norm_backward, 3, inputs);
    if (node) node->saved = s;
    return y;
}
