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

/* sums[c] = x[c][0] + x[c][1] + ... (or their squares), for c < count <= QKV_SUM_LANES
 * and n[c] <= QKV_REDUCE_CHUNK: each a chain in double in element order, started
 * from 0, so each is bitwise what summing its array alone gives. The chains
 * advance together, a lane each, in rounds as long as the shortest one left; a
 * chain that ends leaves its lane, the lanes still running move down, and the
 * free lanes read zeros (a sum that starts at +0 is never -0, so adding +0 leaves
 * it exactly as it is). */
static void sum_each(int count, const float *const *x, const size_t *n, int squares, double *sums) {
    static const float zeros[QKV_REDUCE_CHUNK];
    const float *at[QKV_SUM_LANES];
    size_t left[QKV_SUM_LANES];
    int chain[QKV_SUM_LANES]; /* whose sum lane c holds */
    double s[QKV_SUM_LANES] = {0};
    for (int c = 0; c < count; c++) {
        QKV_CHECK(n[c] <= QKV_REDUCE_CHUNK, "sum_each: %zu elements, more than a chunk", n[c]);
        at[c] = x[c], left[c] = n[c], chain[c] = c;
    }
    for (int active = count; active > 0;) {
        size_t round = left[0];
        for (int c = 1; c < active; c++) round = left[c] < round ? left[c] : round;
        for (int c = active; c < QKV_SUM_LANES; c++) at[c] = zeros;
        for (size_t i = 0; i < round; i++)
            for (int c = 0; c < QKV_SUM_LANES; c++) { /* constant lanes: the chains stay in registers */
                double v = at[c][i];
                s[c] += squares ? v * v : v; /* a float's square is exact in double */
            }
        for (int c = 0; c < active;) {
            at[c] += round;
            left[c] -= round;
            if (left[c]) {
                c++;
                continue;
            }
            sums[chain[c]] = s[c]; /* done: the last running lane, not yet advanced, takes its place */
            active--;
            at[c] = at[active], left[c] = left[active], chain[c] = chain[active], s[c] = s[active];
        }
    }
}

/* Chunks [first, first + count) of x[0..n) into partial[first..]: sum_each on them. */
static void sum_chunks(const float *x, size_t n, size_t first, int count, int squares, double *partial) {
    const float *starts[QKV_SUM_LANES];
    size_t lens[QKV_SUM_LANES];
    for (int c = 0; c < count; c++) {
        size_t begin = (first + c) * QKV_REDUCE_CHUNK;
        starts[c] = x + begin;
        lens[c] = n - begin < QKV_REDUCE_CHUNK ? n - begin : QKV_REDUCE_CHUNK;
    }
    sum_each(count, starts, lens, squares, partial + first);
}

static double chunked_sum(const float *x, size_t n, int squares) {
    size_t n_chunks = (n + QKV_REDUCE_CHUNK - 1) / QKV_REDUCE_CHUNK;
    if (n_chunks <= 1) {
        double total = 0.0;
        sum_each(1, &x, &n, squares, &total);
        return total;
    }
    double partial_small[1024]; /* 8 KB: sums up to 4M elements without a malloc */
    double *partial = n_chunks <= 1024 ? partial_small : qkv_malloc(n_chunks * sizeof(double), "a sum's partial sums");
    size_t n_groups = (n_chunks + QKV_SUM_LANES - 1) / QKV_SUM_LANES;
    QKV_FOR(QKV_PARALLEL(n), schedule(static), (size_t grp = 0; grp < n_groups; grp++), {
        size_t first = grp * QKV_SUM_LANES;
        int count = n_chunks - first < QKV_SUM_LANES ? (int)(n_chunks - first) : QKV_SUM_LANES;
        sum_chunks(x, n, first, count, squares, partial);
    });
    double total = 0.0;
    for (size_t c = 0; c < n_chunks; c++) total += partial[c];
    if (partial != partial_small) free(partial);
    return total;
}

double qkv_sum_fixed(const float *x, size_t n) { return chunked_sum(x, n, 0); }
double qkv_sum_squares_fixed(const float *x, size_t n) { return chunked_sum(x, n, 1); }

void qkv_sum_squares_each(int count, const float *const *x, const size_t *n, double *sums) {
    for (int first = 0; first < count; first += QKV_SUM_LANES)
        sum_each(count - first < QKV_SUM_LANES ? count - first : QKV_SUM_LANES, x + first, n + first, 1, sums + first);
}
