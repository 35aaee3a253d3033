/* fields.c — defaults, descriptions and their parsing back for a table of
 * config fields. See fields.h. */
#include "train/tasks/fields.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"

static void *member(void *config, const qkv_field *f) { return (char *)config + f->offset; }
static const void *const_member(const void *config, const qkv_field *f) { return (const char *)config + f->offset; }

void qkv_fields_defaults(const qkv_field *fields, int n, void *config) {
    for (int i = 0; i < n; i++) {
        const qkv_field *f = &fields[i];
        void *m = member(config, f);
        switch (f->kind) {
        case QKV_FIELD_INT: case QKV_FIELD_CHOICE: case QKV_FIELD_FLAG: *(int *)m = (int)f->fallback; break;
        case QKV_FIELD_FLOAT: *(float *)m = (float)f->fallback; break;
        case QKV_FIELD_SEED: *(unsigned long long *)m = (unsigned long long)f->fallback; break;
        case QKV_FIELD_TEXT: *(const char **)m = NULL; break;
        }
    }
}

/* Whether the member holds the field's default (OPTIONAL fields are then not written). */
static int is_default(const qkv_field *f, const void *m) {
    switch (f->kind) {
    case QKV_FIELD_FLOAT: return *(const float *)m == (float)f->fallback;
    case QKV_FIELD_SEED: return *(const unsigned long long *)m == (unsigned long long)f->fallback;
    case QKV_FIELD_TEXT: return *(const char *const *)m == NULL;
    default: return *(const int *)m == (int)f->fallback;
    }
}

void qkv_fields_describe(const qkv_field *fields, int n, const void *config, qkv_config_kv *out) {
    for (int i = 0; i < n; i++) {
        const qkv_field *f = &fields[i];
        const void *m = const_member(config, f);
        if (!f->key || f->kind == QKV_FIELD_FLAG || ((f->options & QKV_FIELD_OPTIONAL) && is_default(f, m))) continue;
        switch (f->kind) {
        case QKV_FIELD_INT: qkv_config_add(out, f->key, "%d", *(const int *)m); break;
        case QKV_FIELD_FLOAT: qkv_config_add(out, f->key, "%g", (double)*(const float *)m); break;
        case QKV_FIELD_CHOICE: qkv_config_add(out, f->key, "%s", f->choices[*(const int *)m]); break;
        case QKV_FIELD_SEED: qkv_config_add(out, f->key, "%llu", *(const unsigned long long *)m); break;
        case QKV_FIELD_TEXT: {
            const char *text = *(const char *const *)m;
            qkv_config_add(out, f->key, "%s", text ? text : f->none);
            break;
        }
        case QKV_FIELD_FLAG: break;
        }
    }
}

static int bad_value(const qkv_field *f, const char *text, const char *expected) {
    qkv_set_error("config \"%s\" is \"%.40s\" (expected %s)", f->key, text, expected);
    return -1;
}

/* One field's text into its member: 0, or -1 with the error. */
static int parse_one(const qkv_field *f, const char *text, void *m) {
    char *end = NULL, expected[160];
    errno = 0;
    switch (f->kind) {
    case QKV_FIELD_INT: {
        long long v = strtoll(text, &end, 10);
        snprintf(expected, sizeof expected, "an integer in %.0f..%.0f", f->min, f->max);
        if (errno || end == text || *end || v < f->min || v > f->max) return bad_value(f, text, expected);
        *(int *)m = (int)v;
        return 0;
    }
    case QKV_FIELD_FLOAT: {
        float v = strtof(text, &end);
        snprintf(expected, sizeof expected, "a number in [%g, %g]", f->min, f->max);
        if (errno || end == text || *end || !(v >= f->min && v <= f->max)) return bad_value(f, text, expected);
        *(float *)m = v;
        return 0;
    }
    case QKV_FIELD_SEED: {
        unsigned long long v = strtoull(text, &end, 10);
        if (errno || end == text || *end || text[0] == '-') return bad_value(f, text, "an unsigned 64-bit integer");
        *(unsigned long long *)m = v;
        return 0;
    }
    case QKV_FIELD_CHOICE:
        for (int c = 0; f->choices[c]; c++)
            if (strcmp(text, f->choices[c]) == 0) {
                *(int *)m = c;
                return 0;
            }
        return bad_value(f, text, "one of the names its flag takes");
    case QKV_FIELD_TEXT:
        *(const char **)m = strcmp(text, f->none) == 0 ? NULL : text;
        return 0;
    case QKV_FIELD_FLAG: return 0;
    }
    return 0;
}

int qkv_fields_parse(const qkv_field *fields, int n, const qkv_config_kv *in, void *config) {
    for (int i = 0; i < n; i++) {
        const qkv_field *f = &fields[i];
        if (!f->key || f->kind == QKV_FIELD_FLAG) continue;
        const char *text = qkv_config_get(in, f->key);
        if (!text) {
            if (f->options & QKV_FIELD_OPTIONAL) continue;   /* the default stands */
            qkv_set_error("config \"%s\" is missing", f->key);
            return -1;
        }
        if (parse_one(f, text, member(config, f)) != 0) return -1;
    }
    return 0;
}

int qkv_fields_check_text(const qkv_field *fields, int n, const void *config) {
    for (int i = 0; i < n; i++) {
        const char *text = fields[i].kind == QKV_FIELD_TEXT ? *(const char *const *)const_member(config, &fields[i]) : NULL;
        if (text && strlen(text) >= QKV_CONFIG_VALUE_LEN)
            return qkv_set_error("%s: %zu bytes, more than a checkpoint holds (%d)", fields[i].flag, strlen(text),
                                 QKV_CONFIG_VALUE_LEN - 1), -1;
    }
    return 0;
}

const qkv_field *qkv_fields_find_key(const qkv_field *fields, int n, const char *key) {
    for (int i = 0; i < n; i++)
        if (fields[i].key && strcmp(fields[i].key, key) == 0) return &fields[i];
    return NULL;
}
