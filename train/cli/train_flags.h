/* train_flags.h — the flags every `qkv train <task>` command shares: steps,
 * optimizer, schedule, clipping, evaluation, checkpoints, output files, threads.
 * A command fills qkv_common_flags with its defaults, appends these rows to its
 * own flag table, parses, then calls qkv_common_finish to turn the parsed values
 * into the trainer's config. */
#ifndef QKV_TRAIN_FLAGS_H
#define QKV_TRAIN_FLAGS_H

#include "train/cli/args.h"
#include "train/trainer.h"

#define QKV_MAX_ARGS 64

typedef struct qkv_common_flags {
    qkv_trainer_config trainer;
    int optimizer, schedule, threads, warmup;   /* enums as choice indices */
    float weight_decay;
} qkv_common_flags;

/* Writes the shared rows into args; returns how many. */
int qkv_common_args(qkv_arg *args, qkv_common_flags *f);
/* After parsing: the optimizer and schedule enums, the warmup and the threads. */
void qkv_common_finish(qkv_common_flags *f);
/* The last line of a run: "final: task=... steps=... loss=... <metrics> ...". */
void qkv_print_final(const char *task, const qkv_train_result *r);
/* After qkv_train: rc 0 prints the final line for task (unless task is NULL); rc -1
 * prints "qkv: <error>" to stderr. Returns the exit status: 0, 2, 3 when the run
 * stopped on a NaN/Inf, or 128 + the signal that stopped it (train/interrupt.h). */
int qkv_train_exit(int rc, const char *task, const qkv_train_result *result);

#endif
