/* parallel.h — thread control and the rules every parallel loop follows.
 *
 * 1. A loop runs on several threads only when its work (roughly, floating-point
 *    operations) exceeds QKV_PAR_MIN_WORK; below that, thread start-up costs more
 *    than it saves and two threads would be slower than one. Use
 *        #pragma omp parallel for if (QKV_PARALLEL(work)) schedule(static)
 * 2. Results never depend on the thread count. Each output element is computed by
 *    one thread in a fixed order. Reductions to one value use qkv_sum_fixed():
 *    fixed-size chunks, summed in double, combined in chunk order.
 */
#ifndef QKV_PARALLEL_H
#define QKV_PARALLEL_H

#include <stddef.h>

#define QKV_PAR_MIN_WORK 131072
#define QKV_PARALLEL(work) ((size_t)(work) >= (size_t)QKV_PAR_MIN_WORK && qkv_threads() > 1)

/* libgomp reads its wait policy (OMP_WAIT_POLICY, GOMP_SPINCOUNT) once, when it
 * loads, before main. Its default spins ~300000 times at every barrier; on a shared
 * machine a spinning thread holds the core the thread it waits for needs, and a
 * 2-thread step takes 40x as long as a 1-thread one (docs/performance.md).
 * Called first thing in main: if the environment sets neither variable, sets
 * OMP_WAIT_POLICY=passive (waiting threads sleep) and re-executes the program
 * (/proc/self/exe, same argv) so the runtime starts with it. Returns if a
 * variable is already set or the re-exec is impossible. Results never depend on
 * the wait policy, only timing does. */
void qkv_default_wait_policy(char **argv);

/* Elements per chunk of a deterministic reduction. */
#define QKV_REDUCE_CHUNK 4096

/* Sets the number of threads (n <= 0: all cores). Returns the number in use. */
int qkv_set_threads(int n);
int qkv_threads(void);

/* Sum of x[0..n), and of x[i]^2, in a fixed order, independent of the thread
 * count: fixed chunks summed in double, combined in chunk order. */
double qkv_sum_fixed(const float *x, size_t n);
double qkv_sum_squares_fixed(const float *x, size_t n);

#endif
