/* history.h — a run's record: one row per logged or evaluated step (step, train
 * loss, learning rate, seconds since the run began, and every metric the task
 * evaluated there; NaN where a metric was not evaluated). The --csv file, the
 * --plot picture and the checkpoint's copy are all written from it, so a resumed
 * run that restores the history (qkv_history_parse) covers the whole run.
 *
 * Rows are appended in step order; a row for a step already last replaces its
 * missing values (the final evaluation of a step that was just logged). At most
 * QKV_MAX_METRICS metric keys, in the order they first appear; the history keeps
 * its own copies of the keys. Recording allocates (doubling arrays); running out
 * of memory is fatal.
 */
#ifndef QKV_HISTORY_H
#define QKV_HISTORY_H

#include <stddef.h>

#include "train/task.h"

#define QKV_HISTORY_KEY_LEN 32

typedef struct qkv_history {
    int n, cap;
    double *step, *loss, *lr, *seconds;
    int n_keys;
    char key[QKV_MAX_METRICS][QKV_HISTORY_KEY_LEN];
    double *metric[QKV_MAX_METRICS]; /* metric[k][row] */
} qkv_history;

/* A row; metrics NULL (or without a key) leaves those cells NaN. */
void qkv_history_add(qkv_history *h, long step, double loss, double lr, double seconds, const qkv_metrics *metrics);

/* 1 when the last row is step's and holds no metric value: the row of a step
 * whose evaluation a signal cut short (train/trainer.c keeps such a row, loss
 * and learning rate, with that step's checkpoint, and a run resumed from it
 * evaluates that step before its first one and fills the row in, so the
 * history of a step is saved with that step's checkpoint and ends as the
 * uninterrupted run's). */
int qkv_history_awaits_evaluation(const qkv_history *h, long step);

/* The history as CSV text: a header "step,loss,lr,seconds,<key>,..." then one line
 * per row, an empty cell where a value is NaN. Without seconds (a checkpoint's
 * copy: its bytes must not depend on the clock), the column is left out.
 * Returns a malloc'd string. */
char *qkv_history_csv(const qkv_history *h, int seconds);

/* Replaces h by the rows of csv text (as qkv_history_csv writes it, with or
 * without seconds: then NaN), keeping those up to step `until` (a checkpoint's
 * history, resumed at its step). 0, or -1 with qkv_last_error() naming what (a
 * checkpoint's text is input). */
int qkv_history_parse(qkv_history *h, const char *csv, long until, const char *what);

/* After --resume: the seconds of the run's part before it, taken from earlier
 * (that run's --csv, read back), since a checkpoint's history keeps no clock.
 * earlier counts only when every row of h is one of its rows (the same step,
 * loss and lr: the same run), and then gives its seconds to h's rows and
 * returns the seconds of its last row at or before `step` (the time the run
 * had taken when it reached the checkpoint, to go on from); else h is left as
 * it is and NAN returned. */
double qkv_history_adopt_seconds(qkv_history *h, const qkv_history *earlier, long step);
/* The same with earlier read from the CSV file at path (a resumed run's --csv,
 * where the earlier part wrote it); NAN when there is none or it does not parse. */
double qkv_history_adopt_csv_seconds(qkv_history *h, const char *path, long step);

/* One picture: the train loss and every metric named *_loss on one log axis (the
 * same unit: nats per token or example), the other metrics beside it, both
 * panels over the same steps; title above. 0, or -1 with qkv_last_error(). */
int qkv_history_write_png(const qkv_history *h, const char *path, const char *title);
/* The loss panel's title: "loss (train and held-out, nats)" when a metric named
 * *_loss is there to draw beside the train loss, else "train loss (nats)". */
const char *qkv_history_loss_title(const qkv_history *h);

void qkv_history_free(qkv_history *h);

#endif
