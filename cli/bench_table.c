/* bench_table.c — the table every section of `qkv bench` appends to
 * (bench_table.h): the clock, the median of timed samples, the rows, the probes
 * of the FMA peak, the rows' fraction of it and their printed line. */
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
    row->load = row->probe_load = NAN;
    row->peak_gflops = t->peak_gflops;
    row->start = qkv_bench_mark_now();
    return row;
}

/* The run's table. */
static qkv_bench_table table;

/* all / one for a rate, one / all for a time: > 1 means all threads are faster. */
static double speedup(const qkv_bench_row *row) {
    return strcmp(row->unit, "ms") == 0 ? row->one / row->all : row->all / row->one;
}

double qkv_bench_peak_fraction(const qkv_bench_table *t, const qkv_bench_row *row, int all_threads) {
    if (!(row->peak_gflops > 0)) return NAN;
    double cores = all_threads ? t->threads : 1, value = all_threads ? row->all : row->one;
    if (strcmp(row->unit, "GFLOP/s") == 0) return value / (row->peak_gflops * cores);
    if (row->gflop > 0) return row->gflop / (value * 1e-3) / (row->peak_gflops * cores);
    return NAN;
}

void qkv_bench_probe_peak(qkv_bench_table *t, const char *why) {
    qkv_bench_mark from = qkv_bench_mark_now();
    double gflops = qkv_kernels_active()->fma_peak(0.2);
    qkv_bench_mark to = qkv_bench_mark_now();
    t->peak_gflops = gflops;
    t->probe_load = qkv_bench_load_between(&from, &to);
    if (t->n_probes < BENCH_MAX_PROBES)
        t->probes[t->n_probes++] = (qkv_bench_probe){gflops, t->probe_load, why};
}

/* The larger of a row's two fractions (NAN: none). */
static double top_fraction(const qkv_bench_table *t, const qkv_bench_row *row) {
    double one = qkv_bench_peak_fraction(t, row, 0), all = qkv_bench_peak_fraction(t, row, 1);
    return isnan(one) || all > one ? all : one;
}

void qkv_bench_finish_row(qkv_bench_table *t, qkv_bench_row *row) {
    qkv_bench_mark end = qkv_bench_mark_now();
    row->load = qkv_bench_load_between(&row->start, &end);
    int has_flops = strcmp(row->unit, "GFLOP/s") == 0 || row->gflop > 0;
    if (has_flops && qkv_bench_load_changed(t->probe_load, row->load)) qkv_bench_probe_peak(t, "load changed");
    row->peak_gflops = t->peak_gflops;
    row->probe_load = t->probe_load;
    double fraction = top_fraction(t, row);
    if (fraction > 1) {
        double peak = t->peak_gflops, probe_load = t->probe_load;
        qkv_bench_probe_peak(t, "above 1");
        row->peak_gflops = qkv_bench_settle_peak(fraction, peak, probe_load, row->load, t->peak_gflops,
                                                 row->peak_note, sizeof row->peak_note);
        row->probe_load = row->peak_gflops == t->peak_gflops ? t->probe_load : probe_load; /* whose reading stood */
    }
    qkv_bench_print_row(t, row);
}

void qkv_bench_print_row(const qkv_bench_table *t, const qkv_bench_row *row) {
    char peak[320] = "", load[8] = "?";
    double one = qkv_bench_peak_fraction(t, row, 0), all = qkv_bench_peak_fraction(t, row, 1);
    if (!isnan(one) || !isnan(all))
        snprintf(peak, sizeof peak, "%.2f / %.2f of %.0f", one, all, row->peak_gflops);
    if (row->gflop > 0)
        snprintf(peak + strlen(peak), sizeof peak - strlen(peak), "  %.4f GFLOP/step", row->gflop);
    if (row->note[0]) snprintf(peak + strlen(peak), sizeof peak - strlen(peak), ", %s", row->note);
    if (row->peak_note[0]) snprintf(peak + strlen(peak), sizeof peak - strlen(peak), "; %s", row->peak_note);
    if (isfinite(row->load)) snprintf(load, sizeof load, "%.1f", row->load);
    printf("%-9s | %-30s | %-7s | %10.2f | %10.2f | %6.2fx | %7.0f | %4s | %s\n", row->section, row->name,
           row->unit, row->one, row->all, speedup(row), row->peak_rss_mb, load, peak);
    fflush(stdout);
}

qkv_bench_table *qkv_bench_begin(int cpu_clock, int micro_batch, int threads) {
    bench_clock = cpu_clock ? CLOCK_PROCESS_CPUTIME_ID : CLOCK_MONOTONIC;
    table.n = 0;
    table.n_probes = 0;
    table.micro_batch = micro_batch;
    table.threads = threads > 0 ? threads : omp_get_num_procs(); /* 0: every core, busy or not */
    table.load_average_start = qkv_bench_load_average();
    qkv_bench_probe_peak(&table, "start");
    return &table;
}
