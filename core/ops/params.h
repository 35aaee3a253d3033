/* params.h — a model's parameters as one list, in a fixed order.
 *
 * Modules register each parameter they create (with its dotted name); optimizers,
 * checkpoints and gradient clipping walk the list. The list owns its tensors:
 * qkv_params_free() frees them all.
 */
#ifndef QKV_PARAMS_H
#define QKV_PARAMS_H

#include "core/ops/tensor.h"

typedef struct qkv_params {
    qkv_tensor **items;
    int n, cap;
} qkv_params;

/* Creates a parameter (requires_grad, zero-filled), appends it and returns it. */
qkv_tensor *qkv_params_new(qkv_params *params, const char *name, int ndim, const int *shape);
void qkv_params_zero_grad(const qkv_params *params);
size_t qkv_params_count(const qkv_params *params);   /* total scalars */
/* Copies every parameter's values, in list order, into out (NULL: only count);
 * returns qkv_params_count(params). */
size_t qkv_params_copy_values(const qkv_params *params, float *out);
qkv_tensor *qkv_params_find(const qkv_params *params, const char *name);
void qkv_params_free(qkv_params *params);

/* The parameters cut into pieces of at most `piece` elements, in list order, so
 * that a pass over a model (the optimizer, clipping, the non-finite check, the
 * parallel step's gradient) spreads over threads whatever the sizes: piece k is
 * items[param]'s elements [begin, end). *count is set; free with free(). */
typedef struct qkv_param_piece {
    int param;
    size_t begin, end;
} qkv_param_piece;
qkv_param_piece *qkv_params_pieces(const qkv_params *params, size_t piece, int *count);

/* Dotted names: out = "<prefix>.<part>" or "<prefix>.<index>"; a name longer
 * than QKV_NAME_MAX - 1 is a programmer error. Both return out. */
#define QKV_NAME_MAX 128
/* Index of name in names[0..count), or -1 (also for NULL): the parsers of every
 * "--flag value" choice (tasks, positions, optimizers, ...). */
int qkv_name_lookup(const char *name, const char *const *names, int count);
char *qkv_name_join(char out[QKV_NAME_MAX], const char *prefix, const char *part);
char *qkv_name_index(char out[QKV_NAME_MAX], const char *prefix, int index);

#endif
