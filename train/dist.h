/* dist.h — data-parallel training over MPI ranks (docs/mpi.md).
 *
 * Built with `make MPI=1` (mpicc, -DQKV_MPI) and started by `mpirun -np N ./qkv
 * train ...`, each of the N processes (ranks) trains the same model on its slice
 * of every global batch:
 *
 *   - batch B of step s is a pure function of (seed, s); rank r computes examples
 *     [r*B/N, (r+1)*B/N) (qkv_tape_batch_slice), with their global indices, so data
 *     and dropout masks are those of one process running the whole batch. B must
 *     divide by N: otherwise qkv_train fails with one line naming --batch.
 *   - after backward, qkv_dist_average_grads packs every parameter gradient, the
 *     loss and the slice's weight into ONE buffer and sums it over ranks with one
 *     MPI_Iallreduce (the nonblocking MPI_Allreduce, waited for without spinning):
 *         g = sum_r w_r g_r / sum_r w_r,   loss = sum_r w_r loss_r / sum_r w_r,
 *     where w_r is the number of terms rank r's loss averaged (task->loss_terms,
 *     e.g. tokens not ignored) or 1 for equal slices. That is the gradient and the
 *     loss of the global batch's mean. Every rank then takes the same optimizer step.
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

#include "core/params.h"
#include "core/tape.h"
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

/* The OpenMP thread count for --threads requested: requested if > 0; else, under
 * MPI, OMP_NUM_THREADS if set, or the cores divided by the ranks on this machine
 * (at least 1); single-process, 0 (all cores). */
int qkv_dist_threads(int requested);

/* -1 with qkv_last_error() on rank 0 if a global batch of `batch` examples does not
 * split into equal slices; other ranks return 0 and learn it from qkv_dist_any. */
int qkv_dist_check_batch(int batch);

/* 1 if `failed` is nonzero on any rank (all ranks must call it). */
int qkv_dist_any(int failed);

/* Rank 0's value of flag, on every rank (all ranks must call it). */
int qkv_dist_root_flag(int flag);

/* Makes every rank's parameters, optimizer state (including its step count), *step
 * and dropout stream rank 0's. Sets tape's batch slice to this rank's. */
void qkv_dist_share_state(const qkv_params *params, qkv_optimizer *opt, long *step, qkv_tape *tape);

/* The one collective of a training step (see above): replaces each parameter's
 * gradient with the weighted mean over ranks and returns the weighted mean loss.
 * weight <= 0 means 1. Test hook: with QKV_TEST_RANK_EXIT=k in the environment,
 * rank 1 exits at step k (0-based) without MPI_Finalize. */
float qkv_dist_average_grads(const qkv_params *params, long step, float loss, double weight);

#endif
