/* trainer.h — the one training loop every task (train/task.h) shares, run on
 * what a session (train/session.h) prepared: qkv_train there is this loop, and
 * qkv_run_step, qkv_run_evaluate and qkv_run_save its calls one at a time.
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
 * Resuming restores the checkpoint the session opened and found to be this
 * run's (task, model, data), and checks that --steps goes beyond its step.
 *
 * Step s's batch is a pure function of (seed, s), the tape's dropout stream and the
 * optimizer state are in the checkpoint, so a run resumed at step k ends bitwise
 * equal to an uninterrupted one.
 *
 * Errors: the run prints nothing; it returns -1 with qkv_last_error() holding
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
 * with --json (which also records this qkv, its instruction-set path, the
 * settings from the field table and the resume: trainer_fields.h); --dot after
 * the first step; their paths are checked before training starts. A resumed
 * run's seconds go on from the earlier part's when its --csv is found at this
 * run's --csv path (history.h: a checkpoint keeps no clock).
 */
#ifndef QKV_TRAINER_H
#define QKV_TRAINER_H

#include <stdio.h>

#include "train/task.h"
#include "train/train_result.h"
#include "train/trainer_config.h"


/* qkv_train_result: train/train_result.h (the run's end, which trainer_outputs.c writes too). */

/* A run in progress: its optimizer, tapes, step and history (trainer.c). */
typedef struct qkv_run qkv_run;

/* What a run starts from, all of it settled and checked by the session
 * (train/session.h): nothing here is checked again. */
typedef struct qkv_run_setup {
    const qkv_trainer_config *config;    /* settled: derived settings, micro-batch, resumed settings */
    qkv_task *task;
    const qkv_config_kv *description;    /* the task's config, described once: checkpoints, --json */
    struct qkv_checkpoint *resume;       /* --resume's checkpoint, opened and found to be this run's; or NULL */
    size_t arena_budget;                 /* the tape arenas' budget (tape.h; 0: none) while the run lasts */
} qkv_run_setup;

/* Makes the optimizer, the tape and the micro-batches' buffers, restores --resume's
 * checkpoint (its step must be short of --steps), and makes every rank's state
 * rank 0's. result is the run's (filled at qkv_run_finish). The run, or NULL with
 * qkv_last_error() and nothing left allocated (result->interrupted: a signal). */
qkv_run *qkv_run_start(const qkv_run_setup *setup, qkv_train_result *result);

/* One step. The last step's row (its log line, history row, --save-every
 * checkpoint and early-stop test) is written first, with the metrics of an
 * evaluation made since (qkv_run_evaluate); then a signal or the end is looked
 * for; then the step. 0: a step was taken; 1: none, the run is over (--steps
 * reached or the target met); 2: a signal (result->interrupted; a step it cut
 * is dropped); -1: an error (qkv_last_error(), result->nonfinite). Collective
 * under MPI. */
int qkv_run_step(qkv_run *run);
/* Whether the last step is one eval_every asks to evaluate. */
int qkv_run_evaluation_due(const qkv_run *run);
/* Evaluates the model now (rank 0); the metrics go with the last step's row. 0,
 * or 2 when a signal cut it short (the row keeps no metrics; the next step ends
 * the run). */
int qkv_run_evaluate(qkv_run *run);
/* The last evaluation's metrics (none yet: n = 0). */
const qkv_metrics *qkv_run_metrics(const qkv_run *run);
/* Writes the --save checkpoint of the steps so far (the last step's row first).
 * 0 (nothing without --save), or -1 with qkv_last_error(). */
int qkv_run_save(qkv_run *run);
/* Ends the run and frees it. rc: 0, the run went to its end (the last row, the
 * final evaluation, --save, the files); 2, a signal (--save and the files, and
 * the error saying where the work is); -1, an error (nothing more written).
 * Returns 0, or -1 with qkv_last_error(). */
int qkv_run_finish(qkv_run *run, int rc);

/* This MPI rank's config (train/dist.h): the shared one, with --save, --json,
 * --csv, --plot, --dot and --resume cleared on ranks other than 0 (rank 0 reads
 * and writes all files). */
qkv_trainer_config qkv_trainer_rank_config(const qkv_trainer_config *shared);

/* Checks that path can be created or replaced: not empty, not ending in '/', its directory exists
 * and is writable, and path is absent or a regular file (never a directory or a
 * device). Returns 0 or -1 with qkv_last_error(). */
int qkv_check_output_path(const char *path);
/* The same for a picture qkv writes, whose name must also end in .png (any case):
 * qkv writes PNG only, and a name saying otherwise would mislead. */
int qkv_check_png_path(const char *path);
/* All of config's output paths (--json, --csv, --save, --plot, --dot), distinct; the session
 * checks them once, before the task loads its data. */
int qkv_trainer_check_outputs(const qkv_trainer_config *config);
/* --target within its metric's range: at most 1 for a higher-is-better metric (an
 * accuracy, F1: all of them lie in [0, 1]), no bound for an error
 * (lower_is_better: MAE, a loss). 0, or -1 with a one-line qkv_last_error(). */
int qkv_trainer_check_target(const qkv_trainer_config *config);

#endif
