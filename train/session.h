/* session.h — a training run prepared once, then run: the command line, the
 * experiments and a program of its own (a web page) all start training here.
 *
 *     qkv_session s;
 *     if (qkv_session_prepare(&s, &spec) != 0) ...    every check, once: one line, nothing written
 *     (the caller's banner)
 *     qkv_train(&s, &result);                          the whole run: the calls below in a loop
 *     qkv_session_close(&s);
 *
 * Prepare, in this order: the task's check (spec.check); the output paths
 * (--json, --csv, --save, --plot, --dot); --max-memory parsed; the settings
 * derived from the others (the schedule's total, step size and gamma; a warmup
 * that does not fit the steps, below); the threads (when the session owns the
 * process); the task's own run instead of training (spec.run: maxreg --compare);
 * the signal handlers; the task made (spec.create); on --resume, the checkpoint
 * opened, found to be one of this run (qkv_session_check_resume) and its
 * settings adopted where the command line gave no flag (a changed one said in
 * one line on stderr), under MPI rank 0's settings on every rank; the
 * micro-batch settled (qkv_step_settle: the task's default for 0, checked
 * against the batch and the ranks) and never changed after; the memory the run
 * needs measured and judged (train/memory.h) against --max-memory or the
 * machine's; the ranks agree on all of it (train/dist.h). The run
 * (trainer.h) then checks none of it again.
 *
 * The warmup rule, whatever the warmup's source (the task's default, --warmup,
 * the checkpoint on --resume): a warmup of `steps` or more cannot fit (the
 * cosine schedule warms up over steps it must then decay over), so it is clamped
 * to 0 and, unless --quiet, one line on stderr says so: "qkv train reverse:
 * --warmup 100 does not fit in --steps 20: no warmup". No input reaches the
 * schedule's programmer-error stop.
 *
 * Run one call at a time (a page that pauses, single-steps and draws between
 * steps): qkv_session_step, then at the steps the run evaluates at
 * (qkv_session_evaluation_due) qkv_session_evaluate, and qkv_session_save; the
 * same calls in the same order write the same checkpoint bytes as qkv_train,
 * which is that loop, and can take over at any point to finish the run.
 */
#ifndef QKV_SESSION_H
#define QKV_SESSION_H

#include "train/checkpoint.h"
#include "train/memory.h"
#include "train/trainer.h"

/* What a session is prepared from. */
typedef struct qkv_session_spec {
    const char *name;                  /* in messages: "train reverse" says "qkv train reverse: ..." */
    qkv_trainer_config config;         /* as given: the task's defaults and the flags */
    /* The task: made by create (from ctx; check and run see ctx too, destroy frees
     * it at close) or, create NULL, the caller's `task`, used as is and freed by the caller. */
    void *ctx;
    int (*check)(void *ctx, qkv_trainer_config *config);           /* the task's check, or NULL; 0 or -1 */
    int (*run)(void *ctx, const qkv_trainer_config *config);       /* NULL, or its own run: 0 done, -1, 1 train */
    /* NULL with qkv_last_error(); max_memory is --max-memory in bytes (0: the machine's),
     * the budget its data set is judged against before it is made (qkv_task_create). */
    qkv_task *(*create)(void *ctx, size_t max_memory);
    void (*destroy)(void *ctx, qkv_task *task);
    qkv_task *task;
    /* --resume: whether the command line gave a flag (its settings are kept); NULL: none given. */
    int (*given)(const char *flag, const void *given_ctx);
    const void *given_ctx;
    /* The run owns the process (the command line): the session sets the thread
     * count from config.threads and installs the signal handlers (train/interrupt.h)
     * before the task is made. 0: the caller's (an experiment's workers set their own). */
    int owns_process;
} qkv_session_spec;

typedef struct qkv_session {
    qkv_trainer_config config;         /* settled: read it, do not change it */
    qkv_task *task;
    qkv_config_kv *description;        /* the task's config, described once */
    size_t max_memory;                 /* --max-memory in bytes, 0: the machine's */
    qkv_memory_estimate memory;        /* the run's estimate, as judged */
    qkv_checkpoint resume;             /* --resume's checkpoint, open when resumed (rank 0) */
    int resumed;
    qkv_run *run;                      /* started by the first call after prepare */
    qkv_train_result result;           /* the run's, once over */
    int ended;                         /* the run was started and is over */
    /* After a failed prepare: the exit status (2, or 128 + the signal that came
     * during the memory's measurement), and whether another rank says the line. */
    int status, silent;
    void *ctx;
    void (*destroy)(void *ctx, qkv_task *task);
} qkv_session;

/* Prepares s as above. 0: ready (the caller prints its banner, then runs); 1: the
 * task's own run did all there was to do (nothing to close); -1: one line in
 * qkv_last_error(), s->status the exit status, nothing written, nothing to close. */
int qkv_session_prepare(qkv_session *s, const qkv_session_spec *spec);

/* The whole run from where it is (the start, or after calls below) to its end:
 * 0, or -1 with qkv_last_error() (trainer.h; result->nonfinite, ->interrupted). */
int qkv_train(qkv_session *s, qkv_train_result *result);

/* One step (trainer.h's qkv_run_step: 0 a step was taken, 1 the run is over,
 * 2 a signal, -1 an error). */
int qkv_session_step(qkv_session *s);
/* Whether the step just taken is one the run evaluates at (--eval-every). */
int qkv_session_evaluation_due(const qkv_session *s);
/* Evaluates now; the metrics go with the last step's history row. 0, or 2 when a
 * signal cut it. s->run's metrics: qkv_session_metrics. */
int qkv_session_evaluate(qkv_session *s);
const qkv_metrics *qkv_session_metrics(const qkv_session *s);
/* Writes the --save checkpoint of the steps so far: 0, or -1. */
int qkv_session_save(qkv_session *s);
/* Frees what prepare made (the task it made, the checkpoint) and a run that was
 * started and not finished (without its end: no final evaluation, no files). */
void qkv_session_close(qkv_session *s);

/* --resume: that the opened checkpoint is one of this run (its task config the
 * same as description, the task's): 0, or -1 with one line naming every key
 * that differs ("PATH: a checkpoint of another run: task is \"text\" there,
 * reverse here"). A data set is the same by content: when both name its
 * identity (data_hash, data/identity.h), "data", its path, may differ (the run
 * resumed from another directory); different data is named with both paths. */
int qkv_session_check_resume(const qkv_checkpoint *ckpt, const qkv_config_kv *description);

#endif
