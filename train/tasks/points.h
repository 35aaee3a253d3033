/* points.h — point-cloud classification as a trainer task.
 *
 * Synthetic shapes (data/points.h) made on the fly (by default rotated about the
 * up axis, as ModelNet is augmented; --rotate so3 for full 3-D rotations, a much
 * harder task), batch of step s = clouds [s*batch, (s+1)*batch) of the training
 * stream; or a ModelNet-style directory of OFF meshes (data/off.h), sampled once
 * at load, with step s's batch drawn from the training clouds by a counter-based
 * RNG. The test set is held out (another seed, or the directory's test split).
 * Metric: test_acc. The model is a set model (layers/set_models.h); every step is
 * a pure function of (seed, step), so --resume is bitwise exact.
 */
#ifndef QKV_TASKS_POINTS_H
#define QKV_TASKS_POINTS_H

#include "data/identity.h"
#include "data/points.h"
#include "layers/set_models.h"
#include "train/trainer.h"

typedef struct qkv_points_task_config {
    qkv_set_model_config model;     /* d_in 3, n_outputs = classes */
    qkv_points_config data;         /* synthetic shapes */
    const char *data_dir;           /* NULL: synthetic; else a ModelNet layout */
    qkv_data_identity data_identity; /* the directory's, once read (data/identity.h) */
    int skip_bad;
    int batch, test_size;
    unsigned long long seed;
} qkv_points_task_config;

typedef struct qkv_points_task {
    qkv_points_task_config config;
    qkv_params params;
    qkv_set_model model;
    qkv_point_set train, test;      /* test always; train only for a directory */
    qkv_task task;
} qkv_points_task;

void qkv_points_task_default_config(qkv_points_task_config *config);
/* Loads the data and builds the model. Returns 0, or -1 with a one-line
 * qkv_last_error() (a bad directory or mesh, memory the test clouds cannot have),
 * or -1 when a signal stopped the test clouds' making (qkv_interrupt_poll, asked
 * between their pieces: qkv_interrupt_signal() says which); skipped reports
 * --skip-bad's count. */
int qkv_points_task_init(qkv_points_task *t, const qkv_points_task_config *config, int *skipped,
                         char *first_skipped, size_t first_skipped_size);
void qkv_points_task_free(qkv_points_task *t);

#endif
