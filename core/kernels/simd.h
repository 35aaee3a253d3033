/* simd.h — the vector vocabulary of the kernels compiled once per instruction set
 * (core/kernel_*.c; the list of paths is core/kernels/isa.c).
 *
 * Included only by those files. Each compilation defines
 *     QKV_VW          floats per vector: 16 (AVX-512), 8 (AVX2+FMA), 4 (portable)
 *     QKV_ISA_SUFFIX  the suffix of the file's public symbols (avx512, avx2, ...)
 * and is built with the matching -m flags (Makefile, ISA_FLAGS_*). The kernels are
 * written once against qkv_vf, a GCC vector of QKV_VW floats; a width the target
 * lacks is lowered by the compiler (16 floats on AVX2 become pairs of 8), which is
 * how a machine without AVX-512 still compiles and tests the 16-wide source.
 *
 * Results never depend on the path. Kernel files are built with -ffp-contract=off,
 * so a * b + c is always two roundings, and every fused multiply-add is written as
 * vf_fma: one rounding on every path (an FMA instruction where the target has one;
 * WebAssembly has none, and computes it exactly in double, exact_fma.h; C's fmaf
 * per lane elsewhere). Lanes are independent outputs; a sum along
 * a vector uses QKV_LANES partial sums whatever QKV_VW is (see vf_lanes).
 */
#ifndef QKV_SIMD_H
#define QKV_SIMD_H

#include <math.h>
#include <stddef.h>

#if !defined(QKV_VW) || !defined(QKV_ISA_SUFFIX)
#error "simd.h: compile with -DQKV_VW=<floats per vector> -DQKV_ISA_SUFFIX=<name> (see Makefile)"
#endif

#if defined(__AVX512F__) || defined(__FMA__)
#include <immintrin.h>
#endif
#if defined(__ARM_NEON) && defined(__aarch64__)
#include <arm_neon.h>
#endif
#if defined(__wasm__)
#include "core/kernels/exact_fma.h"
#endif

#define QKV_CAT_(a, b) a##_##b
#define QKV_CAT(a, b) QKV_CAT_(a, b)
/* name_<suffix>: a kernel's symbol in this compilation. */
#define QKV_ISA_FN(name) QKV_CAT(name, QKV_ISA_SUFFIX)

#define QKV_INLINE static inline __attribute__((always_inline))

typedef float qkv_vf __attribute__((vector_size(QKV_VW * sizeof(float))));
typedef float qkv_vf_unaligned __attribute__((vector_size(QKV_VW * sizeof(float)), aligned(4)));

QKV_INLINE qkv_vf vf_load(const float *p) { return *(const qkv_vf_unaligned *)p; }
QKV_INLINE void vf_store(float *p, qkv_vf v) { *(qkv_vf_unaligned *)p = v; }
QKV_INLINE qkv_vf vf_zero(void) { return (qkv_vf){0}; }

/* Every lane x. Generic form: x - (+0) is x for every x, -0 included (0 + x
 * would turn -0 into +0), and the compiler drops the subtraction. */
QKV_INLINE qkv_vf vf_splat(float x) {
#if QKV_VW == 16 && defined(__AVX512F__)
    return (qkv_vf)_mm512_set1_ps(x);
#elif QKV_VW == 8 && defined(__AVX__)
    return (qkv_vf)_mm256_set1_ps(x);
#else
    return x - (qkv_vf){0};
#endif
}

/* a * b + c with one rounding, lane by lane. */
QKV_INLINE qkv_vf vf_fma(qkv_vf a, qkv_vf b, qkv_vf c) {
#if QKV_VW == 16 && defined(__AVX512F__)
    return (qkv_vf)_mm512_fmadd_ps((__m512)a, (__m512)b, (__m512)c);
#elif QKV_VW == 8 && defined(__FMA__)
    return (qkv_vf)_mm256_fmadd_ps((__m256)a, (__m256)b, (__m256)c);
#elif QKV_VW == 4 && defined(__FMA__)
    return (qkv_vf)_mm_fmadd_ps((__m128)a, (__m128)b, (__m128)c);
#elif QKV_VW == 4 && defined(__ARM_NEON) && defined(__aarch64__)
    return (qkv_vf)vfmaq_f32((float32x4_t)c, (float32x4_t)a, (float32x4_t)b);
#elif QKV_VW == 4 && defined(__wasm_simd128__)
    return qkv_fma_exact4_simd(a, b, c); /* f64x2 pairs */
#elif QKV_VW == 4 && defined(__wasm__)
    return qkv_fma_exact4(a, b, c); /* scalar doubles */
#else
    qkv_vf r; /* FMA instructions where the target has them, libm's fmaf elsewhere */
    for (int l = 0; l < QKV_VW; l++) r[l] = fmaf(a[l], b[l], c[l]);
    return r;
#endif
}

/* vf_fma_try: a * b + c, possibly rounded twice; it ors nonzero into the lanes of
 * *odd where the result may differ from vf_fma's, and a caller that finds none set
 * (vodd_any) after a run of them has vf_fma's results; otherwise it redoes the run
 * with vf_fma. Worth it only where vf_fma is slow (QKV_FMA_TRY: WebAssembly SIMD,
 * whose exact multiply-add is TwoSum plus round to odd, exact_fma.h). */
#if QKV_VW == 4 && defined(__wasm_simd128__)
#define QKV_FMA_TRY 1
typedef v128_t qkv_vodd;
QKV_INLINE qkv_vf vf_fma_try(qkv_vf a, qkv_vf b, qkv_vf c, qkv_vodd *odd) { return qkv_fma_try4(a, b, c, odd); }
QKV_INLINE int vodd_any(qkv_vodd o) { return wasm_v128_any_true(o); }
#else
#define QKV_FMA_TRY 0
typedef int qkv_vodd;
QKV_INLINE qkv_vf vf_fma_try(qkv_vf a, qkv_vf b, qkv_vf c, qkv_vodd *odd) { (void)odd; return vf_fma(a, b, c); }
QKV_INLINE int vodd_any(qkv_vodd o) { return o != 0; }
#endif

/* Partial sums of a reduction along a row: element j goes to partial j % QKV_LANES,
 * which is QKV_LANES / QKV_VW vectors; vf_lanes_* combine them in one fixed tree. */
#define QKV_LANES 16
#if QKV_LANES % QKV_VW != 0
#error "simd.h: QKV_LANES must be a multiple of the vector width"
#endif
#define QKV_NV (QKV_LANES / QKV_VW)

/* Lanes [h, VW) of v moved down to [0, VW - h) (the lanes above wrap round and are
 * not used). h is a constant. */
#if QKV_VW == 16
#define VF_DOWN(v, h)                                                                               \
    __builtin_shufflevector(v, v, (h) & 15, ((h) + 1) & 15, ((h) + 2) & 15, ((h) + 3) & 15,          \
                            ((h) + 4) & 15, ((h) + 5) & 15, ((h) + 6) & 15, ((h) + 7) & 15,         \
                            ((h) + 8) & 15, ((h) + 9) & 15, ((h) + 10) & 15, ((h) + 11) & 15,       \
                            ((h) + 12) & 15, ((h) + 13) & 15, ((h) + 14) & 15, ((h) + 15) & 15)
#elif QKV_VW == 8
#define VF_DOWN(v, h)                                                                               \
    __builtin_shufflevector(v, v, (h) & 7, ((h) + 1) & 7, ((h) + 2) & 7, ((h) + 3) & 7,              \
                            ((h) + 4) & 7, ((h) + 5) & 7, ((h) + 6) & 7, ((h) + 7) & 7)
#else
#define VF_DOWN(v, h) __builtin_shufflevector(v, v, (h) & 3, ((h) + 1) & 3, ((h) + 2) & 3, ((h) + 3) & 3)
#endif

/* The 16 partials, lane l of vector l / QKV_VW, combined pairwise: (l, l + 8),
 * then (l, l + 4), (l, l + 2), (l, l + 1); the same tree on every path. The
 * pairs a half apart are whole vectors while the half is a vector or more, then
 * lanes of one vector brought together by shuffles (in registers: the same tree
 * through an array on the stack cost a store-forwarding stall a level). */
QKV_INLINE float vf_lanes_sum(const qkv_vf part[QKV_NV]) {
    qkv_vf v[QKV_NV];
    for (int i = 0; i < QKV_NV; i++) v[i] = part[i];
    for (int half = QKV_NV / 2; half >= 1; half /= 2)
        for (int i = 0; i < half; i++) v[i] = v[i] + v[i + half];
    qkv_vf s = v[0];
#if QKV_VW >= 16
    s = s + VF_DOWN(s, 8);
#endif
#if QKV_VW >= 8
    s = s + VF_DOWN(s, 4);
#endif
    s = s + VF_DOWN(s, 2);
    s = s + VF_DOWN(s, 1);
    return s[0];
}

QKV_INLINE float lanes_max(const float p[QKV_LANES]) {
    float m = p[0];
    for (int l = 1; l < QKV_LANES; l++) m = p[l] > m ? p[l] : m;
    return m;
}

#endif
