/* task.h — what the trainer trains: a task, with the metrics it reports and the
 * key/value description of its config that checkpoints and summaries carry.
 *
 * A task is a small vtable: it owns a model (its parameter list), builds the loss
 * of step s on a tape, evaluates held-out metrics, and describes its config as
 * key/value pairs, enough to rebuild the model (train/tasks/ holds qkv's own
 * tasks; a program can define its own and prepare a session of it, session.h).
 */
#ifndef QKV_TASK_H
#define QKV_TASK_H

#include <stdio.h>

#include "core/ops/params.h"
#include "core/ops/tape.h"

#define QKV_MAX_METRICS 8
#define QKV_MAX_CONFIG 40

typedef struct qkv_metrics {
    int n;
    const char *key[QKV_MAX_METRICS];
    double value[QKV_MAX_METRICS];
} qkv_metrics;

void qkv_metrics_set(qkv_metrics *m, const char *key, double value);
/* Index of the first largest of row[0..n): a prediction from logits. */
int qkv_argmax(const float *row, int n);
/* NULL if absent. */
const double *qkv_metrics_get(const qkv_metrics *m, const char *key);

/* Config as strings, in a fixed order (checkpoint metadata, --json). A value
 * holds any path the system can open (PATH_MAX bytes with the NUL): --data
 * directories are stored whole so that eval can find them again. */
#define QKV_CONFIG_VALUE_LEN 4096
typedef struct qkv_config_kv {
    int n;
    char key[QKV_MAX_CONFIG][32];
    char value[QKV_MAX_CONFIG][QKV_CONFIG_VALUE_LEN];
} qkv_config_kv;

void qkv_config_add(qkv_config_kv *c, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
const char *qkv_config_get(const qkv_config_kv *c, const char *key);
/* The integer value of key in lo..hi: 0, or -1 with qkv_last_error() naming the
 * key, its text and the range (a checkpoint's config is input). */
int qkv_config_get_int(const qkv_config_kv *c, const char *key, long long lo, long long hi, long long *out);

typedef struct qkv_task {
    const char *name;                 /* "reverse" */
    void *self;
    qkv_params *params;
    /* The scalar loss of training step `step` on the tape's micro-batch (forward
     * only; the trainer runs backward): the mean over the rows [first, first + n)
     * that qkv_tape_batch_slice gives of the step's `batch` examples. Several calls
     * run at once, one per worker thread and tape (train/step.h): loss() reads the
     * task and what prepare() made, and writes only its tape (and diverged).
     * NULL with qkv_last_error() stops the run (qkv_train returns -1 with that error). */
    qkv_tensor *(*loss)(void *self, qkv_tape *tape, long step);
    /* Held-out metrics; runs with gradients off and training mode off. */
    void (*evaluate)(void *self, qkv_tape *tape, qkv_metrics *metrics);
    /* Model and task config, enough to rebuild the model (checkpoint metadata). */
    void (*describe)(void *self, qkv_config_kv *config);
    /* The examples of one training step (0: the task does not say; its loss is
     * then one micro-batch, the whole batch). */
    int batch;
    /* Optional: makes step `step`'s whole batch (its data, positions, targets) in
     * the task, before the step's loss() calls, on one thread. */
    void (*prepare)(void *self, long step);
    /* Optional: the weight of rows [first, first + n) of the prepared batch, the
     * number of terms their mean loss is over (tokens not ignored); NULL: n. A
     * micro-batch's loss counts w / W of the batch's (train/step.h). */
    double (*weight)(void *self, int first, int n);
    /* The micro-batch size the trainer's default aims at (0: 8; train/step.h). */
    int micro_batch;
    /* Tokens one example holds, when throughput is best counted in tokens (the
     * text task: its context); 0: progress lines count examples per second. */
    int tokens_per_example;
    /* Optional: after each evaluation during training (not with --quiet, rank 0
     * only), a few lines for the user: the text task's sample. Gradients and
     * training mode are off. */
    void (*report)(void *self, qkv_tape *tape, FILE *out);
    /* For the memory budget (train/memory.h): the most examples one evaluation
     * chunk holds (0: batch), and the chunks an evaluation runs at once on the
     * worker threads (qkv_parallel_chunks, train/step.h: the chunk count; 0: the
     * chunks run one after another on the trainer's tape). */
    int eval_chunk, eval_chunks;
    /* loss() sets it to 1 when it returned NULL because a value went NaN/Inf (a
     * diverged run): the trainer then stops as on a NaN loss (exit status 3). */
    int diverged;
    /* train/memory.c's measurement, kept so that the command's check before its
     * banner and the trainer's own do not both pay for it (0 examples: none yet). */
    struct { int examples; size_t peak, node_bytes; } memory_probe;
} qkv_task;

#endif
