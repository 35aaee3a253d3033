/* registry.c — the list of task kinds and what every kind shares: configs with
 * their defaults, descriptions, reopening a checkpoint. See registry.h. */
#include "train/tasks/registry.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "data/identity.h"
#include "train/checkpoint.h"
#include "train/trainer_fields.h"

#define QKV_TASK_KIND_ENTRY(name) &qkv_task_kind_##name,
static const qkv_task_kind *const kinds[] = {QKV_TASK_KINDS(QKV_TASK_KIND_ENTRY)};
#define N_KINDS ((int)(sizeof kinds / sizeof kinds[0]))

int qkv_task_kind_count(void) { return N_KINDS; }

const qkv_task_kind *qkv_task_kind_at(int i) { return i >= 0 && i < N_KINDS ? kinds[i] : NULL; }

const qkv_task_kind *qkv_task_kind_find(const char *name) {
    for (int i = 0; i < N_KINDS; i++)
        if (strcmp(kinds[i]->name, name) == 0) return kinds[i];
    return NULL;
}

const char *qkv_task_kind_names(void) {
    static char names[256];
    if (!names[0])
        for (int i = 0; i < N_KINDS; i++)
            snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", i ? ", " : "", kinds[i]->name);
    return names;
}

void *qkv_task_config_new(const qkv_task_kind *kind) {
    void *config = qkv_calloc(1, kind->config_size, "a task config");
    kind->defaults(config);
    return config;
}

void qkv_task_kind_describe(const qkv_task_kind *kind, const void *config, qkv_config_kv *out) {
    if (!qkv_fields_find_key(kind->fields, kind->n_fields, "task")) qkv_config_add(out, "task", "%s", kind->name);
    qkv_fields_describe(kind->fields, kind->n_fields, config, out);
}

unsigned long long qkv_task_config_seed(const qkv_task_kind *kind, const void *config) {
    const qkv_field *f = qkv_fields_find_key(kind->fields, kind->n_fields, "seed");
    return f && f->kind == QKV_FIELD_SEED ? *(const unsigned long long *)((const char *)config + f->offset) : 0;
}

/* Prefixes qkv_last_error() with "path: ". */
static int fail_with_path(const char *path) {
    char reason[512];
    snprintf(reason, sizeof reason, "%s", qkv_last_error());
    qkv_set_error("%s: %s", path, reason);
    return -1;
}

int qkv_task_config_parse(const char *path, const qkv_config_kv *description, const char *data,
                          const qkv_task_kind **kind_out, void **config_out) {
    *config_out = NULL;
    const char *name = qkv_config_get(description, "task");
    const qkv_task_kind *kind = *kind_out = name ? qkv_task_kind_find(name) : NULL;
    if (!kind) {
        qkv_set_error("%s: a checkpoint of task \"%.40s\", not one of qkv's (%s)", path, name ? name : "",
                      qkv_task_kind_names());
        return -1;
    }
    static const char *const task_key[] = {"task", NULL};
    const char *unknown = qkv_fields_unknown_key(kind->fields, kind->n_fields, description, task_key);
    if (unknown) {
        qkv_set_error("%s: unknown config key \"%.40s\" (no setting of a %s model)", path, unknown, kind->name);
        return -1;
    }
    void *config = qkv_task_config_new(kind);
    int rc = qkv_fields_parse(kind->fields, kind->n_fields, description, config) != 0 ? fail_with_path(path) : 0;
    if (rc == 0 && data) {
        const qkv_field *data_field = qkv_fields_find_key(kind->fields, kind->n_fields, "data");
        if (!data_field || data_field->kind != QKV_FIELD_TEXT) {
            qkv_set_error("--data: %s is a %s model, trained on data it makes itself", path, kind->name);
            rc = -1;
        } else {
            *(const char **)((char *)config + data_field->offset) = data;
            for (int i = 0; i < kind->n_fields; i++)   /* facts about the set it was trained on */
                if (kind->fields[i].options & QKV_FIELD_OF_DATA) qkv_fields_defaults(&kind->fields[i], 1, config);
        }
    }
    if (rc == 0 && kind->check(config, NULL) != 0) rc = fail_with_path(path);   /* every combination the layers stop on */
    if (rc != 0) free(config);
    else *config_out = config;
    return rc;
}

int qkv_task_checkpoint_open(const char *path, const char *data, qkv_task_checkpoint *out) {
    memset(out, 0, sizeof *out);
    if (qkv_checkpoint_open(path, &out->file) != 0) return -1;   /* names path */
    if (qkv_task_config_parse(path, out->file.config, data, &out->kind, &out->config) != 0 ||
        (qkv_trainer_check_settings(out->file.settings, &out->kind->trainer) != 0 && fail_with_path(path))) {
        qkv_task_checkpoint_close(out);
        return -1;
    }
    return 0;
}

/* The member of config at the field with key, or NULL when the kind has none. */
static void *member_of(const qkv_task_kind *kind, void *config, const char *key, qkv_field_kind field_kind) {
    const qkv_field *f = qkv_fields_find_key(kind->fields, kind->n_fields, key);
    return f && f->kind == field_kind ? (char *)config + f->offset : NULL;
}

/* The config's data set found by its identity (registry.h): 0, or -1 with the error. */
static int find_data(qkv_task_checkpoint *ckpt) {
    const char **data = member_of(ckpt->kind, ckpt->config, "data", QKV_FIELD_TEXT);
    const long *bytes = member_of(ckpt->kind, ckpt->config, "data_bytes", QKV_FIELD_LONG);
    const uint64_t *hash = member_of(ckpt->kind, ckpt->config, "data_hash", QKV_FIELD_HASH);
    if (!data || !*data || !bytes || !hash || *bytes == 0) return 0;   /* no set, or no identity: as before */
    qkv_data_identity want = {*bytes, *hash};
    char found[QKV_CONFIG_VALUE_LEN];
    if (qkv_data_find(*data, ckpt->file.path, &want, found, sizeof found) != 0) return -1;
    if (strcmp(found, *data) != 0) {
        free(ckpt->data_path);
        *data = ckpt->data_path = qkv_strdup(found, "the data set's path");
    }
    return 0;
}

qkv_task *qkv_task_checkpoint_create(qkv_task_checkpoint *ckpt, int for_eval) {
    if (find_data(ckpt) != 0) {
        fail_with_path(ckpt->file.path);
        return NULL;
    }
    qkv_task *task = qkv_task_create(ckpt->kind, ckpt->config, for_eval, 0);   /* its data judged first */
    if (!task) {
        fail_with_path(ckpt->file.path);
        return NULL;
    }
    if (qkv_checkpoint_restore(&ckpt->file, task->params, NULL, &ckpt->step, NULL) != 0) {   /* names path */
        ckpt->kind->destroy(task);
        return NULL;
    }
    return task;
}

int qkv_task_checkpoint_of(const qkv_task_checkpoint *ckpt, const qkv_task_kind *kind, const char *what) {
    if (kind && ckpt->kind != kind) {
        qkv_set_error("%s: a %s checkpoint, not one of qkv train %s", ckpt->file.path, ckpt->kind->name, what);
        return -1;
    }
    if (!kind && ckpt->kind->create != qkv_task_kind_reverse.create) {   /* reverse, copy and sort share create */
        qkv_set_error("%s: a %s checkpoint, not one of %s", ckpt->file.path, ckpt->kind->name, what);
        return -1;
    }
    return 0;
}

void qkv_task_checkpoint_close(qkv_task_checkpoint *ckpt) {
    free(ckpt->config);
    free(ckpt->data_path);
    ckpt->config = NULL;
    ckpt->data_path = NULL;
    qkv_checkpoint_close(&ckpt->file);
}
