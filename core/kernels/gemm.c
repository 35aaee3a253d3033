/* gemm.c — the public entry points of the matrix products (gemm.h, block_product.h):
 * argument checks and the empty cases here, the product itself in the kernel of
 * the instruction-set path in use (kernel_gemm.c, one build per vector width). */
#include "core/kernels/gemm.h"

#include <string.h>

#include "core/kernels/block_product.h"
#include "core/error.h"
#include "core/kernels/kernels.h"

static void check_args(const qkv_gemm_args *g, int batch) {
    QKV_CHECK(batch >= 0 && g->M >= 0 && g->N >= 0 && g->K >= 0,
              "gemm: negative size (batch %d, M %d, N %d, K %d)", batch, g->M, g->N, g->K);
    QKV_CHECK(g->beta == 0.0f || g->beta == 1.0f, "gemm: beta must be 0 or 1, got %g",
              (double)g->beta);
    int a_cols = g->trans_a ? g->M : g->K, b_cols = g->trans_b ? g->K : g->N;
    QKV_CHECK(g->lda >= a_cols, "gemm: lda %d < %d", g->lda, a_cols);
    QKV_CHECK(g->ldb >= b_cols, "gemm: ldb %d < %d", g->ldb, b_cols);
    QKV_CHECK(g->ldc >= g->N, "gemm: ldc %d < N %d", g->ldc, g->N);
}

/* K == 0: the product is empty, C = beta * C. */
static void scale_only(const qkv_gemm_args *g, int batch) {
    if (g->beta != 0.0f) return;
    int n_out = g->stride_c == 0 ? 1 : batch;
    for (int b = 0; b < n_out; b++)
        for (int i = 0; i < g->M; i++)
            memset(g->C + b * g->stride_c + (size_t)i * g->ldc, 0, (size_t)g->N * sizeof(float));
}

/* Checks the arguments; returns 1 if a kernel has work to do. */
static int prepare(const qkv_gemm_args *g, int batch) {
    check_args(g, batch);
    if (batch == 0 || g->M == 0 || g->N == 0) return 0;
    if (g->K == 0) {
        scale_only(g, batch);
        return 0;
    }
    return 1;
}

void qkv_gemm_batched(int batch, int trans_a, int trans_b, int M, int N, int K, float alpha,
                      const float *A, int lda, size_t stride_a,
                      const float *B, int ldb, size_t stride_b, float beta,
                      float *C, int ldc, size_t stride_c) {
    qkv_gemm_args g = {trans_a, trans_b, M, N, K, alpha, beta, A, lda, stride_a,
                       B, ldb, stride_b, C, ldc, stride_c, QKV_BAND_NONE, 0};
    if (prepare(&g, batch)) qkv_kernels_active()->gemm(&g, batch);
}

void qkv_gemm(int trans_a, int trans_b, int M, int N, int K, float alpha, const float *A, int lda,
              const float *B, int ldb, float beta, float *C, int ldc) {
    qkv_gemm_batched(1, trans_a, trans_b, M, N, K, alpha, A, lda, 0, B, ldb, 0, beta, C, ldc, 0);
}

void qkv_block_product_band(int band, int diag, int trans_a, int trans_b, int M, int N, int K,
                            float alpha, const float *A, int lda, const float *B, int ldb, float beta,
                            float *C, int ldc) {
    QKV_CHECK(band >= QKV_BAND_NONE && band <= QKV_BAND_K_FROM, "block_product: band %d", band);
    qkv_gemm_args g = {trans_a, trans_b, M, N, K, alpha, beta, A, lda, 0, B, ldb, 0, C, ldc, 0, band, diag};
    if (prepare(&g, 1)) qkv_kernels_active()->block_product(&g);
}

void qkv_block_product(int trans_a, int trans_b, int M, int N, int K, float alpha, const float *A,
                       int lda, const float *B, int ldb, float beta, float *C, int ldc) {
    qkv_block_product_band(QKV_BAND_NONE, 0, trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

void qkv_gemm_reference(int trans_a, int trans_b, int M, int N, int K, float alpha, const float *A,
                        int lda, const float *B, int ldb, float beta, float *C, int ldc) {
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double sum = 0.0;
            for (int k = 0; k < K; k++) {
                double a = trans_a ? A[(size_t)k * lda + i] : A[(size_t)i * lda + k];
                double b = trans_b ? B[(size_t)j * ldb + k] : B[(size_t)k * ldb + j];
                sum += a * b;
            }
            float *c = C + (size_t)i * ldc + j;
            *c = (float)(alpha * sum + (beta != 0.0f ? beta * (double)*c : 0.0));
        }
}
