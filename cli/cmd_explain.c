/* cmd_explain.c — `qkv explain attention [--mask none|causal|padding] [--pos
 * none|sinusoidal|rope|alibi]`: the spec of the explain command and of its one
 * topic; the walk itself is train/experiments/explain.c. The --pos names are the
 * schemes that qkv_explain_schemes takes from layers/positions.h's table.
 */
#include <stdio.h>
#include <string.h>

#include "core/kernels/parallel.h"
#include "cli/args.h"
#include "cli/commands.h"
#include "train/experiments/explain.h"
#include "train/settings.h"

typedef struct attention_options {
    int mask, pos, threads;
} attention_options;

/* The --pos names, filled from the table before the flags are read. */
static const char *pos_names[QKV_POS_COUNT + 1];

#define T attention_options
static const qkv_field attention_fields[] = {
    QKV_CHOICE_FIELD("--mask", NULL, T, mask, qkv_explain_mask_names, QKV_EXPLAIN_MASK_NONE,
                     "none: the worked example; causal: 3 queries at positions 0..2; padding: key 2 is padding"),
    QKV_CHOICE_FIELD("--pos", NULL, T, pos, pos_names, 0,
                     "sinusoidal: x + P[t]; rope: d = 2, rotated q and k; alibi: -slope * distance on the scores"),
    QKV_SETTING_FIELD(QKV_FIELD_INT, QKV_SETTING_THREADS, T, threads, 0),
};
#undef T

static int explain_attention(int argc, char **argv);
static const qkv_command_spec attention = {
    "attention", "", 0,
    "scores, scaling, softmax, output, then the backward pass, each gradient checked",
    attention_fields, sizeof attention_fields / sizeof *attention_fields, NULL, NULL, explain_attention};

static int explain_attention(int argc, char **argv) {
    qkv_pos_kind kinds[QKV_POS_COUNT];
    qkv_explain_schemes(pos_names, kinds);
    attention_options o;
    qkv_fields_defaults(attention_fields, attention.n_fields, &o);
    int parsed = qkv_command_parse(&attention, "explain attention", argc, argv, &o);
    if (parsed != 0) return parsed > 0 ? 0 : 2;
    qkv_set_threads(o.threads);
    return qkv_explain_attention(o.mask, kinds[o.pos]);
}

static const qkv_command_spec *const topics[] = {&attention, NULL};

const qkv_command_spec qkv_command_explain = {
    "explain", "TOPIC", 1, "a computation step by step, forward and backward:", NULL, 0, topics, "topic",
    qkv_cmd_explain};

int qkv_cmd_explain(int argc, char **argv) { return qkv_command_dispatch(&qkv_command_explain, argc, argv); }
