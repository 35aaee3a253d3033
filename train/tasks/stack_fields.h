/* stack_fields.h — the checks that span a transformer stack's flags, shared by
 * the tasks built on one (sequence, text): --heads divides --dim, RoPE needs an
 * even head width, ALiBi's slopes exist for at most 64 heads. */
#ifndef QKV_TASKS_STACK_FIELDS_H
#define QKV_TASKS_STACK_FIELDS_H

#include "core/error.h"
#include "layers/positions.h"

/* 0, or -1 with qkv_last_error() naming the flags. */
static inline int qkv_stack_fields_check(int dim, int heads, qkv_pos_kind pos) {
    if (dim < 1 || heads < 1 || dim % heads != 0)
        return qkv_set_error("--heads %d does not divide --dim %d", heads, dim), -1;
    if (pos == QKV_POS_ROPE && (dim / heads) % 2 != 0)
        return qkv_set_error("--pos rope needs an even head width, got --dim %d / --heads %d = %d", dim, heads,
                             dim / heads), -1;
    if (pos == QKV_POS_ALIBI && heads > 64) return qkv_set_error("--pos alibi supports at most 64 heads"), -1;
    return 0;
}

#endif
