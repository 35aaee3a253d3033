/* explain_input.c — the inputs of one explained attention step (explain.h): their
 * defaults, the typed-matrix parser both callers use ("1,0; 0,1"), and the checks
 * that turn bad input into one line (qkv_last_error) instead of a stop. The step
 * itself is explain_step.c. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/fileio.h"
#include "core/number.h"
#include "train/experiments/explain.h"

const char *const qkv_explain_loss_names[] = {"dot", "mse", NULL};

/* The schemes acting inside attention: no table added to the input. */
static int acts_inside(const qkv_pos_scheme *scheme) { return scheme->add == NULL && scheme->table != QKV_POS_TABLE_ROWS; }

int qkv_explain_step_schemes(const char **names, qkv_pos_kind *kinds) {
    int n = 0;
    for (int i = 0; i < QKV_POS_COUNT; i++)
        if (acts_inside(&qkv_pos_schemes[i])) {
            if (kinds) kinds[n] = qkv_pos_schemes[i].kind;
            names[n++] = qkv_pos_schemes[i].name;
        }
    names[n] = NULL;
    return n;
}

void qkv_explain_input_init(qkv_explain_input *in) {
    memset(in, 0, sizeof *in);
    in->heads = 1;
    in->mask = QKV_EXPLAIN_MASK_NONE;
    in->pos = QKV_POS_NONE;
    in->loss = QKV_EXPLAIN_LOSS_DOT;
    in->seed = 1;
}

/* ---- typed matrices ------------------------------------------------------------ */

static int is_separator(char c) { return c == ',' || c == ' ' || c == '\t'; }

int qkv_explain_parse_matrix(const char *what, const char *text, float *out, int max_rows, int max_cols, int *rows,
                             int *cols) {
    *rows = *cols = 0;
    const char *p = text ? text : "";
    for (int row = 0;; row++) {
        size_t line_len = strcspn(p, ";\n");
        int n = 0;
        const char *q = p, *end = p + line_len;
        for (int commas = n == 0;; commas = 0) {   /* a comma before the first number counts as one too many */
            for (; q < end && is_separator(*q); q++)
                if (*q == ',' && ++commas > 1)
                    return qkv_set_error("%s: an empty number between commas (row %d)", what, row), -1;
            if (q == end) break;
            size_t len = 0;
            while (q + len < end && !is_separator(q[len])) len++;
            char token[40];
            float value;
            snprintf(token, sizeof token, "%.*s", (int)(len < sizeof token ? len : sizeof token - 1), q);
            if (len >= sizeof token || qkv_parse_float(token, -1e6, 1e6, &value) != 0)
                return qkv_set_error("%s: '%s' is not a number in [-1e6, 1e6] (row %d)", what, token, row), -1;
            if (n == max_cols)
                return qkv_set_error("%s: row %d has more than %d numbers", what, row, max_cols), -1;
            if (row == max_rows)
                return qkv_set_error("%s: more than %d rows", what, max_rows), -1;
            out[row * max_cols + n++] = value;
            q += len;
        }
        if (n == 0 && (*p == ';' || row > 0 || *end))   /* an empty row between separators */
            return qkv_set_error("%s: row %d is empty (rows are separated by ';', numbers by ',')", what, row), -1;
        if (n > 0) {
            if (row > 0 && n != *cols)
                return qkv_set_error("%s: ragged rows: row %d has %d numbers, row 0 has %d", what, row, n, *cols), -1;
            *cols = n;
            *rows = row + 1;
        }
        if (!*end) break;
        p = end + 1;
        if (!*p) break;   /* a trailing separator */
    }
    if (*rows == 0) return qkv_set_error("%s: no numbers (give rows like \"1,0; 0,1\")", what), -1;
    /* compact from stride max_cols to cols */
    for (int r = 1; r < *rows; r++) memmove(out + r * *cols, out + r * max_cols, (size_t)*cols * sizeof *out);
    return 0;
}

/* ---- checks -------------------------------------------------------------------- */

static int all_finite(const float *x, int n) {
    for (int i = 0; i < n; i++)
        if (!isfinite(x[i])) return 0;
    return 1;
}

/* Key j is hidden from query i by the mask (before any bias). */
int qkv_explain_hidden(const qkv_explain_input *in, int i, int j) {
    switch (in->mask) {
    case QKV_EXPLAIN_MASK_CAUSAL: return j > i + in->tk - in->tq;
    case QKV_EXPLAIN_MASK_PADDING: return j >= in->key_length;
    case QKV_EXPLAIN_MASK_KEEP: return in->keep[i * in->tk + j] == 0.0f;
    default: return 0;
    }
}

static int check_sizes(const qkv_explain_input *in) {
    if (in->tq < 1 || in->tq > QKV_EXPLAIN_MAX_T || in->tk < 1 || in->tk > QKV_EXPLAIN_MAX_T)
        return qkv_set_error("explain: %d queries and %d keys: expected 1..%d each", in->tq, in->tk,
                             QKV_EXPLAIN_MAX_T), -1;
    if (in->heads < 1 || in->heads > QKV_EXPLAIN_MAX_HEADS)
        return qkv_set_error("--heads %d: expected 1..%d", in->heads, QKV_EXPLAIN_MAX_HEADS), -1;
    if (in->dk < 1 || in->dv < 1 || in->dk % in->heads || in->dv % in->heads)
        return qkv_set_error("--heads %d does not divide the %d columns of Q and K and the %d of V", in->heads,
                             in->dk, in->dv), -1;
    if (in->dk / in->heads > QKV_EXPLAIN_MAX_D || in->dv / in->heads > QKV_EXPLAIN_MAX_D)
        return qkv_set_error("explain: heads of width %d (Q, K) and %d (V): at most %d each", in->dk / in->heads,
                             in->dv / in->heads, QKV_EXPLAIN_MAX_D), -1;
    if (!all_finite(in->q, in->tq * in->dk) || !all_finite(in->k, in->tk * in->dk) ||
        !all_finite(in->v, in->tk * in->dv) || !all_finite(in->target, in->tq * in->dv))
        return qkv_set_error("explain: Q, K, V and the loss target must be finite"), -1;
    if (!(in->scale >= 0 && isfinite(in->scale)))
        return qkv_set_error("--scale %g: expected a positive number (0: 1/sqrt(d))", (double)in->scale), -1;
    return 0;
}

static int check_mask(const qkv_explain_input *in) {
    if (in->mask < 0 || in->mask >= QKV_EXPLAIN_MASK_COUNT) return qkv_set_error("--mask %d: unknown", in->mask), -1;
    if (in->mask == QKV_EXPLAIN_MASK_KEEP && !in->keep_given)
        return qkv_set_error("--mask keep needs --keep (rows of 1 and 0, [Tq,Tk])"), -1;
    if (in->mask == QKV_EXPLAIN_MASK_PADDING && (in->key_length < 1 || in->key_length > in->tk))
        return qkv_set_error("--key-length %d: expected 1..%d (the number of keys)", in->key_length, in->tk), -1;
    for (int i = 0; i < in->tq; i++) {
        int seen = 0;
        for (int j = 0; j < in->tk; j++) seen += !qkv_explain_hidden(in, i, j);
        if (!seen)   /* the fused op gives P = 0 there, the composed softmax of -inf has no answer */
            return qkv_set_error("--mask %s: query %d may attend to no key", qkv_explain_mask_names[in->mask], i), -1;
    }
    return 0;
}

static int check_positions(const qkv_explain_input *in) {
    const char *names[QKV_POS_COUNT + 1];
    qkv_pos_kind kinds[QKV_POS_COUNT];
    int n = qkv_explain_step_schemes(names, kinds), known = 0;
    for (int i = 0; i < n; i++) known |= kinds[i] == in->pos;
    if (!known)
        return qkv_set_error("--pos %s adds to the embeddings, before Q and K exist: a step of Q, K and V takes "
                             "the schemes acting inside attention (none, rope, alibi, t5, p-rope, fire)",
                             in->pos >= 0 && in->pos < QKV_POS_COUNT ? qkv_pos_kind_name(in->pos) : "?"), -1;
    int d_head = in->dk / in->heads;
    int rope = qkv_pos_schemes[in->pos].rotate != NULL;
    if (rope && d_head % 2)
        return qkv_set_error("--pos %s turns pairs of dims: the head width %d is odd", qkv_pos_kind_name(in->pos),
                             d_head), -1;
    if (!(in->rope_base >= 0 && isfinite(in->rope_base)) || !(in->fire_c >= 0) || !(in->fire_l >= 0) ||
        in->fire_width < 0 || in->fire_width > 64 || !(in->prope >= 0))
        return qkv_set_error("explain: position parameters must be positive (fire width at most 64)"), -1;
    for (int h = 0; h < in->heads; h++)
        if (!(in->alibi_slopes[h] >= 0 && isfinite(in->alibi_slopes[h])))
            return qkv_set_error("--slopes: expected positive numbers"), -1;
    qkv_pos_opts opts = {0};
    qkv_explain_pos_opts(in, &opts);
    return qkv_pos_check(in->pos, in->dk, in->tk, in->heads, &opts);
}

void qkv_explain_pos_opts(const qkv_explain_input *in, qkv_pos_opts *opts) {
    memset(opts, 0, sizeof *opts);
    opts->t5_buckets = in->t5_buckets ? in->t5_buckets : 8;
    opts->t5_max_distance = in->t5_max_distance ? in->t5_max_distance : 16;
    opts->prope = in->prope;
    opts->fire_width = in->fire_width ? in->fire_width : 4;
    opts->fire_c = in->fire_c;
    opts->fire_l = in->fire_l;
}

int qkv_explain_check_input(const qkv_explain_input *in) {
    if (check_sizes(in) || check_mask(in) || check_positions(in)) return -1;
    if (in->loss < 0 || in->loss >= QKV_EXPLAIN_LOSS_COUNT) return qkv_set_error("--loss %d: unknown", in->loss), -1;
    return 0;
}

/* ---- matrices by name ---------------------------------------------------------- */

/* Rows x cols must equal the sizes already known (0: not yet known). */
static int expect_size(const char *what, int rows, int cols, int want_rows, int want_cols) {
    if ((want_rows && rows != want_rows) || (want_cols && cols != want_cols))
        return qkv_set_error("%s: [%d,%d], but the other matrices make it [%d,%d]", what, rows, cols,
                             want_rows ? want_rows : rows, want_cols ? want_cols : cols), -1;
    return 0;
}

int qkv_explain_input_set(qkv_explain_input *in, const char *name, const char *what, const char *text) {
    float values[QKV_EXPLAIN_MAX_T * QKV_EXPLAIN_MAX_W];
    int rows, cols, max_cols = strcmp(name, "keep") == 0 ? QKV_EXPLAIN_MAX_T : QKV_EXPLAIN_MAX_W;
    if (qkv_explain_parse_matrix(what, text, values, QKV_EXPLAIN_MAX_T, max_cols, &rows, &cols) != 0) return -1;
    float *into;
    if (strcmp(name, "q") == 0) {
        if (expect_size(what, rows, cols, 0, in->tk ? in->dk : 0)) return -1;
        in->tq = rows, in->dk = cols, into = in->q;
    } else if (strcmp(name, "k") == 0) {
        if (expect_size(what, rows, cols, in->tk, in->tq ? in->dk : 0)) return -1;
        in->tk = rows, in->dk = cols, into = in->k;
    } else if (strcmp(name, "v") == 0) {
        if (expect_size(what, rows, cols, in->tk, 0)) return -1;
        in->tk = rows, in->dv = cols, into = in->v;
    } else if (strcmp(name, "keep") == 0 || strcmp(name, "target") == 0) {
        int keep = name[0] == 'k';
        if (!in->tq || !in->tk || !in->dv)
            return qkv_set_error("%s: give Q, K and V first", what), -1;
        if (expect_size(what, rows, cols, in->tq, keep ? in->tk : in->dv)) return -1;
        into = keep ? in->keep : in->target;
        in->target_given |= !keep;
        in->keep_given |= keep;
    } else {
        return qkv_set_error("%s: no matrix named '%s' (q, k, v, keep, target)", what, name), -1;
    }
    memcpy(into, values, (size_t)rows * cols * sizeof *into);
    return 0;
}

/* ---- a file of matrices ---------------------------------------------------------- */

const char *const qkv_explain_matrix_names[] = {"q", "k", "v", "keep", "target", NULL};

#define FILE_MAX_BYTES (64 * 1024)

static char *trimmed(char *s) {
    while (*s == ' ' || *s == '\t') s++;
    size_t n = strlen(s);
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r')) s[--n] = '\0';
    return s;
}

int qkv_explain_read_file(const char *path, char *texts[QKV_EXPLAIN_N_MATRICES]) {
    for (int i = 0; i < QKV_EXPLAIN_N_MATRICES; i++) texts[i] = NULL;
    size_t len;
    char *file = (char *)qkv_read_file(path, FILE_MAX_BYTES, &len);
    if (!file) return -1;   /* qkv_read_file names path */
    if (strlen(file) != len) {
        free(file);
        return qkv_set_error("%s: not a text file (a NUL byte)", path), -1;
    }
    int line_no = 0, rc = 0;
    for (char *line = file, *next; line && rc == 0; line = next) {
        next = strchr(line, '\n');
        if (next) *next++ = '\0';
        line_no++;
        char *body = trimmed(line), *eq = strchr(body, '=');
        if (!*body || *body == '#') continue;
        if (!eq) {
            rc = (qkv_set_error("%s line %d: expected 'name = rows', e.g. 'q = 1,0; 0,1'", path, line_no), -1);
            break;
        }
        *eq = '\0';
        char *name = trimmed(body);
        int which = -1;
        for (int i = 0; i < QKV_EXPLAIN_N_MATRICES; i++)
            if (strcmp(name, qkv_explain_matrix_names[i]) == 0) which = i;
        if (which < 0) {
            rc = (qkv_set_error("%s line %d: '%.20s' is not q, k, v, keep or target", path, line_no, name), -1);
        } else if (texts[which]) {
            rc = (qkv_set_error("%s line %d: %s given twice", path, line_no, name), -1);
        } else {
            char *value = trimmed(eq + 1);
            texts[which] = malloc(strlen(value) + 1);
            if (!texts[which]) qkv_fatal("explain: out of memory");
            strcpy(texts[which], value);
        }
    }
    free(file);
    if (rc != 0)
        for (int i = 0; i < QKV_EXPLAIN_N_MATRICES; i++) free(texts[i]), texts[i] = NULL;
    return rc;
}
