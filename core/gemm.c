/* gemm.c — the one matrix-multiply kernel (contract in gemm.h).
 *
 * Structure (the GotoBLAS / BLIS design):
 *
 *   for each batch b                                   (or: threads split the batch)
 *     for jc in N by NC                                columns of C
 *       for pc in K by KC                              one K block, in order
 *         pack B[pc:pc+kc, jc:jc+nc] into NR-wide panels   (shared by the team)
 *         for each task (ic block of MC rows, range of NR panels), split over threads
 *           pack alpha * A[ic:ic+mc, pc:pc+kc] into MR-tall panels (per thread)
 *           for each NR panel, for each MR panel: MR x NR micro-kernel
 *
 * The micro-kernel keeps a 6 x 16 tile of C in twelve 8-float vector registers
 * (GCC vector extensions; with -march=native and -ffp-contract=fast these become
 * AVX2 FMAs) and streams the packed panels. Packing pads edge panels with zeros, so
 * the kernel always computes a full tile; edge tiles are stored element by element.
 *
 * Determinism: every element of C is computed as
 *     acc = 0; for k in the block: acc = fma(alpha*a_k, b_k, acc);  C = C + acc
 * block after block in K order (the first block of a beta = 0 product stores acc),
 * with KC fixed. Threads only decide which tiles they compute, never how, so the
 * result is bitwise the same for any thread count.
 *
 * Threads: above the work threshold, either each thread takes whole matrices of
 * the batch (many small matrices, e.g. attention heads) or the whole team works on
 * one matrix at a time, splitting its output tiles (one large matrix, or
 * stride_c == 0 where the batch is summed in order).
 */
#include "gemm.h"

#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "error.h"
#include "parallel.h"

#define MR 6           /* rows of the register tile */
#define NR 16          /* columns of the register tile: two 8-float vectors */
#define KC 256         /* K block: a 16 KB B panel stays in L1. Fixed: it sets the sum order */
#define MC_MAX 144     /* rows of A per packed block (144 x 256 floats = 144 KB, in L2) */
#define NC_MAX 2048    /* columns of B per packed block (256 x 2048 floats = 2 MB, in L3) */

/* A product's flops are much cheaper than the elementwise "work" QKV_PARALLEL is
 * calibrated for. Measured here: a team of 2 starts to beat 1 thread near
 * 64x64x64 (0.5 MFLOP = 16 * QKV_PAR_MIN_WORK) and is 1.5x faster at 80x80x80. */
#define FLOPS_PER_WORK 16
/* Below this many flops per matrix, splitting one matrix across threads costs more
 * in barriers than it gains; prefer giving each thread whole matrices. */
#define SMALL_MATRIX_FLOPS (1u << 22)

typedef float v8f __attribute__((vector_size(32)));
typedef float v8f_unaligned __attribute__((vector_size(32), aligned(4)));

typedef struct gemm_args {
    int trans_a, trans_b, M, N, K;
    float alpha, beta;
    const float *A; int lda; size_t stride_a;
    const float *B; int ldb; size_t stride_b;
    float *C; int ldc; size_t stride_c;
} gemm_args;

/* ---- scratch buffers: per thread, grown on demand, kept across calls ----------
 * (for the thread's lifetime; libgomp keeps its pool threads, so no malloc in the
 * steady state) */

enum { SCRATCH_A, SCRATCH_B, N_SCRATCH };
static _Thread_local float *scratch_buf[N_SCRATCH];
static _Thread_local size_t scratch_cap[N_SCRATCH];

static float *scratch(int which, size_t floats) {
    if (scratch_cap[which] < floats) {
        free(scratch_buf[which]);
        scratch_buf[which] = qkv_malloc_aligned(qkv_size_mul(floats, sizeof(float)), "gemm's packing buffer");
        scratch_cap[which] = floats;
    }
    return scratch_buf[which];
}

static int min_int(int a, int b) { return a < b ? a : b; }
static int ceil_div(int a, int b) { return (a + b - 1) / b; }
static size_t packed_b_floats(int N, int K) {
    return (size_t)ceil_div(min_int(N, NC_MAX), NR) * NR * (size_t)min_int(K, KC);
}

/* ---- packing ------------------------------------------------------------------ */

/* Rows [i0, i0+mc) and columns [p0, p0+kc) of alpha * op(A) into MR-row panels:
 * panel p holds, for each k, the MR values of rows i0+p*MR.., zero past row M. */
static void pack_a(const gemm_args *g, const float *A, int i0, int mc, int p0, int kc,
                   float *restrict dst) {
    const float alpha = g->alpha;
    for (int r0 = 0; r0 < mc; r0 += MR, dst += MR * kc) {
        int rows = min_int(MR, mc - r0);
        if (!g->trans_a) {
            for (int r = 0; r < rows; r++) {
                const float *src = A + (size_t)(i0 + r0 + r) * g->lda + p0;
                for (int k = 0; k < kc; k++) dst[k * MR + r] = alpha * src[k];
            }
        } else {
            for (int k = 0; k < kc; k++) {
                const float *src = A + (size_t)(p0 + k) * g->lda + i0 + r0;
                for (int r = 0; r < rows; r++) dst[k * MR + r] = alpha * src[r];
            }
        }
        for (int r = rows; r < MR; r++)
            for (int k = 0; k < kc; k++) dst[k * MR + r] = 0.0f;
    }
}

/* NR-column panels [first, last) of op(B) rows [p0, p0+kc), columns from j0:
 * panel p holds, for each k, the NR values of columns j0+p*NR.., zero past nc. */
static void pack_b(const gemm_args *g, const float *B, int j0, int nc, int p0, int kc, int first,
                   int last, float *restrict packed) {
    for (int p = first; p < last; p++) {
        float *restrict dst = packed + (size_t)p * NR * kc;
        int c0 = j0 + p * NR, cols = min_int(NR, nc - p * NR);
        if (!g->trans_b && cols == NR) { /* two vector moves per row, not a memcpy call */
            for (int k = 0; k < kc; k++) {
                const v8f_unaligned *src = (const v8f_unaligned *)(B + (size_t)(p0 + k) * g->ldb + c0);
                v8f *row = (v8f *)(dst + k * NR);
                row[0] = src[0];
                row[1] = src[1];
            }
        } else if (!g->trans_b) {
            for (int k = 0; k < kc; k++) {
                const float *src = B + (size_t)(p0 + k) * g->ldb + c0;
                for (int c = 0; c < cols; c++) dst[k * NR + c] = src[c];
                for (int c = cols; c < NR; c++) dst[k * NR + c] = 0.0f;
            }
        } else {
            for (int c = 0; c < cols; c++) {
                const float *src = B + (size_t)(c0 + c) * g->ldb + p0;
                for (int k = 0; k < kc; k++) dst[k * NR + c] = src[k];
            }
            for (int c = cols; c < NR; c++)
                for (int k = 0; k < kc; k++) dst[k * NR + c] = 0.0f;
        }
    }
}

/* ---- the micro-kernel ------------------------------------------------------------ */

/* C[0:rows, 0:cols] (+)= a_panel (MR x kc) * b_panel (kc x NR).
 * overwrite: store the sum (first K block of a beta = 0 product); else add it. */
static inline void micro_kernel(int kc, const float *restrict a, const float *restrict b,
                                float *restrict c, int ldc, int rows, int cols, int overwrite) {
    v8f acc[MR][2];
    for (int r = 0; r < MR; r++) acc[r][0] = acc[r][1] = (v8f){0};
    /* The C tile is needed after the loop: start fetching it now. */
    for (int r = 0; r < rows; r++) __builtin_prefetch(c + (size_t)r * ldc + cols - 1, 1, 3);
    #pragma GCC unroll 4
    for (int k = 0; k < kc; k++, a += MR, b += NR) {
        v8f b0 = *(const v8f *)b, b1 = *(const v8f *)(b + 8);
        for (int r = 0; r < MR; r++) {
            acc[r][0] += b0 * a[r];
            acc[r][1] += b1 * a[r];
        }
    }
    if (rows == MR && cols == NR) {
        for (int r = 0; r < MR; r++) {
            v8f_unaligned *row = (v8f_unaligned *)(c + (size_t)r * ldc);
            if (overwrite) {
                row[0] = acc[r][0];
                row[1] = acc[r][1];
            } else {
                row[0] += acc[r][0];
                row[1] += acc[r][1];
            }
        }
        return;
    }
    float tile[MR][NR] __attribute__((aligned(32)));
    for (int r = 0; r < MR; r++) { /* vector stores (a memcpy here became a libc call) */
        *(v8f *)&tile[r][0] = acc[r][0];
        *(v8f *)&tile[r][8] = acc[r][1];
    }
    for (int r = 0; r < rows; r++)
        for (int j = 0; j < cols; j++) {
            float *dst = c + (size_t)r * ldc + j;
            *dst = overwrite ? tile[r][j] : *dst + tile[r][j];
        }
}

/* ---- one K block of one matrix, split over a team ------------------------------ */

/* How the output of one (jc, pc) block is cut into tasks for a team. */
typedef struct tiling {
    int mc, n_ic;      /* row blocks of mc rows (a multiple of MR) */
    int n_panels;      /* NR panels in this column block */
    int n_jchunks;     /* each row block's panels split into this many ranges */
} tiling;

static tiling make_tiling(int M, int nc, int nteam) {
    tiling t;
    int max_ic = ceil_div(M, MR);
    t.n_ic = ceil_div(M, MC_MAX);
    if (nteam > 1) t.n_ic = ceil_div(t.n_ic, nteam) * nteam; /* balance the rows */
    if (t.n_ic > max_ic) t.n_ic = max_ic;
    t.mc = ceil_div(ceil_div(M, t.n_ic), MR) * MR;
    t.n_ic = ceil_div(M, t.mc);
    t.n_panels = ceil_div(nc, NR);
    t.n_jchunks = t.n_ic >= nteam ? 1 : min_int(ceil_div(nteam, t.n_ic), t.n_panels);
    return t;
}

static void block_product(const gemm_args *g, const float *A, const float *B, float *C, int jc,
                          int nc, int pc, int kc, int overwrite, int tid, int nteam,
                          float *packed_b, float *packed_a) {
    tiling t = make_tiling(g->M, nc, nteam);
    pack_b(g, B, jc, nc, pc, kc, tid * t.n_panels / nteam, (tid + 1) * t.n_panels / nteam,
           packed_b);
    if (nteam > 1) {
        #pragma omp barrier
    }
    int n_tasks = t.n_ic * t.n_jchunks, packed_ic = -1;
    for (int task = tid * n_tasks / nteam; task < (tid + 1) * n_tasks / nteam; task++) {
        int ic = task / t.n_jchunks, chunk = task % t.n_jchunks;
        int i0 = ic * t.mc, mc = min_int(t.mc, g->M - i0);
        if (ic != packed_ic) {
            pack_a(g, A, i0, mc, pc, kc, packed_a);
            packed_ic = ic;
        }
        int p_first = chunk * t.n_panels / t.n_jchunks;
        int p_last = (chunk + 1) * t.n_panels / t.n_jchunks;
        for (int p = p_first; p < p_last; p++) {
            const float *b_panel = packed_b + (size_t)p * NR * kc;
            int j = jc + p * NR, cols = min_int(NR, nc - p * NR);
            for (int r0 = 0; r0 < mc; r0 += MR)
                micro_kernel(kc, packed_a + (size_t)r0 * kc, b_panel,
                             C + (size_t)(i0 + r0) * g->ldc + j, g->ldc, min_int(MR, mc - r0),
                             cols, overwrite);
        }
    }
    if (nteam > 1) {
        #pragma omp barrier /* packed_b is refilled by the next block */
    }
}

/* Matrices [b_first, b_last) of the batch, by a team of nteam threads (called by
 * every member, with the same arguments but its own tid). */
static void gemm_range(const gemm_args *g, int b_first, int b_last, int tid, int nteam,
                       float *packed_b) {
    float *packed_a = scratch(SCRATCH_A, (size_t)MC_MAX * KC);
    for (int b = b_first; b < b_last; b++) {
        const float *A = g->A + b * g->stride_a;
        const float *B = g->B + b * g->stride_b;
        float *C = g->C + b * g->stride_c;
        int first_product = g->stride_c != 0 || b == 0;
        for (int jc = 0; jc < g->N; jc += NC_MAX)
            for (int pc = 0; pc < g->K; pc += KC) {
                int overwrite = first_product && pc == 0 && g->beta == 0.0f;
                block_product(g, A, B, C, jc, min_int(NC_MAX, g->N - jc), pc,
                              min_int(KC, g->K - pc), overwrite, tid, nteam, packed_b, packed_a);
            }
    }
}

/* ---- entry points ------------------------------------------------------------- */

static void check_args(const gemm_args *g, int batch) {
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
static void scale_only(const gemm_args *g, int batch) {
    if (g->beta != 0.0f) return;
    int n_out = g->stride_c == 0 ? 1 : batch;
    for (int b = 0; b < n_out; b++)
        for (int i = 0; i < g->M; i++)
            memset(g->C + b * g->stride_c + (size_t)i * g->ldc, 0, (size_t)g->N * sizeof(float));
}

void qkv_gemm_batched(int batch, int trans_a, int trans_b, int M, int N, int K, float alpha,
                      const float *A, int lda, size_t stride_a,
                      const float *B, int ldb, size_t stride_b, float beta,
                      float *C, int ldc, size_t stride_c) {
    gemm_args g = {trans_a, trans_b, M, N, K, alpha, beta, A, lda, stride_a,
                   B, ldb, stride_b, C, ldc, stride_c};
    check_args(&g, batch);
    if (batch == 0 || M == 0 || N == 0) return;
    if (K == 0) { scale_only(&g, batch); return; }

    double flops_per_matrix = 2.0 * M * N * K;
    double work = flops_per_matrix * batch / FLOPS_PER_WORK;
    /* Called from inside a parallel loop (attention blocks), it runs on the caller. */
    int parallel = !omp_in_parallel() && QKV_PARALLEL(work > 1e18 ? 1e18 : work);
    int threads = qkv_threads();
    int split_batch = parallel && stride_c != 0 && batch >= threads &&
                      (batch % threads == 0 || batch >= 4 * threads ||
                       flops_per_matrix < SMALL_MATRIX_FLOPS);
    if (split_batch) {
        #pragma omp parallel
        {
            int tid = omp_get_thread_num(), n = omp_get_num_threads();
            float *packed_b = scratch(SCRATCH_B, packed_b_floats(N, K));
            gemm_range(&g, tid * batch / n, (tid + 1) * batch / n, 0, 1, packed_b);
        }
        return;
    }
    float *packed_b = scratch(SCRATCH_B, packed_b_floats(N, K)); /* the team shares it */
    if (!parallel) {
        gemm_range(&g, 0, batch, 0, 1, packed_b);
        return;
    }
    #pragma omp parallel
    gemm_range(&g, 0, batch, omp_get_thread_num(), omp_get_num_threads(), packed_b);
}

void qkv_gemm(int trans_a, int trans_b, int M, int N, int K, float alpha, const float *A, int lda,
              const float *B, int ldb, float beta, float *C, int ldc) {
    qkv_gemm_batched(1, trans_a, trans_b, M, N, K, alpha, A, lda, 0, B, ldb, 0, beta, C, ldc, 0);
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
