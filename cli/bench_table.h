/* bench_table.h — the table every section of `qkv bench` appends to, near the
 * bottom of the bench files, which form a line: bench.c (the matmul section, the
 * run, the JSON) includes bench_models.h (attention, train, long), which
 * includes this (bench_table.c), which includes bench_load.h (the load).
 *
 * Every section appends rows to one table: a value on 1 thread and on all
 * threads (NAN where not measured), each the median of BENCH_SAMPLES timed
 * samples, and the process's peak resident memory after the row. A row is
 * opened (qkv_bench_add marks the load), measured, then finished
 * (qkv_bench_finish_row): the others' load during it, the FMA peak its fraction
 * uses, re-probed when the load moved (bench_load.h: QKV_BENCH_LOAD_CHANGE) or
 * the fraction came out above 1, and then the line is printed.
 */
#ifndef QKV_BENCH_TABLE_H
#define QKV_BENCH_TABLE_H

#include "cli/bench_load.h"

#define BENCH_SAMPLES 5
#define BENCH_MAX_ROWS 64
#define BENCH_MAX_PROBES (2 * BENCH_MAX_ROWS + 8) /* start, each section, at most 2 per row */

typedef struct qkv_bench_row {
    char section[16]; /* matmul, attention, train, long */
    char name[64];    /* "n=256", "B=4 H=8 T=256 d=64 causal", "reverse" */
    char unit[16];    /* "GFLOP/s" (higher is better) or "ms" */
    double one, all;  /* 1 thread, all threads */
    double gflop;     /* ms rows of a computation with a FLOP count: GFLOP per call, else 0 */
    char note[48];    /* printed after the row ("micro-batch 8 of 64") */
    double peak_rss_mb;
    qkv_bench_mark start; /* when the row was opened */
    double load;          /* the others' load during the row, cores (bench_load.h); NAN unknown */
    double peak_gflops;   /* the FMA peak per core its fractions use */
    double probe_load;    /* the load that peak was probed under */
    char peak_note[128];  /* why the peak was re-probed, or why a fraction is above 1 */
} qkv_bench_row;

/* One reading of the FMA peak per core. */
typedef struct qkv_bench_probe {
    double gflops, load; /* the reading, and the others' load during it (NAN unknown) */
    const char *why;     /* "start", "section", "load changed", "above 1" */
} qkv_bench_probe;

typedef struct qkv_bench_table {
    qkv_bench_row rows[BENCH_MAX_ROWS];
    int n;
    int threads; /* "all threads" */
    int micro_batch; /* train: examples per micro-batch, 0: each task's default */
    double peak_gflops; /* one core's FMA peak on the path in use (the latest probe) */
    double probe_load;  /* the others' load during that probe */
    double load_average_start; /* /proc/loadavg's 1-minute average at the start; NAN unknown */
    qkv_bench_probe probes[BENCH_MAX_PROBES];
    int n_probes;
} qkv_bench_table;

/* A run's table (the clock: wall, or the process's CPU time; the probe of the
 * FMA peak; the many-thread column's threads, 0: every core). */
qkv_bench_table *qkv_bench_begin(int cpu_clock, int micro_batch, int threads);
/* Probes the FMA peak again (0.2 s) and makes it the table's, recording why. */
void qkv_bench_probe_peak(qkv_bench_table *t, const char *why);
/* Median seconds per call of fn(ctx) on `threads` threads: one warm-up call,
 * then calls are grouped so that a sample lasts about min_seconds (at least one
 * call), `samples` samples (at most BENCH_SAMPLES). */
double qkv_bench_seconds(void (*fn)(void *ctx), void *ctx, int threads, double min_seconds, int samples);
/* Peak resident set of the process so far (getrusage), in MB. */
double qkv_bench_peak_rss_mb(void);
/* Opens a row: its names, and the load mark it starts at. */
qkv_bench_row *qkv_bench_add(qkv_bench_table *t, const char *section, const char *name, const char *unit);
/* A row's fraction of the FMA peak of the cores it ran on (the FLOP floor over
 * the time; the row's own peak_gflops, 1 core or t->threads): a rate's, or a
 * time's with a FLOP count; NAN otherwise. */
double qkv_bench_peak_fraction(const qkv_bench_table *t, const qkv_bench_row *row, int all_threads);
/* Finishes a row measured since qkv_bench_add: its load; re-probes the peak if
 * the load moved by more than QKV_BENCH_LOAD_CHANGE since the last probe; gives
 * the row that peak; if a fraction is still above 1, probes once more and lets
 * qkv_bench_settle_peak pick the peak and the note; prints the line. */
void qkv_bench_finish_row(qkv_bench_table *t, qkv_bench_row *row);
/* A row as a table line (what qkv_bench_finish_row prints). */
void qkv_bench_print_row(const qkv_bench_table *t, const qkv_bench_row *row);

#endif
