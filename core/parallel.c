/* parallel.c — thread count and the deterministic sum. See parallel.h. */
#include "parallel.h"

#include <omp.h>
#include <stdlib.h>
#include <unistd.h>

#include "alloc.h"
#include "error.h"

int qkv_set_threads(int n) {
    if (n <= 0) n = omp_get_num_procs();
    omp_set_num_threads(n);
    return n;
}

int qkv_threads(void) { return omp_get_max_threads(); }

void qkv_default_wait_policy(char **argv) {
    if (getenv("OMP_WAIT_POLICY") || getenv("GOMP_SPINCOUNT")) return;
    if (setenv("OMP_WAIT_POLICY", "passive", 1) != 0) return;
    execv("/proc/self/exe", argv); /* returns only on failure: run on as we are */
}

static double sum_chunk(const float *x, size_t n, int squares) {
    double s = 0.0;
    if (squares)
        for (size_t i = 0; i < n; i++) s += (double)x[i] * (double)x[i];
    else
        for (size_t i = 0; i < n; i++) s += x[i];
    return s;
}

static double chunked_sum(const float *x, size_t n, int squares) {
    size_t n_chunks = (n + QKV_REDUCE_CHUNK - 1) / QKV_REDUCE_CHUNK;
    if (n_chunks <= 1) return sum_chunk(x, n, squares);
    double partial_small[1024]; /* 8 KB: sums up to 4M elements without a malloc */
    double *partial = n_chunks <= 1024 ? partial_small : qkv_malloc(n_chunks * sizeof(double), "a sum's partial sums");
    #pragma omp parallel for if (QKV_PARALLEL(n)) schedule(static)
    for (size_t c = 0; c < n_chunks; c++) {
        size_t begin = c * QKV_REDUCE_CHUNK;
        size_t len = n - begin < QKV_REDUCE_CHUNK ? n - begin : QKV_REDUCE_CHUNK;
        partial[c] = sum_chunk(x + begin, len, squares);
    }
    double total = 0.0;
    for (size_t c = 0; c < n_chunks; c++) total += partial[c];
    if (partial != partial_small) free(partial);
    return total;
}

double qkv_sum_fixed(const float *x, size_t n) { return chunked_sum(x, n, 0); }
double qkv_sum_squares_fixed(const float *x, size_t n) { return chunked_sum(x, n, 1); }
