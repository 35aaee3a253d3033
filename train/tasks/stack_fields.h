/* stack_fields.h — what the tasks built on a transformer stack (sequence, text)
 * share about its flags: the checks that span them (--heads divides --dim, RoPE
 * needs an even head width; a scheme's own rules are its row's check, run
 * through qkv_stack_positions_check), and the
 * options that make a model portable to other frameworks (the activation, the
 * LayerNorm eps, RoPE's layout, base and fraction, the attention scale), as field
 * rows (fields.h) and the one function that puts them into a qkv_stack_config.
 * Those rows are QKV_FIELD_OPTIONAL: a checkpoint written before they existed,
 * or with their defaults, has no such keys and reads back the defaults. */
#ifndef QKV_TASKS_STACK_FIELDS_H
#define QKV_TASKS_STACK_FIELDS_H

#include <stddef.h>

#include "core/error.h"
#include "layers/positions.h"
#include "layers/transformer.h"
#include "train/fields.h"

/* The portable options of a stack, as the tasks' configs hold them. */
typedef struct qkv_stack_options {
    int activation;        /* qkv_activation: gelu (tanh, default), gelu-exact, relu, tanh */
    float ln_eps;          /* 1e-5 */
    int rope_layout;       /* 0 interleaved (default), 1 halves */
    float rope_base;       /* 10000 */
    float rope_fraction;   /* 1: the whole head rotates */
    float attn_scale;      /* 0: 1/sqrt(d_head) */
    float prope;           /* --pos p-rope: the fraction of pairs that turn (0.75) */
} qkv_stack_options;

static const char *const qkv_rope_layout_names[] = {"interleaved", "halves", NULL};

/* The option rows of a config type T whose member M is a qkv_stack_options
 * (fields.h's row layout, with QKV_FIELD_OPTIONAL). */
#define QKV_STACK_OPTION_FIELDS(T, M)                                                                         \
    {"--activation", "activation", QKV_FIELD_CHOICE, offsetof(T, M.activation), 0, 0, QKV_ACT_GELU,           \
     qkv_activation_names, NULL, "feed-forward activation (gelu: the tanh form)", QKV_FIELD_OPTIONAL, 0, NULL},        \
    {"--ln-eps", "ln_eps", QKV_FIELD_FLOAT, offsetof(T, M.ln_eps), 1e-12, 1, 1e-5, NULL, NULL,                \
     "every LayerNorm's eps", QKV_FIELD_OPTIONAL, 0, NULL},                                                            \
    {"--rope-layout", "rope_layout", QKV_FIELD_CHOICE, offsetof(T, M.rope_layout), 0, 0, 0,                   \
     qkv_rope_layout_names, NULL, "RoPE pairs: (2i, 2i+1) interleaved, (i, i+r/2) halves", QKV_FIELD_OPTIONAL, 0, NULL}, \
    {"--rope-base", "rope_base", QKV_FIELD_FLOAT, offsetof(T, M.rope_base), 1, 1e9, 10000, NULL, NULL,        \
     "RoPE base", QKV_FIELD_OPTIONAL, 0, NULL},                                                                        \
    {"--rope-fraction", "rope_fraction", QKV_FIELD_FLOAT, offsetof(T, M.rope_fraction), 0.001, 1, 1, NULL,    \
     NULL, "share of each head's dims RoPE rotates", QKV_FIELD_OPTIONAL, 0, NULL},                                     \
    {"--attn-scale", "attn_scale", QKV_FIELD_FLOAT, offsetof(T, M.attn_scale), 0, 1000, 0, NULL, NULL,        \
     "attention scores' scale; 0: 1/sqrt(head width)", QKV_FIELD_OPTIONAL, 0, NULL},                                   \
    {"--p-rope", "p_rope", QKV_FIELD_FLOAT, offsetof(T, M.prope), 0.001, 1, QKV_PROPE_DEFAULT, NULL, NULL,     \
     "--pos p-rope: share of RoPE's pairs that turn (the highest frequencies)", QKV_FIELD_OPTIONAL, 0, NULL}

/* Puts the options into a stack's config. */
static inline void qkv_stack_options_apply(const qkv_stack_options *o, qkv_stack_config *stack) {
    stack->block.activation = (qkv_activation)o->activation;
    stack->block.ln_eps = o->ln_eps;
    stack->block.attn_scale = o->attn_scale;
    stack->rope.base = o->rope_base;
    stack->rope.split_halves = o->rope_layout;
    stack->rope.rotary_fraction = o->rope_fraction;
    stack->pos_opts.prope = o->prope;
}

/* RoPE's rotated share of a head must hold a whole pair: 0, or -1 naming the flags. */
static inline int qkv_stack_options_check(const qkv_stack_options *o, int dim, int heads, qkv_pos_kind pos) {
    if (!qkv_pos_schemes[pos].rotate || heads < 1) return 0;
    int d_head = dim / heads;
    if (qkv_pos_rope_dims(d_head, o->rope_fraction) < 2)
        return qkv_set_error("--rope-fraction %g of a head width %d rotates fewer than 2 dims", o->rope_fraction,
                             d_head), -1;
    return 0;
}

/* 0, or -1 with qkv_last_error() naming the flags. */
static inline int qkv_stack_fields_check(int dim, int heads, qkv_pos_kind pos) {
    if (dim < 1 || heads < 1 || dim % heads != 0)
        return qkv_set_error("--heads %d does not divide --dim %d", heads, dim), -1;
    if (qkv_pos_schemes[pos].rotate && (dim / heads) % 2 != 0)
        return qkv_set_error("--pos %s needs an even head width, got --dim %d / --heads %d = %d",
                             qkv_pos_kind_name(pos), dim, heads, dim / heads), -1;
    return 0;
}

/* The position scheme's own rules (its row's check, layers/positions.h: ALiBi's
 * heads, T5's buckets, p-RoPE's share, a learned table's rows, randomized
 * positions) for a stack of this shape, these options, max_len rows and the
 * task's pos_opts (t5, randomize): 0, or -1 with the scheme's one-line error. */
static inline int qkv_stack_positions_check(const qkv_stack_options *o, int dim, int heads, qkv_pos_kind pos,
                                            int max_len, qkv_pos_opts pos_opts) {
    qkv_stack_config stack = {.block = {.d_model = dim, .n_heads = heads}, .positions = pos, .max_len = max_len,
                              .pos_opts = pos_opts};
    qkv_stack_options_apply(o, &stack);
    stack.pos_opts.rope = &stack.rope;
    return qkv_pos_check(pos, dim, max_len, heads, &stack.pos_opts);
}

#endif
