/* kernel_table.c — one path's table of kernels (kernels.h), and the probe of the
 * core's multiply-add peak for its vectors. Compiled once per path, like the
 * kernels it lists. */
#include "core/kernels/omp_shim.h"

#include "core/kernels/gemm_tiles.h"
#include "core/kernels/kernels.h"
#include "core/kernels/simd.h"

#define STR_(x) #x
#define STR(x) STR_(x)

#if defined(__AVX512F__)
#define REQUIRES "AVX-512 (F, VL, BW, DQ), AVX2 and FMA"
#define LEVEL QKV_LEVEL_AVX512
#elif defined(__FMA__)
#define REQUIRES "AVX2 and FMA"
#define LEVEL QKV_LEVEL_AVX2
#elif defined(__wasm_simd128__)
#define REQUIRES "WebAssembly 128-bit SIMD"
#define LEVEL QKV_LEVEL_PORTABLE
#else
#define REQUIRES "nothing beyond the compiler's baseline"
#define LEVEL QKV_LEVEL_PORTABLE
#endif

void QKV_ISA_FN(qkv_kernel_gemm)(const qkv_gemm_args *g, int batch);
void QKV_ISA_FN(qkv_kernel_block_product)(const qkv_gemm_args *g);
void QKV_ISA_FN(qkv_kernel_row_exp_shifted)(const float *x, float *y, int n, float m);
void QKV_ISA_FN(qkv_kernel_row_scale)(float *x, int n, float s);
void QKV_ISA_FN(qkv_kernel_softmax_block)(const float *s, int lds, float *p, int ldp, int nq, int nk,
                                          const int *seen, float *max_so_far, double *sum, float *o, int ldo,
                                          int dv);
void QKV_ISA_FN(qkv_kernel_row_dots)(const float *a, const float *b, int ld, int rows, int n, float *out);

/* CHAINS independent multiply-add chains (more than an FMA's latency times the
 * pipes: 4 cycles x 2 pipes on current cores), in rounds of ROUND steps until
 * `seconds` have passed. The values converge (x -> x * 0.999 + 0.001), so
 * nothing overflows; the result goes to a volatile so it is not dropped. */
#define CHAINS 12
#define ROUND 4096
static double fma_peak(double seconds) {
    qkv_vf acc[CHAINS];
    for (int c = 0; c < CHAINS; c++) acc[c] = vf_splat(1.0f + (float)c);
    qkv_vf mul = vf_splat(0.999f), add = vf_splat(0.001f);
    double t0 = omp_get_wtime(), t = t0;
    long rounds = 0;
    do {
        for (int i = 0; i < ROUND; i++)
            for (int c = 0; c < CHAINS; c++) acc[c] = vf_fma(acc[c], mul, add);
        rounds++;
        t = omp_get_wtime();
    } while (t - t0 < seconds);
    volatile float sink = 0.0f;
    for (int c = 0; c < CHAINS; c++) sink += acc[c][0];
    (void)sink;
    return 2.0 * QKV_VW * CHAINS * ROUND * (double)rounds / (t - t0) * 1e-9;
}

const qkv_kernels QKV_ISA_FN(qkv_kernels) = {
    .name = STR(QKV_ISA_SUFFIX),
    .requires = REQUIRES,
    .vector_width = QKV_VW,
    .level = LEVEL,
    .mr = MR, .nr = NR, .kc = KC, .mc = MC_MAX,
    .gemm = QKV_ISA_FN(qkv_kernel_gemm),
    .block_product = QKV_ISA_FN(qkv_kernel_block_product),
    .row_exp_shifted = QKV_ISA_FN(qkv_kernel_row_exp_shifted),
    .row_scale = QKV_ISA_FN(qkv_kernel_row_scale),
    .softmax_block = QKV_ISA_FN(qkv_kernel_softmax_block),
    .row_dots = QKV_ISA_FN(qkv_kernel_row_dots),
    .fma_peak = fma_peak,
};
