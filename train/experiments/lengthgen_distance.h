/* lengthgen_distance.h — the attention-distance analysis of a lengthgen run
 * (lengthgen_distance.c), above the runs' state (lengthgen_runs.h; the line of
 * the lengthgen files is described there). */
#ifndef QKV_LENGTHGEN_DISTANCE_H
#define QKV_LENGTHGEN_DISTANCE_H

#include "train/experiments/lengthgen_runs.h"

/* Measures a trained model's attention distances into run's record; a signal ends it at
 * the next input (the caller drops the record: lengthgen.c). */
void qkv_lg_measure_distance(qkv_lengthgen *g, qkv_seq_model *model, size_t run);
/* Per task and scheme, pooled over seeds: mean, median, 90th percentile and the
 * share farther than 2L (what no training stream had). */
void qkv_lg_print_distance(const qkv_lengthgen *g);
/* The "attention_distance" member of a complete scheme's JSON entry. */
void qkv_lg_json_distance(const qkv_lengthgen *g, int task, int scheme, qkv_json_out *out);
int qkv_lg_write_distance_plot(const qkv_lengthgen *g);
/* The lengths the distances are measured at: L and K. */
int qkv_lg_distance_length(const qkv_lengthgen *g, int which);

#endif
