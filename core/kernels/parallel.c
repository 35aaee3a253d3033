/* parallel.c — thread count and the deterministic sum. See parallel.h. */
#include "core/kernels/parallel.h"

#include "core/kernels/omp_shim.h"
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "core/alloc.h"
#include "core/error.h"

int qkv_other_runnable(void) {
    int fewest = -1;
    for (int sample = 0; sample < 3; sample++) {
        if (sample > 0) nanosleep(&(struct timespec){0, 4000000}, NULL);
        FILE *f = fopen("/proc/loadavg", "r");
        if (!f) return -1;
        double load1, load5, load15;
        int running = 0, total = 0;
        int got = fscanf(f, "%lf %lf %lf %d/%d", &load1, &load5, &load15, &running, &total);
        fclose(f);
        if (got != 5 || running < 1) return -1;
        if (fewest < 0 || running - 1 < fewest) fewest = running - 1;
    }
    return fewest;
}

int qkv_set_threads(int n) {
    const char *env = getenv("OMP_NUM_THREADS");
    if (n <= 0 && env && atoi(env) > 0) n = atoi(env);
    if (n <= 0) {
        int others = qkv_other_runnable();
        n = omp_get_num_procs() - (others > 0 ? others : 0);
        if (n < 1) n = 1;
    }
#ifndef _OPENMP
    n = 1; /* no OpenMP (core/kernels/omp_shim.h): every loop runs on the caller */
#endif
    omp_set_num_threads(n);
    return n;
}

/* Inside a parallel region (a worker of the parallel step, train/step.h) an op
 * runs on its caller: nested regions would only add fork/join cost. */
int qkv_threads(void) { return omp_in_parallel() ? 1 : omp_get_max_threads(); }

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
    QKV_FOR(QKV_PARALLEL(n), schedule(static), (size_t c = 0; c < n_chunks; c++), {
        size_t begin = c * QKV_REDUCE_CHUNK;
        size_t len = n - begin < QKV_REDUCE_CHUNK ? n - begin : QKV_REDUCE_CHUNK;
        partial[c] = sum_chunk(x + begin, len, squares);
    });
    double total = 0.0;
    for (size_t c = 0; c < n_chunks; c++) total += partial[c];
    if (partial != partial_small) free(partial);
    return total;
}

double qkv_sum_fixed(const float *x, size_t n) { return chunked_sum(x, n, 0); }
double qkv_sum_squares_fixed(const float *x, size_t n) { return chunked_sum(x, n, 1); }
