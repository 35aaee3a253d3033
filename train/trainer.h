/* trainer.h — the one training loop every task shares.
 *
 * A task is a small vtable: it owns a model (its parameter list), builds the loss
 * of step s on a tape, evaluates held-out metrics, and describes its config as
 * key/value pairs for checkpoints and summaries. The trainer does the rest:
 *
 *   for step = start .. steps-1:
 *       zero grads; loss = task->loss(step); backward; clip; optimizer step with the
 *       schedule's lr; reset the tape; log; every eval_every steps evaluate, and
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
 * (train/cli/train_flags.h: 2, or 3 for a NaN/Inf stop).
 *
 * Non-finite values: the loss of every step is checked; a NaN/Inf loss stops the
 * run before the optimizer step ("step 12: the loss is NaN ...; training stopped",
 * result->nonfinite set), and nothing is written after it (the last checkpoint
 * stays the last good one, and the error names it).
 * detect_nan (--detect-nan) turns on the tape's anomaly mode (tape.h): the first
 * op whose output or input gradient holds a NaN/Inf stops the run the same way,
 * naming the op, its input shapes and the step.
 *
 * Output: on a terminal a one-line progress bar (step, loss, metric, steps/s, ETA);
 * piped, plain log lines every log_every steps; quiet, nothing but the summary.
 * The last line is always "final: key=value ...". --json, --csv and --plot files
 * are written atomically at the end, --dot after the first step; their paths are
 * checked before training starts. --plot records the loss at each log point (every
 * step when log_every is 0) and the metrics at each evaluation, including the last.
 */
#ifndef QKV_TRAINER_H
#define QKV_TRAINER_H

#include <stdio.h>

#include "core/params.h"
#include "core/tape.h"
#include "optim/optimizer.h"

#define QKV_MAX_METRICS 8
#define QKV_MAX_CONFIG 40

typedef struct qkv_metrics {
    int n;
    const char *key[QKV_MAX_METRICS];
    double value[QKV_MAX_METRICS];
} qkv_metrics;

void qkv_metrics_set(qkv_metrics *m, const char *key, double value);
/* Index of the first largest of row[0..n): a prediction from logits. */
int qkv_argmax(const float *row, int n);
/* NULL if absent. */
const double *qkv_metrics_get(const qkv_metrics *m, const char *key);

/* Config as strings, in a fixed order (checkpoint metadata, --json). A value
 * holds any path the system can open (PATH_MAX bytes with the NUL): --data
 * directories are stored whole so that eval can find them again. */
#define QKV_CONFIG_VALUE_LEN 4096
typedef struct qkv_config_kv {
    int n;
    char key[QKV_MAX_CONFIG][32];
    char value[QKV_MAX_CONFIG][QKV_CONFIG_VALUE_LEN];
} qkv_config_kv;

void qkv_config_add(qkv_config_kv *c, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
const char *qkv_config_get(const qkv_config_kv *c, const char *key);
/* The integer value of key in lo..hi: 0, or -1 with qkv_last_error() naming the
 * key, its text and the range (a checkpoint's config is input). */
int qkv_config_get_int(const qkv_config_kv *c, const char *key, long long lo, long long hi, long long *out);

typedef struct qkv_task {
    const char *name;                 /* "reverse" */
    void *self;
    qkv_params *params;
    /* The scalar loss of training step `step` (forward only; the trainer runs backward).
     * NULL with qkv_last_error() stops the run (qkv_train returns -1 with that error). */
    qkv_tensor *(*loss)(void *self, qkv_tape *tape, long step);
    /* Held-out metrics; runs with gradients off and training mode off. */
    void (*evaluate)(void *self, qkv_tape *tape, qkv_metrics *metrics);
    /* Model and task config, enough to rebuild the model (checkpoint metadata). */
    void (*describe)(void *self, qkv_config_kv *config);
    /* Data parallelism (train/dist.h): loss() computes the tape's slice of a global
     * batch of `batch` examples (qkv_tape_batch_slice), and sets loss_terms to the
     * number of terms its mean is over when slices may differ (0: equal slices). */
    int batch;
    double loss_terms;
} qkv_task;

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
    int save_every;
    const char *resume_path;
    const char *plot_path;      /* PNG of the loss and metric curves, written at the end */
    const char *dot_path;       /* Graphviz file of the first step's tape */
    int detect_nan;             /* anomaly mode: check every op forward and backward */
} qkv_trainer_config;

typedef struct qkv_train_result {
    long steps_done;
    float final_loss;
    qkv_metrics metrics;
    double seconds, steps_per_second;
    int stopped_early;
    int nonfinite; /* 1: stopped on a NaN/Inf loss or --detect-nan anomaly (the command line's exit status 3) */
} qkv_train_result;

/* Runs the loop. Returns 0, or -1 with qkv_last_error() (an unwritable output path,
 * a checkpoint that does not fit the model, the task's error, a NaN/Inf stop: see
 * result->nonfinite). A setup error leaves every file untouched; a later one leaves
 * only what was written before it (--dot, the --save-every checkpoints). */
int qkv_train(const qkv_trainer_config *config, qkv_task *task, qkv_train_result *result);

/* Checks that path can be created or replaced: not empty, its directory exists
 * and is writable, and path is absent or a regular file (never a directory or a
 * device). Returns 0 or -1 with qkv_last_error(). */
int qkv_check_output_path(const char *path);
/* All of config's output paths (--json, --csv, --save, --plot, --dot), distinct; commands call
 * it before loading data, qkv_train again before training. */
int qkv_trainer_check_outputs(const qkv_trainer_config *config);

#endif
