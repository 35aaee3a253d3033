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
 * that peak (of threads x peak for all threads): the FLOP floor. The table
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
        json_number(&text, &len, &cap, "peak_fraction_one", qkv_bench_peak_fraction(r, 0), ", ");
        json_number(&text, &len, &cap, "peak_fraction_all", qkv_bench_peak_fraction(r, 1), "");
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
