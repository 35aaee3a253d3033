/* bench_table.c — the table every section of `qkv bench` appends to
 * (bench_table.h): the clock, the median of timed samples, the rows, their
 * fraction of the FMA peak and their printed line. */
#include "cli/bench_table.h"

#include <math.h>
#include "core/kernels/omp_shim.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "core/error.h"
#include "core/kernels/kernels.h"
#include "core/kernels/parallel.h"

/* ---- timing and the table ------------------------------------------------------- */

/* CLOCK_MONOTONIC (wall time) by default; --clock cpu: the process's CPU time,
 * which on a loaded machine leaves out the time the process waited for a core
 * (meaningful for 1-thread lines only: with threads it adds up their times). */
static clockid_t bench_clock = CLOCK_MONOTONIC;

static double now_seconds(void) {
    struct timespec ts;
    clock_gettime(bench_clock, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int compare_doubles(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double qkv_bench_seconds(void (*fn)(void *ctx), void *ctx, int threads, double min_seconds, int samples) {
    qkv_set_threads(threads);
    double t0 = now_seconds();
    fn(ctx); /* warm up: caches, packing buffers, the thread pool, the arena */
    double once = now_seconds() - t0;
    int reps = once >= min_seconds ? 1 : (int)(min_seconds / (once > 1e-7 ? once : 1e-7)) + 1;
    double per_call[BENCH_SAMPLES];
    if (samples < 1 || samples > BENCH_SAMPLES) samples = BENCH_SAMPLES;
    for (int s = 0; s < samples; s++) {
        t0 = now_seconds();
        for (int r = 0; r < reps; r++) fn(ctx);
        per_call[s] = (now_seconds() - t0) / reps;
    }
    qsort(per_call, (size_t)samples, sizeof per_call[0], compare_doubles);
    return per_call[samples / 2];
}

double qkv_bench_peak_rss_mb(void) {
    struct rusage usage;
    getrusage(RUSAGE_SELF, &usage);
    return (double)usage.ru_maxrss / 1024.0; /* Linux: kilobytes */
}

qkv_bench_row *qkv_bench_add(qkv_bench_table *t, const char *section, const char *name, const char *unit) {
    if (t->n == BENCH_MAX_ROWS) qkv_fatal("bench: more than %d rows", BENCH_MAX_ROWS);
    qkv_bench_row *row = &t->rows[t->n++];
    memset(row, 0, sizeof *row);
    snprintf(row->section, sizeof row->section, "%s", section);
    snprintf(row->name, sizeof row->name, "%s", name);
    snprintf(row->unit, sizeof row->unit, "%s", unit);
    row->one = row->all = NAN;
    return row;
}

/* The run's table: its peak is read when a row is printed. */
static qkv_bench_table table;

/* all / one for a rate, one / all for a time: > 1 means all threads are faster. */
static double speedup(const qkv_bench_row *row) {
    return strcmp(row->unit, "ms") == 0 ? row->one / row->all : row->all / row->one;
}

double qkv_bench_peak_fraction(const qkv_bench_row *row, int all_threads) {
    if (!(table.peak_gflops > 0)) return NAN;
    double cores = all_threads ? table.threads : 1, value = all_threads ? row->all : row->one;
    if (strcmp(row->unit, "GFLOP/s") == 0) return value / (table.peak_gflops * cores);
    if (row->gflop > 0) return row->gflop / (value * 1e-3) / (table.peak_gflops * cores);
    return NAN;
}

void qkv_bench_print_row(const qkv_bench_row *row) {
    char peak[128] = "";
    if (!isnan(qkv_bench_peak_fraction(row, 0)))
        snprintf(peak, sizeof peak, "%.2f / %.2f", qkv_bench_peak_fraction(row, 0), qkv_bench_peak_fraction(row, 1));
    if (row->gflop > 0)
        snprintf(peak + strlen(peak), sizeof peak - strlen(peak), "  %.4f GFLOP/step", row->gflop);
    if (row->note[0]) snprintf(peak + strlen(peak), sizeof peak - strlen(peak), ", %s", row->note);
    printf("%-9s | %-30s | %-7s | %10.2f | %10.2f | %6.2fx | %7.0f | %s\n", row->section, row->name,
           row->unit, row->one, row->all, speedup(row), row->peak_rss_mb, peak);
    fflush(stdout);
}

qkv_bench_table *qkv_bench_begin(int cpu_clock, int micro_batch, int threads) {
    bench_clock = cpu_clock ? CLOCK_PROCESS_CPUTIME_ID : CLOCK_MONOTONIC;
    table.n = 0;
    table.micro_batch = micro_batch;
    table.threads = threads > 0 ? threads : omp_get_num_procs(); /* 0: every core, busy or not */
    table.peak_gflops = qkv_kernels_active()->fma_peak(0.2);
    return &table;
}
