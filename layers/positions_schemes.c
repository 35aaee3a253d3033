/* positions_schemes.c — what each position scheme does: its check, init, add,
 * rotate and bias functions, and the table qkv_pos_schemes whose rows hold them
 * (QKV_POS_SCHEMES, layers/positions.h). positions.c calls through the rows.
 * Each rule of a scheme is its check's, written once: a task shows the error it
 * returns, qkv_positions_init_opts stops with it. */
#include <math.h>
#include <string.h>

#include "core/error.h"
#include "core/ops/ops.h"
#include "layers/positions.h"

/* ---- learned: a trained table [max_len, d_model] added to the input --------------- */

static int learned_check(int d_model, int max_len, int n_heads, const qkv_pos_opts *opts) {
    (void)d_model, (void)n_heads;
    if (max_len < 1) return qkv_set_error("a learned position table needs at least 1 row, got %d", max_len), -1;
    if (opts->randomize > max_len)
        return qkv_set_error("--pos-randomize %d needs that many learned rows, beyond --max-pos %d", opts->randomize,
                             max_len), -1;
    return 0;
}

/* The table is "<name>.table", init N(0, 0.02). */
static void learned_init(qkv_positions *pos, qkv_params *params, const char *name, const qkv_pos_opts *opts,
                         qkv_rng *rng) {
    (void)opts;
    char full[QKV_NAME_MAX];
    qkv_name_join(full, name, "table");
    pos->table = qkv_params_new(params, full, 2, (int[]){pos->max_len, pos->d_model});
    qkv_fill_normal(pos->table->data, pos->table->size, rng, 0.0f, 0.02f);
}

/* The sampled position of index t of batch row b. */
static int32_t sampled(const qkv_positions *pos, int b, int t) {
    return pos->sample[(size_t)(pos->sample_rows ? b : 0) * (size_t)pos->sample_len + (size_t)t];
}

/* x + table[position]: the rows offset.. (or the sampled ones) through qkv_embedding. */
static qkv_tensor *learned_add(qkv_tape *tape, const qkv_positions *pos, qkv_tensor *x, int offset) {
    int t = x->shape[1], lists = pos->sample_rows ? pos->sample_rows : 1;
    qkv_position_check_length("learned positions", offset + t, pos->max_len);
    QKV_CHECK(offset >= 0, "learned positions: negative offset %d", offset);
    int32_t *ids = qkv_tape_alloc(tape, (size_t)lists * t * sizeof(int32_t));
    for (int b = 0; b < lists; b++)
        for (int i = 0; i < t; i++) ids[(size_t)b * t + i] = pos->sample ? sampled(pos, b, offset + i) : offset + i;
    if (pos->sample_rows) return qkv_add(tape, x, qkv_embedding(tape, pos->table, ids, 2, (int[]){lists, t}));
    return qkv_add(tape, x, qkv_embedding(tape, pos->table, ids, 1, (int[]){t}));
}

/* ---- sinusoidal: the fixed table added to the input ------------------------------- */

static qkv_tensor *sinusoidal_add(qkv_tape *tape, const qkv_positions *pos, qkv_tensor *x, int offset) {
    int t = x->shape[1], lists = pos->sample_rows ? pos->sample_rows : 1;
    if (pos->sample) {   /* one row per sampled position */
        qkv_tensor *table = pos->sample_rows ? qkv_tape_tensor(tape, 3, (int[]){lists, t, pos->d_model})
                                             : qkv_tape_tensor(tape, 2, (int[]){t, pos->d_model});
        for (int b = 0; b < lists; b++)
            for (int i = 0; i < t; i++)
                qkv_sinusoidal_table(table->data + ((size_t)b * t + i) * pos->d_model, 1, pos->d_model,
                                     sampled(pos, b, offset + i), 0.0f);
        return qkv_add(tape, x, table);
    }
    qkv_tensor *table = qkv_tape_tensor(tape, 2, (int[]){t, pos->d_model});
    qkv_sinusoidal_table(table->data, t, pos->d_model, offset, 0.0f);
    return qkv_add(tape, x, table);
}

/* ---- rope and p-rope: queries and keys rotated inside attention -------------------- */

/* The stack's layout, base and fraction (opts->rope; NULL: the defaults). */
static void rope_init(qkv_positions *pos, qkv_params *params, const char *name, const qkv_pos_opts *opts,
                      qkv_rng *rng) {
    (void)params, (void)name, (void)rng;
    if (opts->rope) pos->rope = *opts->rope;
}

static const qkv_rope_opts *rope_rotate(const qkv_positions *pos) { return &pos->rope; }

static float prope_fraction(const qkv_pos_opts *opts) { return opts->prope ? opts->prope : QKV_PROPE_DEFAULT; }

/* p of a head's rotated pairs must keep at least one turning. */
static int prope_check(int d_model, int max_len, int n_heads, const qkv_pos_opts *opts) {
    (void)max_len;
    float p = prope_fraction(opts);
    int d_head = n_heads > 0 ? d_model / n_heads : 0;
    int pairs = qkv_pos_rope_dims(d_head, opts->rope ? opts->rope->rotary_fraction : 0.0f) / 2;
    if (!(p > 0 && p <= 1)) return qkv_set_error("--p-rope %g: expected a share in (0, 1]", p), -1;
    if (floor((double)p * pairs) < 1)
        return qkv_set_error("--p-rope %g of %d pairs keeps none turning (head width %d)", p, pairs, d_head), -1;
    return 0;
}

static void prope_init(qkv_positions *pos, qkv_params *params, const char *name, const qkv_pos_opts *opts,
                       qkv_rng *rng) {
    rope_init(pos, params, name, opts, rng);
    pos->rope.keep_fraction = prope_fraction(opts);
}

/* ---- alibi: a per-head linear distance penalty on the scores ----------------------- */

static int alibi_check(int d_model, int max_len, int n_heads, const qkv_pos_opts *opts) {
    (void)d_model, (void)max_len, (void)opts;
    if (n_heads > QKV_ALIBI_MAX_HEADS)
        return qkv_set_error("--pos alibi supports at most %d heads", QKV_ALIBI_MAX_HEADS), -1;
    if (n_heads < 1) return qkv_set_error("--pos alibi needs at least 1 head, got %d", n_heads), -1;
    return 0;
}

static void alibi_init(qkv_positions *pos, qkv_params *params, const char *name, const qkv_pos_opts *opts,
                       qkv_rng *rng) {
    (void)params, (void)name, (void)opts, (void)rng;
    qkv_alibi_slopes(pos->slopes, pos->n_heads);
}

static qkv_tensor *alibi_bias(qkv_tape *tape, const qkv_positions *pos, int tq, int tk, int symmetric) {
    qkv_tensor *bias = qkv_tape_tensor(tape, 4, (int[]){1, pos->n_heads, tq, tk});
    qkv_alibi_bias(bias->data, pos->slopes, pos->n_heads, tq, tk, symmetric);
    return bias;
}

/* ---- t5: a trained table [buckets, heads] read at bucket(key - query) ------------- */

static int t5_buckets(const qkv_pos_opts *opts) { return opts->t5_buckets ? opts->t5_buckets : QKV_T5_DEFAULT_BUCKETS; }
static int t5_max_distance(const qkv_pos_opts *opts) {
    return opts->t5_max_distance ? opts->t5_max_distance : QKV_T5_DEFAULT_MAX_DISTANCE;
}

static int t5_check(int d_model, int max_len, int n_heads, const qkv_pos_opts *opts) {
    (void)d_model, (void)max_len;
    int buckets = t5_buckets(opts), distance = t5_max_distance(opts);
    if (buckets < QKV_T5_MIN_BUCKETS || buckets > QKV_T5_MAX_BUCKETS || distance <= buckets / 2)
        return qkv_set_error("--t5-buckets %d / --t5-max-distance %d: expected %d..%d buckets and a distance above "
                             "half of them", buckets, distance, QKV_T5_MIN_BUCKETS, QKV_T5_MAX_BUCKETS), -1;
    if (n_heads < 1) return qkv_set_error("--pos t5 needs at least 1 head, got %d", n_heads), -1;
    return 0;
}

/* The table is "<name>.t5.table", init N(0, 0.02). */
static void t5_init(qkv_positions *pos, qkv_params *params, const char *name, const qkv_pos_opts *opts,
                    qkv_rng *rng) {
    char full[QKV_NAME_MAX];
    pos->t5_buckets = t5_buckets(opts);
    pos->t5_max_distance = t5_max_distance(opts);
    qkv_name_join(full, name, "t5.table");
    pos->t5 = qkv_params_new(params, full, 2, (int[]){pos->t5_buckets, pos->n_heads});
    qkv_fill_normal(pos->t5->data, pos->t5->size, rng, 0.0f, 0.02f);
}

/* bias[h][i][j] = table[bucket(j - qi)][h] */
static qkv_tensor *t5_bias(qkv_tape *tape, const qkv_positions *pos, int tq, int tk, int symmetric) {
    int32_t *ids = qkv_tape_alloc(tape, (size_t)tq * tk * sizeof(int32_t));
    for (int i = 0; i < tq; i++)
        for (int j = 0; j < tk; j++)
            ids[(size_t)i * tk + j] = qkv_t5_bucket(j - (i + tk - tq), symmetric, pos->t5_buckets, pos->t5_max_distance);
    qkv_tensor *rows = qkv_embedding(tape, pos->t5, ids, 2, (int[]){tq, tk});   /* [Tq,Tk,H] */
    qkv_tensor *heads = qkv_permute(tape, rows, (int[]){2, 0, 1});
    return qkv_reshape(tape, heads, 4, (int[]){1, pos->n_heads, tq, tk});
}

/* ---- fire: an MLP over the normalized log distance --------------------------------- */

static int fire_width(const qkv_pos_opts *opts) { return opts->fire_width ? opts->fire_width : QKV_FIRE_DEFAULT_WIDTH; }
static float fire_c(const qkv_pos_opts *opts) { return opts->fire_c ? opts->fire_c : QKV_FIRE_DEFAULT_C; }
static float fire_l(const qkv_pos_opts *opts) { return opts->fire_l ? opts->fire_l : QKV_FIRE_DEFAULT_L; }

static int fire_check(int d_model, int max_len, int n_heads, const qkv_pos_opts *opts) {
    (void)d_model, (void)max_len;
    if (!(fire_width(opts) >= 1 && n_heads >= 1 && fire_c(opts) > 0.0f && fire_l(opts) > 0.0f))
        return qkv_set_error("--pos fire needs width >= 1, heads >= 1, c > 0 and L > 0, got %d, %d, %g, %g",
                             fire_width(opts), n_heads, (double)fire_c(opts), (double)fire_l(opts)), -1;
    return 0;
}

/* FIRE's MLP 1 -> width -> heads (PyTorch's Linear init), c and l_scale. */
static void fire_init(qkv_positions *pos, qkv_params *params, const char *name, const qkv_pos_opts *opts,
                      qkv_rng *rng) {
    char full[QKV_NAME_MAX];
    pos->fire_l_init = fire_l(opts);
    qkv_name_join(full, name, "fire.fc1");
    qkv_linear_init(&pos->fire_fc1, params, full, 1, fire_width(opts), 1, rng);
    qkv_name_join(full, name, "fire.fc2");
    qkv_linear_init(&pos->fire_fc2, params, full, fire_width(opts), pos->n_heads, 1, rng);
    qkv_name_join(full, name, "fire.c");
    pos->fire_c = qkv_params_new(params, full, 1, (int[]){1});
    pos->fire_c->data[0] = fire_c(opts);
    qkv_name_join(full, name, "fire.l_scale");
    pos->fire_l_scale = qkv_params_new(params, full, 1, (int[]){1});
    pos->fire_l_scale->data[0] = 1.0f;
}

/* bias[h][i][j] = fc2(relu(fc1(u[i][j])))_h, u from qkv_fire_distance. */
static qkv_tensor *fire_bias(qkv_tape *tape, const qkv_positions *pos, int tq, int tk, int symmetric) {
    (void)symmetric;   /* |i - j| either way */
    qkv_tensor *u = qkv_fire_distance(tape, pos->fire_c, pos->fire_l_scale, tq, tk, pos->fire_l_init);
    qkv_tensor *column = qkv_reshape(tape, u, 2, (int[]){tq * tk, 1});
    qkv_tensor *hidden = qkv_relu(tape, qkv_linear_forward(tape, &pos->fire_fc1, column));
    qkv_tensor *per_head = qkv_linear_forward(tape, &pos->fire_fc2, hidden);   /* [Tq*Tk, H] */
    qkv_tensor *heads = qkv_permute(tape, qkv_reshape(tape, per_head, 3, (int[]){tq, tk, pos->n_heads}),
                                    (int[]){2, 0, 1});
    return qkv_reshape(tape, heads, 4, (int[]){1, pos->n_heads, tq, tk});
}

/* ---- the table ------------------------------------------------------------------- */

#define SCHEME_ROW(KIND, name, alias, table, randomizable, check, init, add, rotate, bias) \
    {QKV_POS_##KIND, name, alias, table, randomizable, check, init, add, rotate, bias},
#define SCHEME_NAME(KIND, name, alias, table, randomizable, check, init, add, rotate, bias) name,
const qkv_pos_scheme qkv_pos_schemes[QKV_POS_COUNT] = {QKV_POS_SCHEMES(SCHEME_ROW)};
const char *const qkv_pos_kind_names[] = {QKV_POS_SCHEMES(SCHEME_NAME) NULL};
