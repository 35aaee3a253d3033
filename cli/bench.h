/* bench.h — shared by the sections of `qkv bench` (bench.c, models.c).
 *
 * Every section appends rows to one table: a value on 1 thread and on all
 * threads (NAN where not measured), each the median of BENCH_SAMPLES timed
 * samples, and the process's peak resident memory after the row.
 */
#ifndef QKV_BENCH_H
#define QKV_BENCH_H

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

/* Median seconds per call of fn(ctx) on `threads` threads: one warm-up call,
 * then calls are grouped so that a sample lasts about min_seconds (at least one
 * call), `samples` samples (at most BENCH_SAMPLES). */
double qkv_bench_seconds(void (*fn)(void *ctx), void *ctx, int threads, double min_seconds, int samples);
/* Peak resident set of the process so far (getrusage), in MB. */
double qkv_bench_peak_rss_mb(void);
qkv_bench_row *qkv_bench_add(qkv_bench_table *t, const char *section, const char *name, const char *unit);
/* Prints a row as a table line. */
void qkv_bench_print_row(const qkv_bench_row *row);

/* A run (cli/cmd_bench.c): begin (the clock: wall, or the process's CPU
 * time; the probe of the FMA peak; the many-thread column's threads, 0: every core)
 * gives the table; print the header lines; run
 * sections (one of qkv_bench_section_names: all = matmul, attention and train;
 * long only when named), each row printed as it is measured; write the JSON
 * (atomically; -1 with qkv_last_error()). */
extern const char *const qkv_bench_section_names[]; /* "all", ..., NULL */
qkv_bench_table *qkv_bench_begin(int cpu_clock, int micro_batch, int threads);
void qkv_bench_print_header(const qkv_bench_table *t);
void qkv_bench_run_section(qkv_bench_table *t, const char *section);
int qkv_bench_write_json(const char *path, const qkv_bench_table *t);

void qkv_bench_attention(qkv_bench_table *t);
void qkv_bench_train(qkv_bench_table *t);
void qkv_bench_long_attention(qkv_bench_table *t);

#endif
