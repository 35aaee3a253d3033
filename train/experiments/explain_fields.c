/* explain_fields.c — explain_fields.h: the flag table of `qkv explain attention`
 * (moved here from the command so the page's API reads the same rows), the --pos
 * names, and the options -> the step's input.
 */
#include <stddef.h>
#include <string.h>

#include "core/error.h"
#include "train/experiments/explain_fields.h"
#include "train/settings.h"

const char *qkv_explain_pos_names[QKV_POS_COUNT + 1];
qkv_pos_kind qkv_explain_pos_kinds[QKV_POS_COUNT];

#define T qkv_explain_options
/* The schemes' parameter rows, from explain.h's QKV_EXPLAIN_POS_PARAMS. */
#define POS_PARAM_ROW(scheme, scheme2, flag, M, kind, lo, hi, def, help) POS_PARAM_##kind(flag, M, lo, hi, help),
#define POS_PARAM_INT(flag, M, lo, hi, help) QKV_INT_FIELD(flag, NULL, T, M, lo, hi, 0, help)
#define POS_PARAM_FLOAT(flag, M, lo, hi, help) QKV_FLOAT_FIELD(flag, NULL, T, M, lo, hi, 0, help)
#define POS_PARAM_LIST(flag, M, lo, hi, help) QKV_TEXT_FIELD(flag, NULL, T, M, NULL, help)
const qkv_field qkv_explain_fields[] = {
    QKV_TEXT_FIELD("--q", NULL, T, texts[0], NULL, "queries, rows split by ';': \"1,0; 0,1\" (up to 8 x 16)"),
    QKV_TEXT_FIELD("--k", NULL, T, texts[1], NULL, "keys, as many columns as --q (up to 8 rows)"),
    QKV_TEXT_FIELD("--v", NULL, T, texts[2], NULL, "values, one row per key"),
    QKV_TEXT_FIELD("--file", NULL, T, file, NULL, "a text file of lines \"q = 1,0; 0,1\" (q, k, v, keep, target)"),
    QKV_SETTING_FIELD_IN(QKV_FIELD_INT, QKV_SETTING_HEADS, T, heads, 1, 1, QKV_EXPLAIN_MAX_HEADS),
    QKV_CHOICE_FIELD("--mask", NULL, T, mask, qkv_explain_mask_names, QKV_EXPLAIN_MASK_NONE,
                     "none: the worked example; causal: 3 queries at positions 0..2; padding: key 2 is padding "
                     "(or --key-length); keep: --keep"),
    QKV_INT_FIELD("--key-length", NULL, T, key_length, 0, QKV_EXPLAIN_MAX_T, 0,
                  "padding: keys 0..N-1 are real (0: all but the last)"),
    QKV_TEXT_FIELD("--keep", NULL, T, texts[3], NULL, "keep: [Tq,Tk] of 1 (may attend) and 0"),
    QKV_CHOICE_FIELD("--pos", NULL, T, pos, qkv_explain_pos_names, 0,
                     "sinusoidal: x + P[t]; rope: rotated q and k; alibi: -slope * distance on the scores; "
                     "t5, p-rope, fire (typed steps)"),
    QKV_FLOAT_FIELD("--scale", NULL, T, scale, 0, 1e6, 0, "the scores' scale (0: 1/sqrt(head width))"),
    QKV_EXPLAIN_POS_PARAMS(POS_PARAM_ROW)
    QKV_CHOICE_FIELD("--loss", NULL, T, loss, qkv_explain_loss_names, QKV_EXPLAIN_LOSS_DOT,
                     "dot: L = sum O * C (dO = C); mse: L = 1/2 sum (O - Y)^2 (dO = O - Y)"),
    QKV_TEXT_FIELD("--target", NULL, T, texts[4], NULL, "C or Y, [Tq, dv] (default: drawn N(0,1) from --seed)"),
    QKV_SEED_FIELD(T, seed, "draws t5's table, fire's MLP and an untyped --target"),
    QKV_TEXT_FIELD("--check", NULL, T, check, NULL, "one entry against finite differences: dq:I,J, dk:I,J or dv:I,J"),
    QKV_SETTING_FIELD(QKV_FIELD_INT, QKV_SETTING_THREADS, T, threads, 0),
};
#undef T
_Static_assert(sizeof qkv_explain_fields / sizeof *qkv_explain_fields == QKV_EXPLAIN_N_FIELDS, "QKV_EXPLAIN_N_FIELDS");

void qkv_explain_fields_ready(void) {
    const char *walk[QKV_POS_COUNT + 1], *step[QKV_POS_COUNT + 1];
    int n_walk = qkv_explain_schemes(walk, NULL), n_step = qkv_explain_step_schemes(step, NULL), n = 0;
    for (int i = 0; i < QKV_POS_COUNT; i++) {
        int keep = 0;
        for (int j = 0; j < n_walk; j++) keep |= strcmp(walk[j], qkv_pos_schemes[i].name) == 0;
        for (int j = 0; j < n_step; j++) keep |= strcmp(step[j], qkv_pos_schemes[i].name) == 0;
        if (keep) qkv_explain_pos_kinds[n] = qkv_pos_schemes[i].kind, qkv_explain_pos_names[n++] = qkv_pos_schemes[i].name;
    }
    qkv_explain_pos_names[n] = NULL;
}

void qkv_explain_options_apply(const qkv_explain_options *o, qkv_explain_input *in) {
    in->heads = o->heads;
    in->mask = o->mask;
    in->pos = qkv_explain_pos_kinds[o->pos];
    in->scale = o->scale;
    in->rope_base = o->rope_base;
    in->prope = o->prope;
    in->t5_buckets = o->t5_buckets;
    in->t5_max_distance = o->t5_max_distance;
    in->fire_width = o->fire_width;
    in->fire_c = o->fire_c;
    in->fire_l = o->fire_l;
    in->loss = (qkv_explain_loss)o->loss;
    in->seed = o->seed;
}

static int parse_slopes(const char *text, qkv_explain_input *in) {
    float slopes[QKV_EXPLAIN_MAX_HEADS];
    int rows, cols;
    if (qkv_explain_parse_matrix("--slopes", text, slopes, 1, QKV_EXPLAIN_MAX_HEADS, &rows, &cols) != 0) return -1;
    if (cols != in->heads) return qkv_set_error("--slopes: %d slopes for %d heads", cols, in->heads), -1;
    for (int h = 0; h < cols; h++) {
        if (!(slopes[h] > 0)) return qkv_set_error("--slopes: %g is not a positive slope", (double)slopes[h]), -1;
        in->alibi_slopes[h] = slopes[h];
    }
    return 0;
}

int qkv_explain_options_finish(const qkv_explain_options *o, qkv_explain_input *in) {
    in->key_length = o->key_length ? o->key_length : in->tk > 1 ? in->tk - 1 : 1;
    if (o->slopes && parse_slopes(o->slopes, in) != 0) return -1;
    return qkv_explain_check_input(in);
}
