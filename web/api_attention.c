/* api_attention.c — web/api.h's qkv_web_info, qkv_web_attention and
 * qkv_web_attention_check: one attention step of typed Q, K, V or of tokens
 * (web/tokens.h), computed by train/experiments/explain.h's qkv_explain_step,
 * the same call `qkv explain attention` prints. The request's keys are the
 * command's flags without their dashes ("q", "key_length", "p_rope", ...): its
 * scalars are read by the command's own flag rows (train/experiments/
 * explain_fields.h) from their text, typed matrices go through the command's
 * parser (qkv_explain_input_set), and the whole through its checks
 * (qkv_explain_options_finish), so a bad value gets the command line's line.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/version.h"
#include "train/args.h"
#include "train/experiments/explain_fields.h"
#include "train/tasks/registry.h"
#include "web/api.h"
#include "web/calls.h"
#include "web/tokens.h"

#define COMMAND "explain attention"

/* A library error as the command line prints it: "qkv explain attention: ...". */
static int as_command(int rc) {
    if (rc != 0) {
        char line[1100];
        snprintf(line, sizeof line, "qkv " COMMAND ": %s", qkv_last_error());
        qkv_set_error("%s", line);
    }
    return rc;
}

/* A name among names, read as the command line reads flag's value (the same message). */
static int choice(const qkv_web_request *r, const char *key, const char *flag, const char *const *names, int *index) {
    char *value = NULL;
    if (qkv_web_get_string(r, key, &value) != 0) return -1;
    if (!value) return 0;
    qkv_arg row = QKV_ARG_CHOICE_ROW(flag, index, names, "");
    char *argv[2] = {(char *)flag, value};
    unsigned char given[1];
    int rc = qkv_args_read(COMMAND, 2, argv, &row, 1, given);
    free(value);
    if (rc != 0) {
        char line[1100];
        snprintf(line, sizeof line, "qkv %s", qkv_last_error());
        qkv_set_error("%s", line);
    }
    return rc != 0 ? -1 : 0;
}

/* The schemes, in the table's order: SCHEMES_INSIDE those acting inside
 * attention (the page's menu for typed Q, K, V); SCHEMES_TOKENS those and the
 * ones added to the embeddings. A typed step's --pos is read by the command's own
 * row (explain_fields.h), with its list in the message. */
enum { SCHEMES_INSIDE, SCHEMES_TOKENS };
static int schemes(int which, const char **names, qkv_pos_kind *kinds) {
    const char *inside[QKV_POS_COUNT + 1];
    qkv_pos_kind inside_kinds[QKV_POS_COUNT];
    int n_inside = qkv_explain_step_schemes(inside, inside_kinds), n = 0;
    for (int i = 0; i < QKV_POS_COUNT; i++) {
        qkv_pos_kind kind = qkv_pos_schemes[i].kind;
        int keep = which == SCHEMES_TOKENS && (kind == QKV_POS_LEARNED || kind == QKV_POS_SINUSOIDAL);
        for (int j = 0; j < n_inside; j++) keep |= inside_kinds[j] == kind;
        if (keep) kinds[n] = kind, names[n++] = qkv_pos_schemes[i].name;
    }
    names[n] = NULL;
    return n;
}

static void write_names(qkv_json_out *o, const char *key, const char *const *names) {
    qkv_web_key(o, key);
    qkv_json_out_text(o, "[");
    for (int i = 0; names[i]; i++) {
        if (i) qkv_json_out_text(o, ",");
        qkv_json_out_string(o, names[i]);
    }
    qkv_json_out_text(o, "]");
}

/* A parameter row's request key: its flag without the dashes, '-' as '_'. */
static void param_key(const char *flag, char *key, size_t size) {
    snprintf(key, size, "%s", flag + 2);
    for (char *c = key; *c; c++)
        if (*c == '-') *c = '_';
}

/* "pos_params": {scheme: [{name, flag, label, default, min, max, list}, ...]} for
 * every scheme of schemes_tokens, from explain.h's QKV_EXPLAIN_POS_PARAMS (the
 * rows the command's flags are). */
typedef struct pos_param {
    qkv_pos_kind schemes[2];
    const char *flag, *fallback, *help;
    double lo, hi;
    int list;
} pos_param;
#define POS_PARAM_IS_LIST_INT 0
#define POS_PARAM_IS_LIST_FLOAT 0
#define POS_PARAM_IS_LIST_LIST 1
#define POS_PARAM_ROW(a, b, flag, M, kind, lo, hi, def, help) \
    {{QKV_POS_##a, QKV_POS_##b}, flag, def, help, lo, hi, POS_PARAM_IS_LIST_##kind},
static const pos_param pos_params[] = {QKV_EXPLAIN_POS_PARAMS(POS_PARAM_ROW)};
#undef POS_PARAM_ROW
#define N_POS_PARAMS ((int)(sizeof pos_params / sizeof *pos_params))

static void write_pos_params(qkv_json_out *o) {
    const char *names[QKV_POS_COUNT + 1];
    qkv_pos_kind kinds[QKV_POS_COUNT];
    int n = schemes(SCHEMES_TOKENS, names, kinds);
    qkv_web_key(o, "pos_params");
    qkv_json_out_text(o, "{");
    for (int s = 0; s < n; s++) {
        if (s) qkv_json_out_text(o, ",");
        qkv_json_out_string(o, names[s]);
        qkv_json_out_text(o, ":[");
        for (int i = 0, first = 1; i < N_POS_PARAMS; i++) {
            const pos_param *p = &pos_params[i];
            if (p->schemes[0] != kinds[s] && p->schemes[1] != kinds[s]) continue;
            char key[64];
            param_key(p->flag, key, sizeof key);
            qkv_json_out_text(o, first ? "{\"name\":" : ",{\"name\":");
            first = 0;
            qkv_json_out_string(o, key);
            qkv_web_text(o, "flag", p->flag);
            qkv_web_text(o, "label", p->help);
            qkv_web_text(o, "default", p->fallback);
            qkv_web_key(o, "min");
            qkv_web_number(o, p->lo);
            qkv_web_key(o, "max");
            qkv_web_number(o, p->hi);
            qkv_web_key(o, "list");
            qkv_json_out_text(o, p->list ? "true" : "false");
            qkv_json_out_text(o, "}");
        }
        qkv_json_out_text(o, "]");
    }
    qkv_json_out_text(o, "}");
}

const char *qkv_web_call_info(const char *json) {
    qkv_web_request r;
    if (qkv_web_request_parse(&r, "info", json) != 0) return qkv_web_refuse_error(NULL);
    qkv_web_request_free(&r);
    qkv_json_out *o = qkv_web_reply();
    qkv_web_text(o, "version", QKV_VERSION);
    const char *tasks[64];
    int n = 0;
    for (int i = 0; i < qkv_task_kind_count() && n < 63; i++) tasks[n++] = qkv_task_kind_at(i)->name;
    tasks[n] = NULL;
    write_names(o, "tasks", tasks);
    write_names(o, "masks", qkv_explain_mask_names);
    const char *names[QKV_POS_COUNT + 1];
    qkv_pos_kind kinds[QKV_POS_COUNT];
    schemes(SCHEMES_INSIDE, names, kinds);
    write_names(o, "schemes_qkv", names);
    schemes(SCHEMES_TOKENS, names, kinds);
    write_names(o, "schemes_tokens", names);
    write_names(o, "losses", qkv_explain_loss_names);
    write_pos_params(o);
    qkv_web_key(o, "max_heap");
    qkv_web_int(o, (long long)QKV_WEB_MAX_HEAP);
    qkv_web_key(o, "limits");
    char limits[128];
    snprintf(limits, sizeof limits, "{\"tokens\":%d,\"width\":%d,\"heads\":%d,\"vocab\":%d}", QKV_EXPLAIN_MAX_T,
             QKV_EXPLAIN_MAX_D, QKV_EXPLAIN_MAX_HEADS, QKV_WEB_MAX_VOCAB);
    qkv_json_out_text(o, limits);
    return qkv_web_reply_end();
}

/* A matrix key of the request into in (by the command's parser: "--q: ..."). */
static int set_matrix(const qkv_web_request *r, qkv_explain_input *in, const char *name, int *given) {
    char *text = NULL, flag[16];
    if (qkv_web_get_rows(r, name, &text) != 0) return -1;
    *given = text != NULL;
    if (!text) return 0;
    snprintf(flag, sizeof flag, "--%s", name);
    int rc = as_command(qkv_explain_input_set(in, name, flag, text));
    free(text);
    return rc;
}

static int get_int(const qkv_web_request *r, const char *key, long long lo, long long hi, int *out) {
    long long x = *out;
    if (qkv_web_get_int(r, key, lo, hi, &x) != 0) return -1;
    *out = (int)x;
    return 0;
}

/* The value of key as the command line's text (into text, size bytes): a number's
 * own digits, a string's, a flat array's numbers joined by ','. 1 when given, 0
 * when absent, -1 with a one-line qkv_last_error(). */
static int value_text(const qkv_web_request *r, const char *key, char *text, size_t size) {
    int i = qkv_web_find(r, key);
    if (i == -1) return 0;
    const qkv_json_token *t = r->doc.tokens;
    size_t used = 0;
    text[0] = 0;
    if (i >= 0 && t[i].type == QKV_JSON_STRING) {
        char *value = NULL;
        if (qkv_web_get_string(r, key, &value) != 0) return -1;
        snprintf(text, size, "%s", value);
        free(value);
        return 1;
    }
    if (i >= 0 && t[i].type == QKV_JSON_NUMBER) {
        snprintf(text, size, "%.*s", (int)t[i].len, (const char *)r->doc.text + t[i].start);
        return 1;
    }
    if (i >= 0 && t[i].type == QKV_JSON_ARRAY) {
        uint32_t k = 0, j = (uint32_t)i + 1;
        for (; k < t[i].count && t[j].type == QKV_JSON_NUMBER && used + t[j].len + 2 < size; k++, j = t[j].next)
            used += (size_t)snprintf(text + used, size - used, "%s%.*s", k ? "," : "", (int)t[j].len,
                                     (const char *)r->doc.text + t[j].start);
        if (k == t[i].count) return 1;
    }
    if (i == -2) return qkv_set_error("qkv web: attention: \"%s\" given twice", key), -1;
    return qkv_set_error("qkv web: attention: \"%s\" must be a number, a string or an array of numbers", key), -1;
}

/* The request's scalar keys read by the command's own flag rows
 * (train/experiments/explain_fields.h: the same parser, so the same refusal);
 * matrices and the command's --file, --check and --threads are not read here.
 * With tokens, "pos" is read from schemes_tokens (with learned, sinusoidal). */
/* A text setting (--slopes) keeps a pointer to its value until read_input has
 * finished the options: the values live here, one per row, not in a loop's frame. */
static char option_texts[QKV_EXPLAIN_N_FIELDS][512];

static int read_options(const qkv_web_request *r, qkv_explain_options *o, int tokens, qkv_pos_kind *pos) {
    qkv_explain_fields_ready();
    qkv_fields_defaults(qkv_explain_fields, QKV_EXPLAIN_N_FIELDS, o);
    qkv_arg args[QKV_EXPLAIN_N_FIELDS];
    int n = qkv_args_from_fields(qkv_explain_fields, QKV_EXPLAIN_N_FIELDS, o, args);
    for (int i = 0; i < n; i++) {
        const qkv_arg *a = &args[i];
        const void *at = a->target;
        int skip = at == (void *)&o->file || at == (void *)&o->check || at == (void *)&o->threads ||
                   (tokens && at == (void *)&o->pos);
        for (int m = 0; m < QKV_EXPLAIN_N_MATRICES; m++) skip |= at == (void *)&o->texts[m];
        if (skip) continue;
        char key[64], *text = option_texts[i];
        param_key(a->flag, key, sizeof key);
        int given = value_text(r, key, text, sizeof option_texts[i]);
        if (given < 0) return -1;
        if (!given) continue;
        char *argv[2] = {(char *)a->flag, text};
        unsigned char seen[1];
        if (qkv_args_read(COMMAND, 2, argv, a, 1, seen) != 0) {
            char line[1100];
            snprintf(line, sizeof line, "qkv %s", qkv_last_error());
            return qkv_set_error("%s", line), -1;
        }
    }
    const char *names[QKV_POS_COUNT + 1];
    qkv_pos_kind kinds[QKV_POS_COUNT];
    *pos = qkv_explain_pos_kinds[o->pos];
    if (tokens) {
        int index = 0;
        schemes(SCHEMES_TOKENS, names, kinds);
        if (choice(r, "pos", "--pos", names, &index) != 0) return -1;
        *pos = kinds[index];
    }
    return 0;
}

/* The request as the step's input; tokens->tape set when the token path ran. */
static int read_input(const qkv_web_request *r, qkv_explain_input *in, qkv_web_tokens *tokens) {
    qkv_explain_input_init(in);
    memset(tokens, 0, sizeof *tokens);
    qkv_explain_options o;
    qkv_pos_kind pos;
    int has_tokens = qkv_web_find(r, "tokens") >= 0;
    if (read_options(r, &o, has_tokens, &pos) != 0) return -1;
    qkv_explain_options_apply(&o, in);
    in->pos = pos;
    int given[5] = {0};
    if (has_tokens) {
        if (qkv_web_tokens_forward(tokens, r, pos, in->seed, in) != 0) return -1;
    } else {
        for (int m = 0; m < 3; m++)
            if (set_matrix(r, in, qkv_explain_matrix_names[m], &given[m]) != 0) return -1;
        qkv_explain_fill_missing(in, given[0] | given[1] << 1 | given[2] << 2); /* as the command line */
    }
    if (set_matrix(r, in, "keep", &given[3]) || set_matrix(r, in, "target", &given[4])) return -1;
    return as_command(qkv_explain_options_finish(&o, in));
}

static void write_result(qkv_json_out *o, const qkv_explain_result *res) {
    qkv_web_key(o, "heads");
    qkv_web_int(o, res->heads);
    qkv_web_key(o, "d_head");
    qkv_web_int(o, res->d_head);
    qkv_web_key(o, "dv_head");
    qkv_web_int(o, res->dv_head);
    qkv_web_key(o, "scale");
    qkv_web_number(o, res->scale);
    qkv_web_key(o, "loss");
    qkv_web_number(o, res->loss);
    qkv_web_key(o, "fused_diff");
    qkv_web_number(o, res->fused_diff);
    qkv_web_text(o, "setup", res->setup);
    qkv_web_key(o, "matrices");
    qkv_json_out_text(o, "[");
    for (int i = 0; i < res->n; i++) {
        const qkv_explain_matrix *m = &res->matrices[i];
        if (i) qkv_json_out_text(o, ",");
        qkv_json_out_text(o, "{\"section\":");
        qkv_json_out_string(o, m->section);
        qkv_json_out_text(o, ",\"formula\":");
        qkv_json_out_string(o, m->formula);
        qkv_json_out_text(o, ",\"head\":");
        qkv_web_int(o, m->head);
        qkv_json_out_text(o, ",\"tensor\":");
        int shape[2] = {m->rows, m->cols};
        qkv_web_tensor(o, m->name, 2, shape, m->values);
        qkv_json_out_text(o, "}");
    }
    qkv_json_out_text(o, "]");
}

const char *qkv_web_call_attention(const char *json) {
    qkv_web_request r;
    if (qkv_web_request_parse(&r, "attention", json) != 0) return qkv_web_refuse_error(NULL);
    qkv_explain_input in;
    qkv_web_tokens tokens;
    qkv_explain_result res;
    const char *answer;
    if (read_input(&r, &in, &tokens) != 0 || as_command(qkv_explain_step(&in, &res)) != 0) {
        answer = qkv_web_refuse_error(NULL);
    } else {
        qkv_json_out *o = qkv_web_reply();
        qkv_web_text(o, "mask", qkv_explain_mask_names[in.mask]);
        qkv_web_key(o, "tq");
        qkv_web_int(o, in.tq);
        qkv_web_key(o, "tk");
        qkv_web_int(o, in.tk);
        write_result(o, &res);
        if (tokens.tape) {
            qkv_web_tokens_backward(&tokens, &res);
            qkv_web_tokens_write(&tokens, o);
        }
        qkv_explain_result_free(&res);
        answer = qkv_web_reply_end();
    }
    qkv_web_tokens_free(&tokens);
    qkv_web_request_free(&r);
    return answer;
}

const char *qkv_web_call_attention_check(const char *json) {
    qkv_web_request r;
    if (qkv_web_request_parse(&r, "attention_check", json) != 0) return qkv_web_refuse_error(NULL);
    qkv_explain_input in;
    qkv_web_tokens tokens;
    static const char *const tensors[] = {"q", "k", "v", NULL};
    int which = 0, row = 0, col = 0;
    double analytic = 0, numeric = 0;
    const char *answer;
    if (read_input(&r, &in, &tokens) != 0 || choice(&r, "tensor", "--check", tensors, &which) != 0 ||
        get_int(&r, "row", 0, QKV_EXPLAIN_MAX_W, &row) != 0 || get_int(&r, "col", 0, QKV_EXPLAIN_MAX_W, &col) != 0 ||
        as_command(qkv_explain_check(&in, tensors[which][0], row, col, &analytic, &numeric)) != 0) {
        answer = qkv_web_refuse_error(NULL);
    } else {
        qkv_json_out *o = qkv_web_reply();
        qkv_web_text(o, "tensor", tensors[which]);
        qkv_web_key(o, "row");
        qkv_web_int(o, row);
        qkv_web_key(o, "col");
        qkv_web_int(o, col);
        qkv_web_key(o, "analytic");
        qkv_web_number(o, analytic);
        qkv_web_key(o, "numeric");
        qkv_web_number(o, numeric);
        qkv_web_key(o, "difference");
        qkv_web_number(o, fabs(analytic - numeric));
        qkv_web_key(o, "h");
        qkv_web_number(o, 1e-3);
        answer = qkv_web_reply_end();
    }
    qkv_web_tokens_free(&tokens);
    qkv_web_request_free(&r);
    return answer;
}
