/* transpose.h — a block of floats transposed through vector registers, for the
 * kernels compiled once per instruction set (simd.h). Included only by them.
 *
 *     qkv_transpose(src, lds, dst, ldd, rows, cols):
 *         dst[c * ldd + r] = src[r * lds + c]   for r < rows, c < cols
 *
 * It moves floats and computes nothing, so it cannot change a result: it only
 * replaces scalar loops that the products' packing spent 3-8% of a training step
 * in (the transposed operand of x W^T and of Q K^T).
 *
 * A full QKV_VW x QKV_VW square is QKV_VW vector loads, log2(QKV_VW) rounds of
 * two-source shuffles and QKV_VW stores. Round d (d = QKV_VW/2, ..., 2, 1) swaps
 * the off-diagonal d x d blocks of every 2d x 2d diagonal block: rows i and i + d
 * (bit d of i clear) exchange the lanes whose bit d is set in row i with the lanes
 * whose bit d is clear in row i + d,
 *     row i     [l] = bit d of l ? row (i + d)[l - d] : row i[l]
 *     row (i + d)[l] = bit d of l ? row (i + d)[l]     : row i[l + d]
 * the recursive block transpose ([[A, B], [C, D]] -> [[A, C], [B, D]], then each
 * block). The edges (a partial square) are scalar.
 */
#ifndef QKV_TRANSPOSE_H
#define QKV_TRANSPOSE_H

#include "core/kernels/simd.h"

/* Shuffle indices of round d: lane l of the new low row (from row i, or from row
 * i + d, whose lanes are numbered QKV_VW ...), and of the new high row. */
#define QKV_T_LO(l, d) (((l) & (d)) ? QKV_VW + (l) - (d) : (l))
#define QKV_T_HI(l, d) (((l) & (d)) ? QKV_VW + (l) : (l) + (d))

#if QKV_VW == 16
#define QKV_T_LANES(F, d)                                                                       \
    F(0, d), F(1, d), F(2, d), F(3, d), F(4, d), F(5, d), F(6, d), F(7, d), F(8, d), F(9, d),   \
        F(10, d), F(11, d), F(12, d), F(13, d), F(14, d), F(15, d)
#elif QKV_VW == 8
#define QKV_T_LANES(F, d) F(0, d), F(1, d), F(2, d), F(3, d), F(4, d), F(5, d), F(6, d), F(7, d)
#elif QKV_VW == 4
#define QKV_T_LANES(F, d) F(0, d), F(1, d), F(2, d), F(3, d)
#else
#error "transpose.h: no lane list for this QKV_VW"
#endif

/* One round: rows i and i + d of every pair. d is a constant at each call. */
#define QKV_T_ROUND(v, d)                                                                       \
    for (int i = 0; i < QKV_VW; i++)                                                            \
        if (!(i & (d))) {                                                                       \
            qkv_vf lo = __builtin_shufflevector(v[i], v[i + (d)], QKV_T_LANES(QKV_T_LO, d));    \
            qkv_vf hi = __builtin_shufflevector(v[i], v[i + (d)], QKV_T_LANES(QKV_T_HI, d));    \
            v[i] = lo;                                                                          \
            v[i + (d)] = hi;                                                                    \
        }

/* QKV_VW vectors transposed in registers: lane l of vector i becomes lane i of
 * vector l. */
QKV_INLINE void transpose_registers(qkv_vf v[QKV_VW]) {
#if QKV_VW >= 16
    QKV_T_ROUND(v, 8)
#endif
#if QKV_VW >= 8
    QKV_T_ROUND(v, 4)
#endif
    QKV_T_ROUND(v, 2)
    QKV_T_ROUND(v, 1)
}

/* The QKV_VW x QKV_VW square at src (row stride lds) into dst (row stride ldd). */
QKV_INLINE void transpose_square(const float *src, size_t lds, float *dst, size_t ldd) {
    qkv_vf v[QKV_VW];
    for (int i = 0; i < QKV_VW; i++) v[i] = vf_load(src + (size_t)i * lds);
    transpose_registers(v);
    for (int i = 0; i < QKV_VW; i++) vf_store(dst + (size_t)i * ldd, v[i]);
}

QKV_INLINE void qkv_transpose(const float *restrict src, size_t lds, float *restrict dst, size_t ldd, int rows,
                              int cols) {
    int r_full = rows - rows % QKV_VW, c_full = cols - cols % QKV_VW;
    for (int r = 0; r < r_full; r += QKV_VW)
        for (int c = 0; c < c_full; c += QKV_VW)
            transpose_square(src + (size_t)r * lds + c, lds, dst + (size_t)c * ldd + r, ldd);
    for (int r = 0; r < rows; r++) /* the edges: columns past c_full, then rows past r_full */
        for (int c = c_full; c < cols; c++) dst[(size_t)c * ldd + r] = src[(size_t)r * lds + c];
    for (int r = r_full; r < rows; r++)
        for (int c = 0; c < c_full; c++) dst[(size_t)c * ldd + r] = src[(size_t)r * lds + c];
}

#endif
