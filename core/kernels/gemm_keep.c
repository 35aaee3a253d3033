/* gemm_keep.c — the per-thread store of packed B operands; see gemm_keep.h and
 * gemm.h (qkv_gemm_keep_begin). Entries and ranges are found by linear search: a
 * step holds a few dozen entries (one per weight matrix read transposed) and a
 * model a few dozen parameters, and a search costs nothing next to the product. */
#include "core/kernels/gemm_keep.h"

#include "core/kernels/gemm.h"
#include "core/kernels/thread_buffer.h"

/* At most this many operands, and QKV_GEMM_KEEP_MAX_FLOATS in all (64 MB), a
 * thread: a larger model packs the rest per product, as without the store. */
#define KEEP_MAX 128

typedef struct kept_b {
    const float *B;
    int trans_b, ldb, N, K, nr;
} kept_b;

static _Thread_local int n_kept, n_ranges; /* no ranges: the window is closed */
static _Thread_local const float *const *range_data;
static _Thread_local const size_t *range_size;
static _Thread_local size_t kept_floats;
static _Thread_local kept_b kept[KEEP_MAX];
/* Entry i's buffer (thread_buffer.h), kept across steps: the next step's i-th
 * operand is most often the same matrix, so its buffer is already the right size. */
static _Thread_local qkv_thread_buffer buffer[KEEP_MAX];

void qkv_gemm_keep_begin(int n, const float *const *data, const size_t *size) {
    n_kept = 0;
    kept_floats = 0;
    n_ranges = n, range_data = data, range_size = size;
}

void qkv_gemm_keep_end(void) { n_ranges = 0; }

/* Every float op(B) reads, B[0 .. extent), lies in one constant range. */
static int is_constant(const qkv_gemm_args *g) {
    size_t rows = (size_t)(g->trans_b ? g->N : g->K), cols = (size_t)(g->trans_b ? g->K : g->N);
    size_t extent = (rows - 1) * (size_t)g->ldb + cols;
    for (int i = 0; i < n_ranges; i++)
        if (g->B >= range_data[i] && (size_t)(g->B - range_data[i]) <= range_size[i] &&
            extent <= range_size[i] - (size_t)(g->B - range_data[i]))
            return 1;
    return 0;
}

/* op(B) with N columns of K floats is packed in panels of nr columns
 * (gemm_keep.h): N rounded up to nr, times K, for each of the two readings. */
size_t qkv_gemm_keep_floats(int rows, int cols) {
    size_t nr = (size_t)qkv_kernels_active()->nr, r = (size_t)rows, c = (size_t)cols;
    return (r + nr - 1) / nr * nr * c + (c + nr - 1) / nr * nr * r;
}

static int same_operand(const kept_b *e, const qkv_gemm_args *g, int nr) {
    return e->B == g->B && e->trans_b == g->trans_b && e->ldb == g->ldb && e->N == g->N && e->K == g->K &&
           e->nr == nr;
}

float *qkv_gemm_keep_find(const qkv_gemm_args *g, int nr, size_t floats, int *ready) {
    if (!n_ranges) return NULL;
    for (int i = 0; i < n_kept; i++)
        if (same_operand(&kept[i], g, nr)) {
            *ready = 1;
            return buffer[i].data;
        }
    if (n_kept == KEEP_MAX || floats > QKV_GEMM_KEEP_MAX_FLOATS - kept_floats || !is_constant(g)) return NULL;
    int i = n_kept;
    float *panels = qkv_thread_buffer_get(&buffer[i], floats, "a kept packed operand");
    kept[i] = (kept_b){g->B, g->trans_b, g->ldb, g->N, g->K, nr};
    n_kept++;
    kept_floats += floats;
    *ready = 0;
    return panels;
}
