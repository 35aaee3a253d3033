/* torch_names.c — see torch_names.h. */
#include "train/torch_names.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "core/safetensors.h"

/* Segment renames, matched on whole dotted segments (multi-segment entries too). */
static const struct { const char *qkv, *torch; } renames[] = {
    {"ln1", "norm1"},         {"ln2", "norm2"},         {"ln3", "norm3"}, {"ln_final", "norm"},
    {"attn", "self_attn"},    {"cross_attn", "multihead_attn"},          {"ffn.fc1", "linear1"},
    {"ffn.fc2", "linear2"},   {"wo", "out_proj"},
};
/* Stacks whose numbered blocks PyTorch keeps in a `layers` list. */
static const char *const stacks[] = {"enc", "dec"};
/* The packed projections: wq, wk, wv are the thirds of in_proj_*, in this order. */
static const char *const projections[] = {"wq", "wk", "wv"};
static const char *const whole_projections[] = {"q_proj_weight", "k_proj_weight", "v_proj_weight"};

#define COUNT(a) ((int)(sizeof a / sizeof a[0]))

/* Whether s starts with the dotted segments seg, ending at a '.' or the end. */
static size_t segments_match(const char *s, const char *seg) {
    size_t n = strlen(seg);
    return strncmp(s, seg, n) == 0 && (s[n] == '.' || s[n] == '\0') ? n : 0;
}

static int is_number(const char *s, size_t n) {
    if (n == 0) return 0;
    for (size_t i = 0; i < n; i++) if (!isdigit((unsigned char)s[i])) return 0;
    return 1;
}

static void append(char *out, size_t *len, const char *s, size_t n) {
    QKV_CHECK(*len + n + 2 < QKV_NAME_MAX, "torch_name: the name grows past %d characters", QKV_NAME_MAX);
    if (*len) out[(*len)++] = '.';
    memcpy(out + *len, s, n);
    *len += n;
    out[*len] = '\0';
}

qkv_torch_name qkv_torch_name_of(const char *qkv_name) {
    qkv_torch_name r = {"", 0, 1, ""};
    size_t len = 0;
    const char *s = qkv_name, *prev = NULL;
    size_t prev_n = 0;
    while (*s) {
        size_t n = strcspn(s, "."), m = 0;
        const char *next = s[n] ? s + n + 1 : s + n;
        /* <mha>.wq.weight -> <mha>.in_proj_weight, a third of it */
        for (int p = 0; p < COUNT(projections) && !m; p++)
            if (segments_match(s, projections[p]) && (!strcmp(next, "weight") || !strcmp(next, "bias"))) {
                char packed[32];
                snprintf(packed, sizeof packed, "in_proj_%s", next);
                if (!strcmp(next, "weight")) {
                    memcpy(r.alt, r.name, len + 1);
                    size_t alt_len = len;
                    append(r.alt, &alt_len, whole_projections[p], strlen(whole_projections[p]));
                }
                append(r.name, &len, packed, strlen(packed));
                r.part = p;
                r.parts = 3;
                return r;
            }
        for (int k = 0; k < COUNT(stacks) && prev; k++)
            if (prev_n == strlen(stacks[k]) && !strncmp(prev, stacks[k], prev_n) && is_number(s, n))
                append(r.name, &len, "layers", 6);
        for (int k = 0; k < COUNT(renames) && !m; k++)
            if ((m = segments_match(s, renames[k].qkv))) append(r.name, &len, renames[k].torch, strlen(renames[k].torch));
        if (!m) append(r.name, &len, s, m = n);
        prev = s;
        prev_n = n;
        s += m;
        if (*s == '.') s++;
    }
    return r;
}

/* The source of parameter t: the tensor and its first row (or NULL with an error). */
static const qkv_st_tensor *source_of(const qkv_safetensors *st, const char *path, const qkv_tensor *t,
                                      size_t *row0, char *used) {
    qkv_torch_name tn = qkv_torch_name_of(t->name);
    const qkv_st_tensor *found = qkv_safetensors_find(st, tn.name);
    if (!found && tn.alt[0] && (found = qkv_safetensors_find(st, tn.alt))) tn = (qkv_torch_name){"", 0, 1, ""};
    const char *name = found ? found->name : tn.name;
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
