/* tokens.c — see tokens.h. */
#include "web/tokens.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/number.h"
#include "core/ops/ops.h"

/* "3 1 4" or [3,1,4] -> ids; -1 with the message. */
static int read_ids(qkv_web_tokens *t, const qkv_web_request *r, int i) {
    const qkv_json_token *tok = r->doc.tokens;
    long long v = 0;
    t->n = 0;
    if (tok[i].type == QKV_JSON_STRING) {
        char *text = qkv_web_decode(r, (uint32_t)i), *p = text;
        int rc = 0;
        for (;;) {
            while (*p == ' ' || *p == ',' || *p == '\t') p++;
            if (!*p) break;
            size_t len = strcspn(p, " ,\t");
            char one[24];
            snprintf(one, sizeof one, "%.*s", (int)(len < sizeof one ? len : sizeof one - 1), p);
            if (len >= sizeof one || qkv_parse_int(one, 0, t->vocab - 1, &v) != 0) {
                qkv_set_error("qkv web: attention: \"tokens\": '%.20s' is not a symbol 0..%d", p, t->vocab - 1);
                rc = -1;
                break;
            }
            if (t->n == QKV_EXPLAIN_MAX_T) {
                qkv_set_error("qkv web: attention: \"tokens\": more than %d symbols", QKV_EXPLAIN_MAX_T);
                rc = -1;
                break;
            }
            t->ids[t->n++] = (int32_t)v;
            p += len;
        }
        free(text);
        if (rc) return rc;
    } else if (tok[i].type == QKV_JSON_ARRAY) {
        for (uint32_t k = 0, j = (uint32_t)i + 1; k < tok[i].count; k++, j = tok[j].next) {
            uint64_t u = 0;
            if (qkv_json_uint(&r->doc, j, &u) != QKV_JSON_UINT_OK || u >= (uint64_t)t->vocab) {
                qkv_set_error("qkv web: attention: \"tokens\": element %u is not a symbol 0..%d", k, t->vocab - 1);
                return -1;
            }
            if (t->n == QKV_EXPLAIN_MAX_T) {
                qkv_set_error("qkv web: attention: \"tokens\": more than %d symbols", QKV_EXPLAIN_MAX_T);
                return -1;
            }
            t->ids[t->n++] = (int32_t)u;
        }
    } else {
        qkv_set_error("qkv web: attention: \"tokens\" must be symbols: \"3 1 4\" or [3,1,4]");
        return -1;
    }
    if (t->n == 0) {
        qkv_set_error("qkv web: attention: \"tokens\": no symbols (give e.g. \"3 1 4\")");
        return -1;
    }
    return 0;
}

static void draw(qkv_tensor *w, qkv_rng *rng, float std) {
    for (size_t i = 0; i < w->size; i++) w->data[i] = std * qkv_rng_normal(rng);
}

/* An edited weight: "weights": {name: rows} of exactly w's shape. */
static int edit(const qkv_web_request *r, int weights, const char *name, qkv_tensor *w) {
    int i = qkv_web_find_in(r, weights, name);
    if (i < 0 || !w) return i == -2 ? (qkv_set_error("qkv web: attention: \"weights.%s\" given twice", name), -1) : 0;
    char what[32], *text = NULL;
    snprintf(what, sizeof what, "weights.%s", name);
    if (qkv_web_rows_at(r, i, what, &text) != 0) return -1;
    int rows = w->shape[0], cols = w->shape[1], got_rows = 0, got_cols = 0;
    float *values = malloc(w->size * sizeof(float));
    if (!values) qkv_fatal("web: out of memory");
    int rc = qkv_explain_parse_matrix(what, text, values, rows, cols, &got_rows, &got_cols);
    if (rc == 0 && (got_rows != rows || got_cols != cols)) {
        qkv_set_error("%s: [%d,%d] given, the layer's is [%d,%d]", what, got_rows, got_cols, rows, cols);
        rc = -1;
    }
    if (rc == 0) memcpy(w->data, values, w->size * sizeof(float));
    else {
        char line[600];
        snprintf(line, sizeof line, "qkv web: attention: %s", qkv_last_error());
        qkv_set_error("%s", line);
    }
    free(values);
    free(text);
    return rc;
}

static int make_weights(qkv_web_tokens *t, const qkv_web_request *r, unsigned long long seed, int heads) {
    qkv_rng rng = qkv_rng_make(seed);
    int e_shape[2] = {t->vocab, t->width}, w_shape[2] = {t->width, t->width};
    t->embed = qkv_params_new(&t->params, "embed", 2, e_shape);
    t->wq = qkv_params_new(&t->params, "wq", 2, w_shape);
    t->wk = qkv_params_new(&t->params, "wk", 2, w_shape);
    t->wv = qkv_params_new(&t->params, "wv", 2, w_shape);
    draw(t->embed, &rng, 1.0f);
    float std = 1.0f / sqrtf((float)t->width);
    draw(t->wq, &rng, std);
    draw(t->wk, &rng, std);
    draw(t->wv, &rng, std);
    if (t->added != QKV_POS_NONE) {
        if (qkv_pos_check(t->added, t->width, t->n, heads, NULL) != 0) {
            char line[600];
            snprintf(line, sizeof line, "qkv web: attention: %s", qkv_last_error());
            qkv_set_error("%s", line);
            return -1;
        }
        qkv_positions_init(&t->positions, &t->params, "pos", t->added, t->width, t->n, heads, &rng);
    }
    int weights = qkv_web_find(r, "weights");
    if (weights == -2) return qkv_set_error("qkv web: attention: \"weights\" given twice"), -1;
    if (weights < 0) return 0;
    if (r->doc.tokens[weights].type != QKV_JSON_OBJECT)
        return qkv_set_error("qkv web: attention: \"weights\" must be an object of rows"), -1;
    const qkv_json_token *tok = r->doc.tokens;
    static const char *const names[] = {"embed", "wq", "wk", "wv", "pos", NULL};
    for (uint32_t k = 0, j = (uint32_t)weights + 1; k < tok[weights].count; k++, j = tok[j + 1].next) {
        int known = 0;
        for (int n = 0; names[n]; n++) known |= qkv_json_equals(&r->doc, j, names[n]);
        if (!known) {
            char *key = qkv_web_decode(r, j);
            qkv_set_error("qkv web: attention: \"weights\": unknown weight '%.40s' (known: embed, wq, wk, wv, pos)", key);
            free(key);
            return -1;
        }
    }
    qkv_tensor *pos_table = t->added == QKV_POS_LEARNED ? t->positions.table : NULL;
    if (edit(r, weights, "embed", t->embed) || edit(r, weights, "wq", t->wq) || edit(r, weights, "wk", t->wk) ||
        edit(r, weights, "wv", t->wv) || edit(r, weights, "pos", pos_table))
        return -1;
    return 0;
}

int qkv_web_tokens_forward(qkv_web_tokens *t, const qkv_web_request *r, qkv_pos_kind pos, unsigned long long seed,
                           qkv_explain_input *in) {
    memset(t, 0, sizeof *t);
    long long vocab = 10, width = 4;
    if (qkv_web_get_int(r, "vocab", 2, QKV_WEB_MAX_VOCAB, &vocab) || qkv_web_get_int(r, "width", 1, QKV_EXPLAIN_MAX_W, &width))
        return -1;
    t->vocab = (int)vocab;
    t->width = (int)width;
    t->added = pos == QKV_POS_LEARNED || pos == QKV_POS_SINUSOIDAL ? pos : QKV_POS_NONE;
    if (read_ids(t, r, qkv_web_find(r, "tokens")) != 0 || make_weights(t, r, seed, in->heads) != 0) {
        qkv_web_tokens_free(t);
        return -1;
    }
    t->tape = qkv_tape_create(seed);
    int shape[2] = {1, t->n};
    t->x = qkv_embedding(t->tape, t->embed, t->ids, 2, shape);
    if (t->added != QKV_POS_NONE) t->x = qkv_positions_add(t->tape, &t->positions, t->x, 0);
    t->q = qkv_matmul(t->tape, t->x, t->wq, 0, 0);
    t->k = qkv_matmul(t->tape, t->x, t->wk, 0, 0);
    t->v = qkv_matmul(t->tape, t->x, t->wv, 0, 0);
    in->tq = in->tk = t->n;
    in->dk = in->dv = t->width;
    memcpy(in->q, t->q->data, t->q->size * sizeof(float));
    memcpy(in->k, t->k->data, t->k->size * sizeof(float));
    memcpy(in->v, t->v->data, t->v->size * sizeof(float));
    in->pos = t->added != QKV_POS_NONE ? QKV_POS_NONE : pos;
    return 0;
}

void qkv_web_tokens_backward(qkv_web_tokens *t, const qkv_explain_result *result) {
    int all = result->heads > 1 ? -1 : 0;
    qkv_tensor *outs[3] = {t->q, t->k, t->v};
    const char *names[3] = {"dQ", "dK", "dV"};
    qkv_params_zero_grad(&t->params);
    for (int i = 0; i < 3; i++) {
        const qkv_explain_matrix *g = qkv_explain_find(result, names[i], all);
        QKV_CHECK(g && (size_t)g->rows * g->cols == outs[i]->size, "web tokens: %s of the step missing", names[i]);
        qkv_backward_seeded(t->tape, outs[i], g->values);
    }
}

void qkv_web_tokens_write(const qkv_web_tokens *t, qkv_json_out *o) {
    qkv_web_key(o, "tokens");
    int ids[QKV_EXPLAIN_MAX_T];
    for (int i = 0; i < t->n; i++) ids[i] = t->ids[i];
    qkv_web_ints(o, ids, t->n);
    qkv_web_key(o, "x");
    int x_shape[2] = {t->n, t->width};
    qkv_web_tensor(o, "X", 2, x_shape, t->x->data);
    qkv_web_key(o, "weights");
    qkv_json_out_text(o, "[");
    for (int i = 0; i < t->params.n; i++) {
        const qkv_tensor *w = t->params.items[i];
        if (i) qkv_json_out_text(o, ",");
        qkv_json_out_text(o, "{\"name\":");
        qkv_json_out_string(o, strcmp(w->name, "pos.table") == 0 ? "pos" : w->name);
        qkv_json_out_text(o, ",\"shape\":");
        qkv_web_ints(o, w->shape, w->ndim);
        qkv_json_out_text(o, ",\"data\":");
        qkv_web_floats(o, w->data, w->size);
        qkv_json_out_text(o, ",\"grad\":");
        qkv_web_floats(o, w->grad, w->size);
        qkv_json_out_text(o, "}");
    }
    qkv_json_out_text(o, "]");
}

void qkv_web_tokens_free(qkv_web_tokens *t) {
    if (t->tape) qkv_tape_free(t->tape);
    qkv_params_free(&t->params);
    memset(t, 0, sizeof *t);
}
