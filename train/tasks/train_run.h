/* train_run.h — `qkv train TASK FLAGS` as a library call: the task's flags (the
 * trainer's rows, then the task's field table, train/args.h) read into its
 * config, then the spec of its session (train/session.h) with the task's
 * check, own run, create and destroy. The command line (cli/cmd_train.c) and
 * the page's C API (web/) both prepare a training run here, so both apply the
 * same checks with the same one-line messages.
 *
 *     qkv_task_run r;
 *     qkv_task_run_begin(&r, kind);                    defaults; r.args, r.n: the flag rows
 *     qkv_task_run_read(&r, argc, argv)                0, 1 (--help), -1 (qkv_last_error())
 *     qkv_session_spec spec;
 *     qkv_task_run_spec(&r, &spec);                    then qkv_session_prepare(&s, &spec) ...
 *     qkv_task_run_end(&r);                            after the session is closed
 *
 * r must stay where it is (the spec points into it) until the session is closed.
 */
#ifndef QKV_TASKS_TRAIN_RUN_H
#define QKV_TASKS_TRAIN_RUN_H

#include "train/args.h"
#include "train/session.h"
#include "train/tasks/registry.h"

typedef struct qkv_task_run {
    const qkv_task_kind *kind;
    void *config;                              /* the kind's config (malloc'd) */
    qkv_trainer_config trainer;                /* the kind's trainer defaults, then the flags */
    char command[64];                          /* "train reverse": messages start with it */
    qkv_arg args[QKV_MAX_COMMAND_FLAGS];       /* the trainer's rows, then the task's */
    int n;
    unsigned char given[QKV_MAX_COMMAND_FLAGS];   /* 1 for each flag given (--resume keeps them) */
} qkv_task_run;

/* r with kind's defaults and its flag rows. */
void qkv_task_run_begin(qkv_task_run *r, const qkv_task_kind *kind);
/* Reads flags (argv[0..argc), after the task's name) into r: as qkv_args_read,
 * with r->command in messages. */
int qkv_task_run_read(qkv_task_run *r, int argc, char **argv);
/* The session spec of r (spec->name is r->command). owns_process: as the spec's. */
void qkv_task_run_spec(qkv_task_run *r, int owns_process, qkv_session_spec *spec);
void qkv_task_run_end(qkv_task_run *r);

#endif
