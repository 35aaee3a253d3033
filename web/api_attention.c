/* api_attention.c — web/api.h's qkv_web_info, qkv_web_attention and
 * qkv_web_attention_check: one attention step of typed Q, K, V or of tokens
 * (web/tokens.h), computed by train/experiments/explain.h's qkv_explain_step,
 * the same call `qkv explain attention` prints. The request's keys are the
 * command's flags without their dashes ("q", "key_length", "p_rope", ...);
 * typed matrices go through the command's parser (qkv_explain_input_set) and
 * its checks (qkv_explain_check_input), so a bad one gets the command line's line.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/version.h"
#include "train/args.h"
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
 * ones added to the embeddings; SCHEMES_FLAG what --pos of `qkv explain
 * attention` takes (the worked example's too), so that a typed step's --pos is
 * read as the command line reads it, with its list in the message. */
enum { SCHEMES_INSIDE, SCHEMES_TOKENS, SCHEMES_FLAG };
static int schemes(int which, const char **names, qkv_pos_kind *kinds) {
    const char *inside[QKV_POS_COUNT + 1], *walk[QKV_POS_COUNT + 1];
    qkv_pos_kind inside_kinds[QKV_POS_COUNT], walk_kinds[QKV_POS_COUNT];
    int n_inside = qkv_explain_step_schemes(inside, inside_kinds), n_walk = qkv_explain_schemes(walk, walk_kinds), n = 0;
    for (int i = 0; i < QKV_POS_COUNT; i++) {
        qkv_pos_kind kind = qkv_pos_schemes[i].kind;
        int keep = which == SCHEMES_TOKENS && (kind == QKV_POS_LEARNED || kind == QKV_POS_SINUSOIDAL);
        for (int j = 0; j < n_inside; j++) keep |= inside_kinds[j] == kind;
        for (int j = 0; j < n_walk && which == SCHEMES_FLAG; j++) keep |= walk_kinds[j] == kind;
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

static int get_float(const qkv_web_request *r, const char *key, float *out) {
    double x = *out;
    if (qkv_web_get_number(r, key, &x) != 0) return -1;
    *out = (float)x;
    return 0;
}

static int get_int(const qkv_web_request *r, const char *key, long long lo, long long hi, int *out) {
    long long x = *out;
    if (qkv_web_get_int(r, key, lo, hi, &x) != 0) return -1;
    *out = (int)x;
    return 0;
}

/* "slopes": one positive number per head (alibi). */
static int read_slopes(const qkv_web_request *r, qkv_explain_input *in) {
    int i = qkv_web_find(r, "slopes");
    if (i == -1) return 0;
    const qkv_json_token *t = r->doc.tokens;
    if (i < 0 || t[i].type != QKV_JSON_ARRAY || (int)t[i].count != in->heads) {
        qkv_set_error("qkv web: attention: \"slopes\" must be %d positive numbers, one per head", in->heads);
        return -1;
    }
    for (uint32_t k = 0, j = (uint32_t)i + 1; k < t[i].count; k++, j = t[j].next) {
        char *end = NULL, text[64];
        snprintf(text, sizeof text, "%.*s", (int)(t[j].len < 63 ? t[j].len : 63), (const char *)r->doc.text + t[j].start);
        double x = t[j].type == QKV_JSON_NUMBER ? strtod(text, &end) : 0;
        if (!(x > 0)) {
            qkv_set_error("qkv web: attention: \"slopes\" must be %d positive numbers, one per head", in->heads);
            return -1;
        }
        in->alibi_slopes[k] = (float)x;
    }
    return 0;
}

/* The schemes' parameters, by explain.h's rows (integers in the row's range). */
static int read_pos_params(const qkv_web_request *r, qkv_explain_input *in) {
    char key[64];
#define READ_INT(flag, M, lo, hi) (param_key(flag, key, sizeof key), get_int(r, key, lo, hi, &in->M))
#define READ_FLOAT(flag, M, lo, hi) (param_key(flag, key, sizeof key), get_float(r, key, &in->M))
#define READ_LIST(flag, M, lo, hi) read_slopes(r, in)
#define READ_PARAM(a, b, flag, M, kind, lo, hi, def, help) || READ_##kind(flag, M, lo, hi)
    return (0 QKV_EXPLAIN_POS_PARAMS(READ_PARAM)) ? -1 : 0;
#undef READ_PARAM
#undef READ_LIST
#undef READ_FLOAT
#undef READ_INT
}

/* The request as the step's input; tokens->tape set when the token path ran. */
static int read_input(const qkv_web_request *r, qkv_explain_input *in, qkv_web_tokens *tokens) {
    qkv_explain_input_init(in);
    memset(tokens, 0, sizeof *tokens);
    long long seed = 1;
    int mask = QKV_EXPLAIN_MASK_NONE, loss = QKV_EXPLAIN_LOSS_DOT, pos = 0, has_tokens = qkv_web_find(r, "tokens") >= 0;
    const char *pos_names[QKV_POS_COUNT + 1];
    qkv_pos_kind pos_kinds[QKV_POS_COUNT];
    schemes(has_tokens ? SCHEMES_TOKENS : SCHEMES_FLAG, pos_names, pos_kinds);
    in->heads = 1;
    if (get_int(r, "heads", 1, QKV_EXPLAIN_MAX_HEADS, &in->heads) || choice(r, "mask", "--mask", qkv_explain_mask_names, &mask) ||
        choice(r, "pos", "--pos", pos_names, &pos) || choice(r, "loss", "--loss", qkv_explain_loss_names, &loss) ||
        qkv_web_get_int(r, "seed", 0, 1000000000000000LL, &seed) || get_float(r, "scale", &in->scale) ||
        read_pos_params(r, in))
        return -1;
    in->mask = mask;
    in->loss = (qkv_explain_loss)loss;
    in->seed = (unsigned long long)seed;
    in->pos = pos_kinds[pos];
    int given[5] = {0};
    if (has_tokens) {
        if (qkv_web_tokens_forward(tokens, r, pos_kinds[pos], in->seed, in) != 0) return -1;
    } else {
        for (int m = 0; m < 3; m++)
            if (set_matrix(r, in, qkv_explain_matrix_names[m], &given[m]) != 0) return -1;
        if (!given[0] || !given[1] || !given[2]) {
            qkv_set_error("qkv web: attention: give \"q\", \"k\" and \"v\" (rows), or \"tokens\"");
            return -1;
        }
    }
    if (set_matrix(r, in, "keep", &given[3]) || set_matrix(r, in, "target", &given[4])) return -1;
    if (in->mask == QKV_EXPLAIN_MASK_KEEP && !given[3])
        return qkv_set_error("qkv " COMMAND ": --mask keep needs --keep (rows of 1 and 0, [Tq,Tk])"), -1;
    int key_length = 0;
    if (get_int(r, "key_length", 0, QKV_EXPLAIN_MAX_T, &key_length) != 0) return -1;
    in->key_length = key_length ? key_length : in->tk > 1 ? in->tk - 1 : 1;
    return as_command(qkv_explain_check_input(in));
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
