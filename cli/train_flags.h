/* train_flags.h — the flags every `qkv train <task>` command shares: steps,
 * optimizer, schedule, clipping, evaluation, checkpoints, output files, threads.
 * They are the rows of the trainer's field table (train/trainer_fields.h) with
 * a flag. A command fills a qkv_trainer_config with its task's defaults, appends
 * these rows to its own flag table, parses, then prepares a session with it
 * (train/session.h), which derives the settings that follow from the parsed ones. */
#ifndef QKV_TRAIN_FLAGS_H
#define QKV_TRAIN_FLAGS_H

#include "cli/args.h"
#include "train/trainer.h"

/* Writes the shared rows, targets in trainer, into args; returns how many. */
int qkv_common_args(qkv_arg *args, qkv_trainer_config *trainer);
/* The last line of a run: "final: task=... steps=... loss=... <metrics> ...". */
void qkv_print_final(const char *task, const qkv_train_result *r);
/* After qkv_train: rc 0 prints the final line for task (unless task is NULL); rc -1
 * prints "qkv: <error>" to stderr. Returns the exit status: 0, 2, 3 when the run
 * stopped on a NaN/Inf, or 128 + the signal that stopped it (train/interrupt.h). */
int qkv_train_exit(int rc, const char *task, const qkv_train_result *result);

#endif
