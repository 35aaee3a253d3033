/* multiversion.h — an elementwise loop compiled for each instruction-set path
 * without a file of its own (the table of kernels.h is for the kernels whose tile
 * shapes differ by path).
 *
 *     static void scale_range_body(const void *ctx, size_t begin, size_t end) {...}
 *     QKV_MULTIVERSION(scale_range, (const void *ctx, size_t begin, size_t end),
 *                      (ctx, begin, end))
 *
 * defines scale_range(), which runs the body compiled for the path in use
 * (isa.h): on x86-64 the body is inlined into copies built with GCC's target
 * attribute for AVX-512 and for AVX2, which the compiler vectorizes at those
 * widths. The body must be plain float code: qkv builds with -ffp-contract=off,
 * so no copy fuses a multiply-add the others do not, and the compiler never
 * reorders a sum, so every copy computes the same bits.
 */
#ifndef QKV_MULTIVERSION_H
#define QKV_MULTIVERSION_H

#include "core/kernels/kernels.h"

#if defined(__x86_64__) && defined(__GNUC__)
#define QKV_MULTIVERSION(name, params, args)                                                     \
    __attribute__((target("avx512f,avx512vl,avx512bw,avx512dq,avx2,fma")))                       \
    static void name##_avx512 params { name##_body args; }                                       \
    __attribute__((target("avx2,fma"))) static void name##_avx2 params { name##_body args; }     \
    static void name params {                                                                    \
        switch (qkv_kernels_active()->level) {                                                   \
        case QKV_LEVEL_AVX512: name##_avx512 args; break;                                        \
        case QKV_LEVEL_AVX2: name##_avx2 args; break;                                            \
        default: name##_body args;                                                               \
        }                                                                                        \
    }
#else
#define QKV_MULTIVERSION(name, params, args) static void name params { name##_body args; }
#endif

#endif
