/* dist.h — data-parallel training over MPI ranks (docs/mpi.md).
 *
 * Built with `make MPI=1` (mpicc, -DQKV_MPI) and started by `mpirun -np N ./qkv
 * train ...`, each of the N processes (ranks) trains the same model on its slice
 * of every global batch:
 *
 *   - a step's batch is cut into micro-batches (train/step.h); rank r owns a
 *     contiguous range of them, a node of the step's fixed sum tree, and computes
 *     its node's gradient sum; the nodes are gathered (qkv_dist_allgather, one
 *     MPI_Iallgather, the nonblocking MPI_Allgather, waited for without spinning)
 *     and every rank adds the tree above them, so every rank holds the same bits,
 *     the bits one process computes with any thread count. Every rank then takes
 *     the same optimizer step.
 *   - rank 0's parameters, optimizer state, step and dropout stream are broadcast
 *     once before the first step (after --resume, which only rank 0 reads), so all
 *     ranks start equal and stay equal.
 *   - rank 0 alone logs (the others' stdout is /dev/null), evaluates, decides early
 *     stopping (broadcast) and writes checkpoints, --json, --csv, --plot and --dot.
 *   - a rank that fails after the ranks have split up calls MPI_Abort, so the others
 *     never wait forever; a rank that dies without MPI_Finalize makes mpirun end
 *     the job (Open MPI's default).
 *
 * Without QKV_MPI (the default build), or when not started by mpirun, every
 * function is the single-process no-op: rank 0 of 1.
 */
#ifndef QKV_DIST_H
#define QKV_DIST_H

#include "core/ops/params.h"
#include "core/ops/tape.h"
#include "optim/optimizer.h"
#include "train/task.h"

/* MPI_Init when started by mpirun (its environment says so); else nothing. Ranks
 * other than 0 send stdout to /dev/null. Call once, before any other. */
void qkv_dist_init(int *argc, char ***argv);
/* The command's exit code rc, after MPI_Finalize; or, when rc != 0 and the other
 * ranks may still be waiting on this one, MPI_Abort(rc) (does not return). */
int qkv_dist_finish(int rc);

int qkv_dist_rank(void);
int qkv_dist_size(void);

/* Solo mode, for runs whose ranks train different models (train/experiments/
 * lengthgen.c spreads its models over the ranks): while on, this rank acts as a
 * single process, rank 0 of 1, and every function here is the single-process
 * one (no collective), so qkv_train trains this rank's model alone. Read the
 * rank and size before turning it on; turn it off (on every rank) before the next
 * collective. Not while a training run is in progress. */
void qkv_dist_solo(int on);

/* One round of independent jobs (lengthgen's models, maxreg --compare's seeds):
 * slots first .. first + ranks x jobs - 1, those below n. Rank r runs the slots
 * first + r*jobs .. first + r*jobs + jobs - 1 in solo mode, each on a thread of
 * its own (qkv_set_threads(1) there) when jobs > 1; run(ctx, slot) returns 0, -1
 * with qkv_last_error(), or a signal's number. Returns 0, or -1 when a slot failed
 * on any rank (all ranks must call it) with that slot's error on its rank and
 * "another rank failed" on the others; *signal (if not NULL) gets the largest
 * signal this rank's slots returned. The caller exchanges the round's results. */
int qkv_dist_jobs_round(int first, int n, int jobs, int (*run)(void *ctx, int slot), void *ctx, int *signal);

/* The OpenMP thread count for --threads requested: requested if > 0; else, under
 * MPI, OMP_NUM_THREADS if set, or the cores divided by the ranks on this machine
 * (at least 1); single-process, 0 (all cores). */
int qkv_dist_threads(int requested);

/* 1 if `failed` is nonzero on any rank (all ranks must call it). */
int qkv_dist_any(int failed);

/* The largest of value over the ranks (all ranks must call it): the signal that
 * stops a run, the same on every rank (train/interrupt.h). A nonzero result
 * counts as an agreed stop, like qkv_dist_any's. */
int qkv_dist_max(int value);

/* Rank 0's value of flag, on every rank (all ranks must call it). */
int qkv_dist_root_flag(int flag);

/* Makes every rank's parameters, optimizer state (including its step count), *step
 * and dropout stream rank 0's. */
void qkv_dist_share_state(const qkv_params *params, qkv_optimizer *opt, long *step, qkv_tape *tape);

/* The one collective of a training step's gradient: all = every rank's n floats
 * (mine), rank by rank. Test hook: with QKV_TEST_RANK_EXIT=k in the environment,
 * rank 1 exits at step k (0-based) without MPI_Finalize. */
void qkv_dist_allgather(const float *mine, size_t n, float *all, long step);
/* x[0..n) summed over ranks, in place (every element nonzero on one rank at most:
 * the micro-batches' losses). */
void qkv_dist_sum_doubles(double *x, int n);

#endif
