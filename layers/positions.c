/* positions.c — see positions.h: names and lists from the table, the rules
 * (qkv_pos_check), init, add, rope and bias through the rows, samples, T5's
 * bucket. Each scheme's functions and the table are in positions_schemes.c. */
#include "layers/positions.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/mathfn.h"
#include "core/error.h"
#include "core/ops/ops.h"

#define N_KINDS ((int)QKV_POS_COUNT)

int qkv_pos_randomizable(qkv_pos_kind kind) {
    return (int)kind >= 0 && (int)kind < N_KINDS && qkv_pos_schemes[kind].randomizable;
}

int qkv_pos_keep_randomizable(const qkv_pos_scheme *scheme) { return scheme->randomizable; }
int qkv_pos_keep_untrained(const qkv_pos_scheme *scheme) { return scheme->table == QKV_POS_TABLE_NONE; }

char *qkv_pos_scheme_list(char *out, size_t size, const char *sep, const char *suffix,
                          int (*keep)(const qkv_pos_scheme *scheme)) {
    size_t at = 0;
    int n = 0;
    if (size) out[0] = '\0';
    for (int i = 0; i < N_KINDS; i++) {
        if (keep && !keep(&qkv_pos_schemes[i])) continue;
        int w = snprintf(out + at, at < size ? size - at : 0, "%s%s%s", n++ ? sep : "", qkv_pos_schemes[i].name,
                         suffix ? suffix : "");
        if (w > 0) at += (size_t)w;
        if (at >= size) break;
    }
    return out;
}

int qkv_pos_kind_parse(const char *name) { return qkv_name_lookup(name, qkv_pos_kind_names, N_KINDS); }

const char *qkv_pos_kind_name(qkv_pos_kind kind) {
    QKV_CHECK((int)kind >= 0 && (int)kind < N_KINDS, "positions: unknown kind %d", (int)kind);
    return qkv_pos_kind_names[kind];
}

int qkv_pos_rope_dims(int d_head, float fraction) {
    if (fraction <= 0.0f || fraction >= 1.0f) return d_head;
    return (int)floor((double)fraction * d_head) / 2 * 2;
}

int qkv_pos_check(qkv_pos_kind kind, int d_model, int max_len, int n_heads, const qkv_pos_opts *opts) {
    qkv_pos_opts none = {0};
    if (!opts) opts = &none;
    if ((int)kind < 0 || (int)kind >= N_KINDS) return qkv_set_error("--pos %d: no such position scheme", (int)kind), -1;
    if (opts->randomize && !qkv_pos_randomizable(kind)) {
        char names[96];
        return qkv_set_error("--pos-randomize applies to --pos %s, not %s",
                             qkv_pos_scheme_list(names, sizeof names, ", ", "", qkv_pos_keep_randomizable),
                             qkv_pos_kind_name(kind)), -1;
    }
    if (opts->randomize < 0) return qkv_set_error("--pos-randomize %d: expected M >= 1, or 0 for off", opts->randomize), -1;
    const qkv_pos_scheme *scheme = &qkv_pos_schemes[kind];
    return scheme->check ? scheme->check(d_model, max_len, n_heads, opts) : 0;
}

void qkv_positions_init(qkv_positions *pos, qkv_params *params, const char *name, qkv_pos_kind kind,
                        int d_model, int max_len, int n_heads, qkv_rng *rng) {
    qkv_positions_init_opts(pos, params, name, kind, d_model, max_len, n_heads, NULL, rng);
}

void qkv_positions_init_opts(qkv_positions *pos, qkv_params *params, const char *name, qkv_pos_kind kind,
                             int d_model, int max_len, int n_heads, const qkv_pos_opts *opts, qkv_rng *rng) {
    qkv_pos_opts none = {0};
    if (!opts) opts = &none;
    if (qkv_pos_check(kind, d_model, max_len, n_heads, opts) != 0) qkv_fatal("positions %s: %s", name, qkv_last_error());
    memset(pos, 0, sizeof *pos);
    pos->kind = kind;
    pos->d_model = d_model;
    pos->max_len = max_len;
    pos->n_heads = n_heads;
    pos->randomize = opts->randomize;
    if (qkv_pos_schemes[kind].init) qkv_pos_schemes[kind].init(pos, params, name, opts, rng);
}

int qkv_t5_bucket(int rel, int bidirectional, int buckets, int max_distance) {
    int n = buckets, bucket = 0, d;
    if (bidirectional) {
        n /= 2;
        if (rel > 0) bucket = n;
        d = rel < 0 ? -rel : rel;
    } else {
        d = rel < 0 ? -rel : 0;
    }
    int exact = n / 2;
    if (d < exact) return bucket + d;
    /* float, in the reference's order: log(d / exact) / log(max / exact) * (n - exact) */
    float scaled = qkv_math_logf((float)d / (float)exact) / qkv_math_logf((float)max_distance / (float)exact) * (float)(n - exact);
    int large = exact + (int)scaled;
    return bucket + (large < n - 1 ? large : n - 1);
}

static int compare_int32(const void *a, const void *b) {
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

void qkv_positions_draw(int32_t *out, int n, int m, qkv_rng *rng) {
    QKV_CHECK(n >= 0 && n <= m, "positions_draw: %d distinct values from [0, %d)", n, m);
    /* Floyd: for j = m-n .. m-1 take t in [0, j]; t if new, else j (never taken yet). */
    int k = 0;
    for (int j = m - n; j < m; j++) {
        int32_t t = (int32_t)qkv_rng_below(rng, (uint32_t)j + 1);
        for (int i = 0; i < k; i++)
            if (out[i] == t) { t = j; break; }
        out[k++] = t;
    }
    qsort(out, (size_t)n, sizeof *out, compare_int32);
}

void qkv_positions_set_samples(qkv_positions *pos, const int32_t *samples, int rows, int n) {
    QKV_CHECK(!samples || pos->randomize > 0, "positions: a sample for %s positions without randomize",
              qkv_pos_kind_name(pos->kind));
    QKV_CHECK(rows >= 0 && n >= 0, "positions: samples [%d,%d]", rows, n);
    size_t count = (size_t)(rows ? rows : 1) * (size_t)n;
    for (size_t i = 0; samples && i < count; i++)
        QKV_CHECK(samples[i] >= 0 && samples[i] < pos->randomize, "positions: sample[%zu] = %d outside [0, %d)", i,
                  samples[i], pos->randomize);
    int rotates = qkv_pos_schemes[pos->kind].rotate != NULL;
    pos->sample = samples;
    pos->sample_len = samples ? n : 0;
    pos->sample_rows = samples ? rows : 0;
    pos->rope.positions = rotates ? samples : NULL;
    pos->rope.positions_stride = rotates && samples && rows ? n : 0;
}

void qkv_positions_set_sample(qkv_positions *pos, const int32_t *sample, int n) {
    qkv_positions_set_samples(pos, sample, 0, n);
}


qkv_tensor *qkv_positions_add(qkv_tape *tape, const qkv_positions *pos, qkv_tensor *x, int offset) {
    char shape[QKV_SHAPE_STR_LEN];
    QKV_CHECK(!pos->sample || (offset >= 0 && offset + x->shape[1] <= pos->sample_len),
              "positions: indices %d..%d beyond the sample's %d", offset, offset + x->shape[1] - 1,
              pos->sample_len);
    QKV_CHECK(!pos->sample_rows || (x->ndim == 3 && x->shape[0] == pos->sample_rows),
              "positions: input %s for samples of %d rows", qkv_shape_str(x, shape, sizeof shape),
              pos->sample_rows);
    const qkv_pos_scheme *scheme = &qkv_pos_schemes[pos->kind];
    if (!scheme->add) return x;
    QKV_CHECK(x->ndim == 3 && x->shape[2] == pos->d_model, "positions: input %s must be [B,T,%d]",
              qkv_shape_str(x, shape, sizeof shape), pos->d_model);
    return scheme->add(tape, pos, x, offset);
}

const qkv_rope_opts *qkv_positions_rope(const qkv_positions *pos) {
    const qkv_pos_scheme *scheme = &qkv_pos_schemes[pos->kind];
    return scheme->rotate ? scheme->rotate(pos) : NULL;
}

qkv_tensor *qkv_positions_bias(qkv_tape *tape, const qkv_positions *pos, int tq, int tk, int symmetric) {
    const qkv_pos_scheme *scheme = &qkv_pos_schemes[pos->kind];
    return scheme->bias ? scheme->bias(tape, pos, tq, tk, symmetric) : NULL;
}
