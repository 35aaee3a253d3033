/* bench.c — `qkv bench [matmul] [--json FILE]`: speed measurements, never tests.
 *
 * matmul: square sgemm C = A B (n = 64 ... 1024) through qkv_gemm, on 1 thread and
 * on all threads. Each point repeats the product until one sample takes about
 * SAMPLE_SECONDS, takes SAMPLES such samples and reports the median, in GFLOP/s
 * (2 n^3 flops per product). Prints a table; --json FILE also writes it as JSON
 * (atomically: a temporary file, fsync, rename). `qkv bench` alone runs every bench (today: matmul).
 * An unknown bench or flag prints one line and returns 2.
 */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/alloc.h"
#include "core/error.h"
#include "core/fileio.h"
#include "core/gemm.h"
#include "core/parallel.h"
#include "core/rng.h"
#include "train/args.h"
#include "train/commands.h"
#include "train/trainer.h"

#define SAMPLES 5
#define SAMPLE_SECONDS 0.06

static const int matmul_sizes[] = {64, 128, 256, 512, 1024};
#define N_SIZES ((int)(sizeof matmul_sizes / sizeof matmul_sizes[0]))

typedef struct matmul_row {
    int n;
    double gflops_one, gflops_all;
} matmul_row;

static double now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int compare_doubles(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void square_product(int n, const float *A, const float *B, float *C, int reps) {
    for (int r = 0; r < reps; r++) qkv_gemm(0, 0, n, n, n, 1.0f, A, n, B, n, 0.0f, C, n);
}

/* Median GFLOP/s of SAMPLES timed samples on `threads` threads. */
static double measure_matmul(int n, int threads, const float *A, const float *B, float *C) {
    qkv_set_threads(threads);
    square_product(n, A, B, C, 1); /* warm up: caches, packing buffers, thread pool */
    int reps = 1;
    for (;;) { /* calibrate: grow reps until one sample lasts SAMPLE_SECONDS */
        double t0 = now_seconds();
        square_product(n, A, B, C, reps);
        double elapsed = now_seconds() - t0;
        if (elapsed >= SAMPLE_SECONDS) break;
        int grow = elapsed > 0 ? (int)(SAMPLE_SECONDS / elapsed * 1.2) + 1 : 10;
        reps *= grow < 2 ? 2 : grow > 10 ? 10 : grow;
    }
    double gflops[SAMPLES];
    double flops = 2.0 * n * n * (double)n * reps;
    for (int s = 0; s < SAMPLES; s++) {
        double t0 = now_seconds();
        square_product(n, A, B, C, reps);
        gflops[s] = flops / (now_seconds() - t0) * 1e-9;
    }
    qsort(gflops, SAMPLES, sizeof gflops[0], compare_doubles);
    return gflops[SAMPLES / 2];
}

static void bench_matmul(matmul_row *rows, int all_threads) {
    printf("matmul: square sgemm C = A B, median of %d samples, GFLOP/s\n", SAMPLES);
    char all_label[32];
    snprintf(all_label, sizeof all_label, "%d threads", all_threads);
    printf("%6s | %12s | %12s | %7s\n", "n", "1 thread", all_label, "speedup");
    qkv_rng rng = qkv_rng_make(42);
    for (int i = 0; i < N_SIZES; i++) {
        int n = matmul_sizes[i];
        size_t count = (size_t)n * n;
        float *A = qkv_malloc(count * sizeof *A, "bench matrices"), *B = qkv_malloc(count * sizeof *B, "bench matrices");
        float *C = qkv_malloc(count * sizeof *C, "bench matrices");
        qkv_fill_uniform(A, count, &rng, -1.0f, 1.0f);
        qkv_fill_uniform(B, count, &rng, -1.0f, 1.0f);
        rows[i].n = n;
        rows[i].gflops_one = measure_matmul(n, 1, A, B, C);
        rows[i].gflops_all = measure_matmul(n, all_threads, A, B, C);
        printf("%6d | %12.1f | %12.1f | %6.2fx\n", n, rows[i].gflops_one, rows[i].gflops_all,
               rows[i].gflops_all / rows[i].gflops_one);
        fflush(stdout);
        free(A);
        free(B);
        free(C);
    }
}

/* The table as JSON, written atomically (core/fileio.h). */
static int write_json(const char *path, const matmul_row *rows, int all_threads) {
    char text[2048];
    size_t len = (size_t)snprintf(text, sizeof text,
                                  "{\n  \"bench\": \"matmul\",\n  \"threads\": %d,\n  \"samples\": %d,\n  \"rows\": [\n",
                                  all_threads, SAMPLES);
    for (int i = 0; i < N_SIZES; i++)
        len += (size_t)snprintf(text + len, sizeof text - len,
                                "    {\"n\": %d, \"gflops_1_thread\": %.2f, \"gflops_all_threads\": %.2f, "
                                "\"speedup\": %.3f}%s\n",
                                rows[i].n, rows[i].gflops_one, rows[i].gflops_all,
                                rows[i].gflops_all / rows[i].gflops_one, i + 1 < N_SIZES ? "," : "");
    len += (size_t)snprintf(text + len, sizeof text - len, "  ]\n}\n");
    qkv_atomic_file f;
    if (qkv_atomic_open(&f, path) != 0 || qkv_atomic_write(&f, text, len) != 0) return -1;
    return qkv_atomic_commit(&f);
}

int qkv_cmd_bench(int argc, char **argv) {
    const char *bench = "all";
    if (argc > 0 && argv[0][0] != '-') {
        bench = argv[0];
        argc--;
        argv++;
    }
    if (strcmp(bench, "all") != 0 && strcmp(bench, "matmul") != 0) {
        fprintf(stderr, "qkv bench: unknown bench '%s' (available: matmul)\n", bench);
        return 2;
    }
    const char *json_path = NULL;
    const qkv_arg args[] = {
        QKV_ARG_STRING_ROW("--json", &json_path, "also write the table as JSON to this file"),
    };
    int parsed = qkv_args_parse("bench", argc, argv, args, 1);
    if (parsed != 0) return parsed > 0 ? 0 : 2;

    if (json_path && qkv_check_output_path(json_path) != 0) { /* before measuring */
        fprintf(stderr, "qkv bench: --json: %s\n", qkv_last_error());
        return 2;
    }

    int previous_threads = omp_get_max_threads();
    int all_threads = omp_get_num_procs(); /* what qkv_set_threads(0) uses */
    matmul_row rows[N_SIZES];
    bench_matmul(rows, all_threads);
    qkv_set_threads(previous_threads);
    if (json_path && write_json(json_path, rows, all_threads) != 0) {
        fprintf(stderr, "qkv bench: --json: %s\n", qkv_last_error());
        return 2;
    }
    return 0;
}
