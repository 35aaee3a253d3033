/* train_result.h — what a training run ends with: qkv_train (session.h) fills it,
 * the --json summary (trainer_outputs.h) writes it. Its own header so that the
 * outputs depend on this and on task.h only, never on the trainer that uses them:
 * trainer.c -> trainer_outputs.h -> train_result.h <- trainer.h, no cycle.
 */
#ifndef QKV_TRAIN_RESULT_H
#define QKV_TRAIN_RESULT_H

#include "train/task.h"

typedef struct qkv_train_result {
    long steps_done;
    float final_loss;
    qkv_metrics metrics;
    double seconds, steps_per_second;
    int stopped_early;
    int interrupted; /* the signal that ended the run early (train/interrupt.h), or 0 */
    int nonfinite; /* 1: stopped on a NaN/Inf loss, gradient or state, or a --detect-nan anomaly (the command line's exit status 3) */
    long checkpoint_bytes; /* the size of the last checkpoint --save wrote, or 0 */
} qkv_train_result;

#endif
