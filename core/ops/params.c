/* params.c — see params.h. */
#include "core/ops/params.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"

qkv_tensor *qkv_params_new(qkv_params *params, const char *name, int ndim, const int *shape) {
    QKV_CHECK(name && *name, "params_new: a parameter needs a name");
    QKV_CHECK(!qkv_params_find(params, name), "params_new: duplicate parameter name %s", name);
    if (params->n == params->cap) {
        int cap = params->cap ? params->cap * 2 : 16;
        params->items = qkv_realloc(params->items, (size_t)cap * sizeof *params->items, "the parameter list");
        params->cap = cap;
    }
    qkv_tensor *t = qkv_tensor_create(name, ndim, shape, 1);
    params->items[params->n++] = t;
    return t;
}

void qkv_params_zero_grad(const qkv_params *params) {
    for (int i = 0; i < params->n; i++) qkv_tensor_zero_grad(params->items[i]);
}

size_t qkv_params_count(const qkv_params *params) {
    size_t total = 0;
    for (int i = 0; i < params->n; i++) total += params->items[i]->size;
    return total;
}

size_t qkv_params_copy_values(const qkv_params *params, float *out) {
    size_t off = 0;
    for (int i = 0; i < params->n; i++) {
        if (out) memcpy(out + off, params->items[i]->data, params->items[i]->size * sizeof(float));
        off += params->items[i]->size;
    }
    return off;
}

qkv_param_piece *qkv_params_pieces(const qkv_params *params, size_t piece, int *count) {
    size_t n = 0;
    for (int i = 0; i < params->n; i++) n += (params->items[i]->size + piece - 1) / piece;
    qkv_param_piece *pieces = qkv_malloc((n > 0 ? n : 1) * sizeof *pieces, "a model's pieces");
    size_t k = 0;
    for (int i = 0; i < params->n; i++)
        for (size_t begin = 0; begin < params->items[i]->size; begin += piece) {
            size_t end = begin + piece < params->items[i]->size ? begin + piece : params->items[i]->size;
            pieces[k++] = (qkv_param_piece){i, begin, end};
        }
    *count = (int)n;
    return pieces;
}

qkv_tensor *qkv_params_find(const qkv_params *params, const char *name) {
    for (int i = 0; i < params->n; i++)
        if (strcmp(params->items[i]->name, name) == 0) return params->items[i];
    return NULL;
}

int qkv_name_lookup(const char *name, const char *const *names, int count) {
    for (int i = 0; name && i < count; i++)
        if (strcmp(name, names[i]) == 0) return i;
    return -1;
}

char *qkv_name_join(char out[QKV_NAME_MAX], const char *prefix, const char *part) {
    int n = snprintf(out, QKV_NAME_MAX, "%s.%s", prefix, part);
    QKV_CHECK(n >= 0 && n < QKV_NAME_MAX, "name %s.%s is longer than %d characters", prefix, part,
              QKV_NAME_MAX - 1);
    return out;
}

char *qkv_name_index(char out[QKV_NAME_MAX], const char *prefix, int index) {
    char number[16];
    snprintf(number, sizeof number, "%d", index);
    return qkv_name_join(out, prefix, number);
}

void qkv_params_free(qkv_params *params) {
    for (int i = 0; i < params->n; i++) qkv_tensor_free(params->items[i]);
    free(params->items);
    memset(params, 0, sizeof *params);
}
