/* block_product.h — small matrix products on blocks that sit in L1/L2 (attention's
 * score blocks), read in place.
 *
 *     C = alpha op(A) op(B) + beta C        (beta 0 or 1; op, lda, ldb as in gemm.h)
 *
 * on the calling thread (it is meant to run inside a parallel loop over blocks).
 * The gemm kernel packs both operands on every call; for a 64 x 64 score block
 * used as the A operand that is one packed element per 2d flops, measured at
 * about 20% of the attention time, so here 6 x 16 and 6 x 8 register tiles read
 * A and B where they are. op(B) = B^T is first transposed into a stack buffer;
 * when that would exceed 64 x 256 floats the product goes to qkv_gemm instead.
 * Each element of C is one sum over k in order, scaled by alpha and added to
 * beta C: the result depends on the shapes only, never on threads.
 */
#ifndef QKV_BLOCK_PRODUCT_H
#define QKV_BLOCK_PRODUCT_H

void qkv_block_product(int trans_a, int trans_b, int M, int N, int K, float alpha, const float *A,
                       int lda, const float *B, int ldb, float beta, float *C, int ldc);

#endif
