/* bench.c — the measurements of `qkv bench [all|matmul|attention|train|long]
 * [--json FILE]` (cli/cmd_bench.c parses the flags and drives a run): speed
 * measurements, never tests.
 *
 * Sections (bench.h for the table; bench_models.c for attention, train, long):
 *   matmul     square sgemm C = A B through qkv_gemm, n = 64 ... 1024, GFLOP/s
 *              (2 n^3 flops per product);
 *   attention  qkv_attention forward + backward, ms (bench_models.c);
 *   train      one training step of the reversal transformer, the Set Transformer
 *              and the text GPT, ms, with GFLOP per step (bench_models.c);
 *   long       attention forward + backward at T = 8192 with the peak resident
 *              memory; slow, so only when asked for (`qkv bench long`).
 * `all` (the default) runs matmul, attention and train. Every value is measured
 * on 1 thread and on all threads: the median of BENCH_SAMPLES samples. The header
 * names the instruction-set path in use (core/kernels/isa.h) and the core's FMA peak for
 * its vectors, measured by a short probe (kernels.h: fma_peak); each GFLOP/s row,
 * and each train row (its GFLOP per step over its time), gives its fraction of
 * that peak (of threads x peak for all threads): the FLOP floor. The table
 * ends with the threads used and the peak resident memory; --json FILE also
 * writes it as JSON (atomically: a temporary file, fsync, rename); --clock cpu
 * times with the process's CPU clock instead of the wall clock.
 */
#include "cli/bench.h"

#include <math.h>
#include <omp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "core/alloc.h"
#include "core/error.h"
#include "core/fileio.h"
#include "core/kernels/gemm.h"
#include "core/kernels/isa.h"
#include "core/kernels/kernels.h"
#include "core/kernels/parallel.h"
#include "core/rng.h"
#include "train/trainer.h"

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

/* A row's fraction of the FMA peak of the cores it ran on (the FLOP floor over
 * the time): a rate's, or a time's with a FLOP count; NAN otherwise. */
static double peak_fraction(const qkv_bench_row *row, int all_threads) {
    if (!(table.peak_gflops > 0)) return NAN;
    double cores = all_threads ? table.threads : 1, value = all_threads ? row->all : row->one;
    if (strcmp(row->unit, "GFLOP/s") == 0) return value / (table.peak_gflops * cores);
    if (row->gflop > 0) return row->gflop / (value * 1e-3) / (table.peak_gflops * cores);
    return NAN;
}

void qkv_bench_print_row(const qkv_bench_row *row) {
    char peak[128] = "";
    if (!isnan(peak_fraction(row, 0)))
        snprintf(peak, sizeof peak, "%.2f / %.2f", peak_fraction(row, 0), peak_fraction(row, 1));
    if (row->gflop > 0)
        snprintf(peak + strlen(peak), sizeof peak - strlen(peak), "  %.4f GFLOP/step", row->gflop);
    if (row->note[0]) snprintf(peak + strlen(peak), sizeof peak - strlen(peak), ", %s", row->note);
    printf("%-9s | %-30s | %-7s | %10.2f | %10.2f | %6.2fx | %7.0f | %s\n", row->section, row->name,
           row->unit, row->one, row->all, speedup(row), row->peak_rss_mb, peak);
    fflush(stdout);
}

static void print_header(int threads) {
    char all_label[32];
    snprintf(all_label, sizeof all_label, "%d threads", threads);
    printf("%-9s | %-30s | %-7s | %10s | %10s | %7s | %7s | %s\n", "section", "case", "unit", "1 thread",
           all_label, "speedup", "RSS MB", "of peak");
}

/* ---- matmul --------------------------------------------------------------------- */

typedef struct square_product {
    int n;
    const float *A, *B;
    float *C;
} square_product;

static void run_square_product(void *ctx) {
    square_product *p = ctx;
    qkv_gemm(0, 0, p->n, p->n, p->n, 1.0f, p->A, p->n, p->B, p->n, 0.0f, p->C, p->n);
}

static void bench_matmul(qkv_bench_table *t) {
    static const int sizes[] = {64, 128, 256, 512, 1024};
    qkv_rng rng = qkv_rng_make(42);
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        int n = sizes[i];
        size_t count = (size_t)n * n;
        float *A = qkv_malloc(count * sizeof *A, "bench matrices"), *B = qkv_malloc(count * sizeof *B, "bench matrices");
        float *C = qkv_malloc(count * sizeof *C, "bench matrices");
        qkv_fill_uniform(A, count, &rng, -1.0f, 1.0f);
        qkv_fill_uniform(B, count, &rng, -1.0f, 1.0f);
        square_product p = {n, A, B, C};
        char name[32];
        snprintf(name, sizeof name, "n=%d", n);
        qkv_bench_row *row = qkv_bench_add(t, "matmul", name, "GFLOP/s");
        double flops = 2.0 * n * n * (double)n;
        row->one = flops / qkv_bench_seconds(run_square_product, &p, 1, 0.06, BENCH_SAMPLES) * 1e-9;
        row->all = flops / qkv_bench_seconds(run_square_product, &p, t->threads, 0.06, BENCH_SAMPLES) * 1e-9;
        row->peak_rss_mb = qkv_bench_peak_rss_mb();
        qkv_bench_print_row(row);
        free(A);
        free(B);
        free(C);
    }
}

/* ---- output --------------------------------------------------------------------- */

static int append(char **text, size_t *len, size_t *cap, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int append(char **text, size_t *len, size_t *cap, const char *fmt, ...) {
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(*text + *len, *cap - *len, fmt, ap);
        va_end(ap);
        if (n < 0) return -1;
        if ((size_t)n < *cap - *len) {
            *len += (size_t)n;
            return 0;
        }
        char *grown = realloc(*text, *cap * 2 + (size_t)n);
        if (!grown) return -1;
        *text = grown;
        *cap = *cap * 2 + (size_t)n;
    }
}

static void json_number(char **text, size_t *len, size_t *cap, const char *key, double value,
                        const char *sep) {
    if (isfinite(value))
        append(text, len, cap, "\"%s\": %.4g%s", key, value, sep);
    else
        append(text, len, cap, "\"%s\": null%s", key, sep);
}

/* The table as JSON, written atomically (core/fileio.h). */
static int write_json(const char *path, const qkv_bench_table *t) {
    size_t len = 0, cap = 4096;
    char *text = malloc(cap);
    if (!text) return qkv_set_error("%s: out of memory", path), -1;
    text[0] = 0;
    append(&text, &len, &cap, "{\n  \"program\": \"qkv\",\n  \"threads\": %d,\n  \"samples\": %d,\n",
           t->threads, BENCH_SAMPLES);
    append(&text, &len, &cap, "  \"isa\": \"%s\",\n  \"fma_peak_gflops\": %.1f,\n", qkv_isa_name(),
           t->peak_gflops);
    append(&text, &len, &cap, "  \"peak_rss_mb\": %.1f,\n  \"rows\": [\n", qkv_bench_peak_rss_mb());
    for (int i = 0; i < t->n; i++) {
        const qkv_bench_row *r = &t->rows[i];
        append(&text, &len, &cap, "    {\"section\": \"%s\", \"name\": \"%s\", \"unit\": \"%s\", ",
               r->section, r->name, r->unit);
        json_number(&text, &len, &cap, "one_thread", r->one, ", ");
        json_number(&text, &len, &cap, "all_threads", r->all, ", ");
        json_number(&text, &len, &cap, "peak_rss_mb", r->peak_rss_mb, ", ");
        if (r->gflop > 0) json_number(&text, &len, &cap, "gflop_per_call", r->gflop, ", ");
        json_number(&text, &len, &cap, "peak_fraction_one", peak_fraction(r, 0), ", ");
        json_number(&text, &len, &cap, "peak_fraction_all", peak_fraction(r, 1), "");
        append(&text, &len, &cap, "}%s\n", i + 1 < t->n ? "," : "");
    }
    append(&text, &len, &cap, "  ]\n}\n");
    int rc = qkv_write_file_atomic(path, text, len);
    free(text);
    return rc;
}

/* ---- a run ---------------------------------------------------------------------- */

const char *const qkv_bench_section_names[] = {"all", "matmul", "attention", "train", "long", NULL};

qkv_bench_table *qkv_bench_begin(int cpu_clock, int micro_batch, int threads) {
    bench_clock = cpu_clock ? CLOCK_PROCESS_CPUTIME_ID : CLOCK_MONOTONIC;
    table.n = 0;
    table.micro_batch = micro_batch;
    table.threads = threads > 0 ? threads : omp_get_num_procs(); /* 0: every core, busy or not */
    table.peak_gflops = qkv_kernels_active()->fma_peak(0.2);
    return &table;
}

void qkv_bench_print_header(const qkv_bench_table *t) {
    const qkv_kernels *kern = qkv_kernels_active();
    printf("qkv bench: path %s (%d-float vectors, %dx%d gemm tile), FMA peak %.1f GFLOP/s per core (probe)\n",
           kern->name, kern->vector_width, kern->mr, kern->nr, t->peak_gflops);
    const char *wait_policy = getenv("OMP_WAIT_POLICY"), *spin = getenv("GOMP_SPINCOUNT");
    printf("qkv bench: median of %d samples; 1 thread and %d threads; OMP_WAIT_POLICY=%s GOMP_SPINCOUNT=%s\n",
           BENCH_SAMPLES, t->threads, wait_policy ? wait_policy : "(unset)", spin ? spin : "(unset)");
    print_header(t->threads);
}

void qkv_bench_run_section(qkv_bench_table *t, const char *section) {
    int all = strcmp(section, "all") == 0;
    if (all || strcmp(section, "matmul") == 0) bench_matmul(t);
    if (all || strcmp(section, "attention") == 0) qkv_bench_attention(t);
    if (all || strcmp(section, "train") == 0) qkv_bench_train(t);
    if (strcmp(section, "long") == 0) qkv_bench_long_attention(t);
}

int qkv_bench_write_json(const char *path, const qkv_bench_table *t) { return write_json(path, t); }
