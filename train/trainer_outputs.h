/* trainer_outputs.h — the files a training run writes when it ends: the --csv log,
 * the --plot curves and the --json summary (trainer.h says what each holds).
 *
 * The run's history (train/history.h: a row per logged or evaluated step, every
 * metric in its own column) is kept in memory, and qkv_train_outputs_finish
 * writes the CSV and the plot from it, each atomically, and the summary, all
 * three or none. A run that fails (also in writing them: a full disk) leaves none
 * of them behind (and no partial file), a run stopped by a
 * signal (trainer.h) writes all three. A path that is NULL turns its output off.
 * Used by train/trainer.c; it reads no trainer type (the paths come as arguments,
 * the result from train_result.h), so the trainer depends on it, not both ways.
 */
#ifndef QKV_TRAINER_OUTPUTS_H
#define QKV_TRAINER_OUTPUTS_H

#include <stdio.h>

#include "train/history.h"
#include "train/task.h"
#include "train/train_result.h"

typedef struct qkv_train_outputs {
    const char *csv_path, *plot_path, *json_path;
    int log_every;       /* <= 0: a row for every step */
    qkv_history history; /* the logged and evaluated steps: what a checkpoint keeps */
    /* The final evaluation, added to the files only: a checkpoint's history is the
     * same whether its run ended there or went on (a resumed run is bitwise the
     * uninterrupted one). */
    int has_final;
    long final_step;
    double final_loss, final_lr, final_seconds;
    qkv_metrics final_metrics;
    char *record;        /* the run's JSON members after "task" (malloc'd, freed by finish), or NULL */
} qkv_train_outputs;

/* The outputs of a run (its --csv, --plot and --json paths, each NULL when off,
 * and --log-every), with an empty history. */
void qkv_train_outputs_open(qkv_train_outputs *out, const char *csv_path, const char *plot_path,
                            const char *json_path, int log_every);

/* After `step` steps, with the step's loss and lr, `seconds` since the run began:
 * a history row if the step is logged (log_now) or evaluated (metrics not NULL),
 * or every step when log_every <= 0; the metrics in it only when evaluated. */
void qkv_train_outputs_record(qkv_train_outputs *out, long step, float loss, float lr, double seconds,
                              const qkv_metrics *metrics, int log_now);

/* The final evaluation, after `step` steps: in the files, its metrics go in the
 * last row when that row is this step's, else in a new row; not in the history. */
void qkv_train_outputs_record_final(qkv_train_outputs *out, long step, float loss, float lr, double seconds,
                                    const qkv_metrics *metrics);

/* With write nonzero, writes --csv, --json and --plot together: all of them, or
 * (a full disk, an unwritable path) none, each removed or never put in place, and
 * -1 with qkv_last_error() naming the path that failed; always frees what was
 * recorded. 0 or -1. */
int qkv_train_outputs_finish(qkv_train_outputs *out, int write, const qkv_task *task,
                             const qkv_config_kv *description, const qkv_train_result *result);

#endif
