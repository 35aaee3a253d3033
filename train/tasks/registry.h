/* registry.h — every trainable task, in one list that `qkv train`, `qkv eval`,
 * their --help and their error messages all read.
 *
 * A task kind is one file in train/tasks/ that defines one qkv_task_kind (the
 * sequence tasks define three, one per name) and one X(name) line in
 * QKV_TASK_KINDS below. The kind holds:
 *   name, summary     `qkv train NAME`, and a line of `qkv train --help`;
 *   the field table   its config (fields.h): flags, --help, defaults, the
 *                     checkpoint's description and its parsing back;
 *   defaults          fills a zeroed config: the table's defaults
 *                     (qkv_fields_defaults) and the members outside it;
 *   trainer           the trainer's defaults for it (steps, lr, optimizer, ...);
 *   check             derived settings and checks that span fields, after the
 *                     flags (trainer set: it may change steps, as --epochs does)
 *                     or after a checkpoint's description (trainer NULL);
 *   create, destroy   data and model: the qkv_task the trainer runs (for_eval:
 *                     only what evaluation needs, the held-out data);
 *   banner            the line printed before training;
 *   run               optional: runs before the usual training run; 0 (done)
 *                     or -1 (error) replaces it, 1 goes on with it (maxreg
 *                     --compare trains four models and returns 0);
 *   data_bytes        optional: the data set's memory, from the config alone,
 *                     judged before create makes it (qkv_task_create).
 * A task's describe callback writes "task" = its name, then its fields
 * (qkv_task_kind_describe), so that any checkpoint can be reopened by name.
 */
#ifndef QKV_TASKS_REGISTRY_H
#define QKV_TASKS_REGISTRY_H

#include "train/checkpoint.h"
#include "train/fields.h"
#include "train/trainer.h"

typedef struct qkv_task_kind {
    const char *name;
    const char *summary;
    size_t config_size;
    void (*defaults)(void *config);
    const qkv_field *fields;
    int n_fields;
    qkv_trainer_config trainer;
    int (*check)(void *config, qkv_trainer_config *trainer);       /* 0, or -1 with qkv_last_error() */
    qkv_task *(*create)(const void *config, int for_eval);        /* NULL with qkv_last_error() */
    void (*destroy)(qkv_task *task);
    void (*banner)(const qkv_task *task, const qkv_trainer_config *trainer, int threads);
    int (*run)(const void *config, const qkv_trainer_config *trainer);   /* NULL: train once */
    /* The memory the data set of config takes at its peak while create makes or
     * reads it (for_eval: evaluation's part), judged before it is (train/memory.h);
     * what receives what it is ("2000 test clouds of 256 points"). NULL or 0: the
     * set is made batch by batch (the step's measurement holds it) or read from
     * a directory (the run's estimate after reading holds it). */
    size_t (*data_bytes)(const void *config, int for_eval, char *what, size_t what_size);
} qkv_task_kind;

/* The list: one line per kind, in the order --help and messages name them. */
#define QKV_TASK_KINDS(X) X(reverse) X(copy) X(sort) X(points) X(maxreg) X(spirals) X(detect) X(text)

#define QKV_DECLARE_TASK_KIND(name) extern const qkv_task_kind qkv_task_kind_##name;
QKV_TASK_KINDS(QKV_DECLARE_TASK_KIND)
#undef QKV_DECLARE_TASK_KIND

int qkv_task_kind_count(void);
const qkv_task_kind *qkv_task_kind_at(int i);
/* NULL if no kind has this name. */
const qkv_task_kind *qkv_task_kind_find(const char *name);
/* "reverse, copy, ..." for messages. */
const char *qkv_task_kind_names(void);

/* kind's task of config, its data set judged first: the kind's data_bytes
 * estimate plus the memory in use must fit max_memory (NULL: the machine's;
 * train/memory.h), or nothing is made. The data is made in pieces a signal
 * stops between (data/pieces.h, train/interrupt.h). The task, or NULL with one
 * line in qkv_last_error(): the budget's refusal; "stopped by SIGINT while
 * making the data set ..." (qkv_interrupt_signal() says which signal); an
 * allocation failure, with the estimate; or the kind's own error. */
qkv_task *qkv_task_create(const qkv_task_kind *kind, const void *config, int for_eval, size_t max_memory);

/* A config of kind with its defaults. Free with free(). */
void *qkv_task_config_new(const qkv_task_kind *kind);
/* "task" = the kind's name unless a field has key "task", then every field. */
void qkv_task_kind_describe(const qkv_task_kind *kind, const void *config, qkv_config_kv *out);
/* The field of seed (key "seed"), or NULL: the trainer's dropout stream takes it. */
unsigned long long qkv_task_config_seed(const qkv_task_kind *kind, const void *config);

/* A checkpoint opened: the file (its header: config, settings), its kind, its
 * config (TEXT fields point into file.config, or data_path) and, once
 * restored, its step. */
typedef struct qkv_task_checkpoint {
    qkv_checkpoint file;
    const qkv_task_kind *kind;
    void *config;
    long step;
    char *data_path;   /* the stored data set found elsewhere (qkv_task_checkpoint_create), or NULL */
} qkv_task_checkpoint;

/* Opens path once (its header, not its tensors), finds its kind, parses the
 * config back and runs the kind's check, the same one flags go through: a config
 * the layers would stop on is refused here, before any model is built. data, if
 * not NULL, replaces the config's "data" field (a set to evaluate on instead) and
 * resets its QKV_FIELD_OF_DATA fields. 0, or -1 with a one-line qkv_last_error()
 * naming path (and nothing to close). Close with qkv_task_checkpoint_close. */
int qkv_task_checkpoint_open(const char *path, const char *data, qkv_task_checkpoint *out);
/* What qkv_task_checkpoint_open does with the description (path: for messages):
 * the kind, and the config parsed, its data replaced, checked. 0 and *config (free
 * with free(); TEXT fields point into description), or -1 with the error. */
int qkv_task_config_parse(const char *path, const qkv_config_kv *description, const char *data,
                          const qkv_task_kind **kind, void **config);
/* Creates the task (for_eval) and restores the checkpoint's parameters into it
 * (and sets step): the task, or NULL with a one-line qkv_last_error() naming path.
 * A data set the config names and knows the identity of (the data_bytes and
 * data_hash keys, data/identity.h) is found first with qkv_data_find: the stored
 * path as given if it holds that set, else the path relative to the checkpoint's
 * directory or one of its parents that does (the config's data then names it);
 * other data there is refused ("the data differs"). A set given with --data
 * instead (the open's data), or a checkpoint written before identities (no such
 * keys), is read from its path as given, unchecked. */
qkv_task *qkv_task_checkpoint_create(qkv_task_checkpoint *ckpt, int for_eval);
/* That the checkpoint is one of kind (NULL: one of the sequence tasks, which share
 * a model): 0, or -1 with "PATH: a K checkpoint, not one of qkv train WHAT" (kind
 * given) or "PATH: a K checkpoint, not one of WHAT". */
int qkv_task_checkpoint_of(const qkv_task_checkpoint *ckpt, const qkv_task_kind *kind, const char *what);
void qkv_task_checkpoint_close(qkv_task_checkpoint *ckpt);

#endif
