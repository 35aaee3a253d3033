/* trainer_config.h — the settings of a training run, in a header of their own:
 * the trainer's field table (trainer_fields.h), the memory budget (memory.h),
 * the session that settles them (session.h) and the loop that reads them
 * (trainer.h) all include this one, and none of them includes another for it.
 *
 * A command fills one with its task's defaults and its flags; the session
 * (session.h) then derives what follows from them (the schedule's total, step
 * size and gamma; a warmup that does not fit the steps clamped to 0), settles the
 * micro-batch and, on --resume, takes the checkpoint's settings the flags did not
 * give. The loop reads it as settled and changes nothing in it.
 */
#ifndef QKV_TRAINER_CONFIG_H
#define QKV_TRAINER_CONFIG_H

#include "optim/optimizer.h"

typedef struct qkv_trainer_config {
    int steps;
    int eval_every;             /* 0: only at the end */
    int log_every;
    const char *target_key;     /* the metric shown in progress lines, or NULL */
    float target;               /* > 0: stop early once target_key reaches it */
    int lower_is_better;        /* the target metric is an error (MAE): stop at <= target; else it lies
                                   in [0, 1] (an accuracy, F1), and so must target (qkv_trainer_check_target) */
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
    const char *resume_path;    /* --resume: the session opens it (session.h) */
    const char *plot_path;      /* PNG of the loss and metric curves, written at the end */
    const char *dot_path;       /* Graphviz file of the first step's tape */
    int detect_nan;             /* anomaly mode: check every op forward and backward */
    /* Examples per micro-batch (train/step.h); 0: the task's default. The session
     * settles it once (qkv_step_settle); from then on it is never 0. */
    int micro_batch;
    int threads;                /* the command line's --threads (the session sets them when it owns the process) */
    /* --max-memory: "2G", "512M", bytes (train/memory.h); NULL or "0": the machine's
     * limit (qkv_memory_available). The session parses it once; a run estimated
     * to need more is refused before training. */
    const char *max_memory;
    /* The task's defaults: a checkpoint leaves out the OPTIONAL settings equal to
     * them (trainer_fields.h); NULL: the rows' fallbacks. */
    const struct qkv_trainer_config *defaults;
} qkv_trainer_config;

#endif
