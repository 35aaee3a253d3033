/* bench_table.h — the table every section of `qkv bench` appends to, at the
 * bottom of the bench files, which form a line: bench.c (the matmul section, the
 * run, the JSON) includes bench_models.h (attention, train, long), which
 * includes this (bench_table.c).
 *
 * Every section appends rows to one table: a value on 1 thread and on all
 * threads (NAN where not measured), each the median of BENCH_SAMPLES timed
 * samples, and the process's peak resident memory after the row.
 */
#ifndef QKV_BENCH_TABLE_H
#define QKV_BENCH_TABLE_H

#define BENCH_SAMPLES 5
#define BENCH_MAX_ROWS 64

typedef struct qkv_bench_row {
    char section[16]; /* matmul, attention, train, long */
    char name[64];    /* "n=256", "B=4 H=8 T=256 d=64 causal", "reverse" */
    char unit[16];    /* "GFLOP/s" (higher is better) or "ms" */
    double one, all;  /* 1 thread, all threads */
    double gflop;     /* ms rows of a computation with a FLOP count: GFLOP per call, else 0 */
    char note[48];    /* printed after the row ("micro-batch 8 of 64") */
    double peak_rss_mb;
} qkv_bench_row;

typedef struct qkv_bench_table {
    qkv_bench_row rows[BENCH_MAX_ROWS];
    int n;
    int threads; /* "all threads" */
    int micro_batch; /* train: examples per micro-batch, 0: each task's default */
    double peak_gflops; /* one core's FMA peak on the path in use (the probe) */
} qkv_bench_table;

/* A run's table (the clock: wall, or the process's CPU time; the probe of the
 * FMA peak; the many-thread column's threads, 0: every core). */
qkv_bench_table *qkv_bench_begin(int cpu_clock, int micro_batch, int threads);
/* Median seconds per call of fn(ctx) on `threads` threads: one warm-up call,
 * then calls are grouped so that a sample lasts about min_seconds (at least one
 * call), `samples` samples (at most BENCH_SAMPLES). */
double qkv_bench_seconds(void (*fn)(void *ctx), void *ctx, int threads, double min_seconds, int samples);
/* Peak resident set of the process so far (getrusage), in MB. */
double qkv_bench_peak_rss_mb(void);
qkv_bench_row *qkv_bench_add(qkv_bench_table *t, const char *section, const char *name, const char *unit);
/* A row's fraction of the FMA peak of the cores it ran on (the FLOP floor over
 * the time): a rate's, or a time's with a FLOP count; NAN otherwise. */
double qkv_bench_peak_fraction(const qkv_bench_row *row, int all_threads);
/* Prints a row as a table line. */
void qkv_bench_print_row(const qkv_bench_row *row);

#endif
