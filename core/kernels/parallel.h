/* parallel.h — thread control and the rules every parallel loop follows.
 *
 * 1. A loop runs on several threads only when its work (roughly, floating-point
 *    operations) exceeds QKV_PAR_MIN_WORK; below that, thread start-up costs more
 *    than it saves and two threads would be slower than one. Write it
 *        QKV_FOR(QKV_PARALLEL(work), schedule(static), (size_t i = 0; i < n; i++), {
 *            ...
 *        });
 *    which enters no OpenMP region when the condition is false (see QKV_FOR).
 * 2. Results never depend on the thread count. Each output element is computed by
 *    one thread in a fixed order. Reductions to one value use qkv_sum_fixed():
 *    fixed-size chunks, summed in double, combined in chunk order.
 * How waiting threads wait (spin or sleep) is wait_policy.h's, internal to qkv.
 */
#ifndef QKV_PARALLEL_H
#define QKV_PARALLEL_H

#include <stddef.h>

#define QKV_PAR_MIN_WORK 131072
#define QKV_PARALLEL(work) ((size_t)(work) >= (size_t)QKV_PAR_MIN_WORK && qkv_threads() > 1)

/* A for loop (header in parentheses, body in braces) run by `omp parallel for
 * clauses` when cond holds, else as a plain loop on the caller. `#pragma omp
 * parallel for if (cond)` would enter the runtime either way, and libgomp builds
 * a team and makes a futex call even for a team of one: about 1.3 us per loop on
 * one thread and 2.6 us inside a worker of the parallel step (train/step.h), 8-13%
 * of a small model's step of some 75 such loops per micro-batch. The body is
 * written once and compiled twice; inside it, omp_get_thread_num() is the team's
 * thread only on the parallel branch. */
#define QKV_PRAGMA(x) _Pragma(#x)
#define QKV_FOR(cond, clauses, header, ...)                                                     \
    do {                                                                                       \
        if (cond) {                                                                            \
            QKV_PRAGMA(omp parallel for clauses)                                               \
            for header __VA_ARGS__                                                             \
        } else {                                                                               \
            for header __VA_ARGS__                                                             \
        }                                                                                      \
    } while (0)

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
/* The help of every command's --threads flag (the n above). */
#define QKV_THREADS_HELP "OpenMP threads; 0: OMP_NUM_THREADS, else the cores other programs leave free"
/* The threads an op may use: the number set, or 1 inside a parallel region (each
 * worker of the parallel step, train/step.h, runs its ops on itself). */
int qkv_threads(void);

/* Sum of x[0..n), and of x[i]^2, in a fixed order, independent of the thread
 * count: fixed chunks summed in double, combined in chunk order. */
double qkv_sum_fixed(const float *x, size_t n);
double qkv_sum_squares_fixed(const float *x, size_t n);
/* sums[c] = the squares of x[c][0..n[c]) summed as qkv_sum_squares_fixed sums one
 * chunk (n[c] <= QKV_REDUCE_CHUNK): in order, in double, so the same bits. The
 * chains run QKV_SUM_LANES at a time, interleaved: a double add waits 3-4 cycles
 * for the one before it in its chain, and the other chains fill that wait. */
#define QKV_SUM_LANES 8
void qkv_sum_squares_each(int count, const float *const *x, const size_t *n, double *sums);

#endif
