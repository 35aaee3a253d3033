/* kernel_rows.c — the row loops of the attention op's softmax and backward,
 * compiled once per vector width (simd.h; the table is kernels.h).
 *
 * Plain loops the compiler vectorizes for the path's width. Each element's value
 * is the same float operations on every path: the exponential is fastmath.h's
 * (no fused multiply-add), and a sum along a row keeps QKV_LANES partial sums,
 * element j in partial j % QKV_LANES, combined in simd.h's fixed tree, so that
 * 16-, 8- and 4-float vectors all add the same numbers in the same order. The
 * row dot products are the one exception: one sum in double per row, in column
 * order, rows side by side in the lanes.
 */
#include <math.h>

#include "core/kernels/fastmath.h"
#include "core/kernels/kernels.h"
#include "core/kernels/simd.h"
#include "core/kernels/transpose.h"

QKV_INLINE float row_max(const float *x, int n) {
    float part[QKV_LANES];
    for (int l = 0; l < QKV_LANES; l++) part[l] = -INFINITY;
    int j = 0;
    for (; j + QKV_LANES <= n; j += QKV_LANES)
        for (int l = 0; l < QKV_LANES; l++) part[l] = x[j + l] > part[l] ? x[j + l] : part[l];
    for (int l = 0; j + l < n; l++) part[l] = x[j + l] > part[l] ? x[j + l] : part[l];
    return lanes_max(part);
}

QKV_INLINE float row_sum(const float *x, int n) {
    qkv_vf part[QKV_NV];
    for (int v = 0; v < QKV_NV; v++) part[v] = vf_zero();
    int j = 0;
    for (; j + QKV_LANES <= n; j += QKV_LANES)
        for (int v = 0; v < QKV_NV; v++) part[v] += vf_load(x + j + v * QKV_VW);
    if (j < n) { /* the rest, padded with +0: a partial starts at +0 and so is never
                  * -0 (a sum is -0 only of two -0), and adding +0 leaves it as it is */
        float rest[QKV_LANES] = {0};
        for (int l = 0; j + l < n; l++) rest[l] = x[j + l];
        for (int v = 0; v < QKV_NV; v++) part[v] += vf_load(rest + v * QKV_VW);
    }
    return vf_lanes_sum(part);
}

QKV_INLINE void row_exp_shifted(const float *x, float *y, int n, float m) {
    for (int j = 0; j < n; j++) y[j] = qkv_fast_exp_nonpositive(x[j] - m);
}

QKV_INLINE void row_scale(float *restrict x, int n, float s) {
    for (int j = 0; j < n; j++) x[j] *= s;
}

/* One key block of the attention forward's online softmax, row by row (kernels.h):
 * the loop that called the row kernels above one at a time through the table,
 * 4-5 calls a row of as few as 16 keys. */
static void softmax_block(const float *s, int lds, float *p, int ldp, int nq, int nk, const int *seen,
                          float *max_so_far, double *sum, float *o, int ldo, int dv) {
    for (int r = 0; r < nq; r++) {
        const float *scores = s + (size_t)r * lds;
        float *row = p + (size_t)r * ldp, m = row_max(scores, seen[r]);
        m = m > max_so_far[r] ? m : max_so_far[r];
        if (m == -INFINITY) { /* nothing allowed yet: P~ = 0, O and l stay 0 */
            for (int j = 0; j < nk; j++) row[j] = 0.0f;
            continue;
        }
        /* exp(m_prev - m), 0 when m_prev is -inf (the row's first allowed block) */
        float rescale = max_so_far[r] == -INFINITY ? 0.0f : qkv_fast_exp_nonpositive(max_so_far[r] - m);
        row_exp_shifted(scores, row, seen[r], m);
        for (int j = seen[r]; j < nk; j++) row[j] = 0.0f;
        sum[r] = sum[r] * rescale + row_sum(row, seen[r]);
        /* m_prev -inf: the factor is 0 and O's row holds the product of a zero row
         * of P~ (+0, or NaN from a V not finite), which it leaves as it is; before
         * the first block O is not written yet */
        if (rescale != 1.0f && max_so_far[r] != -INFINITY) row_scale(o + (size_t)r * ldo, dv, rescale);
        max_so_far[r] = m;
    }
}

/* QKV_VW doubles: one lane per row of a group of rows. */
typedef double row_sums __attribute__((vector_size(QKV_VW * sizeof(double))));

/* nr rows by ne columns (at most QKV_VW each) of x into v, one row a vector, the
 * rest of a partial square +0. */
QKV_INLINE void load_square(const float *x, int ld, int nr, int ne, qkv_vf v[QKV_VW]) {
    if (nr == QKV_VW && ne == QKV_VW) {
        for (int r = 0; r < QKV_VW; r++) v[r] = vf_load(x + (size_t)r * ld);
        return;
    }
    float square[QKV_VW * QKV_VW] = {0};
    for (int r = 0; r < nr; r++)
        for (int e = 0; e < ne; e++) square[r * QKV_VW + e] = x[(size_t)r * ld + e];
    for (int r = 0; r < QKV_VW; r++) v[r] = vf_load(square + r * QKV_VW);
}

/* out[r] = (float) sum over e = 0, 1, ..., n - 1 in order of (double) a[r ld + e]
 * * b[r ld + e], from +0: each product of two floats is exact in double, each
 * addition one rounding, as in a scalar loop. QKV_VW rows at a time: a square
 * of QKV_VW rows by QKV_VW columns of each operand is transposed in registers
 * (transpose.h), so that vector e holds column e of every row and lane r of the
 * double vector adds row r's products one column after another: every row's
 * chain of dependent additions runs beside the others' (one row at a time, a
 * scalar loop waits on each addition). */
static void row_dots(const float *a, const float *b, int ld, int rows, int n, float *restrict out) {
    for (int r0 = 0; r0 < rows; r0 += QKV_VW) {
        int nr = rows - r0 < QKV_VW ? rows - r0 : QKV_VW;
        /* the next group's cache lines asked for now: the attention output's rows
         * arrive from L3, each row a line or two at the heads' stride */
        for (int r = r0 + QKV_VW; n > 0 && r < rows && r < r0 + 2 * QKV_VW; r++)
            for (int e = 0; e < n + 15; e += 16) { /* 16 floats a line, and the last one */
                int at = e < n ? e : n - 1;
                __builtin_prefetch(a + (size_t)r * ld + at);
                __builtin_prefetch(b + (size_t)r * ld + at);
            }
        row_sums sum = {0};
        for (int e0 = 0; e0 < n; e0 += QKV_VW) {
            int ne = n - e0 < QKV_VW ? n - e0 : QKV_VW;
            qkv_vf va[QKV_VW], vb[QKV_VW];
            load_square(a + (size_t)r0 * ld + e0, ld, nr, ne, va);
            load_square(b + (size_t)r0 * ld + e0, ld, nr, ne, vb);
            transpose_registers(va);
            transpose_registers(vb);
            for (int e = 0; e < ne; e++)
                sum += __builtin_convertvector(va[e], row_sums) * __builtin_convertvector(vb[e], row_sums);
        }
        for (int r = 0; r < nr; r++) out[r0 + r] = (float)sum[r];
    }
}

void QKV_ISA_FN(qkv_kernel_row_exp_shifted)(const float *x, float *y, int n, float m) {
    row_exp_shifted(x, y, n, m);
}
void QKV_ISA_FN(qkv_kernel_row_scale)(float *x, int n, float s) { row_scale(x, n, s); }
void QKV_ISA_FN(qkv_kernel_softmax_block)(const float *s, int lds, float *p, int ldp, int nq, int nk,
                                          const int *seen, float *max_so_far, double *sum, float *o, int ldo,
                                          int dv) {
    softmax_block(s, lds, p, ldp, nq, nk, seen, max_so_far, sum, o, ldo, dv);
}
void QKV_ISA_FN(qkv_kernel_row_dots)(const float *a, const float *b, int ld, int rows, int n, float *out) {
    row_dots(a, b, ld, rows, n, out);
}
