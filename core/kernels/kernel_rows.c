/* kernel_rows.c — the row loops of the attention op's softmax, compiled once per
 * vector width (simd.h; the table is kernels.h).
 *
 * Plain loops the compiler vectorizes for the path's width. Each element's value
 * is the same float operations on every path: the exponential is fastmath.h's
 * (no fused multiply-add), and a sum along a row keeps QKV_LANES partial sums,
 * element j in partial j % QKV_LANES, combined in simd.h's fixed tree, so that
 * 16-, 8- and 4-float vectors all add the same numbers in the same order.
 */
#include <math.h>

#include "core/kernels/fastmath.h"
#include "core/kernels/kernels.h"
#include "core/kernels/simd.h"

static float row_max(const float *x, int n) {
    float part[QKV_LANES];
    for (int l = 0; l < QKV_LANES; l++) part[l] = -INFINITY;
    int j = 0;
    for (; j + QKV_LANES <= n; j += QKV_LANES)
        for (int l = 0; l < QKV_LANES; l++) part[l] = x[j + l] > part[l] ? x[j + l] : part[l];
    for (int l = 0; j + l < n; l++) part[l] = x[j + l] > part[l] ? x[j + l] : part[l];
    return lanes_max(part);
}

static float row_sum(const float *x, int n) {
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

static void row_exp_shifted(float *restrict x, int n, float m) {
    for (int j = 0; j < n; j++) x[j] = qkv_fast_exp_nonpositive(x[j] - m);
}

static void row_scale(float *restrict x, int n, float s) {
    for (int j = 0; j < n; j++) x[j] *= s;
}

float QKV_ISA_FN(qkv_kernel_row_max)(const float *x, int n) { return row_max(x, n); }
float QKV_ISA_FN(qkv_kernel_row_sum)(const float *x, int n) { return row_sum(x, n); }
void QKV_ISA_FN(qkv_kernel_row_exp_shifted)(float *x, int n, float m) { row_exp_shifted(x, n, m); }
void QKV_ISA_FN(qkv_kernel_row_scale)(float *x, int n, float s) { row_scale(x, n, s); }
