/* trainer.h — the one training loop every task (train/task.h) shares.
 *
 * The task builds the loss of step s, evaluates and describes itself; the
 * trainer does the rest:
 *
 *   for step = start .. steps-1:
 *       the batch's gradient and loss, a fixed sum over micro-batches that the
 *       threads and MPI ranks compute in parallel (train/step.h); clip; optimizer
 *       step with the schedule's lr; log; every eval_every steps evaluate, and
 *       stop early once metric `target_key` >= target; every save_every steps save.
 *
 * Resuming checks that the checkpoint's config is this run's (task, model, data)
 * and that --steps goes beyond its step.
 *
 * Step s's batch is a pure function of (seed, s), the tape's dropout stream and the
 * optimizer state are in the checkpoint, so a run resumed at step k ends bitwise
 * equal to an uninterrupted one.
 *
 * Errors: qkv_train prints nothing; it returns -1 with qkv_last_error() holding
 * one line, and the command line prints "qkv: <line>" and chooses the exit status
 * (cli/train_flags.h: 2, or 3 for a NaN/Inf stop).
 *
 * Non-finite values: the loss of every step is checked before the optimizer step,
 * and after it one fused pass checks every parameter and optimizer value (a NaN/Inf
 * gradient shows there too; the error then names the gradient norm, else the first
 * tensor and the count). Either stops the run ("step 12: the loss is NaN ...;
 * training stopped", result->nonfinite set), and nothing is written after it: the
 * last checkpoint stays the last good one, the error names it, and no checkpoint
 * ever holds a NaN/Inf (checkpoint.h). A task whose loss() fails because a value
 * went non-finite (task->diverged) stops the same way.
 * detect_nan (--detect-nan) turns on the tape's anomaly mode (tape.h): the first
 * op whose output or input gradient holds a NaN/Inf stops the run the same way,
 * naming the op, its input shapes and the step.
 *
 * Signals (train/interrupt.h, once installed): at the next micro-batch or
 * evaluation chunk (the step or evaluation a signal cut is dropped, its state
 * the last whole step's), the run ends as if --steps were reached, without the
 * final evaluation (one a signal cut ends the run the same way): the --save
 * checkpoint (atomic), --csv, --json and --plot are written, and qkv_train
 * returns -1 with result->interrupted set and the error saying where the work
 * is ("stopped by SIGINT after step 12 of 100; ck.safetensors (step 12) holds the
 * work: continue with --resume ck.safetensors"). An evaluation step whose
 * evaluation a signal cut keeps its history row (no metrics) with its
 * checkpoint, and a run resumed from it evaluates that step first (history.h).
 *
 * Output: on a terminal a one-line progress bar (step, loss, the last evaluated
 * metric and its step, steps/s, examples or tokens per second, ETA); piped, plain
 * log lines every log_every steps, with every metric on the lines of an
 * evaluation only; quiet, nothing but the summary. The last line is always
 * "final: key=value ...". The run's history (train/history.h: a row per logged
 * or evaluated step, every step when log_every is 0, and the final evaluation,
 * a column per metric) makes --csv and --plot, written atomically at the end
 * with --json; --dot after the first step; their paths are checked before
 * training starts.
 */
#ifndef QKV_TRAINER_H
#define QKV_TRAINER_H

#include <stdio.h>

#include "optim/optimizer.h"
#include "train/task.h"
#include "train/train_result.h"

typedef struct qkv_trainer_config {
    int steps;
    int eval_every;             /* 0: only at the end */
    int log_every;
    const char *target_key;     /* the metric shown in progress lines, or NULL */
    float target;               /* > 0: stop early once target_key reaches it */
    int lower_is_better;        /* the target metric is an error (MAE): stop at <= target */
    float clip;                 /* global-norm clip, 0: none */
    qkv_optimizer_config optim;
    qkv_schedule schedule;
    unsigned long long seed;    /* the tape's dropout stream */
    int quiet;
    int print_tape;             /* print the first step's tape (teaching, debugging) */
    const char *json_path, *csv_path;
    const char *save_path;      /* checkpoint at the end (and every save_every steps) */
    int save_weights_only;      /* --save writes the parameters only: no optimizer state */
    int save_every;
    const char *resume_path;
    const char *plot_path;      /* PNG of the loss and metric curves, written at the end */
    const char *dot_path;       /* Graphviz file of the first step's tape */
    int detect_nan;             /* anomaly mode: check every op forward and backward */
    int micro_batch;            /* examples per micro-batch (train/step.h); 0: the task's default */
    int threads;                /* the command line's --threads (qkv_set_threads); qkv_train does not read it */
    /* --max-memory: "2G", "512M", bytes (train/memory.h); NULL or "0": the cgroup's
     * limit or physical memory, whichever is smaller. A run estimated to need
     * more is refused before training. */
    const char *max_memory;
    /* The task's defaults: a checkpoint leaves out the OPTIONAL settings equal to
     * them (trainer_fields.h); NULL: the rows' fallbacks. */
    const struct qkv_trainer_config *defaults;
    /* --resume's checkpoint, already opened by the caller (checkpoint.h), or NULL:
     * qkv_train opens resume_path itself. */
    struct qkv_checkpoint *resume;
} qkv_trainer_config;

/* qkv_train_result: train/train_result.h (the run's end, which trainer_outputs.c writes too). */

/* Runs the loop. Returns 0, or -1 with qkv_last_error() (an unwritable output path,
 * a checkpoint that does not fit the model, the task's error, a NaN/Inf stop: see
 * result->nonfinite). A setup error leaves every file untouched; a later one leaves
 * only what was written before it (--dot, the --save-every checkpoints). */
int qkv_train(const qkv_trainer_config *config, qkv_task *task, qkv_train_result *result);

/* This MPI rank's config (train/dist.h): the shared one, with --save, --json,
 * --csv, --plot, --dot and --resume cleared on ranks other than 0 (rank 0 reads
 * and writes all files). */
qkv_trainer_config qkv_trainer_rank_config(const qkv_trainer_config *shared);

/* --resume: that the opened checkpoint is one of this run (its task config the
 * same as description, the task's): 0, or -1 with one line naming the first key
 * that differs ("PATH: a checkpoint of another run: task is \"text\" there,
 * reverse here"). A data set is the same by content: when both name its
 * identity (data_hash, data/identity.h), "data", its path, may differ (the run
 * resumed from another directory); different data is named with both paths. */
int qkv_trainer_check_resume(const struct qkv_checkpoint *ckpt, const qkv_config_kv *description);

/* Checks that path can be created or replaced: not empty, not ending in '/', its directory exists
 * and is writable, and path is absent or a regular file (never a directory or a
 * device). Returns 0 or -1 with qkv_last_error(). */
int qkv_check_output_path(const char *path);
/* The same for a picture qkv writes, whose name must also end in .png (any case):
 * qkv writes PNG only, and a name saying otherwise would mislead. */
int qkv_check_png_path(const char *path);
/* All of config's output paths (--json, --csv, --save, --plot, --dot), distinct; commands call
 * it before loading data, qkv_train again before training. */
int qkv_trainer_check_outputs(const qkv_trainer_config *config);

#endif
