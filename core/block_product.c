/* block_product.c — in-place register-tiled products of cache-resident blocks
 * (contract in block_product.h). */
#include "block_product.h"

#include <stddef.h>

#include "gemm.h"

typedef float v8f __attribute__((vector_size(32)));
typedef float v8f_unaligned __attribute__((vector_size(32), aligned(4)));

#define TILE_ROWS 6
/* op(B) is transposed into a stack buffer of at most this many floats; larger
 * blocks (d > 256) go to the gemm kernel. */
#define MAX_TRANSPOSE (64 * 256)

/* C[0:rows, 0:8*nv] = beta C + alpha sum_k a(r,k) B[k, 0:8*nv], rows <= TILE_ROWS,
 * nv 1 or 2 vectors of 8 columns, with a(r,k) = A[r*a_row + k*a_k]. Rows past
 * `rows` repeat the last row (computed, not stored), so A is never read past its
 * rows. Each element is one sum over k in order, then scaled and added. */
static inline __attribute__((always_inline)) void tile_product(
    int nv, int rows, int K, float alpha, const float *A, size_t a_row, size_t a_k,
    const float *B, int ldb, float beta, float *C, int ldc) {
    const float *a_rows[TILE_ROWS];
    for (int r = 0; r < TILE_ROWS; r++) a_rows[r] = A + (size_t)(r < rows ? r : rows - 1) * a_row;
    v8f acc[TILE_ROWS][2];
    for (int r = 0; r < TILE_ROWS; r++) acc[r][0] = acc[r][1] = (v8f){0};
    for (int k = 0; k < K; k++) {
        const float *b = B + (size_t)k * ldb;
        v8f b0 = *(const v8f_unaligned *)b, b1 = nv == 2 ? *(const v8f_unaligned *)(b + 8) : b0;
        size_t at = (size_t)k * a_k;
        for (int r = 0; r < TILE_ROWS; r++) {
            float a = a_rows[r][at];
            acc[r][0] += a * b0;
            if (nv == 2) acc[r][1] += a * b1;
        }
    }
    for (int r = 0; r < rows; r++)
        for (int v = 0; v < nv; v++) {
            v8f_unaligned *c = (v8f_unaligned *)(C + (size_t)r * ldc + 8 * v);
            *c = beta == 0.0f ? alpha * acc[r][v] : *c + alpha * acc[r][v];
        }
}

/* C = alpha op(A) op(B) + beta C on the calling thread (beta 0 or 1; op as in
 * gemm.h): 6 x 16 and 6 x 8 register tiles, columns past the last multiple of 8
 * as plain sums. Blocks too large to transpose go to the gemm kernel. */
void qkv_block_product(int trans_a, int trans_b, int M, int N, int K, float alpha,
                          const float *A, int lda, const float *B, int ldb, float beta,
                          float *C, int ldc) {
    if (trans_b && (size_t)N * K > MAX_TRANSPOSE) {
        qkv_gemm(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
        return;
    }
    float b_t[trans_b ? N * K : 1];
    if (trans_b) { /* op(B) = B^T: make it K x N, row-major */
        for (int j = 0; j < N; j++)
            for (int k = 0; k < K; k++) b_t[k * N + j] = B[(size_t)j * ldb + k];
        B = b_t;
        ldb = N;
    }
    size_t a_row = trans_a ? 1 : (size_t)lda, a_k = trans_a ? (size_t)lda : 1;
    for (int i0 = 0; i0 < M; i0 += TILE_ROWS) {
        int rows = M - i0 < TILE_ROWS ? M - i0 : TILE_ROWS;
        const float *a = A + (size_t)i0 * a_row;
        float *c = C + (size_t)i0 * ldc;
        int j = 0;
        for (; j + 16 <= N; j += 16) tile_product(2, rows, K, alpha, a, a_row, a_k, B + j, ldb, beta, c + j, ldc);
        for (; j + 8 <= N; j += 8) tile_product(1, rows, K, alpha, a, a_row, a_k, B + j, ldb, beta, c + j, ldc);
        for (; j < N; j++)
            for (int r = 0; r < rows; r++) {
                float sum = 0.0f;
                for (int k = 0; k < K; k++) sum += a[r * a_row + k * a_k] * B[(size_t)k * ldb + j];
                float *dst = c + (size_t)r * ldc + j;
                *dst = beta == 0.0f ? alpha * sum : *dst + alpha * sum;
            }
    }
}

