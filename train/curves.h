/* curves.h — the training curves a run records for --plot: the loss at each log
 * point and every metric at each evaluation, drawn as one PNG with two panels
 * side by side (loss on a log y axis; the metrics on a linear one).
 *
 * Recording allocates (doubling arrays); running out of memory is fatal. A metric
 * absent at some evaluation is NaN there (a gap in its line). At most
 * QKV_MAX_METRICS distinct metric keys; the keys must outlive the curves (they are
 * the tasks' static strings). qkv_curves_write_png returns 0 or -1 with
 * qkv_last_error() naming the path.
 */
#ifndef QKV_CURVES_H
#define QKV_CURVES_H

#include "train/task.h"

typedef struct qkv_curves {
    int n_loss, cap_loss;
    double *loss_step, *loss;
    int n_eval, cap_eval;
    double *eval_step;
    int n_keys;
    const char *key[QKV_MAX_METRICS];
    double *metric[QKV_MAX_METRICS]; /* metric[k][e]: key k at evaluation e */
} qkv_curves;

void qkv_curves_add_loss(qkv_curves *c, double step, double loss);
void qkv_curves_add_metrics(qkv_curves *c, double step, const qkv_metrics *m);
/* title: e.g. the task name, shown above both panels' own titles. */
int qkv_curves_write_png(const qkv_curves *c, const char *path, const char *title);
void qkv_curves_free(qkv_curves *c);

#endif
