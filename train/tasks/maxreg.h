/* maxreg.h — the Set Transformer paper's toy as a trainer task: predict the
 * maximum of 1..10 reals in [0, 100) (data/maxreg.h) with a mean-absolute-error
 * loss. Metric: test_mae (lower is better). `qkv train maxreg --compare` trains
 * mean, sum and max pooling and SAB+PMA over several seeds and prints them beside
 * the paper's table with 95% intervals. The recipe (the kind's trainer defaults):
 * Adam 1e-3, cosine decay to a tenth (docs/sets.md says why).
 * Every step is a pure function of (seed, step), so --resume is bitwise exact.
 */
#ifndef QKV_TASKS_MAXREG_H
#define QKV_TASKS_MAXREG_H

#include "data/maxreg.h"
#include "layers/set_models.h"
#include "train/trainer.h"

typedef struct qkv_maxreg_task_config {
    qkv_set_model_config model;     /* d_in 1, n_outputs 1 */
    qkv_maxreg_config data;
    int batch, test_size;
    unsigned long long seed;
    int compare;                    /* --compare: train the four baselines instead */
    int seeds, jobs;                /* --compare: seeds per model; models trained at once */
} qkv_maxreg_task_config;

typedef struct qkv_maxreg_task {
    qkv_maxreg_task_config config;
    qkv_params params;
    qkv_set_model model;
    qkv_task task;
} qkv_maxreg_task;

void qkv_maxreg_task_default_config(qkv_maxreg_task_config *config);
void qkv_maxreg_task_init(qkv_maxreg_task *t, const qkv_maxreg_task_config *config);
void qkv_maxreg_task_free(qkv_maxreg_task *t);

struct qkv_task_kind; /* train/tasks/registry.h */

/* --compare (maxreg_compare.c): trains mean, sum and max pooling and SAB+PMA with
 * base's seeds and trainer's recipe, each run's task made and freed by kind (the
 * maxreg kind of train/tasks/registry.h, passed by maxreg.c so that the two files
 * do not call each other), prints the table over seeds and its verdict on the
 * paper's ordering, and writes trainer.json_path's record. 0, or -1 with
 * qkv_last_error(). */
int qkv_maxreg_compare(const struct qkv_task_kind *kind, const qkv_maxreg_task_config *base,
                       qkv_trainer_config trainer);
/* The table's first line: the recipe (steps, batch, optimizer, lr, schedule),
 * the held-out sets and the seeds, as --compare prints it. */
void qkv_maxreg_compare_recipe(const qkv_maxreg_task_config *c, const qkv_trainer_config *t, char *out, size_t len);

#endif
