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

/* Whether s = p + c rounded to double may round to another float than the exact
 * sum does, so that round to odd is needed. Only if s is a float midpoint (its
 * 29 low mantissa bits are 1 << 28: a float has 24 significant bits, a double 53)
 * or 0 < |s| < 2^-126 (below the smallest normal float, where the float ulp is
 * fixed and the midpoint test above does not apply). Proof that otherwise
 * (float)s is the correctly rounded exact sum x: float rounding gives different
 * results for x and s only if a float midpoint m (or the overflow threshold
 * 2^128 - 2^103, which acts as one) lies between them, ends included. Every
 * such m is a double, and s is the double nearest x, so |x - m| < |x - s| is
 * impossible; m = s is excluded by the test; and m = x makes x a double, so
 * s = x = m, excluded again. s == 0 means x == 0 (a nonzero x is a multiple of
 * 2^-298, far above double's smallest subnormal), and the sign of a zero sum
 * follows the same rules in double and in fmaf. Infinities and NaN pass as s,
 * as below. */
static inline int qkv_fma_needs_odd(double s) {
    uint64_t bits;
    memcpy(&bits, &s, sizeof bits);
    return (bits & 0x1fffffffu) == 0x10000000u ||
           ((bits & 0x7fffffffffffffffu) < 0x3810000000000000u && s != 0.0); /* 2^-126 */
}

static inline float qkv_fma_exact(float a, float b, float c) {
    double p = (double)a * (double)b, dc = c;
    double s = p + dc;
    if (__builtin_expect(!qkv_fma_needs_odd(s), 1)) return (float)s;
    double z = s - p;
    double err = (p - (s - z)) + (dc - z); /* TwoSum: p + c = s + err exactly */
    uint64_t bits, ebits;
    memcpy(&bits, &s, sizeof bits);
    memcpy(&ebits, &err, sizeof ebits);
    if (err != 0.0 && err == err && (bits & 1) == 0) bits += ((bits ^ ebits) >> 63) ? (uint64_t)-1 : 1;
    memcpy(&s, &bits, sizeof s);
    return (float)s;
}

/* The same, lane by lane, on 4-float vectors (the compiler's 128-bit SIMD:
 * SSE2 natively; WebAssembly without SIMD gets scalar doubles), without a branch. */
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

#if defined(__wasm_simd128__)
/* WebAssembly SIMD: the same two, written with the f64x2 instructions themselves
 * on each half of the vector (the compiler lowers the 4-lane double vectors'
 * conversions and 64-bit compares above to scalar code). */
#include <wasm_simd128.h>

#define QKV_WASM_HALVES(half, a, b, c, ...)                                                     \
    v128_t va = (v128_t)(a), vb = (v128_t)(b), vc = (v128_t)(c);                              \
    v128_t lo = half(va, vb, vc, __VA_ARGS__);                                                \
    v128_t hi = half(wasm_i32x4_shuffle(va, va, 2, 3, 2, 3), wasm_i32x4_shuffle(vb, vb, 2, 3, 2, 3), \
                     wasm_i32x4_shuffle(vc, vc, 2, 3, 2, 3), __VA_ARGS__);                    \
    return (qkv_f4)wasm_i32x4_shuffle(lo, hi, 0, 1, 4, 5)

/* a * b + c on lanes 0 and 1, exact: round to odd as in qkv_fma_exact. */
static inline __attribute__((always_inline)) v128_t qkv_fma_exact_half(v128_t a, v128_t b, v128_t c, int unused) {
    (void)unused;
    v128_t p = wasm_f64x2_mul(wasm_f64x2_promote_low_f32x4(a), wasm_f64x2_promote_low_f32x4(b));
    v128_t dc = wasm_f64x2_promote_low_f32x4(c);
    v128_t s = wasm_f64x2_add(p, dc), z = wasm_f64x2_sub(s, p);
    v128_t err = wasm_f64x2_add(wasm_f64x2_sub(p, wasm_f64x2_sub(s, z)), wasm_f64x2_sub(dc, z));
    v128_t fix = wasm_v128_and(wasm_v128_and(wasm_f64x2_ne(err, wasm_f64x2_splat(0.0)), wasm_f64x2_eq(err, err)),
                               wasm_i64x2_eq(wasm_v128_and(s, wasm_i64x2_splat(1)), wasm_i64x2_splat(0)));
    /* +1 where err has s's sign, -1 where not: (sign of s ^ err, all ones or zero) | 1 */
    v128_t step = wasm_v128_or(wasm_i64x2_shr(wasm_v128_xor(s, err), 63), wasm_i64x2_splat(1));
    return wasm_f32x4_demote_f64x2_zero(wasm_i64x2_add(s, wasm_v128_and(step, fix)));
}

/* a * b + c on lanes 0 and 1 rounded twice (through the double sum), and all
 * ones ored into *odd's 64-bit lanes where qkv_fma_needs_odd(sum) holds. */
static inline __attribute__((always_inline)) v128_t qkv_fma_try_half(v128_t a, v128_t b, v128_t c, v128_t *odd) {
    v128_t s = wasm_f64x2_add(wasm_f64x2_mul(wasm_f64x2_promote_low_f32x4(a), wasm_f64x2_promote_low_f32x4(b)),
                              wasm_f64x2_promote_low_f32x4(c));
    v128_t mid = wasm_i64x2_eq(wasm_v128_and(s, wasm_i64x2_splat(0x1fffffff)), wasm_i64x2_splat(0x10000000));
    v128_t tiny = wasm_v128_and(wasm_f64x2_lt(wasm_f64x2_abs(s), wasm_f64x2_splat(0x1p-126)),
                                wasm_f64x2_ne(s, wasm_f64x2_splat(0.0)));
    *odd = wasm_v128_or(*odd, wasm_v128_or(mid, tiny));
    return wasm_f32x4_demote_f64x2_zero(s);
}

static inline __attribute__((always_inline)) qkv_f4 qkv_fma_exact4_simd(qkv_f4 a, qkv_f4 b, qkv_f4 c) {
    QKV_WASM_HALVES(qkv_fma_exact_half, a, b, c, 0);
}

/* a * b + c, exact unless it sets a lane of *odd: a caller that finds none set
 * after a run of them has every result exact, for the price of the test alone
 * (and redoes the run with qkv_fma_exact4_simd otherwise). */
static inline __attribute__((always_inline)) qkv_f4 qkv_fma_try4(qkv_f4 a, qkv_f4 b, qkv_f4 c, v128_t *odd) {
    QKV_WASM_HALVES(qkv_fma_try_half, a, b, c, odd);
}
#endif

#endif
