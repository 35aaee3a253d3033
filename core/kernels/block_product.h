/* block_product.h — small matrix products on blocks that sit in L1/L2 (attention's
 * score blocks), read in place.
 *
 *     C = alpha op(A) op(B) + beta C        (beta 0 or 1; op, lda, ldb as in gemm.h)
 *
 * on the calling thread (it is meant to run inside a parallel loop over blocks).
 * The gemm kernel packs both operands; for a 64 x 64 score block used as the A
 * operand that is one packed element per 2d flops, measured at about 20% of the
 * attention time, so here the register tiles read A and B where they are (A is
 * scaled once when alpha is not 1, op(B) = B^T is transposed into a stack buffer,
 * partial edge panels are copied), and a panel one vector wide (a head of 16
 * columns on 16-float vectors) is computed TALL_MR rows at a time (gemm_tiles.h), a
 * product of one row (a single query) one row at a time. Operands too large for those buffers go to
 * qkv_gemm. Each element of C is the same fma chain as in gemm.h, so the result
 * is bitwise what qkv_gemm gives, on any thread count and instruction set.
 */
#ifndef QKV_BLOCK_PRODUCT_H
#define QKV_BLOCK_PRODUCT_H

void qkv_block_product(int trans_a, int trans_b, int M, int N, int K, float alpha, const float *A,
                       int lda, const float *B, int ldb, float beta, float *C, int ldc);

/* A causal attention block's band: row r of the block sees column c when c <= r +
 * diag. The product may skip what the band makes zero or unneeded, tile by tile:
 *
 *   QKV_BAND_COLS    C[i][j] is needed only for j <= i + diag (scores, dP): the
 *                    rest of C may be left as it was or written with anything;
 *   QKV_BAND_K_UPTO  op(A)[i][k] is 0 for k > i + diag (P V, dS K): those terms of
 *                    the chain are skipped;
 *   QKV_BAND_K_FROM  op(A)[i][k] is 0 for k < i - diag (P^T dO, dS^T Q): the
 *                    same, at the chain's start.
 *
 * A skipped term is fma(0, b, acc) = acc + (+-0), which leaves acc as it was but
 * for acc = -0 (and b = +-Inf or NaN, where it would make NaN): the bits are a
 * full product's in every other case, and the same on every path and thread
 * count, since which terms are skipped depends on the shapes only. */
enum { QKV_BAND_NONE, QKV_BAND_COLS, QKV_BAND_K_UPTO, QKV_BAND_K_FROM };
void qkv_block_product_band(int band, int diag, int trans_a, int trans_b, int M, int N, int K,
                            float alpha, const float *A, int lda, const float *B, int ldb, float beta,
                            float *C, int ldc);

#endif
