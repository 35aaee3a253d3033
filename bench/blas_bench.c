/* blas_bench.c — OpenBLAS sgemm GFLOP/s at the sizes of `qkv bench matmul`, so
 * the matmul ratio can be read side by side (bench/compare.sh). Built only by
 * `make bench-compare` against Debian's libopenblas-dev; never part of qkv.
 *
 * Usage: blas_bench [--json FILE]. For n = 64 ... 1024, C = A B on 1 thread and
 * on all cores (openblas_set_num_threads), each the median of 5 samples of about
 * 0.06 s. Prints a table; --json writes the rows in qkv bench's JSON layout.
 */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

void openblas_set_num_threads(int num_threads);

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

int main(int argc, char **argv) {
    const char *json = NULL;
    if (argc == 3 && strcmp(argv[1], "--json") == 0)
        json = argv[2];
    else if (argc != 1) {
        fprintf(stderr, "usage: blas_bench [--json FILE]\n");
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
