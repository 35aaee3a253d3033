/* test_matmul.c — the gemm kernel and the in-place block kernel (block_product.h)
 * against the double-precision triple loop, and the matmul op: hand-computed values, shapes, backward by hand, errors, and bitwise
 * independence of the thread count. */
#include "tests/test_util.h"

#include "core/kernels/block_product.h"

#include "core/kernels/omp_shim.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- gemm against qkv_gemm_reference ------------------------------------------ */

typedef struct gemm_case {
    int batch, trans_a, trans_b, M, N, K;
    float alpha, beta;
    int pad;                      /* lda, ldb, ldc exceed their minimum by this */
    int share_a, share_b, sum_c;  /* stride 0 for A, B or C */
} gemm_case;

#define SENTINEL 12345.0f

/* Runs one case through qkv_gemm_batched and checks every element of C against the
 * reference, within the float rounding bound K * 2^-22 * sum_k |alpha a b| (+ |c|),
 * and that the padding of C is untouched. */
static void check_gemm_case(const gemm_case *g, qkv_rng *rng) {
    int lda = (g->trans_a ? g->M : g->K) + g->pad, ldb = (g->trans_b ? g->K : g->N) + g->pad;
    int ldc = g->N + g->pad;
    size_t a_size = (size_t)(g->trans_a ? g->K : g->M) * lda;
    size_t b_size = (size_t)(g->trans_b ? g->N : g->K) * ldb, c_size = (size_t)g->M * ldc;
    size_t n_a = g->share_a ? a_size : a_size * g->batch, n_b = g->share_b ? b_size : b_size * g->batch;
    size_t n_c = g->sum_c ? c_size : c_size * g->batch;
    float *A = malloc(n_a * sizeof(float)), *B = malloc(n_b * sizeof(float));
    float *C = malloc(n_c * sizeof(float)), *expect = malloc(n_c * sizeof(float));
    float *abs_a = malloc(n_a * sizeof(float)), *abs_b = malloc(n_b * sizeof(float));
    float *bound = malloc(n_c * sizeof(float));
    qkv_fill_normal(A, n_a, rng, 0.0f, 1.0f);
    qkv_fill_normal(B, n_b, rng, 0.0f, 1.0f);
    qkv_fill_normal(C, n_c, rng, 0.0f, 1.0f);
    for (size_t i = 0; i < n_c; i++)
        if (i % ldc >= (size_t)g->N) C[i] = SENTINEL;
    for (size_t i = 0; i < n_a; i++) abs_a[i] = fabsf(A[i]);
    for (size_t i = 0; i < n_b; i++) abs_b[i] = fabsf(B[i]);
    memcpy(expect, C, n_c * sizeof(float));
    for (size_t i = 0; i < n_c; i++) bound[i] = g->beta != 0.0f ? fabsf(C[i]) : 0.0f;

    qkv_gemm_batched(g->batch, g->trans_a, g->trans_b, g->M, g->N, g->K, g->alpha, A, lda,
                     g->share_a ? 0 : a_size, B, ldb, g->share_b ? 0 : b_size, g->beta, C, ldc,
                     g->sum_c ? 0 : c_size);
    for (int b = 0; b < g->batch; b++) {
        const float *Ab = A + (g->share_a ? 0 : b * a_size), *Bb = B + (g->share_b ? 0 : b * b_size);
        const float *abs_Ab = abs_a + (Ab - A), *abs_Bb = abs_b + (Bb - B);
        size_t c_off = g->sum_c ? 0 : b * c_size;
        float beta = g->sum_c && b > 0 ? 1.0f : g->beta;
        qkv_gemm_reference(g->trans_a, g->trans_b, g->M, g->N, g->K, g->alpha, Ab, lda, Bb, ldb,
                           beta, expect + c_off, ldc);
        qkv_gemm_reference(g->trans_a, g->trans_b, g->M, g->N, g->K, fabsf(g->alpha), abs_Ab, lda,
                           abs_Bb, ldb, 1.0f, bound + c_off, ldc);
    }
    /* Scan first, assert once: each ck_assert costs a write in Check's bookkeeping. */
    double ulp_sum = 4.0 * (g->K + 1) * (g->sum_c ? g->batch : 1) / 8388608.0;
    size_t bad = n_c, padding_hit = n_c;
    for (size_t i = 0; i < n_c && bad == n_c && padding_hit == n_c; i++) {
        if (i % ldc >= (size_t)g->N) {
            if (C[i] != SENTINEL) padding_hit = i;
        } else if (fabs((double)C[i] - expect[i]) > ulp_sum * bound[i] + 1e-30) {
            bad = i;
        }
    }
    ck_assert_msg(padding_hit == n_c, "gemm wrote into the padding of C at %zu", padding_hit);
    ck_assert_msg(bad == n_c,
                  "gemm batch %d ta %d tb %d %dx%dx%d alpha %g beta %g pad %d share %d%d sum %d:"
                  " C[%zu] = %.9g, expected %.9g (tol %.3g)",
                  g->batch, g->trans_a, g->trans_b, g->M, g->N, g->K, (double)g->alpha,
                  (double)g->beta, g->pad, g->share_a, g->share_b, g->sum_c, bad,
                  bad < n_c ? (double)C[bad] : 0.0, bad < n_c ? (double)expect[bad] : 0.0,
                  bad < n_c ? ulp_sum * bound[bad] : 0.0);
    free(A); free(B); free(C); free(expect); free(abs_a); free(abs_b); free(bound);
}

START_TEST(gemm_reference_by_hand) {
    /* [1 2; 3 4] [5 6; 7 8] = [19 22; 43 50]; with beta = 1 onto C = 1, alpha = 2. */
    float A[] = {1, 2, 3, 4}, B[] = {5, 6, 7, 8}, C[] = {1, 1, 1, 1};
    qkv_gemm_reference(0, 0, 2, 2, 2, 2.0f, A, 2, B, 2, 1.0f, C, 2);
    assert_floats_near(C, (float[]){39, 45, 87, 101}, 4, 0);
    /* A^T B^T = (B A)^T: [1 3; 2 4] [5 7; 6 8] = [23 31; 34 46]. */
    qkv_gemm_reference(1, 1, 2, 2, 2, 1.0f, A, 2, B, 2, 0.0f, C, 2);
    assert_floats_near(C, (float[]){23, 31, 34, 46}, 4, 0);
    /* The kernel agrees exactly on small integers. */
    float D[4];
    qkv_gemm(1, 1, 2, 2, 2, 1.0f, A, 2, B, 2, 0.0f, D, 2);
    ck_assert_mem_eq(C, D, sizeof C);
}
END_TEST

START_TEST(gemm_random_small_sizes) {
    int threads = omp_get_max_threads();
    qkv_rng rng = qkv_rng_make(7);
    for (int iter = 0; iter < 600; iter++) {
        gemm_case g = {
            .batch = 1 + (int)qkv_rng_below(&rng, 3),
            .trans_a = (int)qkv_rng_below(&rng, 2), .trans_b = (int)qkv_rng_below(&rng, 2),
            .M = 1 + (int)qkv_rng_below(&rng, 70), .N = 1 + (int)qkv_rng_below(&rng, 70),
            .K = 1 + (int)qkv_rng_below(&rng, 70),
            .alpha = qkv_rng_below(&rng, 3) == 0 ? -0.5f : 1.0f,
            .beta = (float)qkv_rng_below(&rng, 2),
            .pad = qkv_rng_below(&rng, 2) ? 3 : 0,
            .share_a = qkv_rng_below(&rng, 3) == 0, .share_b = qkv_rng_below(&rng, 3) == 0,
            .sum_c = qkv_rng_below(&rng, 4) == 0,
        };
        omp_set_num_threads(1 + iter % 2);
        check_gemm_case(&g, &rng);
    }
    omp_set_num_threads(threads);
}
END_TEST

START_TEST(gemm_primes_and_tile_edges) {
    /* Around the 6x16 register tile and its multiples; primes. */
    static const int sizes[] = {1, 2, 5, 6, 7, 11, 13, 15, 16, 17, 31, 32, 33, 37, 47, 48, 61, 67};
    int n = (int)(sizeof sizes / sizeof sizes[0]);
    qkv_rng rng = qkv_rng_make(11);
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j += 3) {
            gemm_case g = {1, i % 2, j % 2, sizes[i], sizes[j], sizes[(i + j) % n], 1.0f,
                           (float)(i % 2), j % 4 == 0 ? 5 : 0, 0, 0, 0};
            check_gemm_case(&g, &rng);
        }
}
END_TEST

/* qkv_block_product against the reference and, bit for bit, against qkv_gemm
 * (block_product.h's promise): every transpose, beta 0 and 1, padded leading dims,
 * sizes around its 6 x 16, 6 x 8 and one-vector 16-row tiles, and a transposed B
 * too large for its buffer (handed to qkv_gemm). C's padding stays untouched. */
static void check_block_product(int ta, int tb, int M, int N, int K, float alpha, float beta, int pad,
                                qkv_rng *rng) {
    int lda = (ta ? M : K) + pad, ldb = (tb ? K : N) + pad, ldc = N + pad;
    size_t a_size = (size_t)(ta ? K : M) * lda, b_size = (size_t)(tb ? N : K) * ldb, c_size = (size_t)M * ldc;
    float *A = malloc(a_size * sizeof(float)), *B = malloc(b_size * sizeof(float));
    float *C = malloc(c_size * sizeof(float)), *expect = malloc(c_size * sizeof(float));
    qkv_fill_normal(A, a_size, rng, 0.0f, 1.0f);
    qkv_fill_normal(B, b_size, rng, 0.0f, 1.0f);
    qkv_fill_normal(C, c_size, rng, 0.0f, 1.0f);
    for (size_t i = 0; i < c_size; i++)
        if (i % ldc >= (size_t)N) C[i] = SENTINEL;
    memcpy(expect, C, c_size * sizeof(float));
    float *by_gemm = malloc(c_size * sizeof(float));
    memcpy(by_gemm, C, c_size * sizeof(float));
    qkv_block_product(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
    qkv_gemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, by_gemm, ldc);
    ck_assert_msg(memcmp(C, by_gemm, c_size * sizeof(float)) == 0,
                  "block_product ta %d tb %d %dx%dx%d beta %g: not bitwise qkv_gemm's", ta, tb, M, N, K, (double)beta);
    free(by_gemm);
    qkv_gemm_reference(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, expect, ldc);
    for (size_t i = 0; i < c_size; i++) {
        double tol = i % ldc >= (size_t)N ? 0.0 : 1e-5 * (K + 1) * (1.0 + fabs((double)expect[i]));
        ck_assert_msg(fabs((double)C[i] - expect[i]) <= tol,
                      "block_product ta %d tb %d %dx%dx%d beta %g pad %d: C[%zu] = %.9g, expected %.9g",
                      ta, tb, M, N, K, (double)beta, pad, i, (double)C[i], (double)expect[i]);
    }
    free(A); free(B); free(C); free(expect);
}

START_TEST(block_product_matches_reference) {
    qkv_rng rng = qkv_rng_make(13);
    for (int iter = 0; iter < 300; iter++)
        check_block_product((int)qkv_rng_below(&rng, 2), (int)qkv_rng_below(&rng, 2),
                            1 + (int)qkv_rng_below(&rng, 70), 1 + (int)qkv_rng_below(&rng, 70),
                            1 + (int)qkv_rng_below(&rng, 70), qkv_rng_below(&rng, 2) ? 0.25f : 1.0f,
                            (float)qkv_rng_below(&rng, 2), qkv_rng_below(&rng, 2) ? 3 : 0, &rng);
    check_block_product(0, 1, 7, 65, 300, 0.5f, 1.0f, 2, &rng); /* N * K > 64 * 256: via gemm */
}
END_TEST

START_TEST(gemm_larger_sizes) {
    /* Several K blocks (K > 256), several row blocks, N not a multiple of 16; both the
     * team path (one large matrix) and the batch and summed paths, on 2 threads. */
    int threads = omp_get_max_threads();
    qkv_rng rng = qkv_rng_make(13);
    omp_set_num_threads(2);
    for (int t = 0; t < 4; t++) {
        gemm_case single = {1, t & 1, t >> 1, 257, 129, 300, 1.0f, (float)(t & 1), 1, 0, 0, 0};
        check_gemm_case(&single, &rng);
    }
    gemm_case batched = {3, 0, 1, 70, 45, 530, 0.5f, 1.0f, 0, 0, 1, 0};
    check_gemm_case(&batched, &rng);
    gemm_case summed = {4, 1, 0, 40, 33, 300, 1.0f, 1.0f, 2, 0, 0, 1};
    check_gemm_case(&summed, &rng);
    gemm_case wide = {1, 0, 0, 5, 2100, 40, 1.0f, 0.0f, 0, 0, 0, 0}; /* two NC blocks */
    check_gemm_case(&wide, &rng);
    gemm_case tall = {2, 1, 1, 600, 7, 20, 1.0f, 0.0f, 0, 1, 0, 0};
    check_gemm_case(&tall, &rng);
    omp_set_num_threads(threads);
}
END_TEST

START_TEST(gemm_bad_arguments_stop) {
    float x[16] = {0};
    EXPECT_FATAL(qkv_gemm(0, 0, 2, 2, 4, 1.0f, x, 3, x, 2, 0.0f, x, 2), "gemm: lda 3 < 4");
    EXPECT_FATAL(qkv_gemm(0, 1, 2, 2, 4, 1.0f, x, 4, x, 2, 0.0f, x, 2), "gemm: ldb 2 < 4");
    EXPECT_FATAL(qkv_gemm(0, 0, 2, 3, 2, 1.0f, x, 2, x, 3, 0.0f, x, 2), "gemm: ldc 2 < N 3");
    EXPECT_FATAL(qkv_gemm(0, 0, 2, 2, 2, 1.0f, x, 2, x, 2, 0.5f, x, 2), "beta must be 0 or 1");
}
END_TEST

/* One batched gemm of random A and B, the same on 1 and 2 threads. */
typedef struct gemm_run {
    int batch, ta, tb, M, N, K, sum_c;
    const float *A, *B;
} gemm_run;

static void gemm_into(float *C, void *ctx) {
    const gemm_run *g = ctx;
    size_t a_size = (size_t)g->M * g->K, b_size = (size_t)g->K * g->N, c_size = (size_t)g->M * g->N;
    qkv_gemm_batched(g->batch, g->ta, g->tb, g->M, g->N, g->K, 1.0f, g->A, g->ta ? g->M : g->K, a_size,
                     g->B, g->tb ? g->K : g->N, b_size, 0.0f, C, g->N, g->sum_c ? 0 : c_size);
}

static void gemm_threads_bitwise(int batch, int ta, int tb, int M, int N, int K, int sum_c) {
    size_t a_size = (size_t)M * K, b_size = (size_t)K * N, c_size = (size_t)M * N;
    float *A = malloc(a_size * batch * sizeof(float)), *B = malloc(b_size * batch * sizeof(float));
    fill_normal_seeded(A, a_size * batch, 1, 0.0f, 1.0f);
    fill_normal_seeded(B, b_size * batch, 2, 0.0f, 1.0f);
    gemm_run g = {batch, ta, tb, M, N, K, sum_c, A, B};
    char what[96];
    snprintf(what, sizeof what, "gemm batch %d %dx%dx%d sum %d", batch, M, N, K, sum_c);
    expect_same_for_1_and_2_threads(gemm_into, &g, sum_c ? c_size : c_size * batch, what);
    free(A); free(B);
}

START_TEST(gemm_bitwise_across_threads) {
    gemm_threads_bitwise(1, 0, 0, 256, 256, 256, 0);   /* team: one matrix split in tiles */
    gemm_threads_bitwise(1, 1, 1, 131, 77, 600, 0);    /* team, several K blocks, edges */
    gemm_threads_bitwise(8, 0, 1, 64, 64, 32, 0);      /* each thread whole matrices */
    gemm_threads_bitwise(3, 0, 0, 200, 120, 300, 0);   /* odd batch: team per matrix */
    gemm_threads_bitwise(6, 1, 0, 64, 48, 100, 1);     /* batch summed into one C */
}
END_TEST

/* A keep window (gemm.h: qkv_gemm_keep_begin) with B's floats as a constant
 * range: the first product packs op(B) into the thread's store and gives the
 * bits of a product outside any window; later products with the same B read the
 * kept panels (so a B changed in between, against the caller's promise, is not
 * seen: that is how the test knows the store was used), also with another A and
 * M; after the window the change is seen. A B outside the ranges (the range one
 * float short of it) is not kept, nor is an untransposed B with short rows, which
 * is read in place. Shapes with several column blocks (N > 2048), several K
 * blocks (K > 256), and edges. */
static void check_kept_b(int trans_b, int M, int N, int K, int range_short, int expect_kept) {
    int ldb = (trans_b ? K : N) + 3;
    size_t b_size = (size_t)(trans_b ? N : K) * ldb, c_size = (size_t)(M + 5) * N;
    float *A = malloc((size_t)(M + 5) * K * sizeof(float)), *B = malloc(b_size * sizeof(float));
    float *C = malloc(c_size * sizeof(float)), *expect = malloc(c_size * sizeof(float));
    fill_normal_seeded(A, (size_t)(M + 5) * K, 21, 0.0f, 1.0f);
    fill_normal_seeded(B, b_size, 22, 0.0f, 1.0f);
    const float *ranges[2] = {A, B}; /* another range first: the search goes on past it */
    size_t extent = b_size - 3 - (size_t)range_short, sizes[2] = {(size_t)(M + 5) * K, extent};
    qkv_gemm(0, trans_b, M + 5, N, K, 1.0f, A, K, B, ldb, 0.0f, expect, N); /* outside any window */
    qkv_gemm_keep_begin(2, ranges, sizes);
    for (int round = 0; round < 2; round++) { /* round 1 reads the panels round 0 packed */
        int m = M + 5 * round;
        qkv_gemm(0, trans_b, m, N, K, 1.0f, A, K, B, ldb, 0.0f, C, N);
        ck_assert_msg(memcmp(C, expect, (size_t)m * N * sizeof(float)) == 0, "kept B %s %dx%dx%d, round %d",
                      trans_b ? "transposed" : "as is", m, N, K, round);
    }
    for (size_t i = 0; i < b_size; i++) B[i] += 1.0f;
    qkv_gemm(0, trans_b, M, N, K, 1.0f, A, K, B, ldb, 0.0f, C, N);
    int kept = memcmp(C, expect, (size_t)M * N * sizeof(float)) == 0;
    ck_assert_msg(kept == expect_kept, "%s B %dx%dx%d, range %s: the panels were %s",
                  trans_b ? "a transposed" : "an untransposed", M, N, K, range_short ? "short" : "whole",
                  kept ? "kept" : "not kept");
    qkv_gemm_keep_end();
    qkv_gemm(0, trans_b, M, N, K, 1.0f, A, K, B, ldb, 0.0f, expect, N); /* closed: B as it is now */
    qkv_gemm_keep_begin(2, ranges, sizes);
    qkv_gemm(0, trans_b, M, N, K, 1.0f, A, K, B, ldb, 0.0f, C, N); /* a new window packs anew */
    qkv_gemm_keep_end();
    ck_assert(memcmp(C, expect, (size_t)M * N * sizeof(float)) == 0);
    free(A), free(B), free(C), free(expect);
}

START_TEST(gemm_keeps_constant_b_packed) {
    int threads = omp_get_max_threads();
    omp_set_num_threads(1); /* the store serves products a thread runs alone */
    check_kept_b(0, 13, 2100, 300, 0, 1); /* rows 8 KB apart: packed, and kept */
    check_kept_b(1, 13, 2100, 300, 0, 1);
    check_kept_b(1, 40, 37, 19, 0, 1);
    check_kept_b(1, 40, 37, 19, 1, 0);   /* B's last float outside the range */
    check_kept_b(0, 40, 37, 300, 0, 0);  /* short rows: read in place */
    omp_set_num_threads(threads);
}
END_TEST

/* gemm.h's chain, element by element: acc = beta ? C : 0, then acc = fma(a_k, b_k,
 * acc) for k in order (alpha 1: neither operand scaled first). */
static void chain_reference(int ta, int tb, int M, int N, int K, const float *A, int lda,
                            const float *B, int ldb, float beta, float *C, int ldc) {
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            float acc = beta != 0.0f ? C[(size_t)i * ldc + j] : 0.0f;
            for (int k = 0; k < K; k++)
                acc = fmaf(ta ? A[(size_t)k * lda + i] : A[(size_t)i * lda + k],
                           tb ? B[(size_t)j * ldb + k] : B[(size_t)k * ldb + j], acc);
            C[(size_t)i * ldc + j] = acc;
        }
}

/* Products that take the other way round or a one-row tile (kernel_gemm.c: fewer
 * columns than a vector and at least a panel of rows; a block product of one row)
 * give the chain's bits: every transpose, beta 0 and 1, padded leading dims, K
 * past one K block. block_product_matches_reference draws one-row cases rarely. */
static void check_chain(int block, int ta, int tb, int M, int N, int K, float beta, int pad) {
    int lda = (ta ? M : K) + pad, ldb = (tb ? K : N) + pad, ldc = N + pad;
    size_t a_size = (size_t)(ta ? K : M) * lda, b_size = (size_t)(tb ? N : K) * ldb, c_size = (size_t)M * ldc;
    float *A = malloc(a_size * sizeof(float)), *B = malloc(b_size * sizeof(float));
    float *C = malloc(c_size * sizeof(float)), *expect = malloc(c_size * sizeof(float));
    fill_normal_seeded(A, a_size, 31, 0.0f, 1.0f);
    fill_normal_seeded(B, b_size, 32, 0.0f, 1.0f);
    fill_normal_seeded(C, c_size, 33, 0.0f, 1.0f);
    for (size_t i = 0; i < c_size; i++)
        if (i % ldc >= (size_t)N) C[i] = SENTINEL;
    memcpy(expect, C, c_size * sizeof(float));
    if (block)
        qkv_block_product(ta, tb, M, N, K, 1.0f, A, lda, B, ldb, beta, C, ldc);
    else
        qkv_gemm(ta, tb, M, N, K, 1.0f, A, lda, B, ldb, beta, C, ldc);
    chain_reference(ta, tb, M, N, K, A, lda, B, ldb, beta, expect, ldc);
    ck_assert_msg(memcmp(C, expect, c_size * sizeof(float)) == 0, "%s ta %d tb %d %dx%dx%d beta %g pad %d: "
                  "not the chain's bits", block ? "block product" : "gemm", ta, tb, M, N, K, (double)beta, pad);
    free(A); free(B); free(C); free(expect);
}

START_TEST(narrow_and_one_row_products_are_the_chains) {
    int threads = omp_get_max_threads();
    static const int narrow_n[] = {1, 3, 7, 15}, tall_m[] = {64, 97, 300};
    for (int t = 0; t < 4; t++)
        for (int n = 0; n < 4; n++)
            for (int m = 0; m < 3; m++) {
                omp_set_num_threads(1 + (n + m) % 2);
                check_chain(0, t / 2, t % 2, tall_m[m], narrow_n[n], m == 2 ? 1100 : 3 + 40 * m,
                            (float)(n % 2), m == 1 ? 5 : 0);
            }
    static const int one_row_n[] = {1, 16, 33, 64, 200};
    for (int t = 0; t < 4; t++)
        for (int n = 0; n < 5; n++)
            check_chain(1, t / 2, t % 2, 1, one_row_n[n], 1 + 37 * (n % 3), (float)(n % 2), t == 1 ? 3 : 0);
    omp_set_num_threads(threads);
}
END_TEST

/* ---- the matmul op ------------------------------------------------------------- */

START_TEST(matmul_forward_by_hand) {
    qkv_tape *tape = qkv_tape_create(1);
    /* [1 2 3; 4 5 6] [7 8; 9 10; 11 12] = [58 64; 139 154] */
    qkv_tensor *a = tensor_of(2, (int[]){2, 3}, (float[]){1, 2, 3, 4, 5, 6}, 0);
    qkv_tensor *b = tensor_of(2, (int[]){3, 2}, (float[]){7, 8, 9, 10, 11, 12}, 0);
    qkv_tensor *a_t = tensor_of(2, (int[]){3, 2}, (float[]){1, 4, 2, 5, 3, 6}, 0);
    qkv_tensor *b_t = tensor_of(2, (int[]){2, 3}, (float[]){7, 9, 11, 8, 10, 12}, 0);
    const float expect[] = {58, 64, 139, 154};
    qkv_tensor *outs[4] = {qkv_matmul(tape, a, b, 0, 0), qkv_matmul(tape, a_t, b, 1, 0),
                           qkv_matmul(tape, a, b_t, 0, 1), qkv_matmul(tape, a_t, b_t, 1, 1)};
    for (int i = 0; i < 4; i++) {
        assert_shape(outs[i], 2, (int[]){2, 2});
        assert_floats_near(outs[i]->data, expect, 4, 0);
    }
    /* Batched with a shared B: the second matrix of A is -A, so C_1 = -C_0. */
    qkv_tensor *a2 = tensor_of(3, (int[]){2, 2, 3}, (float[]){1, 2, 3, 4, 5, 6, -1, -2, -3, -4, -5, -6}, 0);
    qkv_tensor *c2 = qkv_matmul(tape, a2, b, 0, 0);
    assert_shape(c2, 3, (int[]){2, 2, 2});
    assert_values_near(c2, (float[]){58, 64, 139, 154, -58, -64, -139, -154}, 8, 0);
    /* Shared A with a batched B: [2, 3, 2] -> [2, 2, 2]. */
    qkv_tensor *b2 = tensor_of(3, (int[]){2, 3, 2}, (float[]){7, 8, 9, 10, 11, 12, 1, 0, 0, 1, 0, 0}, 0);
    qkv_tensor *c3 = qkv_matmul(tape, a, b2, 0, 0);
    assert_shape(c3, 3, (int[]){2, 2, 2});
    assert_values_near(c3, (float[]){58, 64, 139, 154, 1, 2, 4, 5}, 8, 0);
    ck_assert_int_eq(tape->n_nodes, 0); /* nothing requires a gradient */
    qkv_tensor_free(a); qkv_tensor_free(b); qkv_tensor_free(a_t); qkv_tensor_free(b_t);
    qkv_tensor_free(a2); qkv_tensor_free(b2);
    qkv_tape_free(tape);
}
END_TEST

START_TEST(matmul_output_shapes) {
    qkv_tape *tape = qkv_tape_create(1);
    struct { int nda, da[4], ndb, db[4], ta, tb, ndc, dc[4]; } cases[] = {
        {4, {2, 3, 5, 4}, 4, {2, 3, 6, 4}, 0, 1, 4, {2, 3, 5, 6}},
        {3, {2, 5, 4}, 2, {4, 7}, 0, 0, 3, {2, 5, 7}},
        {2, {4, 5}, 4, {2, 3, 4, 6}, 1, 0, 4, {2, 3, 5, 6}},
        {3, {1, 1, 1}, 3, {1, 1, 1}, 0, 0, 3, {1, 1, 1}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        qkv_tensor *a = qkv_tape_zeros(tape, cases[i].nda, cases[i].da);
        qkv_tensor *b = qkv_tape_zeros(tape, cases[i].ndb, cases[i].db);
        qkv_tensor *c = qkv_matmul(tape, a, b, cases[i].ta, cases[i].tb);
        assert_shape(c, cases[i].ndc, cases[i].dc);
    }
    qkv_tape_free(tape);
}
END_TEST

START_TEST(matmul_backward_by_hand) {
    /* C = A B with L = sum(C): dA = 1 B^T (row sums of B), dB = A^T 1 (column sums of A),
     * accumulated onto gradients that start at 1. */
    qkv_tape *tape = qkv_tape_create(1);
    qkv_tensor *a = tensor_of(2, (int[]){2, 3}, (float[]){1, 2, 3, 4, 5, 6}, 1);
    qkv_tensor *b = tensor_of(2, (int[]){3, 2}, (float[]){7, 8, 9, 10, 11, 12}, 1);
    for (size_t i = 0; i < 6; i++) a->grad[i] = b->grad[i] = 1.0f;
    backward_ones(tape, qkv_matmul(tape, a, b, 0, 0));
    const float grad_a[] = {15, 19, 23, 15, 19, 23}, grad_b[] = {5, 5, 7, 7, 9, 9};
    for (int i = 0; i < 6; i++) {
        ck_assert_float_eq(a->grad[i], grad_a[i] + 1.0f);
        ck_assert_float_eq(b->grad[i], grad_b[i] + 1.0f);
    }
    qkv_tensor_free(a);
    qkv_tensor_free(b);
    qkv_tape_free(tape);
}
END_TEST

START_TEST(matmul_bad_shapes_stop) {
    qkv_tape *tape = qkv_tape_create(1);
    qkv_tensor *a43 = qkv_tape_zeros(tape, 2, (int[]){4, 3});
    qkv_tensor *b52 = qkv_tape_zeros(tape, 2, (int[]){5, 2});
    EXPECT_FATAL(qkv_matmul(tape, a43, b52, 0, 0), "matmul: [4,3] x [5,2]: inner dims 3 != 5");
    EXPECT_FATAL(qkv_matmul(tape, a43, b52, 1, 1), "matmul: [4,3]^T x [5,2]^T: inner dims 4 != 2");
    qkv_tensor *a234 = qkv_tape_zeros(tape, 3, (int[]){2, 3, 4});
    qkv_tensor *b345 = qkv_tape_zeros(tape, 3, (int[]){3, 4, 5});
    EXPECT_FATAL(qkv_matmul(tape, a234, b345, 0, 0), "matmul: [2,3,4] x [3,4,5]: batch dims differ");
    qkv_tensor *b2245 = qkv_tape_zeros(tape, 4, (int[]){2, 2, 4, 5});
    EXPECT_FATAL(qkv_matmul(tape, a234, b2245, 0, 0), "matmul: [2,3,4] x [2,2,4,5]: batch dims differ");
    qkv_tensor *v = qkv_tape_zeros(tape, 1, (int[]){3});
    EXPECT_FATAL(qkv_matmul(tape, v, a43, 0, 0), "matmul: [3] x [4,3]: operands need at least 2 dims");
    qkv_tape_reset(tape); /* (checked before the arena hands the same memory out again) */
    EXPECT_FATAL(qkv_matmul(tape, a43, b52, 0, 1), "matmul: activation  used after its tape was reset");
    qkv_tape_free(tape);
}
END_TEST

/* The linear-layer case x W^T on 1 and 2 threads: output and both gradients bitwise equal. */
enum { LIN_OUT = 4 * 96 * 80, LIN_X = 4 * 50 * 96, LIN_W = 80 * 96 };
static void linear_step(float *out, void *ctx) {
    (void)ctx;
    qkv_tape *tape = qkv_tape_create(1);
    qkv_tensor *x = random_tensor(3, (int[]){4, 50, 96}, 3, 1);
    qkv_tensor *w = random_tensor(2, (int[]){80, 96}, 4, 1);
    qkv_tensor *h = random_tensor(3, (int[]){4, 96, 50}, 5, 1);
    qkv_tensor *y = qkv_matmul(tape, x, w, 0, 1);            /* [4,50,80] */
    qkv_tensor *z = qkv_matmul(tape, h, y, 0, 0);            /* [4,96,80], batched */
    backward_random(tape, z, 6);
    out = append_floats(out, z->data, z->size);
    out = append_floats(out, x->grad, x->size);
    append_floats(out, w->grad, w->size);
    qkv_tensor_free(x); qkv_tensor_free(w); qkv_tensor_free(h);
    qkv_tape_free(tape);
}

START_TEST(matmul_bitwise_across_threads) {
    expect_same_for_1_and_2_threads(linear_step, NULL, (size_t)LIN_OUT + LIN_X + LIN_W,
                                    "matmul output, grad x, grad w");
}
END_TEST

/* ---- the affine op ------------------------------------------------------------ */

/* affine(x, W, b) against add(matmul(x, W^T), b): output and every gradient bitwise
 * equal (the linear layers rely on it), on a shape with two bias column blocks. */
START_TEST(affine_equals_matmul_plus_bias) {
    const int xs[3] = {8, 16, 48}, ws[2] = {70, 48};
    float *grads[2][3];
    qkv_tensor *outs[2];
    qkv_tape *tapes[2];
    for (int path = 0; path < 2; path++) {
        tapes[path] = qkv_tape_create(1);
        qkv_tensor *x = random_tensor(3, xs, 3, 1), *w = random_tensor(2, ws, 4, 1);
        qkv_tensor *b = random_tensor(1, (int[]){70}, 5, 1);
        outs[path] = path ? qkv_affine(tapes[path], x, w, b)
                          : qkv_add(tapes[path], qkv_matmul(tapes[path], x, w, 0, 1), b);
        ck_assert_int_eq(tapes[path]->n_nodes, path ? 1 : 2);
        backward_random(tapes[path], outs[path], 6);
        qkv_tensor *in[3] = {x, w, b};
        for (int i = 0; i < 3; i++) {
            grads[path][i] = malloc(in[i]->size * sizeof(float));
            memcpy(grads[path][i], in[i]->grad, in[i]->size * sizeof(float));
            qkv_tensor_free(in[i]);
        }
    }
    assert_shape(outs[1], 3, (int[]){8, 16, 70});
    ck_assert_int_eq(memcmp(outs[0]->data, outs[1]->data, outs[0]->size * sizeof(float)), 0);
    const size_t sizes[3] = {8 * 16 * 48, 70 * 48, 70};
    for (int i = 0; i < 3; i++) {
        ck_assert_int_eq(memcmp(grads[0][i], grads[1][i], sizes[i] * sizeof(float)), 0);
        free(grads[0][i]);
        free(grads[1][i]);
    }
    qkv_tape_free(tapes[0]);
    qkv_tape_free(tapes[1]);
}
END_TEST

START_TEST(affine_bad_shapes_stop) {
    qkv_tape *tape = qkv_tape_create(1);
    qkv_tensor *x = qkv_tape_zeros(tape, 3, (int[]){2, 3, 4});
    qkv_tensor *w54 = qkv_tape_zeros(tape, 2, (int[]){5, 4}), *w53 = qkv_tape_zeros(tape, 2, (int[]){5, 3});
    qkv_tensor *b4 = qkv_tape_zeros(tape, 1, (int[]){4});
    EXPECT_FATAL(qkv_affine(tape, x, w53, NULL), "affine: [2,3,4] x [5,3]^T: inner dims do not match");
    EXPECT_FATAL(qkv_affine(tape, x, b4, NULL), "affine: [2,3,4] x [4]^T");
    EXPECT_FATAL(qkv_affine(tape, x, w54, b4), "affine: bias [4] for W [5,4]: expected [5]");
    qkv_tape_free(tape);
}
END_TEST

enum { AFF_OUT = 4 * 128 * 300, AFF_X = 4 * 128 * 96, AFF_W = 300 * 96, AFF_B = 300 };
static void affine_step(float *out, void *ctx) {
    (void)ctx;
    qkv_tape *tape = qkv_tape_create(1);
    qkv_tensor *x = random_tensor(3, (int[]){4, 128, 96}, 3, 1);
    qkv_tensor *w = random_tensor(2, (int[]){300, 96}, 4, 1);
    qkv_tensor *b = random_tensor(1, (int[]){300}, 5, 1);
    qkv_tensor *y = qkv_affine(tape, x, w, b);
    backward_random(tape, y, 6);
    out = append_floats(out, y->data, y->size);
    out = append_floats(out, x->grad, x->size);
    out = append_floats(out, w->grad, w->size);
    append_floats(out, b->grad, b->size);
    qkv_tensor_free(x); qkv_tensor_free(w); qkv_tensor_free(b);
    qkv_tape_free(tape);
}

START_TEST(affine_bitwise_across_threads) {
    expect_same_for_1_and_2_threads(affine_step, NULL, (size_t)AFF_OUT + AFF_X + AFF_W + AFF_B,
                                    "affine output, grad x, grad w, grad b");
}
END_TEST

Suite *suite_matmul(void) {
    Suite *s = suite_create("matmul");
    TCase *kernel = tcase_create("gemm");
    tcase_add_test(kernel, gemm_reference_by_hand);
    tcase_add_test(kernel, gemm_random_small_sizes);
    tcase_add_test(kernel, gemm_primes_and_tile_edges);
    tcase_add_test(kernel, gemm_larger_sizes);
    tcase_add_test(kernel, gemm_bad_arguments_stop);
    tcase_add_test(kernel, gemm_bitwise_across_threads);
    tcase_add_test(kernel, block_product_matches_reference);
    tcase_add_test(kernel, gemm_keeps_constant_b_packed);
    tcase_add_test(kernel, narrow_and_one_row_products_are_the_chains);
    suite_add_tcase(s, kernel);
    TCase *op = tcase_create("matmul");
    tcase_add_test(op, matmul_forward_by_hand);
    tcase_add_test(op, matmul_output_shapes);
    tcase_add_test(op, matmul_backward_by_hand);
    tcase_add_test(op, matmul_bad_shapes_stop);
    tcase_add_test(op, matmul_bitwise_across_threads);
    tcase_add_test(op, affine_equals_matmul_plus_bias);
    tcase_add_test(op, affine_bad_shapes_stop);
    tcase_add_test(op, affine_bitwise_across_threads);
    suite_add_tcase(s, op);
    return s;
}
