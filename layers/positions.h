/* positions.h — the position schemes as one module a model can switch between.
 *
 *   none        NoPE: nothing is added; the model sees only causal order, if any.
 *   learned     a trained table of max_len rows added to the input; a longer
 *               sequence is a programmer error, never a read past the table.
 *   sinusoidal  the fixed table sin/cos(t / 10000^(2i/d)) added to the input;
 *               any length.
 *   rope        nothing added; queries and keys are rotated inside attention
 *               (qkv_positions_rope gives the options for qkv_mha_call).
 *   alibi       nothing added; a per-head linear distance penalty is added to the
 *               attention scores (qkv_positions_bias gives it for qkv_mha_call).
 *   t5          nothing added; T5's relative bias (Raffel et al. 2020): a trained
 *               table [buckets, heads] read at bucket(key - query) and added to
 *               the scores, like ALiBi, through qkv_positions_bias; gradients
 *               reach the table. Buckets (qkv_t5_bucket): half of them exact
 *               distances, the rest log-spaced up to max_distance, beyond which
 *               all distances share the last bucket; bidirectional stacks give
 *               keys before and after the query separate halves.
 *   p-rope      RoPE with the lowest frequencies removed (Barbero et al. 2025,
 *               arXiv 2410.06205): of the r/2 pairs only the first
 *               floor(p * r/2), the highest frequencies base^(-2i/r), turn; the
 *               rest keep angle 0. p = opts.prope (0: 0.75, the paper's). Not
 *               --rope-fraction: that rotates the first r = fraction * d dims of
 *               a head with the whole spectrum base^(-2i/r) recomputed over r, so
 *               it keeps the lowest frequency base^(-(r-2)/r) ~ 1/base; p-RoPE
 *               keeps the head's own frequencies base^(-2i/d) and drops the
 *               slowest ones. With interleaved pairs both turn the same dims
 *               (pairs 0..k-1, dims 0..2k-1) at different speeds; with split
 *               halves they turn different dims too: pairs (i, i + r/2) of the
 *               first r dims against pairs (i, i + d/2), i < p d/2.
 *   fire        FIRE (Li et al. 2023, arXiv 2310.04418): a bias
 *               b_h(i, j) = f(u(i, j))_h added to the scores like ALiBi and T5,
 *               u = psi(i - j) / psi(max(i, L)), psi(x) = log(|c x| + 1)
 *               (qkv_fire_distance), f an MLP 1 -> width -> heads with ReLU;
 *               c (from 0.1) and L = |l_scale| * 512 (l_scale from 1) are
 *               trained, as in the reference code. Parameters "<name>.fire.fc1",
 *               "<name>.fire.fc2" (weight, bias), "<name>.fire.c",
 *               "<name>.fire.l_scale". The paper defines the causal case; the
 *               reference's |i - j| makes a bidirectional stack read keys after
 *               the query at the distance j - i, with the same normalizer.
 *
 * Randomized positions (Ruoss et al. 2023), for learned, sinusoidal and rope:
 * with opts.randomize = M, a stack reads the position of index t from a sample
 * set by qkv_positions_set_sample (qkv_positions_draw: a sorted draw of distinct
 * integers from [0, M)) instead of t itself; without a sample it reads t. A
 * learned table then needs M rows.
 */
#ifndef QKV_POSITIONS_LAYER_H
#define QKV_POSITIONS_LAYER_H

#include "core/ops/params.h"
#include "layers/linear.h"
#include "core/ops/ops_position.h"
#include "core/rng.h"
#include "core/ops/tape.h"

/* THE TABLE of position schemes: one row each, in enum order, which the enum,
 * the names (every --pos flag, its --help and error message), lengthgen's
 * scheme lists and randomizable check, permutation and `qkv explain` read;
 * tests/test_registries.c fails when a source list names a scheme this table
 * does not. A row carries the scheme's behaviour: its functions (static in
 * layers/positions.c, 0 where the scheme has none), which the module calls
 * through the row instead of asking which scheme it is.
 *   X(KIND, name, alias, table, randomizable, check, init, add, rotate, bias)
 *   alias         another name it is known by ("" for none): the papers' (NoPE,
 *                 APE: Kazemnejad et al. 2023's absolute embedding is the
 *                 sinusoidal one), accepted wherever a name is (qkv_pos_kind_parse,
 *                 every --pos), never written (checkpoints, records keep the name)
 *   table         its trained table: QKV_POS_TABLE_NONE, _ROWS ([max_len, d_model],
 *                 max_len rows), _BUCKETS ([buckets, heads]), _MLP (FIRE's
 *                 MLP and its c and L)
 *   randomizable  1 if it reads positions by index, so a sample can replace them
 *   check         its rules, written once: 0, or -1 with a one-line
 *                 qkv_set_error naming the flags; a task shows it as its error,
 *                 qkv_positions_init_opts stops with it (qkv_pos_check)
 *   init          makes its tables and settings (qkv_positions_init_opts)
 *   add           what it adds to the input x [B,T,d_model] (qkv_positions_add)
 *   rotate        the rope options attention rotates queries and keys with
 *                 (qkv_positions_rope)
 *   bias          the additive score bias [1,H,Tq,Tk] (qkv_positions_bias) */
#define QKV_POS_SCHEMES(X)                                                                                   \
    X(NONE, "none", "nope", QKV_POS_TABLE_NONE, 0, 0, 0, 0, 0, 0)                                            \
    X(LEARNED, "learned", "", QKV_POS_TABLE_ROWS, 1, learned_check, learned_init, learned_add, 0, 0)         \
    X(SINUSOIDAL, "sinusoidal", "ape", QKV_POS_TABLE_NONE, 1, 0, 0, sinusoidal_add, 0, 0)                   \
    X(ROPE, "rope", "", QKV_POS_TABLE_NONE, 1, 0, rope_init, 0, rope_rotate, 0)                              \
    X(ALIBI, "alibi", "", QKV_POS_TABLE_NONE, 0, alibi_check, alibi_init, 0, 0, alibi_bias)                  \
    X(T5, "t5", "", QKV_POS_TABLE_BUCKETS, 0, t5_check, t5_init, 0, 0, t5_bias)                              \
    X(PROPE, "p-rope", "", QKV_POS_TABLE_NONE, 1, prope_check, prope_init, 0, rope_rotate, 0)                \
    X(FIRE, "fire", "", QKV_POS_TABLE_MLP, 0, fire_check, fire_init, 0, 0, fire_bias)

#define QKV_POS_ENUM_(KIND, name, alias, table, randomizable, check, init, add, rotate, bias) QKV_POS_##KIND,
typedef enum qkv_pos_kind { QKV_POS_SCHEMES(QKV_POS_ENUM_) QKV_POS_COUNT } qkv_pos_kind;
#undef QKV_POS_ENUM_

typedef enum qkv_pos_table {
    QKV_POS_TABLE_NONE, QKV_POS_TABLE_ROWS, QKV_POS_TABLE_BUCKETS, QKV_POS_TABLE_MLP
} qkv_pos_table;

typedef struct qkv_positions qkv_positions;
typedef struct qkv_pos_opts qkv_pos_opts;

typedef struct qkv_pos_scheme {
    qkv_pos_kind kind;
    const char *name;
    const char *alias;   /* "" for none */
    qkv_pos_table table;
    int randomizable;
    /* the row's behaviour (see the table above); NULL where the scheme has none */
    int (*check)(int d_model, int max_len, int n_heads, const qkv_pos_opts *opts);
    void (*init)(qkv_positions *pos, qkv_params *params, const char *name, const qkv_pos_opts *opts,
                 qkv_rng *rng);
    qkv_tensor *(*add)(qkv_tape *tape, const qkv_positions *pos, qkv_tensor *x, int offset);
    const qkv_rope_opts *(*rotate)(const qkv_positions *pos);
    qkv_tensor *(*bias)(qkv_tape *tape, const qkv_positions *pos, int tq, int tk, int symmetric);
} qkv_pos_scheme;

extern const qkv_pos_scheme qkv_pos_schemes[QKV_POS_COUNT];
/* Is kind one of the schemes randomized positions apply to (the table's column)? */
int qkv_pos_randomizable(qkv_pos_kind kind);
/* keep for qkv_pos_scheme_list: the randomizable schemes; those without a trained table. */
int qkv_pos_keep_randomizable(const qkv_pos_scheme *scheme);
int qkv_pos_keep_untrained(const qkv_pos_scheme *scheme);
/* The names of the schemes for which keep(scheme) is nonzero (NULL: all), in
 * table order, each followed by suffix, joined by sep, into out; returns out. */
char *qkv_pos_scheme_list(char *out, size_t size, const char *sep, const char *suffix,
                          int (*keep)(const qkv_pos_scheme *scheme));

/* "nope = none, ape = sinusoidal": the table's aliases and their rows' names, into out; returns out. */
char *qkv_pos_alias_list(char *out, size_t size);

/* Options beyond the kind; zeros are the defaults. */
struct qkv_pos_opts {
    int t5_buckets;          /* t5: 0 = 32 */
    int t5_max_distance;     /* t5: 0 = 128 */
    int randomize;           /* learned, sinusoidal, rope, p-rope: M > 0 allows a sample from [0, M) */
    float prope;             /* p-rope: the fraction p of pairs that turn; 0 = 0.75 */
    int fire_width;          /* fire: the MLP's hidden width; 0 = 32 */
    float fire_c;            /* fire: c's initial value; 0 = 0.1 */
    float fire_l;            /* fire: L's initial value (l_init); 0 = 512 */
    const qkv_rope_opts *rope;   /* rope, p-rope: the layout, base and rotated share of
                              * each head (NULL: defaults); offset and positions 0 */
};

#define QKV_T5_DEFAULT_BUCKETS 32
#define QKV_T5_DEFAULT_MAX_DISTANCE 128
#define QKV_PROPE_DEFAULT 0.75f
#define QKV_FIRE_DEFAULT_WIDTH 32
#define QKV_FIRE_DEFAULT_C 0.1f
#define QKV_FIRE_DEFAULT_L 512.0f
#define QKV_T5_MIN_BUCKETS 4
#define QKV_T5_MAX_BUCKETS 1024
#define QKV_ALIBI_MAX_HEADS 64   /* the slopes 2^(-8h/H) of the paper's recipe, kept per head */

struct qkv_positions {
    qkv_pos_kind kind;
    int d_model, max_len, n_heads;
    qkv_tensor *table;       /* learned: [max_len, d_model] */
    qkv_rope_opts rope;      /* rope, p-rope: defaults (base 10000, interleaved, whole head) */
    float slopes[QKV_ALIBI_MAX_HEADS];   /* alibi: one per head */
    qkv_tensor *t5;          /* t5: [buckets, n_heads] */
    int t5_buckets, t5_max_distance;
    qkv_linear fire_fc1, fire_fc2;   /* fire: 1 -> width, width -> n_heads */
    qkv_tensor *fire_c, *fire_l_scale;   /* fire: [1] each */
    float fire_l_init;
    int randomize;           /* M, 0: off */
    const int32_t *sample;   /* the positions of indices 0.., or NULL (set_sample) */
    int sample_len;          /* entries per row */
    int sample_rows;         /* 0: one list for every row; B: row b's at sample + b * sample_len */
};

/* Name <-> kind, from the table above: a name or an alias. Returns -1 for an unknown name. */
int qkv_pos_kind_parse(const char *name);
extern const char *const qkv_pos_kind_names[];  /* in enum order, NULL-terminated */
const char *qkv_pos_kind_name(qkv_pos_kind kind);

/* The learned table (if any) is registered as "<name>.table", init N(0, 0.02). */
void qkv_positions_init(qkv_positions *pos, qkv_params *params, const char *name, qkv_pos_kind kind,
                        int d_model, int max_len, int n_heads, qkv_rng *rng);
/* The same with options (NULL: defaults). The t5 table is registered as
 * "<name>.t5.table", init N(0, 0.02). Stops with "positions <name>: " and
 * qkv_pos_check's message when that refuses the settings. */
void qkv_positions_init_opts(qkv_positions *pos, qkv_params *params, const char *name, qkv_pos_kind kind,
                             int d_model, int max_len, int n_heads, const qkv_pos_opts *opts, qkv_rng *rng);

/* The rules of a scheme for a model of d_model, max_len rows (a learned
 * table's) and n_heads, with opts (NULL: defaults): randomize only for a
 * randomizable scheme and never negative, then the row's own check (alibi: at
 * most QKV_ALIBI_MAX_HEADS heads; t5: 4..1024 buckets and a max distance above
 * half of them; p-rope: a fraction in (0, 1] that keeps at least one of a
 * head's rotated pairs turning; learned: at least 1 row, and randomize M within
 * them; fire: width, heads, c and L positive). 0, or -1 with a one-line
 * qkv_last_error() naming the flags (--pos-randomize, --t5-buckets, ...): what
 * a task shows, and what qkv_positions_init_opts stops with. */
int qkv_pos_check(qkv_pos_kind kind, int d_model, int max_len, int n_heads, const qkv_pos_opts *opts);

/* The dims of a head of width d_head that rope rotates with the share fraction
 * (qkv_rope_opts.rotary_fraction): the whole head for 0 or >= 1, else
 * floor(fraction d_head) rounded down to even; they form dims / 2 pairs. */
int qkv_pos_rope_dims(int d_head, float fraction);

/* T5's bucket of a relative position rel = key - query (the published rule):
 *   bidirectional: n = buckets / 2, offset n if rel > 0, d = |rel|;
 *   causal:        n = buckets, offset 0, d = max(-rel, 0);
 *   exact = n / 2; d < exact: bucket d; otherwise
 *   exact + (int)(log(d / exact) / log(max_distance / exact) * (n - exact)),
 *   capped at n - 1; computed in float, as the reference does. */
int qkv_t5_bucket(int rel, int bidirectional, int buckets, int max_distance);

/* A sorted sample of n distinct integers from [0, m) into out (n <= m):
 * Floyd's algorithm, then sorted, so every n-subset is equally likely. */
void qkv_positions_draw(int32_t *out, int n, int m, qkv_rng *rng);
/* Use sample[0..n) as the positions of indices 0..n-1 (NULL: back to 0..n-1).
 * Stops unless pos randomizes and every value lies in [0, M). The sample is
 * borrowed: it must outlive the passes that read it. */
void qkv_positions_set_sample(qkv_positions *pos, const int32_t *sample, int n);
/* Per-row samples (Ruoss et al.'s draw per sequence): samples [rows, n], row b's
 * positions at samples + b * n; every pass then needs exactly rows batch rows
 * (a KV cache's decoding too). Stops as set_sample does. */
void qkv_positions_set_samples(qkv_positions *pos, const int32_t *samples, int rows, int n);

/* x [B,T,d_model] at positions offset..offset+T-1: x + p for learned and
 * sinusoidal, x itself for the others. */
qkv_tensor *qkv_positions_add(qkv_tape *tape, const qkv_positions *pos, qkv_tensor *x, int offset);

/* rope and p-rope: the options for attention (the stack's layout, base and
 * fraction from opts.rope, p-rope's keep_fraction); NULL for other kinds. */
const qkv_rope_opts *qkv_positions_rope(const qkv_positions *pos);

/* alibi, t5 and fire: the bias [1,H,Tq,Tk] for queries at the last Tq of Tk
 * positions; NULL for other kinds. symmetric 0 penalizes j < i by slope*(i-j)
 * (causal use); for t5 it picks the one-sided buckets, symmetric 1 the
 * bidirectional ones; fire reads |i - j| either way. The t5 bias is the table
 * read through qkv_embedding, fire's the MLP over qkv_fire_distance: both carry
 * gradients. */
qkv_tensor *qkv_positions_bias(qkv_tape *tape, const qkv_positions *pos, int tq, int tk, int symmetric);

#endif
