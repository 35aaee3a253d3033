/* explain.h — `qkv explain attention`'s walk-through (train/experiments/explain.c):
 * one small attention computation printed step by step, forward and backward,
 * every gradient checked against the tape's backward, the fused op's backward and
 * finite differences. The command line (cli/cmd_explain.c) only parses the
 * flags and prints the usage.
 */
#ifndef QKV_EXPERIMENTS_EXPLAIN_H
#define QKV_EXPERIMENTS_EXPLAIN_H

#include "layers/positions.h"

enum { QKV_EXPLAIN_MASK_NONE, QKV_EXPLAIN_MASK_CAUSAL, QKV_EXPLAIN_MASK_PADDING };
extern const char *const qkv_explain_mask_names[]; /* in enum order, NULL-terminated */

/* The position schemes the walk-through explains: the rows of layers/positions.h's
 * table without a trained table (none, sinusoidal, rope, alibi), in table order.
 * names[0..n) (NULL at names[n]) and, if not NULL, kinds[0..n); names needs
 * QKV_POS_COUNT + 1 entries. Returns n. */
int qkv_explain_schemes(const char **names, qkv_pos_kind *kinds);

/* Prints the walk for a mask (QKV_EXPLAIN_MASK_*) and one of those schemes (a
 * programmer error otherwise); 0 when every check agrees within the tolerance,
 * 1 otherwise (also when a signal cut the fused op short: core/cancel.h). */
int qkv_explain_attention(int mask, qkv_pos_kind pos);

#endif
