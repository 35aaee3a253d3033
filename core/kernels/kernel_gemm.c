/* kernel_gemm.c — the matrix-product kernel, compiled once per vector width
 * (simd.h); the contracts are gemm.h and block_product.h, the tables kernels.h.
 *
 * Structure (the GotoBLAS / BLIS design):
 *
 *   for each batch b                                   (or: threads split the batch)
 *     for jc in N by NC                                columns of C
 *       for pc in K by KC                              one K block, in order
 *         pack B[pc:pc+kc, jc:jc+nc] into NR-wide panels   (shared by the team),
 *           or read B where it is (untransposed, rows at most B_IN_PLACE_MAX_LD
 *           apart: only a partial last panel packed), or take the panels a keep
 *           window holds for a constant B (gemm_keep.h: packed by its first product)
 *         for each task (ic block of MC rows, range of NR panels), split over threads
 *           pack alpha * A[ic:ic+mc, pc:pc+kc] into MR-tall panels (per thread),
 *             or read A where it is (alpha = 1 and few panels: small products)
 *           for each NR panel, for each MR panel: MR x NR micro-kernel
 *
 * The micro-kernel keeps an MR x NR tile of C in MR * NR / QKV_VW vector
 * registers and streams the panels: 6 x 64 with 16-float vectors (24 of the 32
 * zmm registers), 6 x 16 with 8 floats (12 of 16 ymm), 6 x 16 with 4 floats (24
 * of NEON's 32); gemm_tiles.h. Packing pads edge panels with zeros, so the kernel
 * always computes a full tile; edge tiles go through a small buffer.
 *
 * Determinism: every element of C is one chain of fused multiply-adds over k in
 * order,
 *     acc = beta ? C : 0;  for k = 0 .. K-1: acc = fma(alpha * a_k, b_k, acc);  C = acc
 * (a K block stores acc in C and the next block starts from it; alpha * a_k is
 * rounded once, when A is packed, or is a_k itself when alpha is 1). So the
 * result depends neither on MR, NR, KC, MC and the vector width, nor on the
 * threads: those only decide which tiles are computed where, never how.
 *
 * A product fewer columns wide than a vector, and a panel or more tall, is computed
 * as C^T = op(B)^T op(A)^T (gemm_narrow: the same chains), so that its tiles are
 * not mostly zero columns.
 *
 * Threads: above the work threshold, either each thread takes whole matrices of
 * the batch (many small matrices, e.g. attention heads) or the whole team works on
 * one matrix at a time, splitting its output tiles (one large matrix, or
 * stride_c == 0 where the batch is summed in order).
 */
#include "core/kernels/omp_shim.h"
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/kernels/block_product.h"
#include "core/kernels/gemm_keep.h"
#include "core/kernels/gemm_tiles.h"
#include "core/kernels/kernels.h"
#include "core/kernels/parallel.h"
#include "core/kernels/simd.h"
#include "core/kernels/thread_buffer.h"
#include "core/kernels/transpose.h"

#define CACHE_LINE_FLOATS 16 /* 64-byte lines */
#define NC_MAX 2048      /* columns of B per packed block (256 x 2048 floats = 2 MB) */

/* A product's flops are much cheaper than the elementwise "work" QKV_PARALLEL is
 * calibrated for. With the 16-float kernel a team of 2 was still slower than one
 * thread at 128x128x128 (0.86x, 4 MFLOP) and 1.4x faster at 256^3 (34 MFLOP):
 * products below 64 * QKV_PAR_MIN_WORK = 8.4 MFLOP stay on one thread. */
#define FLOPS_PER_WORK 64
/* Below this many flops per matrix, splitting one matrix across threads costs more
 * in barriers than it gains; prefer giving each thread whole matrices. */
#define SMALL_MATRIX_FLOPS (1u << 22)
/* A is read in place (not packed) when alpha is 1 and a row block meets at most
 * this many columns of C: packing would cost one copy per this few tiles. */
#define IN_PLACE_MAX_COLS 256
/* An untransposed B is read in place, not packed, when its rows are at most this
 * many floats apart: `qkv bench matmul`, interleaved pairs on a Zen 4, gained
 * 2-5% on one thread at n = 64..256 (10% on two at 256), was even at 512 and lost
 * 5% at 1024, where each k of a panel is a row 4 KB from the last. */
#define B_IN_PLACE_MAX_LD 512

/* ---- scratch buffers: the thread's own (thread_buffer.h) ---------------------- */

enum { SCRATCH_A, SCRATCH_B, SCRATCH_T, N_SCRATCH };
static _Thread_local qkv_thread_buffer scratch_buf[N_SCRATCH];

static float *scratch(int which, size_t floats) {
    return qkv_thread_buffer_get(&scratch_buf[which], floats, "gemm's packing buffer");
}

static int min_int(int a, int b) { return a < b ? a : b; }
static int max_int(int a, int b) { return a > b ? a : b; }
static int ceil_div(int a, int b) { return (a + b - 1) / b; }
static size_t packed_b_floats(int N, int K) {
    return (size_t)ceil_div(min_int(N, NC_MAX), NR) * NR * (size_t)min_int(K, KC);
}

/* ---- packing ------------------------------------------------------------------ */

/* a(r, k) of op(A) starts at A + r * row + k * col. */
typedef struct a_view {
    const float *A;
    size_t row, col;
} a_view;

static a_view view_a(int trans, const float *A, int lda) {
    return trans ? (a_view){A, 1, (size_t)lda} : (a_view){A, (size_t)lda, 1};
}

/* Rows [i0, i0+mc) and columns [p0, p0+kc) of alpha * op(A) into mr-row panels:
 * panel p holds, for each k, the mr values of rows i0+p*mr.., zero past row mc. */
static void pack_rows(a_view a, float alpha, int i0, int mc, int p0, int kc, int mr, float *restrict dst) {
    for (int r0 = 0; r0 < mc; r0 += mr, dst += (size_t)mr * kc) {
        int rows = min_int(mr, mc - r0);
        const float *base = a.A + (size_t)(i0 + r0) * a.row + (size_t)p0 * a.col;
        if (a.col == 1) {
            for (int r = 0; r < rows; r++) {
                const float *src = base + (size_t)r * a.row;
                for (int k = 0; k < kc; k++) dst[k * mr + r] = alpha * src[k];
            }
        } else {
            for (int k = 0; k < kc; k++) {
                const float *src = base + (size_t)k * a.col;
                for (int r = 0; r < rows; r++) dst[k * mr + r] = alpha * src[r];
            }
        }
        for (int r = rows; r < mr; r++)
            for (int k = 0; k < kc; k++) dst[k * mr + r] = 0.0f;
    }
}

/* The gemm's panels: MR rows. */
static void pack_a(a_view a, float alpha, int i0, int mc, int p0, int kc, float *restrict dst) {
    pack_rows(a, alpha, i0, mc, p0, kc, MR, dst);
}

/* NR-column panels [first, last) of op(B) rows [p0, p0+kc), columns from j0:
 * panel p holds, for each k, the NR values of columns j0+p*NR.., zero past nc. */
static void pack_b(int trans_b, const float *B, int ldb, int j0, int nc, int p0, int kc, int first,
                   int last, float *restrict packed) {
    for (int p = first; p < last; p++) {
        float *restrict dst = packed + (size_t)p * NR * kc;
        int c0 = j0 + p * NR, cols = min_int(NR, nc - p * NR);
        if (!trans_b && cols == NR) { /* NV vector moves per row, not a memcpy call */
            for (int k = 0; k < kc; k++) {
                const float *src = B + (size_t)(p0 + k) * ldb + c0;
                for (int v = 0; v < NV; v++) vf_store(dst + k * NR + v * QKV_VW, vf_load(src + v * QKV_VW));
            }
        } else if (!trans_b) {
            for (int k = 0; k < kc; k++) {
                const float *src = B + (size_t)(p0 + k) * ldb + c0;
                for (int c = 0; c < cols; c++) dst[k * NR + c] = src[c];
                for (int c = cols; c < NR; c++) dst[k * NR + c] = 0.0f;
            }
        } else {
            qkv_transpose(B + (size_t)c0 * ldb + p0, (size_t)ldb, dst, NR, cols, kc);
            for (int c = cols; c < NR; c++)
                for (int k = 0; k < kc; k++) dst[k * NR + c] = 0.0f;
        }
    }
}

/* ---- the micro-kernel ------------------------------------------------------------ */

/* C[0:rows, 0:cols] = (start ? C : 0) + sum over k of a(r, k) b(k, :), one fma
 * chain per element, with a(r, k) = a[r * a_row + k * a_k] for every r < mr and
 * b(k, j) = b[k * ldb + j] for every j < nv * QKV_VW (packed panels, or B in
 * place). nv is NV for a full tile, fewer for a narrow panel (attention heads of
 * 16 columns on 16-float vectors); inlined with constant nv and, for packed
 * panels, constant strides. With try, the multiply-adds are vf_fma_try: if any
 * flagged a lane it returns 0 with C untouched (the caller redoes the tile). */
QKV_INLINE int micro_kernel_run(int mr, int nv, int kc, const float *restrict a, size_t a_row, size_t a_k,
                                const float *restrict b, size_t ldb, float *restrict c, size_t ldc,
                                int rows, int cols, int start, int try) {
    qkv_vodd odd = {0};
    qkv_vf acc[TALL_MR][NV]; /* fixed sizes (mr <= TALL_MR, nv <= NV): a variable-length */
    float tile[TALL_MR][NR] __attribute__((aligned(64))); /* array kept them out of registers */
    int full = rows == mr && cols == nv * QKV_VW;
    if (!start) {
        for (int r = 0; r < mr; r++)
            for (int v = 0; v < nv; v++) acc[r][v] = vf_zero();
        /* Every line of the tile's C rows asked for, for writing, before the k loop
         * (it was each row's last line only): `qkv bench train` on a Zen 4, two runs
         * of 15 pairs, text 0.981 / 0.991 and 0.992 / 0.991 (1 / 2 threads), the
         * others 0.99-1.00; `bench matmul` even. Asking one tile ahead was slower. */
        for (int r = 0; r < rows; r++) {
            for (int j = 0; j < cols; j += CACHE_LINE_FLOATS) __builtin_prefetch(c + (size_t)r * ldc + j, 1, 3);
            __builtin_prefetch(c + (size_t)r * ldc + cols - 1, 1, 3); /* a row that starts mid-line */
        }
    } else if (full) {
        for (int r = 0; r < mr; r++)
            for (int v = 0; v < nv; v++) acc[r][v] = vf_load(c + (size_t)r * ldc + v * QKV_VW);
    } else { /* vector stores of zero, not a memset call */
        for (int r = 0; r < mr; r++)
            for (int v = 0; v < nv; v++) vf_store(&tile[r][v * QKV_VW], vf_zero());
        for (int r = 0; r < rows; r++)
            for (int j = 0; j < cols; j++) tile[r][j] = c[(size_t)r * ldc + j];
        for (int r = 0; r < mr; r++)
            for (int v = 0; v < nv; v++) acc[r][v] = vf_load(&tile[r][v * QKV_VW]);
    }
    #pragma GCC unroll 4
    for (int k = 0; k < kc; k++, a += a_k, b += ldb) {
        qkv_vf bv[NV];
        for (int v = 0; v < nv; v++) bv[v] = vf_load(b + v * QKV_VW);
        for (int r = 0; r < mr; r++) {
            qkv_vf av = vf_splat(a[r * a_row]);
            for (int v = 0; v < nv; v++)
                acc[r][v] = try ? vf_fma_try(av, bv[v], acc[r][v], &odd) : vf_fma(av, bv[v], acc[r][v]);
        }
    }
    if (try && vodd_any(odd)) return 0; /* C untouched: redone exactly */
    if (full) {
        for (int r = 0; r < mr; r++)
            for (int v = 0; v < nv; v++) vf_store(c + (size_t)r * ldc + v * QKV_VW, acc[r][v]);
        return 1;
    }
    for (int r = 0; r < mr; r++) /* vector stores (a memcpy here became a libc call) */
        for (int v = 0; v < nv; v++) vf_store(&tile[r][v * QKV_VW], acc[r][v]);
    for (int r = 0; r < rows; r++)
        for (int j = 0; j < cols; j++) c[(size_t)r * ldc + j] = tile[r][j];
    return 1;
}

/* The tile, with the cheap multiply-add first where there is one (QKV_FMA_TRY),
 * and with vf_fma if that flagged a lane. */
QKV_INLINE void micro_kernel(int mr, int nv, int kc, const float *restrict a, size_t a_row, size_t a_k,
                             const float *restrict b, size_t ldb, float *restrict c, size_t ldc,
                             int rows, int cols, int start) {
    if (!QKV_FMA_TRY || !micro_kernel_run(mr, nv, kc, a, a_row, a_k, b, ldb, c, ldc, rows, cols, start, 1))
        micro_kernel_run(mr, nv, kc, a, a_row, a_k, b, ldb, c, ldc, rows, cols, start, 0);
}

/* The tile for a panel of nv vectors (1 .. NV): one constant nv per case. */
#define NV_CASES(call)                                                                          \
    switch (nv) {                                                                               \
    case 1: call(1); break;                                                                     \
    NV_CASE_2(call) NV_CASE_3(call)                                                             \
    default: call(NV); break;                                                                   \
    }
#if NV > 2
#define NV_CASE_2(call) case 2: call(2); break;
#else
#define NV_CASE_2(call)
#endif
#if NV > 3
#define NV_CASE_3(call) case 3: call(3); break;
#else
#define NV_CASE_3(call)
#endif

/* A from packed MR-row panels, B from packed NR-column panels. */
static void kernel_packed(int nv, int kc, const float *a, const float *b, float *c, size_t ldc,
                          int rows, int cols, int start) {
#define PACKED(n) micro_kernel(MR, n, kc, a, 1, MR, b, NR, c, ldc, rows, cols, start)
    NV_CASES(PACKED)
#undef PACKED
}

/* A and B with any strides (read in place). Inlined into each caller: called
 * through one shared copy, the block products of 16 to 32 columns ran 10-30% slower. */
QKV_INLINE void kernel_general(int nv, int kc, const float *a, size_t a_row, size_t a_k,
                           const float *b, size_t ldb, float *c, size_t ldc, int rows, int cols,
                           int start) {
#define GENERAL(n) micro_kernel(MR, n, kc, a, a_row, a_k, b, ldb, c, ldc, rows, cols, start)
    NV_CASES(GENERAL)
#undef GENERAL
}

/* A and B with any strides, one vector of columns, TALL_MR rows (block products). */
QKV_INLINE void kernel_tall(int kc, const float *a, size_t a_row, size_t a_k, const float *b, size_t ldb,
                        float *c, size_t ldc, int rows, int cols, int start) {
    micro_kernel(TALL_MR, 1, kc, a, a_row, a_k, b, ldb, c, ldc, rows, cols, start);
}

/* A and B with any strides, one row (a single query: the pooling's seed): a
 * taller tile would multiply rows of zeros. With nv accumulators in flight the
 * chains are latency-bound, which still beats a 6- or 16-row tile of one row. */
QKV_INLINE void kernel_one_row(int nv, int kc, const float *a, size_t a_k, const float *b, size_t ldb,
                               float *c, size_t ldc, int cols, int start) {
#define ONE_ROW(n) micro_kernel(1, n, kc, a, 0, a_k, b, ldb, c, ldc, 1, cols, start)
    NV_CASES(ONE_ROW)
#undef ONE_ROW
}

/* Vectors of a panel of cols columns (cols <= NR). */
static int vectors_for(int cols) { return (cols + QKV_VW - 1) / QKV_VW; }

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

/* Where a row block's tiles read op(B): packed NR-column panels (p * NR * kc
 * floats in, rows NR apart), or, for full panels of an untransposed B, B itself
 * (rows ldb apart): the same values, so the same bits. */
typedef struct b_panels {
    const float *packed;
    const float *in_place; /* B at (pc, jc), or NULL: every panel packed */
    size_t ldb;
} b_panels;

/* The MR x NR tiles of rows [i0, i0+mc) and panels [p_first, p_last): A from its
 * packed panels, or (a_in_place) read where it is, full MR-row panels only; the
 * last, partial one is packed into packed_a. */
static void row_block(const qkv_gemm_args *g, a_view a, int a_in_place, const float *packed_a,
                      b_panels bp, float *C, int i0, int mc, int jc, int nc, int pc,
                      int kc, int p_first, int p_last, int start) {
    for (int p = p_first; p < p_last; p++) {
        int j = jc + p * NR, cols = min_int(NR, nc - p * NR);
        int b_here = bp.in_place && cols == NR;
        const float *b_panel = b_here ? bp.in_place + (size_t)p * NR : bp.packed + (size_t)p * NR * kc;
        size_t b_ld = b_here ? bp.ldb : NR;
        for (int r0 = 0; r0 < mc; r0 += MR) {
            int rows = min_int(MR, mc - r0);
            float *c = C + (size_t)(i0 + r0) * g->ldc + j;
            int nv = vectors_for(cols);
            if (a_in_place && rows == MR)
                kernel_general(nv, kc, a.A + (size_t)(i0 + r0) * a.row + (size_t)pc * a.col, a.row,
                               a.col, b_panel, b_ld, c, g->ldc, rows, cols, start);
            else if (b_here)
                kernel_general(nv, kc, packed_a + (a_in_place ? 0 : (size_t)r0 * kc), 1, MR, b_panel, b_ld, c,
                               g->ldc, rows, cols, start);
            else
                kernel_packed(nv, kc, packed_a + (a_in_place ? 0 : (size_t)r0 * kc), b_panel, c,
                              g->ldc, rows, cols, start);
        }
    }
}

static int b_in_place(const qkv_gemm_args *g) { return !g->trans_b && g->ldb <= B_IN_PLACE_MAX_LD; }

/* packed_b: the block's panels, to be packed (b_ready 0) or packed already (a kept
 * operand, gemm_keep.h). B read in place (b_in_place) packs only a partial last
 * panel. */
static void block_product(const qkv_gemm_args *g, a_view a, const float *B, float *C, int jc,
                          int nc, int pc, int kc, int start, int tid, int nteam,
                          float *packed_b, int b_ready, float *packed_a) {
    tiling t = make_tiling(g->M, nc, nteam);
    b_panels bp = {packed_b, NULL, (size_t)g->ldb};
    int first = tid * t.n_panels / nteam, last = (tid + 1) * t.n_panels / nteam;
    if (b_in_place(g) && !b_ready) {
        bp.in_place = B + (size_t)pc * g->ldb + jc;
        first = nc % NR ? max_int(first, t.n_panels - 1) : last; /* only the partial panel */
    }
    if (!b_ready && first < last) pack_b(g->trans_b, B, g->ldb, jc, nc, pc, kc, first, last, packed_b);
    if (nteam > 1) {
        #pragma omp barrier
    }
    int a_in_place = g->alpha == 1.0f && t.n_panels * NR <= IN_PLACE_MAX_COLS;
    int n_tasks = t.n_ic * t.n_jchunks, packed_ic = -1;
    for (int task = tid * n_tasks / nteam; task < (tid + 1) * n_tasks / nteam; task++) {
        int ic = task / t.n_jchunks, chunk = task % t.n_jchunks;
        int i0 = ic * t.mc, mc = min_int(t.mc, g->M - i0);
        if (ic != packed_ic) {
            if (!a_in_place)
                pack_a(a, g->alpha, i0, mc, pc, kc, packed_a);
            else if (mc % MR) /* only the partial last panel */
                pack_a(a, 1.0f, i0 + mc - mc % MR, mc % MR, pc, kc, packed_a);
            packed_ic = ic;
        }
        row_block(g, a, a_in_place, packed_a, bp, C, i0, mc, jc, nc, pc, kc,
                  chunk * t.n_panels / t.n_jchunks, (chunk + 1) * t.n_panels / t.n_jchunks, start);
    }
    if (nteam > 1) {
        #pragma omp barrier /* packed_b is refilled by the next block */
    }
}

/* Matrices [b_first, b_last) of the batch, by a team of nteam threads (called by
 * every member, with the same arguments but its own tid). With kept_b (one
 * matrix, one thread), op(B)'s blocks are read from (kept_ready) or packed into
 * that entry of the store, at gemm_keep.h's offsets, instead of packed_b. */
static void gemm_range(const qkv_gemm_args *g, int b_first, int b_last, int tid, int nteam,
                       float *packed_b, float *kept_b, int kept_ready) {
    float *packed_a = scratch(SCRATCH_A, (size_t)MC_MAX * KC);
    for (int b = b_first; b < b_last; b++) {
        a_view a = view_a(g->trans_a, g->A + b * g->stride_a, g->lda);
        const float *B = g->B + b * g->stride_b;
        float *C = g->C + b * g->stride_c;
        int first_product = g->stride_c != 0 || b == 0;
        for (int jc = 0; jc < g->N; jc += NC_MAX) {
            int nc = min_int(NC_MAX, g->N - jc);
            for (int pc = 0; pc < g->K; pc += KC) {
                int start = !(first_product && pc == 0 && g->beta == 0.0f);
                float *panels = kept_b ? kept_b + (size_t)jc * g->K + (size_t)pc * (ceil_div(nc, NR) * NR) : packed_b;
                block_product(g, a, B, C, jc, nc, pc, min_int(KC, g->K - pc), start, tid, nteam, panels,
                              kept_b && kept_ready, packed_a);
            }
        }
    }
}

/* The floats of op(B) packed whole: every column block's panels over all of K. */
static size_t packed_b_all_floats(int N, int K) { return (size_t)ceil_div(N, NR) * NR * (size_t)K; }

static void gemm(const qkv_gemm_args *g, int batch);

/* A product a few columns wide (N < one vector) and at least a panel tall: its
 * NR-column panels would be mostly zeros (a weight gradient of 3 input features:
 * 3 of 64 columns used), so it is computed the other way round, C^T = op(B)^T
 * op(A)^T, N rows of MR-row tiles, in a buffer, and transposed back. Each element
 * is the same chain: fma(b, a, acc) is fma(a, b, acc), one exact product rounded
 * once; with alpha 1 neither operand is scaled first (alpha != 1 is not taken
 * here: it scales A, which would be the other side). */
static int narrow(const qkv_gemm_args *g, int batch) {
    return batch == 1 && g->alpha == 1.0f && g->N < QKV_VW && g->M >= NR;
}

static void gemm_narrow(const qkv_gemm_args *g) {
    int M = g->M, N = g->N;
    float *ct = scratch(SCRATCH_T, (size_t)N * M);
    if (g->beta != 0.0f) qkv_transpose(g->C, (size_t)g->ldc, ct, (size_t)M, M, N);
    qkv_gemm_args t = {!g->trans_b, !g->trans_a, N, M, g->K, 1.0f, g->beta, g->B, g->ldb, 0,
                       g->A, g->lda, 0, ct, M, 0, QKV_BAND_NONE, 0};
    gemm(&t, 1);
    qkv_transpose(ct, (size_t)M, g->C, (size_t)g->ldc, N, M);
}

static void gemm(const qkv_gemm_args *g, int batch) {
    if (narrow(g, batch)) {
        gemm_narrow(g);
        return;
    }
    double flops_per_matrix = 2.0 * g->M * g->N * g->K;
    double work = flops_per_matrix * batch / FLOPS_PER_WORK;
    /* Called from inside a parallel loop (attention blocks), it runs on the caller. */
    int parallel = !omp_in_parallel() && QKV_PARALLEL(work > 1e18 ? 1e18 : work);
    int threads = qkv_threads();
    int split_batch = parallel && g->stride_c != 0 && batch >= threads &&
                      (batch % threads == 0 || batch >= 4 * threads ||
                       flops_per_matrix < SMALL_MATRIX_FLOPS);
    if (split_batch) {
        #pragma omp parallel
        {
            int tid = omp_get_thread_num(), n = omp_get_num_threads();
            float *packed_b = scratch(SCRATCH_B, packed_b_floats(g->N, g->K));
            gemm_range(g, tid * batch / n, (tid + 1) * batch / n, 0, 1, packed_b, NULL, 0);
        }
        return;
    }
    float *packed_b = scratch(SCRATCH_B, packed_b_floats(g->N, g->K)); /* the team shares it */
    if (!parallel) {
        int ready = 0;
        float *kept = !b_in_place(g) && batch == 1 /* else nothing to keep */
                          ? qkv_gemm_keep_find(g, NR, packed_b_all_floats(g->N, g->K), &ready)
                          : NULL;
        gemm_range(g, 0, batch, 0, 1, packed_b, kept, ready);
        return;
    }
    #pragma omp parallel
    gemm_range(g, 0, batch, omp_get_thread_num(), omp_get_num_threads(), packed_b, NULL, 0);
}

/* ---- block products on the calling thread, operands read in place -------------- */

/* Operands larger than this many floats go to gemm (the stack buffers below). */
#define MAX_BUFFER (64 * 256)

/* What a band (block_product.h) leaves of the tile rows [i, i+rows) x columns
 * [j, j+cols): its first columns (0: none) and its terms [k0, k1). */
typedef struct tile_span {
    int cols, k0, k1;
} tile_span;

static int clamp_int(int x, int lo, int hi) { return x < lo ? lo : x > hi ? hi : x; }

static tile_span band_span(const qkv_gemm_args *g, int i, int rows, int j, int cols) {
    tile_span t = {cols, 0, g->K};
    int last = i + rows - 1 + g->band_diag; /* the tile's last row's last column or term */
    if (g->band == QKV_BAND_COLS) t.cols = clamp_int(last + 1 - j, 0, cols);
    if (g->band == QKV_BAND_K_UPTO) t.k1 = clamp_int(last + 1, 0, g->K);
    if (g->band == QKV_BAND_K_FROM) t.k0 = clamp_int(i - g->band_diag, 0, g->K);
    return t;
}

/* block_product.h: C = alpha op(A) op(B) + beta C with the chain above, nothing
 * packed that can be read in place: A where it is when alpha is 1 (else alpha A,
 * once), B where it is unless transposed. Only partial edge panels are copied. */
static void block_product_in_place(const qkv_gemm_args *g) {
    int M = g->M, N = g->N, K = g->K;
    if ((g->alpha != 1.0f && (size_t)M * K > MAX_BUFFER) ||
        (g->trans_b && (size_t)N * K > MAX_BUFFER) || (size_t)NR * K > MAX_BUFFER) {
        gemm(g, 1);
        return;
    }
    a_view a = view_a(g->trans_a, g->A, g->lda);
    float a_scaled[g->alpha != 1.0f ? M * K : 1];
    if (g->alpha != 1.0f) { /* alpha op(A), row-major M x K: op(A) copied (transposed), then scaled */
        if (g->trans_a) qkv_transpose(g->A, (size_t)g->lda, a_scaled, (size_t)K, K, M);
        for (int i = 0; i < M; i++) {
            const float *src = g->trans_a ? a_scaled + (size_t)i * K : g->A + (size_t)i * g->lda;
            for (int k = 0; k < K; k++) a_scaled[i * K + k] = g->alpha * src[k];
        }
        a = (a_view){a_scaled, (size_t)K, 1};
    }
    const float *B = g->B;
    size_t ldb = (size_t)g->ldb;
    float b_t[g->trans_b ? N * K : 1];
    if (g->trans_b) { /* op(B) = B^T: make it K x N, row-major */
        qkv_transpose(g->B, (size_t)g->ldb, b_t, (size_t)N, N, K);
        B = b_t;
        ldb = (size_t)N;
    }
    float a_edge[TALL_MR * K] __attribute__((aligned(64))); /* TALL_MR >= MR */
    float b_edge[NR * K] __attribute__((aligned(64)));
    int start = g->beta != 0.0f, edge_mr = 0; /* the tile height a_edge is packed for */
    for (int j = 0; j < N;) {
        /* a full NR panel, else the fewest vectors that cover the rest: in place when
         * whole, else copied with zeros past N */
        int cols = min_int(NR, N - j), nv = vectors_for(cols), width = nv * QKV_VW;
        const float *b = B + j;
        size_t b_ld = ldb;
        if (cols < width) {
            for (int k = 0; k < K; k++)
                for (int c = 0; c < width; c++) b_edge[k * width + c] = c < cols ? B[k * ldb + j + c] : 0.0f;
            b = b_edge;
            b_ld = (size_t)width;
        }
        float *c = g->C + j;
        int mr = M == 1 ? 1 : nv == 1 ? TALL_MR : MR; /* one row: no tile of zero rows */
        if (M % mr && edge_mr != mr) { /* the partial last rows, zero below */
            pack_rows(a, 1.0f, M - M % mr, M % mr, 0, K, mr, a_edge);
            edge_mr = mr;
        }
        for (int i = 0; i < M; i += mr) {
            int rows = min_int(mr, M - i);
            tile_span t = band_span(g, i, rows, j, cols);
            if (!t.cols) continue; /* none of the tile's columns is needed */
            /* the fewest vectors that hold the needed columns, stored whole where
             * the panel has them (the columns past the band may be written) */
            int tile_nv = vectors_for(t.cols), tile_cols = min_int(cols, tile_nv * QKV_VW);
            const float *a_tile = rows == mr ? a.A + (size_t)i * a.row : a_edge;
            size_t t_row = rows == mr ? a.row : 1, t_k = rows == mr ? a.col : (size_t)mr;
            a_tile += (size_t)t.k0 * t_k;
            const float *b_tile = b + (size_t)t.k0 * b_ld;
            if (mr == 1)
                kernel_one_row(tile_nv, t.k1 - t.k0, a_tile, t_k, b_tile, b_ld, c + (size_t)i * g->ldc,
                               (size_t)g->ldc, tile_cols, start);
            else if (nv == 1)
                kernel_tall(t.k1 - t.k0, a_tile, t_row, t_k, b_tile, b_ld, c + (size_t)i * g->ldc,
                            (size_t)g->ldc, rows, tile_cols, start);
            else
                kernel_general(tile_nv, t.k1 - t.k0, a_tile, t_row, t_k, b_tile, b_ld,
                               c + (size_t)i * g->ldc, (size_t)g->ldc, rows, tile_cols, start);
        }
        j += cols;
    }
}

void QKV_ISA_FN(qkv_kernel_gemm)(const qkv_gemm_args *g, int batch) { gemm(g, batch); }
void QKV_ISA_FN(qkv_kernel_block_product)(const qkv_gemm_args *g) { block_product_in_place(g); }
