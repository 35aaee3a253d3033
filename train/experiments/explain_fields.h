/* explain_fields.h — the flags of `qkv explain attention` as one field table
 * (train/fields.h) over qkv_explain_options, read by the command line
 * (cli/cmd_explain.c, from argv) and by the page's C API (web/api_attention.c,
 * from a JSON request whose keys are the flags without dashes, '-' as '_'), so a
 * bad value gets the same one-line refusal from both; and the step's input built
 * from the options the same way for both.
 */
#ifndef QKV_EXPLAIN_FIELDS_H
#define QKV_EXPLAIN_FIELDS_H

#include "train/experiments/explain.h"
#include "train/fields.h"

typedef struct qkv_explain_options {
    int mask, pos, threads, heads, key_length, loss;
    const char *texts[QKV_EXPLAIN_N_MATRICES];   /* --q --k --v --keep --target, in qkv_explain_matrix_names order */
    const char *file, *check, *slopes;
    float scale, rope_base, prope, fire_c, fire_l;
    int t5_buckets, t5_max_distance, fire_width;
    unsigned long long seed;
} qkv_explain_options;

/* The rows: --q --k --v --file --heads --mask --key-length --keep --pos --scale,
 * the schemes' parameters (explain.h's QKV_EXPLAIN_POS_PARAMS), --loss --target
 * --seed --check --threads. */
#define QKV_EXPLAIN_N_FIELDS 23
extern const qkv_field qkv_explain_fields[QKV_EXPLAIN_N_FIELDS];

/* The --pos names (NULL-terminated) and their kinds: the worked example's schemes
 * and those the step takes, in layers/positions.h's table order (the --pos row's
 * choices; filled on first use, by qkv_explain_fields_ready). */
extern const char *qkv_explain_pos_names[QKV_POS_COUNT + 1];
extern qkv_pos_kind qkv_explain_pos_kinds[QKV_POS_COUNT];
/* Fills the --pos names; call before reading the fields. */
void qkv_explain_fields_ready(void);

/* Sets in's scalars from o (heads, mask, pos, scale, the scheme's parameters,
 * loss, seed) after qkv_explain_input_init; the matrices are the caller's. */
void qkv_explain_options_apply(const qkv_explain_options *o, qkv_explain_input *in);
/* After the matrices: --key-length's default (all keys but the last) and
 * --slopes (one positive slope per head), then qkv_explain_check_input.
 * 0, or -1 with a one-line qkv_last_error() ("--slopes: 1 slopes for 2 heads"). */
int qkv_explain_options_finish(const qkv_explain_options *o, qkv_explain_input *in);

#endif
