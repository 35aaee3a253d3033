/* kernels.h — the table of hot kernels, one per instruction-set path.
 *
 * The files core/kernel_*.c are written once against simd.h and compiled once per
 * path (AVX-512, AVX2+FMA, portable C; the Makefile's ISAS); each compilation
 * fills one qkv_kernels table. isa.c picks the table when qkv starts (the widest
 * path this CPU runs, or QKV_ISA) and qkv_kernels_active() returns it. Callers go
 * through the public entry points (gemm.h, block_product.h, and the row helpers
 * below), never through a table directly, except tests that compare paths.
 *
 * Every kernel computes each output element with the same sequence of float
 * operations on every path (simd.h), so a run is bitwise the same whichever
 * table is in use.
 */
#ifndef QKV_KERNELS_H
#define QKV_KERNELS_H

#include <stddef.h>

/* One (batched) product as in gemm.h, arguments already checked. */
typedef struct qkv_gemm_args {
    int trans_a, trans_b, M, N, K;
    float alpha, beta;
    const float *A; int lda; size_t stride_a;
    const float *B; int ldb; size_t stride_b;
    float *C; int ldc; size_t stride_c;
    int band, band_diag; /* block products only: block_product.h's qkv_band (0: none) */
} qkv_gemm_args;

enum { QKV_LEVEL_PORTABLE, QKV_LEVEL_AVX2, QKV_LEVEL_AVX512 };

typedef struct qkv_kernels {
    const char *name;      /* the QKV_ISA value: "avx512", "avx2", "wasm", "portable" */
    const char *requires;  /* what the CPU must have, for messages */
    int vector_width;      /* floats per vector */
    int level;             /* QKV_LEVEL_*: the target of multiversion.h's copies */
    int mr, nr, kc, mc;    /* gemm register tile and cache blocking */

    /* gemm.h's product, batch matrices, K > 0, M > 0, N > 0. */
    void (*gemm)(const qkv_gemm_args *g, int batch);
    /* block_product.h's product on the calling thread (batch 1). */
    void (*block_product)(const qkv_gemm_args *g);

    /* Row helpers of the attention op's online softmax and backward (kernel_rows.c). */
    void (*row_exp_shifted)(const float *x, float *y, int n, float m); /* y = exp(x - m), x <= m; y may be x */
    void (*row_scale)(float *x, int n, float s);         /* x *= s */
    /* One key block of the online softmax, rows r < nq: with the row's scores s[r]
     * (keys j < seen[r] visible), m' = max(m[r], max_j s_j); m' = -inf: p[r] = 0;
     * else p[r]_j = exp(s_j - m') (0 for j >= seen[r]), sum[r] = sum[r] exp(m[r] - m')
     * + rowsum(p[r]) (16 partial sums, a fixed tree), o[r] (dv floats) *= exp(m[r] - m')
     * unless m[r] was -inf, m[r] = m'. */
    void (*softmax_block)(const float *s, int lds, float *p, int ldp, int nq, int nk, const int *seen,
                          float *max_so_far, double *sum, float *o, int ldo, int dv);
    /* out[r] = sum over e < n, in order, in double, of a[r ld + e] b[r ld + e] */
    void (*row_dots)(const float *a, const float *b, int ld, int rows, int n, float *out);

    /* GFLOP/s of independent FMA chains on the calling thread, run for about
     * `seconds`: the core's peak for this path's vectors (qkv bench). */
    double (*fma_peak)(double seconds);
} qkv_kernels;

/* The paths this build has, widest first: the one list that isa.c (the choice),
 * these declarations and the tests read. kernel_table.c defines
 * qkv_kernels_<name> once per path; the Makefile's ISAS compiles the same names
 * (test_isa.c checks that the two agree). */
#if defined(__x86_64__)
#define QKV_ISA_PATHS(X) X(avx512) X(avx2) X(portable)
#elif defined(__wasm__) /* wasm: 128-bit SIMD (mk/web.mk); portable: the same C without it */
#define QKV_ISA_PATHS(X) X(wasm) X(portable)
#else
#define QKV_ISA_PATHS(X) X(portable)
#endif
#define QKV_DECLARE_KERNELS(name) extern const qkv_kernels qkv_kernels_##name;
QKV_ISA_PATHS(QKV_DECLARE_KERNELS)
#undef QKV_DECLARE_KERNELS

/* The table in use (selected on first use; see isa.h). */
const qkv_kernels *qkv_kernels_active(void);

/* Uses table k from now on (tests: run a path the CPU has that QKV_ISA did not
 * select, or a test-only build of a kernel). Not thread-safe: call between steps. */
void qkv_kernels_install(const qkv_kernels *k);

#endif
