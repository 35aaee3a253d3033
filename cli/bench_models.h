/* bench_models.h — the attention, train and long sections of `qkv bench`
 * (bench_models.c), above the table they append to (bench_table.h). */
#ifndef QKV_BENCH_MODELS_H
#define QKV_BENCH_MODELS_H

#include "cli/bench_table.h"

void qkv_bench_attention(qkv_bench_table *t);
void qkv_bench_train(qkv_bench_table *t);
void qkv_bench_long_attention(qkv_bench_table *t);

#endif
