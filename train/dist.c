/* dist.c — data parallelism over MPI ranks, or single-process no-ops. See dist.h. */
#include "train/dist.h"

#include "core/kernels/omp_shim.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/alloc.h"
#include "core/error.h"

#ifdef QKV_MPI
#include <mpi.h>
#endif

static int dist_rank = 0, dist_size = 1;
static int dist_solo = 0; /* qkv_dist_solo: act as rank 0 of 1 */

int qkv_dist_rank(void) { return dist_solo ? 0 : dist_rank; }
int qkv_dist_size(void) { return dist_solo ? 1 : dist_size; }
void qkv_dist_solo(int on) { dist_solo = on != 0; }

#ifndef QKV_MPI

void qkv_dist_init(int *argc, char ***argv) { (void)argc; (void)argv; }
int qkv_dist_finish(int rc) { return rc; }
int qkv_dist_threads(int requested) { return requested; }
int qkv_dist_any(int failed) { return failed != 0; }
int qkv_dist_max(int value) { return value; }
int qkv_dist_root_flag(int flag) { return flag; }
void qkv_dist_share_state(const qkv_params *params, qkv_optimizer *opt, long *step, qkv_tape *tape) {
    (void)params; (void)opt; (void)step; (void)tape;
}
void qkv_dist_allgather(const float *mine, size_t n, float *all, long step) {
    (void)step;
    if (all != mine) memcpy(all, mine, n * sizeof *all);
}
void qkv_dist_sum_doubles(double *x, int n) { (void)x; (void)n; }

#else

static int dist_active = 0;
static int failure_agreed = 0; /* every rank already knows the run failed: finish cleanly */

/* One process, or one rank in solo mode: no collective. */
static int alone(void) { return dist_size == 1 || dist_solo; }

/* Started by a process manager? (Open MPI's mpirun, or a PMI/PMIx launcher.) Run
 * directly, the MPI build is an ordinary single process and never calls MPI. */
static int launched_by_mpirun(void) {
    return getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMIX_RANK") || getenv("PMI_RANK");
}

/* Waits for a nonblocking collective: polls for the first 1 ms, then sleeps
 * between polls (50 us doubling to 400 us). Spinning in a blocking MPI call would
 * hold a core while this rank waits for a slower one, and on a machine with fewer
 * free cores than ranks that core is the one the slower rank needs: measured here,
 * 2 ranks on 2 busy cores ran at a third of the speed of 1 rank. */
static void wait_for(MPI_Request *request) {
    int done = 0;
    double start = MPI_Wtime();
    long pause_ns = 50000;
    for (;;) {
        MPI_Test(request, &done, MPI_STATUS_IGNORE);
        if (done) return;
        if (MPI_Wtime() - start < 1e-3) continue;
        nanosleep(&(struct timespec){0, pause_ns}, NULL);
        if (pause_ns < 400000) pause_ns *= 2;
    }
}

void qkv_dist_init(int *argc, char ***argv) {
    if (!launched_by_mpirun()) return;
    MPI_Init(argc, argv);
    dist_active = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &dist_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &dist_size);
    if (dist_rank != 0 && !freopen("/dev/null", "w", stdout))
        fprintf(stderr, "qkv: rank %d: cannot silence stdout\n", dist_rank);
}

int qkv_dist_finish(int rc) {
    if (!dist_active) return rc;
    if (rc != 0 && dist_size > 1 && !failure_agreed) {
        /* The other ranks may be inside a collective waiting for this one. */
        fprintf(stderr, "qkv: rank %d of %d failed (exit code %d); aborting the other ranks\n", dist_rank,
                dist_size, rc);
        fflush(NULL);
        MPI_Abort(MPI_COMM_WORLD, rc);
    }
    fflush(NULL);
    MPI_Finalize();
    dist_active = 0;
    return rc;
}

int qkv_dist_threads(int requested) {
    if (requested > 0 || alone()) return requested;
    const char *env = getenv("OMP_NUM_THREADS");
    if (env && atoi(env) > 0) return atoi(env);
    MPI_Comm node;   /* the ranks sharing this machine's cores */
    int local = 1;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, dist_rank, MPI_INFO_NULL, &node);
    MPI_Comm_size(node, &local);
    MPI_Comm_free(&node);
    int threads = omp_get_num_procs() / local;
    return threads > 0 ? threads : 1;
}

int qkv_dist_any(int failed) {
    if (alone()) return failed != 0;
    int any = failed != 0;
    MPI_Request request;
    MPI_Iallreduce(MPI_IN_PLACE, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD, &request);
    wait_for(&request);
    if (any) failure_agreed = 1;
    return any;
}

int qkv_dist_max(int value) {
    if (dist_size == 1) return value;
    MPI_Request request;
    MPI_Iallreduce(MPI_IN_PLACE, &value, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD, &request);
    wait_for(&request);
    if (value) failure_agreed = 1;
    return value;
}

int qkv_dist_root_flag(int flag) {
    if (alone()) return flag;
    MPI_Request request;   /* the others wait here while rank 0 evaluates */
    MPI_Ibcast(&flag, 1, MPI_INT, 0, MPI_COMM_WORLD, &request);
    wait_for(&request);
    return flag;
}

void qkv_dist_share_state(const qkv_params *params, qkv_optimizer *opt, long *step, qkv_tape *tape) {
    if (alone()) return;
    for (int i = 0; i < params->n; i++)
        MPI_Bcast(params->items[i]->data, (int)params->items[i]->size, MPI_FLOAT, 0, MPI_COMM_WORLD);
    for (int s = 0; s < opt->n_slots; s++)
        for (int i = 0; i < opt->n_params; i++)
            MPI_Bcast(opt->state[s * opt->n_params + i], (int)params->items[i]->size, MPI_FLOAT, 0, MPI_COMM_WORLD);
    long counters[2] = {*step, opt->step};
    uint64_t rng[2] = {tape->rng.seed, tape->rng.counter};
    MPI_Bcast(counters, 2, MPI_LONG, 0, MPI_COMM_WORLD);
    MPI_Bcast(rng, 2, MPI_UINT64_T, 0, MPI_COMM_WORLD);
    *step = counters[0];
    opt->step = counters[1];
    tape->rng = (qkv_rng){rng[0], rng[1]};
}

/* Test hook for tests/mpi_test.sh: rank 1 dies mid-run as a crashed rank would. */
static void maybe_exit_for_test(long step) {
    const char *at = getenv("QKV_TEST_RANK_EXIT");
    if (!at || dist_rank != 1 || atol(at) != step) return;
    fprintf(stderr, "qkv: rank 1: QKV_TEST_RANK_EXIT=%ld: exiting at step %ld without MPI_Finalize\n", step, step);
    fflush(NULL);
    _exit(3);
}

void qkv_dist_allgather(const float *mine, size_t n, float *all, long step) {
    if (alone()) {
        if (all != mine) memcpy(all, mine, n * sizeof *all);
        return;
    }
    maybe_exit_for_test(step);
    QKV_CHECK(n <= 0x7fffffff, "dist: %zu gradients do not fit one MPI_Allgather", n);
    MPI_Request request;
    MPI_Iallgather(mine, (int)n, MPI_FLOAT, all, (int)n, MPI_FLOAT, MPI_COMM_WORLD, &request);
    wait_for(&request);
}

void qkv_dist_sum_doubles(double *x, int n) {
    if (alone()) return;
    MPI_Request request;   /* one nonzero term per element: the sum is exact in any order */
    MPI_Iallreduce(MPI_IN_PLACE, x, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &request);
    wait_for(&request);
}

#endif
