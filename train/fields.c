/* fields.c — defaults, descriptions and their parsing back for a table of
 * config fields. See fields.h. */
#include "train/fields.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/number.h"
#include "layers/positions.h"

static void *member(void *config, const qkv_field *f) { return (char *)config + f->offset; }
static const void *const_member(const void *config, const qkv_field *f) { return (const char *)config + f->offset; }

void qkv_fields_defaults(const qkv_field *fields, int n, void *config) {
    for (int i = 0; i < n; i++) {
        const qkv_field *f = &fields[i];
        void *m = member(config, f);
        switch (f->kind) {
        case QKV_FIELD_INT: case QKV_FIELD_CHOICE: case QKV_FIELD_FLAG: *(int *)m = (int)f->fallback; break;
        case QKV_FIELD_LONG: *(long *)m = (long)f->fallback; break;
        case QKV_FIELD_FLOAT: *(float *)m = (float)f->fallback; break;
        case QKV_FIELD_SEED: *(unsigned long long *)m = (unsigned long long)f->fallback; break;
        case QKV_FIELD_HASH: *(uint64_t *)m = 0; break;
        case QKV_FIELD_TEXT: *(const char **)m = f->text; break;
        case QKV_FIELD_POINTER: *(void **)m = NULL; break;
        }
    }
}

size_t qkv_field_size(const qkv_field *f) {
    switch (f->kind) {
    case QKV_FIELD_LONG: return sizeof(long);
    case QKV_FIELD_SEED: return sizeof(unsigned long long);
    case QKV_FIELD_HASH: return sizeof(uint64_t);
    case QKV_FIELD_TEXT: case QKV_FIELD_POINTER: return sizeof(void *);
    case QKV_FIELD_FLOAT: return sizeof(float);
    default: return sizeof(int);
    }
}

/* Whether the member holds the value of `base` (the same member of another
 * config, or NULL: the field's fallback). OPTIONAL fields are then not written. */
static int is_default(const qkv_field *f, const void *m, const void *base) {
    const void *b = base ? const_member(base, f) : NULL;
    switch (f->kind) {
    case QKV_FIELD_FLOAT: return *(const float *)m == (b ? *(const float *)b : (float)f->fallback);
    case QKV_FIELD_LONG: return *(const long *)m == (b ? *(const long *)b : (long)f->fallback);
    case QKV_FIELD_SEED:
        return *(const unsigned long long *)m == (b ? *(const unsigned long long *)b : (unsigned long long)f->fallback);
    case QKV_FIELD_HASH: return *(const uint64_t *)m == (b ? *(const uint64_t *)b : 0);
    case QKV_FIELD_TEXT: {
        const char *text = *(const char *const *)m, *other = b ? *(const char *const *)b : f->text;
        return text == other || (text && other && strcmp(text, other) == 0);
    }
    case QKV_FIELD_POINTER: return *(const void *const *)m == (b ? *(const void *const *)b : NULL);
    default: return *(const int *)m == (b ? *(const int *)b : (int)f->fallback);
    }
}

void qkv_field_format(const qkv_field *f, const void *config, char *out, size_t len) {
    const void *m = const_member(config, f);
    out[0] = '\0';
    switch (f->kind) {
    case QKV_FIELD_INT: case QKV_FIELD_FLAG: snprintf(out, len, "%d", *(const int *)m); break;
    case QKV_FIELD_LONG: snprintf(out, len, "%ld", *(const long *)m); break;
    case QKV_FIELD_FLOAT: snprintf(out, len, "%g", (double)*(const float *)m); break;
    case QKV_FIELD_CHOICE: snprintf(out, len, "%s", f->choices[*(const int *)m]); break;
    case QKV_FIELD_SEED: snprintf(out, len, "%llu", *(const unsigned long long *)m); break;
    case QKV_FIELD_HASH: snprintf(out, len, "%016llx", (unsigned long long)*(const uint64_t *)m); break;
    case QKV_FIELD_TEXT: {
        const char *text = *(const char *const *)m;
        snprintf(out, len, "%s", text ? text : f->none ? f->none : "");
        break;
    }
    case QKV_FIELD_POINTER: break;
    }
}

/* Whether a row goes into descriptions: a key, and a kind that has a value. */
static int described(const qkv_field *f) {
    return f->key && f->kind != QKV_FIELD_FLAG && f->kind != QKV_FIELD_POINTER;
}

void qkv_fields_describe_against(const qkv_field *fields, int n, const void *config, const void *base,
                                 qkv_config_kv *out) {
    int last_at = 0;
    for (int i = 0; i < n; i++) last_at = fields[i].key_at > last_at ? fields[i].key_at : last_at;
    /* passes 1..last_at: the row with that key_at; the last pass, 0: the rows without one */
    for (int pass = last_at ? 1 : 0;; pass = pass == last_at ? 0 : pass + 1) {
        for (int i = 0; i < n; i++) {
            const qkv_field *f = &fields[i];
            if (f->key_at != pass || !described(f)) continue;
            if ((f->options & QKV_FIELD_OPTIONAL) && is_default(f, const_member(config, f), base)) continue;
            char value[QKV_CONFIG_VALUE_LEN];
            qkv_field_format(f, config, value, sizeof value);
            qkv_config_add(out, f->key, "%s", value);
        }
        if (pass == 0) break;
    }
}

void qkv_fields_describe(const qkv_field *fields, int n, const void *config, qkv_config_kv *out) {
    qkv_fields_describe_against(fields, n, config, NULL, out);
}

void qkv_fields_json(const qkv_field *fields, int n, const void *config, int first, qkv_json_out *out) {
    for (int i = 0; i < n; i++) {
        const qkv_field *f = &fields[i];
        if (!described(f)) continue;
        if (!first) qkv_json_out_text(out, ", ");
        first = 0;
        qkv_json_out_string(out, f->key);
        qkv_json_out_text(out, ": ");
        const void *m = const_member(config, f);
        char value[64];
        if (f->kind == QKV_FIELD_TEXT && !*(const char *const *)m) {
            qkv_json_out_text(out, "null");
        } else if (f->kind == QKV_FIELD_TEXT || f->kind == QKV_FIELD_CHOICE) {
            qkv_json_out_string(out, f->kind == QKV_FIELD_TEXT ? *(const char *const *)m : f->choices[*(const int *)m]);
        } else if (f->kind == QKV_FIELD_HASH) {
            qkv_field_format(f, config, value, sizeof value);
            qkv_json_out_string(out, value);
        } else {
            qkv_field_format(f, config, value, sizeof value);
            qkv_json_out_text(out, value);
        }
    }
}

/* Row indices sorted by offset (insertion sort: tables are short). */
static void sort_by_offset(const qkv_field *fields, int n, int *order) {
    for (int i = 0; i < n; i++) {
        int j = i;
        while (j > 0 && fields[order[j - 1]].offset > fields[i].offset) {
            order[j] = order[j - 1];
            j--;
        }
        order[j] = i;
    }
}

int qkv_fields_cover(const qkv_field *fields, int n, size_t size, char *why, size_t len) {
    int *order = malloc((size_t)(n > 0 ? n : 1) * sizeof *order);
    if (!order) return snprintf(why, len, "out of memory"), -1;
    sort_by_offset(fields, n, order);
    size_t at = 0;
    const char *before = "the start";
    int rc = 0;
    for (int k = 0; k < n && rc == 0; k++) {
        const qkv_field *f = &fields[order[k]];
        size_t align = qkv_field_size(f) < 8 ? qkv_field_size(f) : 8, expected = (at + align - 1) / align * align;
        const char *name = f->flag ? f->flag : f->key ? f->key : f->help;
        if (f->offset != expected) {
            snprintf(why, len, "\"%s\": at byte %zu, but \"%s\" ends at %zu: %s", name, f->offset, before, at,
                     f->offset < at ? "two rows overlap" : "a member between them has no row");
            rc = -1;
        }
        at = f->offset + qkv_field_size(f);
        before = name;
    }
    if (rc == 0 && (at > size || size - at >= 8)) {
        snprintf(why, len, "the last row (\"%s\") ends at byte %zu of %zu: a member after it has no row", before, at,
                 size);
        rc = -1;
    }
    free(order);
    return rc;
}

static int bad_value(const char *what, const qkv_field *f, const char *text, const char *expected) {
    qkv_set_error("%s \"%s\" is \"%.40s\" (expected %s)", what, f->key, text, expected);
    return -1;
}

/* One field's text into its member: 0, or -1 with the error. Numbers go through
 * the parser flags use (core/number.h): a checkpoint says "4", never "+4" or "04". */
static int parse_one(const char *what, const qkv_field *f, const char *text, void *m) {
    char expected[160];
    switch (f->kind) {
    case QKV_FIELD_INT: case QKV_FIELD_LONG: {
        long long v;
        snprintf(expected, sizeof expected, "an integer in %.0f..%.0f", f->min, f->max);
        if (qkv_parse_int(text, (long long)f->min, (long long)f->max, &v) != 0)
            return bad_value(what, f, text, expected);
        if (f->kind == QKV_FIELD_INT) *(int *)m = (int)v;
        else *(long *)m = (long)v;
        return 0;
    }
    case QKV_FIELD_FLOAT: {
        float v;
        snprintf(expected, sizeof expected, "a number in [%g, %g]", f->min, f->max);
        if (qkv_parse_float(text, f->min, f->max, &v) != 0) return bad_value(what, f, text, expected);
        *(float *)m = v;
        return 0;
    }
    case QKV_FIELD_SEED: {
        unsigned long long v;
        if (qkv_parse_u64(text, ~0ULL, &v) != 0) return bad_value(what, f, text, "an unsigned 64-bit integer");
        *(unsigned long long *)m = v;
        return 0;
    }
    case QKV_FIELD_HASH: {
        size_t digits = strspn(text, "0123456789abcdef");
        if (digits != 16 || text[16]) return bad_value(what, f, text, "16 lowercase hex digits");
        *(uint64_t *)m = (uint64_t)strtoull(text, NULL, 16);
        return 0;
    }
    case QKV_FIELD_CHOICE:
        for (int c = 0; f->choices[c]; c++)
            if (strcmp(text, f->choices[c]) == 0) {
                *(int *)m = c;
                return 0;
            }
        return bad_value(what, f, text, "one of the names its flag takes");
    case QKV_FIELD_TEXT:
        *(const char **)m = strcmp(text, f->none) == 0 ? NULL : text;
        return 0;
    case QKV_FIELD_FLAG: case QKV_FIELD_POINTER: return 0;
    }
    return 0;
}

int qkv_fields_parse(const qkv_field *fields, int n, const qkv_config_kv *in, void *config) {
    for (int i = 0; i < n; i++) {
        const qkv_field *f = &fields[i];
        if (!described(f)) continue;
        const char *text = qkv_config_get(in, f->key);
        if (!text) {
            if (f->options & QKV_FIELD_OPTIONAL) continue;   /* the default stands */
            qkv_set_error("config \"%s\" is missing", f->key);
            return -1;
        }
        if (parse_one("config", f, text, member(config, f)) != 0) return -1;
    }
    return 0;
}

int qkv_fields_parse_present(const char *what, const qkv_field *fields, int n, const qkv_config_kv *in,
                             void *config) {
    for (int i = 0; i < in->n; i++) {
        const qkv_field *f = qkv_fields_find_key(fields, n, in->key[i]);
        if (!f || !described(f))
            return qkv_set_error("unknown %s key \"%.40s\" (no setting of that name)", what, in->key[i]), -1;
        if (parse_one(what, f, in->value[i], member(config, f)) != 0) return -1;
    }
    return 0;
}

const char *qkv_fields_unknown_key(const qkv_field *fields, int n, const qkv_config_kv *in,
                                   const char *const *also) {
    for (int i = 0; i < in->n; i++) {
        const qkv_field *f = qkv_fields_find_key(fields, n, in->key[i]);
        int known = f && described(f);
        for (int k = 0; also && also[k] && !known; k++) known = strcmp(in->key[i], also[k]) == 0;
        if (!known) return in->key[i];
    }
    return NULL;
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

/* The choice lists with aliases, and the parse that knows them (their tables'). */
static const struct {
    const char *const *names;
    int (*parse)(const char *text);
} aliased_choices[] = {
    {qkv_pos_kind_names, qkv_pos_kind_parse},
};

int qkv_choice_parse(const char *const *choices, const char *text) {
    for (int c = 0; choices[c]; c++)
        if (strcmp(text, choices[c]) == 0) return c;
    for (size_t i = 0; i < sizeof aliased_choices / sizeof *aliased_choices; i++)
        if (aliased_choices[i].names == choices) return aliased_choices[i].parse(text);
    return -1;
}
