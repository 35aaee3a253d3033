/* wire.c — see wire.h. */
#include "web/wire.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"

#define MAX_REQUEST ((size_t)16 << 20)
#define MAX_DEPTH 8

static int fail(const qkv_web_request *r, const char *key, const char *what) {
    qkv_set_error("qkv web: %s: \"%s\" must be %s", r->call, key, what);
    return -1;
}

int qkv_web_request_parse(qkv_web_request *r, const char *call, const char *json) {
    memset(r, 0, sizeof *r);
    r->call = call;
    size_t len = json ? strlen(json) : 0;
    if (len > MAX_REQUEST) {
        qkv_set_error("qkv web: %s: a request of %zu bytes (at most %zu)", call, len, MAX_REQUEST);
        return -1;
    }
    if (qkv_json_parse(&r->doc, (const unsigned char *)(json ? json : ""), len, MAX_DEPTH) != 0) {
        qkv_set_error("qkv web: %s: not JSON: %s", call, r->doc.error);
        qkv_json_free(&r->doc);
        return -1;
    }
    if (r->doc.tokens[0].type != QKV_JSON_OBJECT) {
        qkv_set_error("qkv web: %s: the request must be a JSON object, not %s", call,
                      qkv_json_type_name(r->doc.tokens[0].type));
        qkv_json_free(&r->doc);
        return -1;
    }
    return 0;
}

void qkv_web_request_free(qkv_web_request *r) { qkv_json_free(&r->doc); }

int qkv_web_find(const qkv_web_request *r, const char *key) { return qkv_web_find_in(r, 0, key); }

int qkv_web_find_in(const qkv_web_request *r, int object, const char *key) {
    const qkv_json_token *t = r->doc.tokens;
    int found = -1;
    for (uint32_t k = 0, j = (uint32_t)object + 1; k < t[object].count; k++, j = t[j + 1].next)
        if (qkv_json_equals(&r->doc, j, key)) {
            if (found >= 0) return -2;
            found = (int)j + 1;
        }
    return found;
}

/* The value's token, or -1 absent, or -2 (error set) given twice. */
static int value_of(const qkv_web_request *r, const char *key) {
    int i = qkv_web_find(r, key);
    if (i == -2) {
        qkv_set_error("qkv web: %s: \"%s\" given twice", r->call, key);
        return -2;
    }
    return i;
}

/* The number token i's text as a double (the parser made it valid JSON). */
static double number_at(const qkv_web_request *r, int i, int *integral) {
    const qkv_json_token *t = &r->doc.tokens[i];
    char text[64];
    size_t n = t->len < sizeof text - 1 ? t->len : sizeof text - 1;
    memcpy(text, r->doc.text + t->start, n);
    text[n] = '\0';
    if (integral) *integral = strcspn(text, ".eE") == n;
    return strtod(text, NULL);
}

int qkv_web_get_int(const qkv_web_request *r, const char *key, long long lo, long long hi, long long *out) {
    int i = value_of(r, key), integral = 0;
    if (i < 0) return i == -1 ? 0 : -1;
    double x = r->doc.tokens[i].type == QKV_JSON_NUMBER ? number_at(r, i, &integral) : NAN;
    if (!integral || !(x >= (double)lo && x <= (double)hi)) {
        char what[96];
        snprintf(what, sizeof what, "an integer in [%lld, %lld]", lo, hi);
        return fail(r, key, what);
    }
    *out = (long long)x;
    return 0;
}

int qkv_web_get_number(const qkv_web_request *r, const char *key, double *out) {
    int i = value_of(r, key);
    if (i < 0) return i == -1 ? 0 : -1;
    if (r->doc.tokens[i].type != QKV_JSON_NUMBER) return fail(r, key, "a number");
    *out = number_at(r, i, NULL);
    return 0;
}

int qkv_web_get_bool(const qkv_web_request *r, const char *key, int *out) {
    int i = value_of(r, key);
    if (i < 0) return i == -1 ? 0 : -1;
    int type = r->doc.tokens[i].type;
    if (type != QKV_JSON_TRUE && type != QKV_JSON_FALSE) return fail(r, key, "true or false");
    *out = type == QKV_JSON_TRUE;
    return 0;
}

char *qkv_web_decode(const qkv_web_request *r, uint32_t i) {
    size_t cap = r->doc.tokens[i].len + 1;
    char *s = malloc(cap);
    if (!s) qkv_fatal("web: out of memory");
    qkv_json_decode(&r->doc, i, s, cap);
    return s;
}

int qkv_web_get_string(const qkv_web_request *r, const char *key, char **out) {
    *out = NULL;
    int i = value_of(r, key);
    if (i < 0) return i == -1 ? 0 : -1;
    if (r->doc.tokens[i].type != QKV_JSON_STRING) return fail(r, key, "a string");
    *out = qkv_web_decode(r, (uint32_t)i);
    return 0;
}

/* Appends the number token i's own text (JSON's number syntax is a subset of the
 * command line's, core/number.h, but for a leading '+', which JSON has not). */
static void append_number(qkv_json_out *o, const qkv_web_request *r, uint32_t i) {
    qkv_json_out_bytes(o, (const char *)r->doc.text + r->doc.tokens[i].start, r->doc.tokens[i].len);
}

int qkv_web_get_rows(const qkv_web_request *r, const char *key, char **out) {
    *out = NULL;
    int i = value_of(r, key);
    if (i < 0) return i == -1 ? 0 : -1;
    return qkv_web_rows_at(r, i, key, out);
}

int qkv_web_rows_at(const qkv_web_request *r, int i, const char *key, char **out) {
    *out = NULL;
    const qkv_json_token *t = r->doc.tokens;
    if (t[i].type == QKV_JSON_STRING) {
        *out = qkv_web_decode(r, (uint32_t)i);
        return 0;
    }
    const char *what = "rows of numbers: \"1,0; 0,1\" or [[1,0],[0,1]]";
    if (t[i].type != QKV_JSON_ARRAY) return fail(r, key, what);
    qkv_json_out o = {0};
    qkv_json_out_text(&o, "");
    for (uint32_t k = 0, row = (uint32_t)i + 1; k < t[i].count; k++, row = t[row].next) {
        if (t[row].type != QKV_JSON_ARRAY) {
            qkv_json_out_free(&o);
            return fail(r, key, what);
        }
        if (k) qkv_json_out_text(&o, "; ");
        for (uint32_t c = 0, x = row + 1; c < t[row].count; c++, x = t[x].next) {
            if (t[x].type != QKV_JSON_NUMBER) {
                qkv_json_out_free(&o);
                return fail(r, key, what);
            }
            if (c) qkv_json_out_text(&o, ",");
            append_number(&o, r, x);
        }
    }
    if (o.failed) qkv_fatal("web: out of memory");
    *out = o.data;
    return 0;
}

static void push(int *argc, char ***argv, int *cap, char *s) {
    if (*argc + 2 > *cap) {
        *cap = *cap ? 2 * *cap : 16;
        *argv = realloc(*argv, (size_t)*cap * sizeof **argv);
        if (!*argv) qkv_fatal("web: out of memory");
    }
    (*argv)[(*argc)++] = s;
    (*argv)[*argc] = NULL;
}

static char *copy_text(const char *s, size_t n) {
    char *c = malloc(n + 1);
    if (!c) qkv_fatal("web: out of memory");
    memcpy(c, s, n);
    c[n] = '\0';
    return c;
}

int qkv_web_get_argv(const qkv_web_request *r, int *argc, char ***argv) {
    *argc = 0;
    *argv = NULL;
    int cap = 0;
    push(argc, argv, &cap, NULL);   /* an empty, NULL-terminated list */
    *argc = 0;
    const qkv_json_token *t = r->doc.tokens;
    int a = value_of(r, "args"), f = value_of(r, "flags");
    if (a == -2 || f == -2) return -1;
    if (a >= 0) {
        if (t[a].type != QKV_JSON_ARRAY) return fail(r, "args", "an array of strings: [\"--steps\", \"20\"]");
        for (uint32_t k = 0, j = (uint32_t)a + 1; k < t[a].count; k++, j = t[j].next) {
            if (t[j].type == QKV_JSON_STRING) push(argc, argv, &cap, qkv_web_decode(r, j));
            else if (t[j].type == QKV_JSON_NUMBER) push(argc, argv, &cap, copy_text((const char *)r->doc.text + t[j].start, t[j].len));
            else return fail(r, "args", "an array of strings: [\"--steps\", \"20\"]");
        }
    }
    if (f >= 0) {
        const char *what = "an object of flags: {\"--steps\": 20, \"--quiet\": true}";
        if (t[f].type != QKV_JSON_OBJECT) return fail(r, "flags", what);
        for (uint32_t k = 0, j = (uint32_t)f + 1; k < t[f].count; k++, j = t[j + 1].next) {
            uint32_t v = j + 1;
            int type = t[v].type;
            if (type == QKV_JSON_FALSE || type == QKV_JSON_NULL) continue;
            if (type == QKV_JSON_OBJECT || type == QKV_JSON_ARRAY) return fail(r, "flags", what);
            push(argc, argv, &cap, qkv_web_decode(r, j));
            if (type == QKV_JSON_STRING) push(argc, argv, &cap, qkv_web_decode(r, v));
            else if (type == QKV_JSON_NUMBER) push(argc, argv, &cap, copy_text((const char *)r->doc.text + t[v].start, t[v].len));
        }
    }
    return 0;
}

void qkv_web_argv_free(int argc, char **argv) {
    for (int i = 0; i < argc; i++) free(argv[i]);
    free(argv);
}

/* ---- the reply ----------------------------------------------------------------- */

static qkv_json_out reply;

qkv_json_out *qkv_web_reply(void) {
    reply.len = 0;
    reply.failed = 0;
    qkv_json_out_text(&reply, "{\"ok\":true");
    return &reply;
}

const char *qkv_web_refuse(const char *line) {
    reply.len = 0;
    reply.failed = 0;
    qkv_json_out_text(&reply, "{\"ok\":false,\"error\":");
    qkv_json_out_string(&reply, line);
    qkv_json_out_text(&reply, "}");
    return reply.failed ? "{\"ok\":false,\"error\":\"qkv web: out of memory\"}" : reply.data;
}

const char *qkv_web_reply_end(void) {
    qkv_json_out_text(&reply, "}");
    return reply.failed ? qkv_web_refuse("qkv web: out of memory (the answer)") : reply.data;
}

const char *qkv_web_refuse_error(const char *prefix) {
    char line[1200];
    snprintf(line, sizeof line, "%s%s", prefix ? prefix : "", qkv_last_error());
    return qkv_web_refuse(line);
}

void qkv_web_key(qkv_json_out *o, const char *key) {
    qkv_json_out_text(o, ",");
    qkv_json_out_string(o, key);
    qkv_json_out_text(o, ":");
}

void qkv_web_number(qkv_json_out *o, double x) {
    char text[40];
    if (isnan(x)) snprintf(text, sizeof text, "\"NaN\"");
    else if (isinf(x)) snprintf(text, sizeof text, x > 0 ? "\"Infinity\"" : "\"-Infinity\"");
    else snprintf(text, sizeof text, "%.9g", x);
    qkv_json_out_text(o, text);
}

void qkv_web_int(qkv_json_out *o, long long x) {
    char text[32];
    snprintf(text, sizeof text, "%lld", x);
    qkv_json_out_text(o, text);
}

void qkv_web_text(qkv_json_out *o, const char *key, const char *s) {
    qkv_web_key(o, key);
    if (s) qkv_json_out_string(o, s);
    else qkv_json_out_text(o, "null");
}

void qkv_web_settings(qkv_json_out *o, const char *key, const qkv_config_kv *kv) {
    qkv_web_key(o, key);
    qkv_json_out_text(o, "{");
    for (int i = 0; kv && i < kv->n; i++) {
        if (i) qkv_json_out_text(o, ",");
        qkv_json_out_string(o, kv->key[i]);
        qkv_json_out_text(o, ":");
        qkv_json_out_string(o, kv->value[i]);
    }
    qkv_json_out_text(o, "}");
}

void qkv_web_floats(qkv_json_out *o, const float *x, size_t n) {
    qkv_json_out_text(o, "[");
    for (size_t i = 0; i < n; i++) {
        if (i) qkv_json_out_text(o, ",");
        qkv_web_number(o, (double)x[i]);
    }
    qkv_json_out_text(o, "]");
}

void qkv_web_ints(qkv_json_out *o, const int *x, int n) {
    qkv_json_out_text(o, "[");
    for (int i = 0; i < n; i++) {
        if (i) qkv_json_out_text(o, ",");
        qkv_web_int(o, x[i]);
    }
    qkv_json_out_text(o, "]");
}

void qkv_web_tensor(qkv_json_out *o, const char *name, int ndim, const int *shape, const float *data) {
    size_t n = 1;
    for (int d = 0; d < ndim; d++) n *= (size_t)shape[d];
    qkv_json_out_text(o, "{");
    if (name) {
        qkv_json_out_text(o, "\"name\":");
        qkv_json_out_string(o, name);
        qkv_json_out_text(o, ",");
    }
    qkv_json_out_text(o, "\"shape\":");
    qkv_web_ints(o, shape, ndim);
    qkv_json_out_text(o, ",\"data\":");
    qkv_web_floats(o, data, n);
    qkv_json_out_text(o, "}");
}
