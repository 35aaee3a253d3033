/* set_fields.h — the field rows (fields.h) of a set model's shape
 * (layers/set_models.h), shared by the points and maxreg tasks: the same flags,
 * keys and help in both, their defaults the task's. T is the task's config type,
 * whose member `model` is a qkv_set_model_config. */
#ifndef QKV_TASKS_SET_FIELDS_H
#define QKV_TASKS_SET_FIELDS_H

#include "core/error.h"
#include "layers/set_models.h"
#include "train/fields.h"
#include "train/settings.h"

#define QKV_SET_MODEL_FIELDS(T, KIND, WIDTH, HEADS, LAYERS, INDUCING, LAYER_NORM)                                 \
    QKV_CHOICE_FIELD("--model", "model", T, model.kind, qkv_set_model_kind_names, KIND, "set model"),           \
    QKV_SETTING_FIELD(QKV_FIELD_INT, QKV_SETTING_WIDTH, T, model.width, WIDTH),                                 \
    QKV_SETTING_FIELD(QKV_FIELD_INT, QKV_SETTING_HEADS, T, model.n_heads, HEADS),                                \
    QKV_SETTING_FIELD_IN(QKV_FIELD_INT, QKV_SETTING_LAYERS, T, model.n_layers, LAYERS, 1, QKV_SET_MODEL_MAX_LAYERS), \
    QKV_INT_FIELD("--inducing", "inducing", T, model.n_inducing, 1, 4096, INDUCING, "ISAB inducing points"),     \
    QKV_INT_FIELD("--layer-norm", "layer_norm", T, model.layer_norm, 0, 1, LAYER_NORM,                           \
                  "layer norm inside every MAB: 1 on, 0 off")

/* --heads must divide --width: 0, or -1 with qkv_last_error(). */
static inline int qkv_set_model_fields_check(const qkv_set_model_config *m) {
    if (m->width % m->n_heads != 0) return qkv_set_error("--heads %d does not divide --width %d", m->n_heads, m->width), -1;
    return 0;
}

#endif
