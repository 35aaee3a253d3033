/* positions.c — see positions.h. */
#include "positions.h"

#include <stdio.h>
#include <string.h>

#include "core/error.h"
#include "core/ops.h"

const char *const qkv_pos_kind_names[] = {"none", "learned", "sinusoidal", "rope", "alibi", NULL};

#define N_KINDS ((int)(sizeof qkv_pos_kind_names / sizeof qkv_pos_kind_names[0]) - 1)

int qkv_pos_kind_parse(const char *name) { return qkv_name_lookup(name, qkv_pos_kind_names, N_KINDS); }

const char *qkv_pos_kind_name(qkv_pos_kind kind) {
    QKV_CHECK((int)kind >= 0 && (int)kind < N_KINDS, "positions: unknown kind %d", (int)kind);
    return qkv_pos_kind_names[kind];
}

void qkv_positions_init(qkv_positions *pos, qkv_params *params, const char *name, qkv_pos_kind kind,
                        int d_model, int max_len, int n_heads, qkv_rng *rng) {
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
}

qkv_tensor *qkv_positions_add(qkv_tape *tape, const qkv_positions *pos, qkv_tensor *x, int offset) {
    char shape[QKV_SHAPE_STR_LEN];
    if (pos->kind != QKV_POS_LEARNED && pos->kind != QKV_POS_SINUSOIDAL) return x;
    QKV_CHECK(x->ndim == 3 && x->shape[2] == pos->d_model, "positions: input %s must be [B,T,%d]",
              qkv_shape_str(x, shape, sizeof shape), pos->d_model);
    int t = x->shape[1];
    if (pos->kind == QKV_POS_SINUSOIDAL) {
        qkv_tensor *table = qkv_tape_tensor(tape, 2, (int[]){t, pos->d_model});
        qkv_sinusoidal_table(table->data, t, pos->d_model, offset, 0.0f);
        return qkv_add(tape, x, table);
    }
    qkv_position_check_length("learned positions", offset + t, pos->max_len);
    QKV_CHECK(offset >= 0, "learned positions: negative offset %d", offset);
    int32_t *ids = qkv_tape_alloc(tape, (size_t)t * sizeof(int32_t));
    for (int i = 0; i < t; i++) ids[i] = offset + i;
    return qkv_add(tape, x, qkv_embedding(tape, pos->table, ids, 1, (int[]){t}));
}

const qkv_rope_opts *qkv_positions_rope(const qkv_positions *pos) {
    return pos->kind == QKV_POS_ROPE ? &pos->rope : NULL;
}

qkv_tensor *qkv_positions_bias(qkv_tape *tape, const qkv_positions *pos, int tq, int tk, int symmetric) {
    if (pos->kind != QKV_POS_ALIBI) return NULL;
    qkv_tensor *bias = qkv_tape_tensor(tape, 4, (int[]){1, pos->n_heads, tq, tk});
    qkv_alibi_bias(bias->data, pos->slopes, pos->n_heads, tq, tk, symmetric);
    return bias;
}
