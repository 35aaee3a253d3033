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
 * loads, before main, and no policy is right everywhere (docs/performance.md):
 *  - on an idle machine a waiting thread should spin briefly: a parallel region
 *    that starts a few microseconds after the last one finds its threads awake.
 *    Sleeping (passive) costs a futex wake per region, and a 2-thread reversal
 *    step took 0.43-0.66x the time of 1 thread; a 3000-iteration spin: 1.3-1.5x;
 *  - on a busy one a spinning thread holds the core the thread it waits for
 *    needs: libgomp's default spin (300000) made a 2-thread step 40x as long as a
 *    1-thread one at load 10, a 3000 spin 2.5x; passive stays near 1x.
 * Called first thing in main: if the environment sets neither variable, looks at
 * the other runnable tasks (qkv_other_runnable), sets GOMP_SPINCOUNT=3000 when
 * there are none and OMP_WAIT_POLICY=passive otherwise, and re-executes the
 * program (/proc/self/exe, same argv) so the runtime starts with it. Returns if a
 * variable is already set or the re-exec is impossible. Results never depend on
 * the wait policy, only timing does. */
#define QKV_IDLE_SPINCOUNT "3000"
void qkv_default_wait_policy(char **argv);
/* The choice above for a given count of other runnable tasks (-1: unknown, which
 * is treated as busy): the variable and its value; returns 1 for the idle choice. */
int qkv_wait_policy_for(int others, const char **name, const char **value);

/* Tasks other than the caller runnable right now, from /proc/loadavg's
 * "running/total" field (which counts the reader): the fewest of 3 reads 4 ms
 * apart, so a task passing through is not counted. -1 if it cannot be read. */
int qkv_other_runnable(void);

/* Elements per chunk of a deterministic reduction. */
#define QKV_REDUCE_CHUNK 4096

/* Sets the number of threads. n <= 0: OMP_NUM_THREADS if set, else the cores
 * not taken by other runnable tasks (qkv_other_runnable), at least 1, so a
 * default run does not put two threads on a core another program is using.
 * Returns the number in use. */
int qkv_set_threads(int n);
int qkv_threads(void);

/* Sum of x[0..n), and of x[i]^2, in a fixed order, independent of the thread
 * count: fixed chunks summed in double, combined in chunk order. */
double qkv_sum_fixed(const float *x, size_t n);
double qkv_sum_squares_fixed(const float *x, size_t n);

#endif
