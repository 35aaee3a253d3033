/* blas_bench.c — OpenBLAS sgemm GFLOP/s at the sizes of `qkv bench matmul`, so
 * the matmul ratio can be read side by side (bench/compare.sh), and a check that
 * OpenBLAS and qkv compute the same product. Built only by `make bench-compare`
 * against Debian's libopenblas-dev and build/libqkv.a; OpenBLAS is never part of qkv.
 *
 * Usage: blas_bench [--json FILE] | blas_bench --core
 *   (default)  for n = 64 ... 1024, C = A B on 1 thread and on all cores
 *              (openblas_set_num_threads), each the median of 5 samples of about
 *              0.06 s. Prints a table; --json writes the rows in qkv bench's JSON
 *              layout. Then one 256 x 256 x 256 product of pseudo-random A, B in
 *              [-1, 1] through cblas_sgemm and through qkv_gemm: prints the largest
 *              |openblas - qkv| / max(1, |qkv|) and exits 1 above 1e-4, so a wrong
 *              kernel on either side cannot hide behind a fast time.
 *   --core     prints the kernel core OpenBLAS chose (openblas_get_corename) and
 *              its build configuration, and exits. The core depends on
 *              OPENBLAS_CORETYPE, which compare.sh unsets for this program.
 */
#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "qkv_internal.h"

/* OpenBLAS extensions, not declared by every cblas.h. */
void openblas_set_num_threads(int num_threads);
char *openblas_get_corename(void);
char *openblas_get_config(void);

#define SAMPLES 5

static double now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int compare_doubles(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void product(int n, const float *A, const float *B, float *C, int reps) {
    for (int r = 0; r < reps; r++)
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, A, n, B, n, 0.0f, C, n);
}

static double gflops(int n, int threads, const float *A, const float *B, float *C) {
    openblas_set_num_threads(threads);
    double t0 = now_seconds();
    product(n, A, B, C, 1);
    double once = now_seconds() - t0;
    int reps = (int)(0.06 / (once > 1e-7 ? once : 1e-7)) + 1;
    double samples[SAMPLES];
    for (int s = 0; s < SAMPLES; s++) {
        t0 = now_seconds();
        product(n, A, B, C, reps);
        samples[s] = 2.0 * n * n * (double)n * reps / (now_seconds() - t0) * 1e-9;
    }
    qsort(samples, SAMPLES, sizeof samples[0], compare_doubles);
    return samples[SAMPLES / 2];
}

#define CHECK_N 256
#define CHECK_TOLERANCE 1e-4

/* Deterministic values in [-1, 1]: a 32-bit LCG (Numerical Recipes), top 24 bits. */
static float lcg_uniform(unsigned *state) {
    *state = *state * 1664525u + 1013904223u;
    return (float)(*state >> 8) / 8388607.5f - 1.0f;
}

/* The same product through OpenBLAS and qkv; 0 if they agree within the tolerance. */
static int check_against_qkv(void) {
    const int n = CHECK_N;
    size_t count = (size_t)n * n;
    float *A = malloc(count * sizeof *A), *B = malloc(count * sizeof *B);
    float *C_blas = malloc(count * sizeof *C_blas), *C_qkv = malloc(count * sizeof *C_qkv);
    if (!A || !B || !C_blas || !C_qkv) {
        fprintf(stderr, "blas_bench: out of memory for the check\n");
        return 2;
    }
    unsigned state = 12345u;
    for (size_t j = 0; j < count; j++) A[j] = lcg_uniform(&state);
    for (size_t j = 0; j < count; j++) B[j] = lcg_uniform(&state);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, A, n, B, n, 0.0f, C_blas, n);
    qkv_gemm(0, 0, n, n, n, 1.0f, A, n, B, n, 0.0f, C_qkv, n);
    double worst = 0.0;
    for (size_t j = 0; j < count; j++) {
        double a = C_blas[j], b = C_qkv[j];
        double rel = fabs(a - b) / (fabs(b) > 1.0 ? fabs(b) : 1.0);
        if (!(rel <= worst)) worst = rel; /* a NaN counts as the worst */
    }
    free(A);
    free(B);
    free(C_blas);
    free(C_qkv);
    printf("check: C = A B, n = %d: openblas vs qkv_gemm (%s path), max |a-b|/max(1,|b|) = %.3g\n", n,
           qkv_isa_name(), worst);
    if (!(worst <= CHECK_TOLERANCE)) {
        printf("check FAILED: openblas and qkv_gemm differ by %.3g > %g; one of the two kernels is wrong\n",
               worst, CHECK_TOLERANCE);
        return 1;
    }
    return 0;
}

int main(int argc, char **argv) {
    const char *json = NULL;
    if (argc == 2 && strcmp(argv[1], "--core") == 0) {
        printf("openblas core: %s (%s)\n", openblas_get_corename(), openblas_get_config());
        return 0;
    }
    if (argc == 3 && strcmp(argv[1], "--json") == 0)
        json = argv[2];
    else if (argc != 1) {
        fprintf(stderr, "usage: blas_bench [--json FILE] | blas_bench --core\n");
        return 2;
    }
    static const int sizes[] = {64, 128, 256, 512, 1024};
    int threads = (int)sysconf(_SC_NPROCESSORS_ONLN);
    double one[5], all[5];
    printf("openblas sgemm, median of %d samples, GFLOP/s\n%6s | %10s | %10s\n", SAMPLES, "n",
           "1 thread", "all");
    for (int i = 0; i < 5; i++) {
        int n = sizes[i];
        size_t count = (size_t)n * n;
        float *A = malloc(count * sizeof *A), *B = malloc(count * sizeof *B), *C = malloc(count * sizeof *C);
        if (!A || !B || !C) return 1;
        for (size_t j = 0; j < count; j++) {
            A[j] = (float)((j * 7919) % 1000) / 500.0f - 1.0f;
            B[j] = (float)((j * 104729) % 1000) / 500.0f - 1.0f;
        }
        one[i] = gflops(n, 1, A, B, C);
        all[i] = gflops(n, threads, A, B, C);
        printf("%6d | %10.1f | %10.1f\n", n, one[i], all[i]);
        fflush(stdout);
        free(A);
        free(B);
        free(C);
    }
    int check = check_against_qkv(); /* a failed check writes no results */
    if (check != 0) return check;
    if (json) {
        FILE *f = fopen(json, "w");
        if (!f) {
            perror(json);
            return 2;
        }
        fprintf(f, "{\n  \"program\": \"openblas\",\n  \"threads\": %d,\n  \"samples\": %d,\n  \"rows\": [\n",
                threads, SAMPLES);
        for (int i = 0; i < 5; i++)
            fprintf(f, "    {\"section\": \"matmul\", \"name\": \"n=%d\", \"unit\": \"GFLOP/s\", "
                       "\"one_thread\": %.4g, \"all_threads\": %.4g}%s\n",
                    sizes[i], one[i], all[i], i < 4 ? "," : "");
        fprintf(f, "  ]\n}\n");
        if (fclose(f) != 0) return 2;
    }
    return 0;
}
