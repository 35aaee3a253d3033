/* task.c — metrics and config descriptions. See task.h. */
#include "train/task.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/number.h"

void qkv_metrics_set(qkv_metrics *m, const char *key, double value) {
    for (int i = 0; i < m->n; i++)
        if (strcmp(m->key[i], key) == 0) { m->value[i] = value; return; }
    QKV_CHECK(m->n < QKV_MAX_METRICS, "metrics: more than %d metrics", QKV_MAX_METRICS);
    m->key[m->n] = key;
    m->value[m->n++] = value;
}

int qkv_argmax(const float *row, int n) {
    int best = 0;
    for (int i = 1; i < n; i++)
        if (row[i] > row[best]) best = i;
    return best;
}

const double *qkv_metrics_get(const qkv_metrics *m, const char *key) {
    for (int i = 0; i < m->n; i++)
        if (strcmp(m->key[i], key) == 0) return &m->value[i];
    return NULL;
}

void qkv_config_add(qkv_config_kv *c, const char *key, const char *fmt, ...) {
    QKV_CHECK(c->n < QKV_MAX_CONFIG && strlen(key) < sizeof c->key[0], "config: cannot add %s", key);
    strcpy(c->key[c->n], key);
    va_list ap;
    va_start(ap, fmt);
    int len = vsnprintf(c->value[c->n], sizeof c->value[0], fmt, ap);
    va_end(ap);
    QKV_CHECK(len >= 0 && (size_t)len < sizeof c->value[0], "config: the value of %s is %d bytes, more than %zu", key,
              len, sizeof c->value[0] - 1);
    c->n++;
}

const char *qkv_config_get(const qkv_config_kv *c, const char *key) {
    for (int i = 0; i < c->n; i++)
        if (strcmp(c->key[i], key) == 0) return c->value[i];
    return NULL;
}

int qkv_config_get_int(const qkv_config_kv *c, const char *key, long long lo, long long hi, long long *out) {
    const char *text = qkv_config_get(c, key);
    long long v = 0;
    if (qkv_parse_int(text, lo, hi, &v) != 0) {   /* NULL (missing) fails too */
        qkv_set_error("config \"%s\" is %s%s%s (expected an integer in %lld..%lld)", key, text ? "\"" : "missing",
                      text ? text : "", text ? "\"" : "", lo, hi);
        return -1;
    }
    *out = v;
    return 0;
}

