/* exact_fma.h — fmaf(a, b, c) (a * b + c rounded once) from double arithmetic,
 * for targets without a fused multiply-add instruction (WebAssembly).
 *
 * The product of two floats is exact in double (24 + 24 bits <= 53). Adding c
 * in double rounds once more, and converting to float a third time: the double
 * rounding goes wrong when the double sum lands on a float midpoint. Round to odd
 * fixes it (Boldo and Melquiond, "Emulation of FMA and correctly rounded sums:
 * proved algorithms using rounding to odd", 2008): if the sum s = p + c is
 * inexact and s's last mantissa bit is 0, replace s by its neighbour on the side
 * of the exact value (whose last bit is 1). Rounding the round-to-odd sum to a
 * format with at least 2 fewer bits (24 <= 53 - 2) is the correctly rounded
 * sum, subnormal results included: every float and every midpoint between two
 * floats is a double with last bit 0, so an odd double never sits on one and lies
 * on the same side of each as the exact value. The rounding error of s is
 * err = (p + c) - s exactly (TwoSum, Knuth), and the exact value is on err's side.
 *
 * Infinities and NaN: err is NaN and s is left alone, so s is p + c's
 * inf or NaN, as fmaf's. Overflow cannot happen in double. Signed zeros: s is
 * p + c in double with the same sign rules as fmaf.
 *
 * Bitwise the same as fmaf wherever fmaf is correct (C's fmaf always is; tested
 * in tests/test_isa.c against it over random and midpoint cases).
 */
#ifndef QKV_EXACT_FMA_H
#define QKV_EXACT_FMA_H

#include <stdint.h>
#include <string.h>

static inline float qkv_fma_exact(float a, float b, float c) {
    double p = (double)a * (double)b, dc = c;
    double s = p + dc, z = s - p;
    double err = (p - (s - z)) + (dc - z); /* TwoSum: p + c = s + err exactly */
    uint64_t bits, ebits;
    memcpy(&bits, &s, sizeof bits);
    memcpy(&ebits, &err, sizeof ebits);
    if (err != 0.0 && err == err && (bits & 1) == 0) bits += ((bits ^ ebits) >> 63) ? (uint64_t)-1 : 1;
    memcpy(&s, &bits, sizeof s);
    return (float)s;
}

/* The same, lane by lane, on 4-float vectors (the compiler's 128-bit SIMD:
 * WebAssembly's f64x2 pairs, SSE2 natively), without a branch. */
typedef float qkv_f4 __attribute__((vector_size(16)));
typedef double qkv_d4 __attribute__((vector_size(32)));
typedef int64_t qkv_l4 __attribute__((vector_size(32)));
typedef uint64_t qkv_u4 __attribute__((vector_size(32)));

static inline qkv_f4 qkv_fma_exact4(qkv_f4 a, qkv_f4 b, qkv_f4 c) {
    qkv_d4 p = __builtin_convertvector(a, qkv_d4) * __builtin_convertvector(b, qkv_d4);
    qkv_d4 dc = __builtin_convertvector(c, qkv_d4);
    qkv_d4 s = p + dc, z = s - p;
    qkv_d4 err = (p - (s - z)) + (dc - z);
    qkv_u4 bits = (qkv_u4)s, ebits = (qkv_u4)err;
    qkv_l4 fix = (err != 0.0) & (err == err) & ((bits & 1) == 0);  /* -1 in the lanes to move */
    qkv_u4 step = 1 - (((bits ^ ebits) >> 63) << 1); /* +1 (err has s's sign) or -1 */
    bits += step & (qkv_u4)fix;
    return __builtin_convertvector((qkv_d4)bits, qkv_f4);
}

#endif
