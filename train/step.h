/* step.h — one training step's gradient as a fixed sum over micro-batches
 * (DESIGN.md, "Threads, ranks and determinism"; docs/performance.md).
 *
 * A batch of B examples is cut into M = B / micro_batch micro-batches of equal size;
 * micro_batch belongs to the run's config and is never derived from the thread or
 * rank count. Before the micro-batches, the task prepares the step's whole batch
 * (task->prepare) and the step takes the weight w_m of each micro-batch (its
 * tokens, sets or images: task->weight) and their sum W. Then micro-batch m's
 * forward and backward run on one worker thread, on that worker's own tape (slice
 * m of M: tape.h) with single-threaded ops, into micro-batch m's own gradient
 * buffer (tape.h's gradient redirection), its mean loss seeded with w_m / W so that
 * the buffers add up to the whole batch's gradient. They are added in one fixed
 * binary tree over micro-batch index,
 *
 *     sum[lo, hi) = sum[lo, mid) + sum[mid, hi),  mid = lo + (hi - lo) / 2,  sum[m, m+1) = g_m,
 *
 * every element in that order whatever the number of threads, and the loss is
 * sum_m (w_m / W) loss_m in double, in index order. So the gradient and the loss
 * are the same bits for any thread count.
 *
 * MPI ranks are workers too (train/dist.h): with R ranks, rank r owns micro-batches
 * [r M / R, (r+1) M / R), which must be nodes of the tree (R a power of two
 * dividing M does it; qkv_step_init says so otherwise). Each rank adds its node;
 * the nodes are gathered and every rank adds the tree above them: 1 process, 2
 * threads, 2 ranks and 2 ranks x 2 threads give the same bits.
 *
 * With fewer micro-batches on a rank than threads (a large model cut into few),
 * or one thread, the micro-batches run one after another on the calling thread
 * and the ops use the threads inside (core/kernels/parallel.h): the same bits again. Every worker's tape starts a step from
 * the same dropout stream and advances it the same way (tape.h's slices), so the
 * step hands back the stream one tape running the whole batch would leave.
 */
#ifndef QKV_STEP_H
#define QKV_STEP_H

#include "core/ops/tape.h"
#include "train/task.h"

/* The parameters' floats, as the ranges a gemm keep window holds constant
 * (core/kernels/gemm.h: qkv_gemm_keep_begin). */
typedef struct qkv_param_ranges {
    int n;
    const float **data;
    size_t *size;
} qkv_param_ranges;

typedef struct qkv_step {
    qkv_task *task;
    int micro_batch, micro_batches;  /* examples per micro-batch; M */
    int first, last;                 /* this rank's micro-batches [first, last) */
    int detect_nan;
    int n_tapes;
    qkv_tape **tapes;                /* one per worker thread, made on demand */
    size_t stride;                   /* floats per gradient buffer (padded per parameter) */
    size_t *offset;                  /* parameter i's place in a buffer */
    float *grad_memory;              /* one buffer per local micro-batch, stride floats each */
    float **grad_of;                 /* per local micro-batch, per parameter: the buffer's part */
    double *weight, *loss;           /* per micro-batch, all M */
    char *error;                     /* the first failed micro-batch's message */
    float *gathered;                 /* MPI: every rank's node, R x stride */
    double flops;                    /* the last step's products on this rank (qkv_tape_flops) */
    qkv_param_piece *pieces;         /* the parameters in pieces (core/ops/params.h), for the tree's last pass */
    int n_pieces;
    qkv_param_ranges weights;        /* the parameters, constant over the micro-batches */
} qkv_step;

/* The default micro-batch of a task whose batch is `batch`: the largest divisor of
 * batch not above the task's preferred size (task->micro_batch, 0: 8). */
int qkv_step_default_micro_batch(const qkv_task *task);

/* The one place a run's micro-batch is worked out: micro_batch, or the task's
 * default for 0, checked to cut the task's batch for this run's MPI ranks (it
 * must divide the batch, and the micro-batches must split over the ranks: see
 * above). The settled micro-batch, or -1 with qkv_last_error() naming
 * --micro-batch: the session (session.h) settles it once, before anything is
 * printed, and every function below takes it settled. */
int qkv_step_settle(const qkv_task *task, int micro_batch);

/* What a step will hold, for the memory budget (train/memory.h) before
 * qkv_step_init allocates it: the floats of one micro-batch's gradient buffer
 * (every parameter, each padded to a 64-byte line); the micro-batches this rank
 * computes; the worker tapes a step
 * runs them on at most (the threads, when there are at least as many local
 * micro-batches as threads and two or more threads; else 1). */
size_t qkv_step_buffer_floats(const qkv_params *params);
int qkv_step_local_micro_batches(const qkv_task *task, int micro_batch);
int qkv_step_workers(int local_micro_batches);

/* micro_batch as qkv_step_settle settled it (anything else stops: a programmer
 * error). Returns 0. */
int qkv_step_init(qkv_step *s, qkv_task *task, int micro_batch, int detect_nan);
void qkv_step_free(qkv_step *s);

/* What qkv_step_run leaves besides the gradients. */
typedef struct qkv_step_result {
    float loss;               /* the batch's loss: sum_m (w_m / W) loss_m */
    char anomaly[320];        /* --detect-nan: the first micro-batch's first NaN/Inf, or "" */
    int diverged;             /* the task failed on a NaN/Inf (task->diverged) */
    int interrupted;          /* the signal that came (the largest over the ranks, train/interrupt.h): the step was dropped */
} qkv_step_result;

/* Step `step`'s gradient into every parameter's gradient buffer (replacing it) and
 * its loss; *rng is the dropout stream at the step's start and is advanced as one
 * tape running the whole batch would advance it. inspect, if not NULL, sees
 * micro-batch 0's tape after its backward (--print-tape, --dot; the step then runs
 * its micro-batches in turn: the same bits). Each micro-batch first polls the
 * signal flag (train/interrupt.h); when any rank saw it, the step is dropped:
 * -1 with result->interrupted, *rng untouched (collective under MPI). 0, or -1
 * with qkv_last_error() (the task's error, or inspect's) and the gradients undefined.
 * The task's loss must not change the parameters: each worker keeps the weights it
 * packed for its next micro-batches (core/kernels/gemm.h: qkv_gemm_keep_begin). */
int qkv_step_run(qkv_step *s, long step, qkv_rng *rng, qkv_step_result *result,
                 int (*inspect)(void *ctx, qkv_tape *tape), void *inspect_ctx);

/* Evaluation in parallel: fn(ctx, tape, i) for every i in [0, n), each call on
 * an inference tape of its worker thread (gradients and training off, reset
 * after the call), with single-threaded ops when there are two or more calls and
 * threads; else in turn on the calling thread, the ops threaded inside. fn writes
 * only its own result (slot i of an array in ctx); the caller then combines the
 * slots in index order, so the result is the same bits for any thread count.
 * params (or NULL) are the model's parameters, which fn must not change: each
 * worker keeps the weights it packed for its next calls (core/kernels/gemm.h:
 * qkv_gemm_keep_begin). A signal (train/interrupt.h, polled before each call) skips the calls left:
 * the caller then drops its result. */
void qkv_parallel_chunks(int n, void (*fn)(void *ctx, qkv_tape *tape, int i), void *ctx,
                         const qkv_params *params);

#endif
