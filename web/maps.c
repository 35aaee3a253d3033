/* maps.c — the attention maps' answer (web/calls.h): a sequence model's
 * per-layer, per-head weights on one input (train/tasks/sequence.h's
 * qkv_seq_model_attention_maps, what `qkv attn` draws), as JSON. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/ops/tape.h"
#include "train/viz/attn_maps.h"
#include "web/api.h"
#include "web/calls.h"

/* "position:token" labels of ids[0..n) as a JSON array. */
static void write_labels(qkv_json_out *o, const char *key, const int32_t *ids, int n) {
    qkv_web_key(o, key);
    qkv_json_out_text(o, "[");
    for (int i = 0; i < n; i++) {
        char token[12], label[24];
        qkv_seq_token_label(ids[i], token, sizeof token);
        snprintf(label, sizeof label, "%d:%s", i, token);
        if (i) qkv_json_out_text(o, ",");
        qkv_json_out_string(o, label);
    }
    qkv_json_out_text(o, "]");
}

static void write_symbols(qkv_json_out *o, const char *key, const int32_t *ids, int n) {
    qkv_web_key(o, key);
    qkv_json_out_text(o, "[");
    for (int i = 0; i < n; i++) {
        char token[12];
        qkv_seq_token_label(ids[i], token, sizeof token);
        if (i) qkv_json_out_text(o, ",");
        qkv_json_out_string(o, token);
    }
    qkv_json_out_text(o, "]");
}

static const char *refuse(const char *prefix) { return qkv_web_refuse_error(prefix); }

const char *qkv_web_maps_answer(const qkv_web_request *r, qkv_seq_model *model, long step, const char *prefix,
                                const char *fallback, int allowed) {
    const qkv_seq_model_config *c = &model->config;
    char *typed = NULL;
    int force = 0, grads = 0, allow_force = allowed & QKV_WEB_MAPS_FORCE;
    if (qkv_web_get_string(r, "input", &typed) != 0 || qkv_web_get_bool(r, "force", &force) != 0 ||
        qkv_web_get_bool(r, "grads", &grads) != 0)
        return refuse(NULL);
    if (grads && !(allowed & QKV_WEB_MAPS_GRADS)) {
        free(typed);
        return qkv_web_refuse("qkv web: \"grads\" are for an opened model (qkv_web_model_attention), not one in training");
    }
    int most = qkv_seq_model_longest_input(c, QKV_WEB_MAPS_MAX_TOKENS), len = 0;
    int32_t *x = malloc((size_t)(most > 0 ? most : 1) * sizeof(int32_t));
    if (!x) qkv_fatal("web: out of memory");
    int rc = 0;
    if (typed || fallback) {
        rc = qkv_seq_parse_input(typed ? typed : fallback, c->data.vocab, most, x, &len);
    } else {   /* the symbols 0, 1, ... of the longest trained length */
        len = c->data.max_len < most ? c->data.max_len : most;
        for (int i = 0; i < len; i++) x[i] = QKV_SEQ_FIRST_SYMBOL + i % c->data.vocab;
    }
    free(typed);
    char warning[200] = "";
    if (rc == 0 && qkv_seq_untrained_length(c, len, warning, sizeof warning) && !(force && allow_force)) {
        qkv_set_error("--input: %s%s", warning, allow_force ? " (--force draws them anyway, marked)" : "");
        rc = -1;
    }
    if (rc != 0) {
        free(x);
        return refuse(prefix);
    }
    qkv_tape *tape = grads ? qkv_tape_create(c->seed) : qkv_tape_create_inference(c->seed), *ops = NULL;
    qkv_seq_attention maps;
    if (grads) {   /* as `qkv attn --grads`: the ops on a second tape without gradients */
        ops = qkv_tape_create(c->seed);
        qkv_tape_set_grad(ops, 0);
        qkv_seq_model_attention_grads(model, tape, ops, x, len, &maps);
    } else {
        qkv_seq_model_attention_maps(model, tape, x, len, &maps);
    }
    qkv_json_out *o = qkv_web_reply();
    qkv_web_text(o, "task", model->task.name);
    qkv_web_text(o, "arch", qkv_seq_arch_name(c->data.arch));
    qkv_web_text(o, "pos", qkv_pos_kind_name(c->pos));
    qkv_web_key(o, "step");
    qkv_web_int(o, step);
    write_symbols(o, "input", maps.input, len);
    write_symbols(o, "output", maps.pred, len);
    qkv_web_text(o, "warning", warning);
    qkv_web_key(o, "heads");
    qkv_web_int(o, c->heads);
    qkv_web_key(o, "rows");
    qkv_json_out_text(o, "[");
    for (int i = 0; i < maps.n_rows; i++) {
        const qkv_seq_attention_row *row = &maps.rows[i];
        const qkv_tensor *w = row->weights;   /* [1, H, Tq, Tk] */
        int tq = w->shape[2], tk = w->shape[3], shape[3] = {w->shape[1], tq, tk};
        if (i) qkv_json_out_text(o, ",");
        qkv_json_out_text(o, "{\"what\":");
        qkv_json_out_string(o, row->what);
        qkv_web_key(o, "layer");
        qkv_web_int(o, row->layer);
        write_labels(o, "q_labels", row->q_ids, tq);
        write_labels(o, "k_labels", row->k_ids, tk);
        qkv_web_key(o, "weights");
        qkv_web_tensor(o, NULL, 3, shape, w->data);
        const qkv_tensor *g[5] = {row->dp, row->ds, row->dq, row->dk, row->dv};
        static const char *const names[5] = {"dP", "dS", "dQ", "dK", "dV"};
        for (int k = 0; grads && k < 5; k++) {   /* [1, H, rows, cols] */
            int g_shape[3] = {g[k]->shape[1], g[k]->shape[2], g[k]->shape[3]};
            qkv_web_key(o, names[k]);
            qkv_web_tensor(o, NULL, 3, g_shape, g[k]->data);
        }
        qkv_json_out_text(o, "}");
    }
    qkv_json_out_text(o, "]");
    if (grads) {
        qkv_web_key(o, "loss");
        qkv_web_number(o, maps.loss);
        write_symbols(o, "target", maps.target, len);
    }
    qkv_seq_attention_free(&maps);
    if (ops) qkv_tape_free(ops);
    qkv_tape_free(tape);
    free(x);
    return qkv_web_reply_end();
}
