/* bench.c — the measurements of `qkv bench [all|matmul|attention|train|long]
 * [--json FILE]` (cli/cmd_bench.c parses the flags and drives a run): speed
 * measurements, never tests.
 *
 * Sections (bench_table.h for the table; bench_models.c for attention, train, long):
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
 * that peak (of threads x peak for all threads): the FLOP floor. A busy machine
 * is reported, not hidden (bench_load.h): the header gives the 1-minute load
 * average and the probe's load; each row its load (the cores' worth of CPU
 * other processes used while it ran) and the peak its fractions used, which is
 * re-probed before each section, after a row whose load moved by more than
 * QKV_BENCH_LOAD_CHANGE, and once more when a fraction comes out above 1 (the
 * row then says why, bench_load.h: qkv_bench_settle_peak). The table
 * ends with the threads used and the peak resident memory; --json FILE also
 * writes it as JSON (atomically: a temporary file, fsync, rename); --clock cpu
 * times with the process's CPU clock instead of the wall clock.
 */
#include "cli/bench.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "core/fileio.h"
#include "core/kernels/gemm.h"
#include "core/kernels/isa.h"
#include "core/kernels/kernels.h"
#include "core/kernels/parallel.h"
#include "core/rng.h"

static void print_header(int threads) {
    char all_label[32];
    snprintf(all_label, sizeof all_label, "%d threads", threads);
    printf("%-9s | %-30s | %-7s | %10s | %10s | %7s | %7s | %4s | %s\n", "section", "case", "unit", "1 thread",
           all_label, "speedup", "RSS MB", "load", "of peak (1 / all) of GFLOP/s/core");
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
        qkv_bench_finish_row(t, row);
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
           t->probes[0].gflops);
    append(&text, &len, &cap, "  ");
    json_number(&text, &len, &cap, "load_average_1min_start", t->load_average_start, ",\n  ");
    json_number(&text, &len, &cap, "load_average_1min_end", qkv_bench_load_average(), ",\n");
    append(&text, &len, &cap, "  \"probes\": [\n");
    for (int i = 0; i < t->n_probes; i++) {
        append(&text, &len, &cap, "    {\"why\": \"%s\", ", t->probes[i].why);
        json_number(&text, &len, &cap, "gflops", t->probes[i].gflops, ", ");
        json_number(&text, &len, &cap, "load", t->probes[i].load, "");
        append(&text, &len, &cap, "}%s\n", i + 1 < t->n_probes ? "," : "");
    }
    append(&text, &len, &cap, "  ],\n");
    append(&text, &len, &cap, "  \"peak_rss_mb\": %.1f,\n  \"rows\": [\n", qkv_bench_peak_rss_mb());
    for (int i = 0; i < t->n; i++) {
        const qkv_bench_row *r = &t->rows[i];
        append(&text, &len, &cap, "    {\"section\": \"%s\", \"name\": \"%s\", \"unit\": \"%s\", ",
               r->section, r->name, r->unit);
        json_number(&text, &len, &cap, "one_thread", r->one, ", ");
        json_number(&text, &len, &cap, "all_threads", r->all, ", ");
        json_number(&text, &len, &cap, "peak_rss_mb", r->peak_rss_mb, ", ");
        if (r->gflop > 0) json_number(&text, &len, &cap, "gflop_per_call", r->gflop, ", ");
        json_number(&text, &len, &cap, "load", r->load, ", ");
        json_number(&text, &len, &cap, "peak_gflops", r->peak_gflops, ", ");
        json_number(&text, &len, &cap, "probe_load", r->probe_load, ", ");
        if (r->peak_note[0]) append(&text, &len, &cap, "\"peak_note\": \"%s\", ", r->peak_note);
        json_number(&text, &len, &cap, "peak_fraction_one", qkv_bench_peak_fraction(t, r, 0), ", ");
        json_number(&text, &len, &cap, "peak_fraction_all", qkv_bench_peak_fraction(t, r, 1), "");
        append(&text, &len, &cap, "}%s\n", i + 1 < t->n ? "," : "");
    }
    append(&text, &len, &cap, "  ]\n}\n");
    int rc = qkv_write_file_atomic(path, text, len);
    free(text);
    return rc;
}

/* ---- a run ---------------------------------------------------------------------- */

const char *const qkv_bench_section_names[] = {"all", "matmul", "attention", "train", "long", NULL};

void qkv_bench_print_header(const qkv_bench_table *t) {
    const qkv_kernels *kern = qkv_kernels_active();
    char probe_load[32], average[32] = "load unknown (no /proc)";
    qkv_bench_format_load(probe_load, sizeof probe_load, t->probe_load);
    printf("qkv bench: path %s (%d-float vectors, %dx%d gemm tile), FMA peak %.1f GFLOP/s per core (probe, %s)\n",
           kern->name, kern->vector_width, kern->mr, kern->nr, t->peak_gflops, probe_load);
    if (isfinite(t->load_average_start))
        snprintf(average, sizeof average, "load average %.2f (1 min)", t->load_average_start);
    printf("qkv bench: %s; load: the cores' worth of CPU other processes used (/proc/stat less qkv's own); "
           "the peak is re-probed before each section and when a row's load moves by more than %.1f\n",
           average, QKV_BENCH_LOAD_CHANGE);
    const char *wait_policy = getenv("OMP_WAIT_POLICY"), *spin = getenv("GOMP_SPINCOUNT");
    printf("qkv bench: median of %d samples; 1 thread and %d threads; OMP_WAIT_POLICY=%s GOMP_SPINCOUNT=%s\n",
           BENCH_SAMPLES, t->threads, wait_policy ? wait_policy : "(unset)", spin ? spin : "(unset)");
    print_header(t->threads);
}

/* Each section but the first starts with a fresh probe of the peak: the load may
 * have moved while the previous section ran. */
static void section(qkv_bench_table *t, void (*run)(qkv_bench_table *t)) {
    if (t->n > 0) qkv_bench_probe_peak(t, "section");
    run(t);
}

void qkv_bench_run_section(qkv_bench_table *t, const char *name) {
    int all = strcmp(name, "all") == 0;
    if (all || strcmp(name, "matmul") == 0) section(t, bench_matmul);
    if (all || strcmp(name, "attention") == 0) section(t, qkv_bench_attention);
    if (all || strcmp(name, "train") == 0) section(t, qkv_bench_train);
    if (strcmp(name, "long") == 0) section(t, qkv_bench_long_attention);
}

int qkv_bench_write_json(const char *path, const qkv_bench_table *t) { return write_json(path, t); }
