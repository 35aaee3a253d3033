/* detect.h — object detection as a trainer task: the model of detect_model.h
 * trained with the Hungarian set loss on a detection set (data/detect.h).
 *
 * Training: loss of step s = qkv_set_loss_layers over every decoder layer
 * (DETR's weights) on batch s: image i of the batch is training image
 * rng_at(seed', s*B + i) mod n_train, flipped left-right (cx -> 1 - cx) when bit 0
 * of rng_at(seed'', s*B + i) is set and flip is on: a pure function of (seed, s).
 *
 * Data (the registry's create, train/tasks/registry.h):
 *   no --data      the synthetic set, generated in memory (data/detect.h):
 *                  --train images of seed --seed, --test images of another seed;
 *                  bitwise the pixels `qkv data detect` writes to PNG and the
 *                  loaders read back.
 *   --data DIR     DIR/train and DIR/test, each with its annotations.txt, when
 *                  DIR/train/annotations.txt exists (--train N keeps the first N
 *                  training images; the whole test directory is the test set);
 *                  otherwise DIR/annotations.txt, whose last --test images are the
 *                  test set and the others (or the first --train of them) train.
 * Images must be square and all of one size, which sets the model's. `qkv eval`
 * reloads the test set the same way from the checkpoint's config: regenerated in
 * memory (bitwise what the loader read: PNG round trips are exact) or reread
 * from the directory.
 */
#ifndef QKV_TASKS_DETECT_H
#define QKV_TASKS_DETECT_H

#include "data/identity.h"
#include "train/tasks/detect_model.h"

typedef struct qkv_detect_task_config {
    qkv_detect_model_config model;
    int batch, flip;
    float eos_coef;                /* set loss: weight of "no object" rows (DETR: 0.1) */
    unsigned long long seed;
    /* Where the data came from, for the checkpoint config (enough to reload the
     * test set: qkv eval): NULL, generated, or a directory (absolute once the
     * task loaded it). n_train, n_test, min/max_objects and model.image_size
     * are the set's, once loaded. */
    const char *data;
    qkv_data_identity data_identity;   /* the directory's, once read (data/identity.h) */
    int n_train, n_test, min_objects, max_objects;
    qkv_detect_config generate;    /* --size, --min-objects, --max-objects of a generated set */
    int classes;                   /* QKV_DETECT_CLASSES, written in the description */
} qkv_detect_task_config;

typedef struct qkv_detect_task {
    qkv_detect_task_config config;
    qkv_detect_model model;
    qkv_detect_set train, test;
    char data_path[QKV_CONFIG_VALUE_LEN];   /* config.data points here once loaded */
    double data_seconds;                    /* generating or loading the sets */
    qkv_task task;
} qkv_detect_task;

/* The field table's defaults (and the members it does not hold). */
void qkv_detect_task_default_config(qkv_detect_task_config *config);

/* Takes ownership of train and test (zeroed in the caller); train may be empty
 * (evaluation only). Their image size must be the model's (a programmer error
 * otherwise: commands check it first). */
void qkv_detect_task_init(qkv_detect_task *t, const qkv_detect_task_config *config, qkv_detect_set *train,
                          qkv_detect_set *test);
void qkv_detect_task_free(qkv_detect_task *t);

#endif
