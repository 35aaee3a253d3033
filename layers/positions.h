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
 */
#ifndef QKV_POSITIONS_LAYER_H
#define QKV_POSITIONS_LAYER_H

#include "core/params.h"
#include "core/positions.h"
#include "core/rng.h"
#include "core/tape.h"

typedef enum qkv_pos_kind {
    QKV_POS_NONE, QKV_POS_LEARNED, QKV_POS_SINUSOIDAL, QKV_POS_ROPE, QKV_POS_ALIBI
} qkv_pos_kind;

typedef struct qkv_positions {
    qkv_pos_kind kind;
    int d_model, max_len, n_heads;
    qkv_tensor *table;       /* learned: [max_len, d_model] */
    qkv_rope_opts rope;      /* rope: defaults (base 10000, interleaved, whole head) */
    float slopes[64];        /* alibi: one per head */
} qkv_positions;

/* Name <-> kind: "none", "learned", "sinusoidal", "rope", "alibi". Returns -1 for
 * an unknown name. */
int qkv_pos_kind_parse(const char *name);
extern const char *const qkv_pos_kind_names[];  /* in enum order, NULL-terminated */
const char *qkv_pos_kind_name(qkv_pos_kind kind);

/* The learned table (if any) is registered as "<name>.table", init N(0, 0.02). */
void qkv_positions_init(qkv_positions *pos, qkv_params *params, const char *name, qkv_pos_kind kind,
                        int d_model, int max_len, int n_heads, qkv_rng *rng);

/* x [B,T,d_model] at positions offset..offset+T-1: x + p for learned and
 * sinusoidal, x itself for the others. */
qkv_tensor *qkv_positions_add(qkv_tape *tape, const qkv_positions *pos, qkv_tensor *x, int offset);

/* rope: the options for attention; NULL for other kinds. */
const qkv_rope_opts *qkv_positions_rope(const qkv_positions *pos);

/* alibi: the bias [1,H,Tq,Tk] for queries at the last Tq of Tk positions; NULL
 * for other kinds. symmetric 0 penalizes j < i by slope*(i-j) (causal use). */
qkv_tensor *qkv_positions_bias(qkv_tape *tape, const qkv_positions *pos, int tq, int tk, int symmetric);

#endif
