/* gemm.h — the one matrix-multiply kernel. Every op that needs a matrix product
 * (matmul, linear layers, batched attention, their backward passes) calls it.
 *
 * Row-major, BLAS-like, batched:
 *     for b in [0, batch):  C_b = alpha * op(A_b) op(B_b) + beta * C_b
 * op(A_b) is M x K: A_b is M x K (lda >= K) or, with trans_a, K x M (lda >= M).
 * op(B_b) is K x N: B_b is K x N (ldb >= N) or, with trans_b, N x K (ldb >= K).
 * C_b is M x N (ldc >= N). X_b = X + b * stride_x; a stride of 0 shares the
 * operand across the batch. stride_c == 0 sums all batch products into one C,
 * in batch order (deterministic): C = alpha * sum_b op(A_b) op(B_b) + beta * C.
 * beta is 0 (overwrite; C need not be initialized) or 1 (accumulate).
 * With stride_c != 0 the batch's C matrices must not overlap: threads may write
 * different batch entries at the same time.
 *
 * Cache-blocked, with a register-tiled micro-kernel for the vector width the CPU
 * has (kernels.h, isa.h), and parallel over (batch, output tile) above the work
 * threshold. Each element of C is one chain of fused multiply-adds over k in order,
 *     c = beta ? C : 0;  for k: c = fma(alpha * a_k, b_k, c)
 * (alpha * a_k rounded once), whatever the thread count and instruction set.
 */
#ifndef QKV_GEMM_H
#define QKV_GEMM_H

#include <stddef.h>

void qkv_gemm_batched(int batch, int trans_a, int trans_b, int M, int N, int K, float alpha,
                      const float *A, int lda, size_t stride_a,
                      const float *B, int ldb, size_t stride_b, float beta,
                      float *C, int ldc, size_t stride_c);

/* Single matrix: batch 1. */
void qkv_gemm(int trans_a, int trans_b, int M, int N, int K, float alpha, const float *A, int lda,
              const float *B, int ldb, float beta, float *C, int ldc);

/* Packed weights kept across the products of a step. Packing op(B) into panels
 * is a copy (the result is the same bits either way) that costs as much as a few
 * dozen multiply-adds per float, and a training step multiplies by each weight
 * matrix, as B and as B^T, once per micro-batch. Between qkv_gemm_keep_begin and
 * qkv_gemm_keep_end on a thread, a product that thread runs alone (not split over
 * a team) whose B lies inside one of the n ranges [data[i], data[i] + size[i])
 * packs op(B) once into the thread's store, and later ones with the same B, ldb,
 * trans_b, N and K read it from there. The caller promises that those floats do
 * not change in between, and keeps the two arrays alive until the end (the
 * parallel step, train/step.c, holds the store open over its micro-batches with
 * the model's parameters as the ranges: only the optimizer, after them, writes
 * them). An untransposed B with short rows is read in place, never packed, so
 * nothing is kept for it. */
void qkv_gemm_keep_begin(int n, const float *const *data, const size_t *size);
void qkv_gemm_keep_end(void);
/* For a memory budget (train/memory.c): the floats a window keeps for a rows x
 * cols matrix read as B either way round, and the most it keeps in all a thread. */
size_t qkv_gemm_keep_floats(int rows, int cols);
#define QKV_GEMM_KEEP_MAX_FLOATS ((size_t)16 << 20)

/* The plain triple loop, in double; the reference the tests compare against. */
void qkv_gemm_reference(int trans_a, int trans_b, int M, int N, int K, float alpha, const float *A,
                        int lda, const float *B, int ldb, float beta, float *C, int ldc);

#endif
