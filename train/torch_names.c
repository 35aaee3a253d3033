/* torch_names.c — see torch_names.h. */
#include "train/torch_names.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "core/io/safetensors.h"

/* Segment renames inside a transformer block, matched on whole dotted segments. */
static const struct { const char *qkv, *torch; } renames[] = {
    {"ln1", "norm1"},         {"ln2", "norm2"},         {"ln3", "norm3"},
    {"attn", "self_attn"},    {"cross_attn", "multihead_attn"},          {"ffn.fc1", "linear1"},
    {"ffn.fc2", "linear2"},   {"wo", "out_proj"},
};
/* Stacks whose numbered blocks PyTorch keeps in a `layers` list, and the parts that
 * make a numbered entry a transformer block (a set model's "enc.0.mab0" is not one:
 * its names are the Set Transformer authors' PyTorch names already). */
static const char *const stacks[] = {"enc", "dec"};
static const char *const block_parts[] = {"attn", "self_attn", "cross_attn", "ln1", "ln2", "ln3", "ffn"};
/* The packed projections: wq, wk, wv are the thirds of in_proj_*, in this order. */
static const char *const projections[] = {"wq", "wk", "wv"};

#define COUNT(a) ((int)(sizeof a / sizeof a[0]))
#define MAX_SEGMENTS 32

static int is_number(const char *s) {
    if (!*s) return 0;
    for (; *s; s++) if (!isdigit((unsigned char)*s)) return 0;
    return 1;
}

static int in_list(const char *s, const char *const *list, int n) {
    for (int i = 0; i < n; i++) if (!strcmp(s, list[i])) return 1;
    return 0;
}

static void append(char *out, size_t *len, const char *s) {
    size_t n = strlen(s);
    QKV_CHECK(*len + n + 2 < QKV_NAME_MAX, "torch_name: the name grows past %d characters", QKV_NAME_MAX);
    if (*len) out[(*len)++] = '.';
    memcpy(out + *len, s, n + 1);
    *len += n;
}

/* The block's rest, seg[i..n): renames and the packed projections. */
static void map_block(qkv_torch_name *r, size_t *len, char **seg, int i, int n) {
    while (i < n) {
        for (int p = 0; p < COUNT(projections); p++)
            if (i + 2 == n && !strcmp(seg[i], projections[p]) && (!strcmp(seg[i + 1], "weight") || !strcmp(seg[i + 1], "bias"))) {
                char packed[32];
                snprintf(packed, sizeof packed, "in_proj_%s", seg[i + 1]);
                append(r->name, len, packed);
                r->part = p;
                r->parts = 3;
                return;
            }
        int used = 1;
        const char *out = seg[i];
        for (int k = 0; k < COUNT(renames); k++) {
            const char *q = renames[k].qkv, *dot = strchr(q, '.');
            if (!dot ? !strcmp(seg[i], q)
                     : i + 1 < n && !strncmp(seg[i], q, (size_t)(dot - q)) && !seg[i][dot - q] && !strcmp(seg[i + 1], dot + 1)) {
                out = renames[k].torch;
                used = dot ? 2 : 1;
                break;
            }
        }
        append(r->name, len, out);
        i += used;
    }
}

qkv_torch_name qkv_torch_name_of(const char *qkv_name) {
    qkv_torch_name r = {"", 0, 1};
    char copy[QKV_NAME_MAX], *seg[MAX_SEGMENTS];
    int n = 0;
    snprintf(copy, sizeof copy, "%s", qkv_name);
    for (char *s = copy; n < MAX_SEGMENTS; n++) {
        seg[n] = s;
        char *dot = strchr(s, '.');
        if (!dot) { n++; break; }
        *dot = '\0';
        s = dot + 1;
    }
    size_t len = 0;
    for (int i = 0; i < n; i++) {
        int stack = in_list(seg[i], stacks, COUNT(stacks));
        if (stack && i + 2 < n && is_number(seg[i + 1]) && in_list(seg[i + 2], block_parts, COUNT(block_parts))) {
            append(r.name, &len, seg[i]);          /* <stack>.<i>.<part> -> <stack>.layers.<i>.<part'> */
            append(r.name, &len, "layers");
            append(r.name, &len, seg[i + 1]);
            map_block(&r, &len, seg, i + 2, n);
            return r;
        }
        if (stack && i + 1 < n && !strcmp(seg[i + 1], "ln_final")) {
            append(r.name, &len, seg[i]);          /* <stack>.ln_final -> <stack>.norm */
            append(r.name, &len, "norm");
            for (int j = i + 2; j < n; j++) append(r.name, &len, seg[j]);
            return r;
        }
        append(r.name, &len, seg[i]);
    }
    return r;
}

/* The source of parameter t: the tensor and its first row (or NULL with an error). */
static const qkv_st_tensor *source_of(const qkv_safetensors *st, const char *path, const qkv_tensor *t,
                                      size_t *row0, char *used) {
    qkv_torch_name tn = qkv_torch_name_of(t->name);
    const qkv_st_tensor *found = qkv_safetensors_find(st, tn.name);
    const char *name = tn.name;
    char want[QKV_SHAPE_STR_LEN], got[QKV_SHAPE_STR_LEN];
    if (!found) {
        qkv_set_error("%s: tensor \"%s\" (for qkv's \"%s\") is missing", path, name, t->name);
        return NULL;
    }
    int shape[QKV_MAX_DIMS];
    memcpy(shape, t->shape, sizeof shape);
    shape[0] *= tn.parts;
    if (found->ndim != t->ndim || memcmp(found->shape, shape, (size_t)t->ndim * sizeof(int)) != 0) {
        qkv_set_error("%s: tensor \"%s\" (for qkv's \"%s\") has shape %s, expected %s", path, name, t->name,
                      qkv_dims_str(found->ndim, found->shape, got, sizeof got),
                      qkv_dims_str(t->ndim, shape, want, sizeof want));
        return NULL;
    }
    used[found - st->tensors] = 1;
    *row0 = (size_t)tn.part * t->size;
    return found;
}

int qkv_params_load_torch(const qkv_params *params, const char *path) {
    qkv_safetensors st;
    if (qkv_safetensors_load(path, &st) != 0) return -1;
    const qkv_st_tensor **source = qkv_calloc((size_t)params->n + 1, sizeof *source, "the state_dict's tensor list");
    size_t *offset = qkv_calloc((size_t)params->n + 1, sizeof *offset, "the state_dict's offsets");
    char *used = qkv_calloc((size_t)st.n_tensors + 1, 1, "the state_dict's used tensors");
    int rc = -1;
    for (int i = 0; i < params->n; i++)
        if (!(source[i] = source_of(&st, path, params->items[i], &offset[i], used))) goto done;
    for (int i = 0; i < st.n_tensors; i++)
        if (!used[i]) {
            qkv_set_error("%s: unexpected tensor \"%s\" (no qkv parameter maps to it)", path, st.tensors[i].name);
            goto done;
        }
    for (int i = 0; i < params->n; i++)
        memcpy(params->items[i]->data, source[i]->data + offset[i], params->items[i]->size * sizeof(float));
    rc = 0;
done:
    free(source);
    free(offset);
    free(used);
    qkv_safetensors_free(&st);
    return rc;
}
