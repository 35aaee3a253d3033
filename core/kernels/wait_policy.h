/* wait_policy.h — how libgomp's waiting threads wait: spin briefly or sleep,
 * chosen by how busy the machine is. Internal (qkv_internal.h): ./qkv and the
 * test runner call qkv_default_wait_policy first thing in main; a program that
 * links libqkv.a chooses its own OMP_WAIT_POLICY / GOMP_SPINCOUNT.
 *
 * libgomp reads its wait policy (OMP_WAIT_POLICY, GOMP_SPINCOUNT) once, when it
 * loads, before main, and no policy is right everywhere (docs/performance.md):
 *  - on an idle machine a waiting thread should spin briefly: a parallel region
 *    that starts a few microseconds after the last one finds its threads awake.
 *    Sleeping (passive) costs a futex wake per region, and a 2-thread reversal
 *    step took 0.43-0.66x the time of 1 thread; a 3000-iteration spin: 1.3-1.5x;
 *  - on a busy one a spinning thread holds the core the thread it waits for
 *    needs: libgomp's default spin (300000) made a 2-thread step 40x as long as a
 *    1-thread one at load 10, a 3000 spin 2.5x; passive stays near 1x.
 * Results never depend on the wait policy, only timing does.
 *
 * LLVM's libomp (what clang's -fopenmp links on Debian) reads no GOMP_SPINCOUNT;
 * its own default (spin for KMP_BLOCKTIME, 200 ms, then sleep) is the idle
 * choice there, so only the busy one (OMP_WAIT_POLICY=passive) is set.
 */
#ifndef QKV_WAIT_POLICY_H
#define QKV_WAIT_POLICY_H

#include "core/kernels/omp_shim.h"
#ifdef KMP_VERSION_MAJOR /* omp.h is libomp's */
#define QKV_LIBOMP 1
#endif

#define QKV_IDLE_SPINCOUNT "3000"

/* Called first thing in main: if the environment sets neither variable, looks at
 * the other runnable tasks (qkv_other_runnable, parallel.h), sets
 * GOMP_SPINCOUNT=3000 when there are none and OMP_WAIT_POLICY=passive otherwise,
 * and re-executes the program (/proc/self/exe, same argv) so the runtime starts
 * with it. Returns if a variable is already set or the re-exec is impossible. */
void qkv_default_wait_policy(char **argv);

/* The choice above for a given count of other runnable tasks (-1: unknown, which
 * is treated as busy): the variable and its value (both NULL: set nothing, the
 * idle choice under libomp); returns 1 for the idle choice. A variable the user
 * set (OMP_WAIT_POLICY, GOMP_SPINCOUNT, KMP_BLOCKTIME) is never overridden. */
int qkv_wait_policy_for(int others, const char **name, const char **value);

#endif
