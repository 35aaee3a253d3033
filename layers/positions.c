/* positions.c — see positions.h. */
#include "layers/positions.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/ops/ops.h"

#define SCHEME_ROW(KIND, name, needs, table, randomizable) {QKV_POS_##KIND, name, needs, table, randomizable},
#define SCHEME_NAME(KIND, name, needs, table, randomizable) name,
const qkv_pos_scheme qkv_pos_schemes[QKV_POS_COUNT] = {QKV_POS_SCHEMES(SCHEME_ROW)};
const char *const qkv_pos_kind_names[] = {QKV_POS_SCHEMES(SCHEME_NAME) NULL};

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

void qkv_positions_init(qkv_positions *pos, qkv_params *params, const char *name, qkv_pos_kind kind,
                        int d_model, int max_len, int n_heads, qkv_rng *rng) {
    qkv_positions_init_opts(pos, params, name, kind, d_model, max_len, n_heads, NULL, rng);
}

/* FIRE's MLP 1 -> width -> heads (PyTorch's Linear init), c and l_scale. */
static void fire_init(qkv_positions *pos, qkv_params *params, const char *name, const qkv_pos_opts *opts,
                      qkv_rng *rng) {
    char full[QKV_NAME_MAX];
    int width = opts->fire_width ? opts->fire_width : QKV_FIRE_DEFAULT_WIDTH;
    float c = opts->fire_c ? opts->fire_c : QKV_FIRE_DEFAULT_C;
    pos->fire_l_init = opts->fire_l ? opts->fire_l : QKV_FIRE_DEFAULT_L;
    QKV_CHECK(width >= 1 && pos->n_heads >= 1 && c > 0.0f && pos->fire_l_init > 0.0f,
              "positions %s: fire needs width >= 1, heads >= 1, c > 0 and L > 0, got %d, %d, %g, %g", name, width,
              pos->n_heads, (double)c, (double)pos->fire_l_init);
    qkv_name_join(full, name, "fire.fc1");
    qkv_linear_init(&pos->fire_fc1, params, full, 1, width, 1, rng);
    qkv_name_join(full, name, "fire.fc2");
    qkv_linear_init(&pos->fire_fc2, params, full, width, pos->n_heads, 1, rng);
    qkv_name_join(full, name, "fire.c");
    pos->fire_c = qkv_params_new(params, full, 1, (int[]){1});
    pos->fire_c->data[0] = c;
    qkv_name_join(full, name, "fire.l_scale");
    pos->fire_l_scale = qkv_params_new(params, full, 1, (int[]){1});
    pos->fire_l_scale->data[0] = 1.0f;
}

void qkv_positions_init_opts(qkv_positions *pos, qkv_params *params, const char *name, qkv_pos_kind kind,
                             int d_model, int max_len, int n_heads, const qkv_pos_opts *opts, qkv_rng *rng) {
    qkv_pos_opts none = {0};
    if (!opts) opts = &none;
    memset(pos, 0, sizeof *pos);
    pos->kind = kind;
    pos->d_model = d_model;
    pos->max_len = max_len;
    pos->n_heads = n_heads;
    if (kind == QKV_POS_LEARNED) {
        char full[QKV_NAME_MAX];
        QKV_CHECK(max_len >= 1, "positions %s: a learned table needs max_len >= 1, got %d", name, max_len);
        qkv_name_join(full, name, "table");
        pos->table = qkv_params_new(params, full, 2, (int[]){max_len, d_model});
        qkv_fill_normal(pos->table->data, pos->table->size, rng, 0.0f, 0.02f);
    }
    if (kind == QKV_POS_ALIBI) {
        QKV_CHECK(n_heads >= 1 && n_heads <= 64, "positions %s: alibi supports 1..64 heads, got %d", name,
                  n_heads);
        qkv_alibi_slopes(pos->slopes, n_heads);
    }
    if (kind == QKV_POS_T5) {
        char full[QKV_NAME_MAX];
        pos->t5_buckets = opts->t5_buckets ? opts->t5_buckets : QKV_T5_DEFAULT_BUCKETS;
        pos->t5_max_distance = opts->t5_max_distance ? opts->t5_max_distance : QKV_T5_DEFAULT_MAX_DISTANCE;
        QKV_CHECK(pos->t5_buckets >= 4 && pos->t5_max_distance > pos->t5_buckets / 2 && n_heads >= 1,
                  "positions %s: t5 needs buckets >= 4 and max_distance > buckets / 2, got %d and %d", name,
                  pos->t5_buckets, pos->t5_max_distance);
        qkv_name_join(full, name, "t5.table");
        pos->t5 = qkv_params_new(params, full, 2, (int[]){pos->t5_buckets, n_heads});
        qkv_fill_normal(pos->t5->data, pos->t5->size, rng, 0.0f, 0.02f);
    }
    if (kind == QKV_POS_PROPE) {
        pos->rope.keep_fraction = opts->prope ? opts->prope : QKV_PROPE_DEFAULT;
        QKV_CHECK(pos->rope.keep_fraction > 0.0f && pos->rope.keep_fraction <= 1.0f,
                  "positions %s: p-rope's fraction %g outside (0, 1]", name, (double)pos->rope.keep_fraction);
    }
    if (kind == QKV_POS_FIRE) fire_init(pos, params, name, opts, rng);
    if (opts->randomize) {
        char names[96];
        QKV_CHECK(qkv_pos_randomizable(kind), "positions %s: randomize applies to %s, not %s", name,
                  qkv_pos_scheme_list(names, sizeof names, ", ", "", qkv_pos_keep_randomizable),
                  qkv_pos_kind_name(kind));
        QKV_CHECK(opts->randomize > 0 && (kind != QKV_POS_LEARNED || opts->randomize <= max_len),
                  "positions %s: randomize %d must be in 1..%d (the table's rows)", name, opts->randomize,
                  max_len);
        pos->randomize = opts->randomize;
    }
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
    float scaled = logf((float)d / (float)exact) / logf((float)max_distance / (float)exact) * (float)(n - exact);
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
    int rotates = (qkv_pos_schemes[pos->kind].needs & QKV_POS_ROTATION) != 0;
    pos->sample = samples;
    pos->sample_len = samples ? n : 0;
    pos->sample_rows = samples ? rows : 0;
    pos->rope.positions = rotates ? samples : NULL;
    pos->rope.positions_stride = rotates && samples && rows ? n : 0;
}

void qkv_positions_set_sample(qkv_positions *pos, const int32_t *sample, int n) {
    qkv_positions_set_samples(pos, sample, 0, n);
}

/* The sampled position of index t of batch row b. */
static int32_t sampled(const qkv_positions *pos, int b, int t) {
    return pos->sample[(size_t)(pos->sample_rows ? b : 0) * (size_t)pos->sample_len + (size_t)t];
}

qkv_tensor *qkv_positions_add(qkv_tape *tape, const qkv_positions *pos, qkv_tensor *x, int offset) {
    char shape[QKV_SHAPE_STR_LEN];
    QKV_CHECK(!pos->sample || (offset >= 0 && offset + x->shape[1] <= pos->sample_len),
              "positions: indices %d..%d beyond the sample's %d", offset, offset + x->shape[1] - 1,
              pos->sample_len);
    QKV_CHECK(!pos->sample_rows || (x->ndim == 3 && x->shape[0] == pos->sample_rows),
              "positions: input %s for samples of %d rows", qkv_shape_str(x, shape, sizeof shape),
              pos->sample_rows);
    if (pos->kind != QKV_POS_LEARNED && pos->kind != QKV_POS_SINUSOIDAL) return x;
    QKV_CHECK(x->ndim == 3 && x->shape[2] == pos->d_model, "positions: input %s must be [B,T,%d]",
              qkv_shape_str(x, shape, sizeof shape), pos->d_model);
    int t = x->shape[1], lists = pos->sample_rows ? pos->sample_rows : 1;
    if (pos->sample && pos->kind == QKV_POS_SINUSOIDAL) {   /* one row per sampled position */
        qkv_tensor *table = pos->sample_rows ? qkv_tape_tensor(tape, 3, (int[]){lists, t, pos->d_model})
                                             : qkv_tape_tensor(tape, 2, (int[]){t, pos->d_model});
        for (int b = 0; b < lists; b++)
            for (int i = 0; i < t; i++)
                qkv_sinusoidal_table(table->data + ((size_t)b * t + i) * pos->d_model, 1, pos->d_model,
                                     sampled(pos, b, offset + i), 0.0f);
        return qkv_add(tape, x, table);
    }
    if (pos->kind == QKV_POS_SINUSOIDAL) {
        qkv_tensor *table = qkv_tape_tensor(tape, 2, (int[]){t, pos->d_model});
        qkv_sinusoidal_table(table->data, t, pos->d_model, offset, 0.0f);
        return qkv_add(tape, x, table);
    }
    qkv_position_check_length("learned positions", offset + t, pos->max_len);
    QKV_CHECK(offset >= 0, "learned positions: negative offset %d", offset);
    int32_t *ids = qkv_tape_alloc(tape, (size_t)lists * t * sizeof(int32_t));
    for (int b = 0; b < lists; b++)
        for (int i = 0; i < t; i++) ids[(size_t)b * t + i] = pos->sample ? sampled(pos, b, offset + i) : offset + i;
    if (pos->sample_rows) return qkv_add(tape, x, qkv_embedding(tape, pos->table, ids, 2, (int[]){lists, t}));
    return qkv_add(tape, x, qkv_embedding(tape, pos->table, ids, 1, (int[]){t}));
}

const qkv_rope_opts *qkv_positions_rope(const qkv_positions *pos) {
    return qkv_pos_schemes[pos->kind].needs & QKV_POS_ROTATION ? &pos->rope : NULL;
}

/* FIRE: bias[h][i][j] = fc2(relu(fc1(u[i][j])))_h, u from qkv_fire_distance. */
static qkv_tensor *fire_bias(qkv_tape *tape, const qkv_positions *pos, int tq, int tk) {
    qkv_tensor *u = qkv_fire_distance(tape, pos->fire_c, pos->fire_l_scale, tq, tk, pos->fire_l_init);
    qkv_tensor *column = qkv_reshape(tape, u, 2, (int[]){tq * tk, 1});
    qkv_tensor *hidden = qkv_relu(tape, qkv_linear_forward(tape, &pos->fire_fc1, column));
    qkv_tensor *per_head = qkv_linear_forward(tape, &pos->fire_fc2, hidden);   /* [Tq*Tk, H] */
    qkv_tensor *heads = qkv_permute(tape, qkv_reshape(tape, per_head, 3, (int[]){tq, tk, pos->n_heads}),
                                    (int[]){2, 0, 1});
    return qkv_reshape(tape, heads, 4, (int[]){1, pos->n_heads, tq, tk});
}

qkv_tensor *qkv_positions_bias(qkv_tape *tape, const qkv_positions *pos, int tq, int tk, int symmetric) {
    if (pos->kind == QKV_POS_FIRE) return fire_bias(tape, pos, tq, tk);
    if (pos->kind == QKV_POS_T5) {   /* bias[h][i][j] = table[bucket(j - qi)][h] */
        int32_t *ids = qkv_tape_alloc(tape, (size_t)tq * tk * sizeof(int32_t));
        for (int i = 0; i < tq; i++)
            for (int j = 0; j < tk; j++)
                ids[(size_t)i * tk + j] =
                    qkv_t5_bucket(j - (i + tk - tq), symmetric, pos->t5_buckets, pos->t5_max_distance);
        qkv_tensor *rows = qkv_embedding(tape, pos->t5, ids, 2, (int[]){tq, tk});   /* [Tq,Tk,H] */
        qkv_tensor *heads = qkv_permute(tape, rows, (int[]){2, 0, 1});
        return qkv_reshape(tape, heads, 4, (int[]){1, pos->n_heads, tq, tk});
    }
    if (pos->kind != QKV_POS_ALIBI) return NULL;
    qkv_tensor *bias = qkv_tape_tensor(tape, 4, (int[]){1, pos->n_heads, tq, tk});
    qkv_alibi_bias(bias->data, pos->slopes, pos->n_heads, tq, tk, symmetric);
    return bias;
}
