/* omp_shim.h — OpenMP's runtime calls, or serial stand-ins where there is no OpenMP.
 *
 * Every file of qkv that calls the OpenMP runtime includes this header, never
 * <omp.h> itself. Built with -fopenmp (_OPENMP defined) it is <omp.h>. Without
 * (the WebAssembly build, mk/web.mk: emscripten has no OpenMP) the `omp` pragmas
 * are ignored, every loop runs on its caller, and the calls below describe that
 * one thread: results do not depend on the thread count (parallel.h), so the
 * serial build computes the same bits.
 */
#ifndef QKV_OMP_SHIM_H
#define QKV_OMP_SHIM_H

#ifdef _OPENMP
#include <omp.h>
#else
#include <time.h>

static inline int omp_get_max_threads(void) { return 1; }
static inline int omp_get_num_threads(void) { return 1; }
static inline int omp_get_thread_num(void) { return 0; }
static inline int omp_get_num_procs(void) { return 1; }
static inline int omp_in_parallel(void) { return 0; }
static inline void omp_set_num_threads(int n) { (void)n; }
/* Seconds on a monotonic clock, as omp_get_wtime's. */
static inline double omp_get_wtime(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}
#endif

#endif
