/* cmd_explain.c — `qkv explain attention`: the spec of the explain command and of
 * its one topic, and the printer of an explained step.
 *
 * Without inputs of its own (only --mask none|causal|padding and --pos none|
 * sinusoidal|rope|alibi), it prints the worked example's walk-through
 * (train/experiments/explain.c: qkv_explain_attention). Any other flag makes it
 * explain the step of the caller's inputs (train/experiments/explain_step.c):
 *   --q, --k, --v   matrices typed as rows "1,0; 0,1" (rows split by ';', numbers
 *                   by ',' or spaces), or --file F with lines "q = 1,0; 0,1" (a flag
 *                   wins over the file); missing ones are the worked example's
 *                   (one query [1], or three under a causal mask; keys [0], [log 2],
 *                   [log 3]; values [1,0], [0,2], [2,2]; widened with zero columns to
 *                   an even head for rope and to 4 for p-rope);
 *   --heads 1|2, --mask none|causal|padding|keep with --key-length N or --keep
 *   ROWS, --pos none|rope|alibi|t5|p-rope|fire with their parameters, --scale,
 *   --loss dot|mse with --target ROWS (C or Y; else drawn from --seed), and
 *   --check dq:I,J (or dk, dv) for one entry against finite differences.
 * It prints every matrix of the result (qkv_explain_result) in its order, the
 * D_i = rowsum(dO * O) step written out from the result's dO, O and dO*O, and the
 * fused op's agreement. Bad input: one line, exit 2. The flag rows and the
 * options -> input steps are train/experiments/explain_fields.h's, which the
 * page's C API reads too (the same refusals).
 */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/kernels/parallel.h"
#include "core/number.h"
#include "cli/args.h"
#include "cli/commands.h"
#include "train/experiments/explain.h"
#include "train/experiments/explain_fields.h"
#include "train/settings.h"

#define N_FIELDS QKV_EXPLAIN_N_FIELDS

static int explain_attention(int argc, char **argv);
static const qkv_command_spec attention = {
    "attention", "", 0,
    "one attention step, forward and backward: the worked example, or your Q, K and V",
    qkv_explain_fields, N_FIELDS, NULL, NULL, explain_attention};

static int fail(const char *message) {
    fprintf(stderr, "qkv explain attention: %s\n", message);
    return 2;
}

/* ---- inputs ---------------------------------------------------------------------- */

/* The matrices: the file's, each replaced by its flag when given; then the rest. */
static int set_matrices(const qkv_explain_options *o, qkv_explain_input *in) {
    char *from_file[QKV_EXPLAIN_N_MATRICES] = {0};
    if (o->file && qkv_explain_read_file(o->file, from_file) != 0) return -1;
    const char *texts[QKV_EXPLAIN_N_MATRICES];
    int rc = 0;
    for (int i = 0; i < QKV_EXPLAIN_N_MATRICES; i++) texts[i] = o->texts[i] ? o->texts[i] : from_file[i];
    static const char *const flags[QKV_EXPLAIN_N_MATRICES] = {"--q", "--k", "--v", "--keep", "--target"};
    for (int i = 0; i < 3 && rc == 0; i++)   /* q, k, v */
        if (texts[i]) rc = qkv_explain_input_set(in, qkv_explain_matrix_names[i], o->texts[i] ? flags[i] : o->file,
                                                 texts[i]);
    if (rc == 0) qkv_explain_fill_missing(in, (texts[0] ? 1 : 0) | (texts[1] ? 2 : 0) | (texts[2] ? 4 : 0));
    for (int i = 3; i < QKV_EXPLAIN_N_MATRICES && rc == 0; i++)
        if (texts[i]) rc = qkv_explain_input_set(in, qkv_explain_matrix_names[i], o->texts[i] ? flags[i] : o->file,
                                                 texts[i]);
    for (int i = 0; i < QKV_EXPLAIN_N_MATRICES; i++) free(from_file[i]);
    return rc;
}

static int make_input(const qkv_explain_options *o, qkv_explain_input *in) {
    qkv_explain_input_init(in);
    qkv_explain_options_apply(o, in);
    if (set_matrices(o, in) != 0) return -1;
    return qkv_explain_options_finish(o, in);
}

/* "dq:1,0" -> 'q', 1, 0. */
static int parse_check(const char *text, char *which, int *row, int *col) {
    char name[4] = "", rest[64] = "";
    long long r, c;
    const char *colon = strchr(text, ':'), *comma = colon ? strchr(colon, ',') : NULL;
    if (colon && comma && colon - text == 2 && (size_t)(comma - colon) < sizeof rest) {
        memcpy(name, text, 2);
        snprintf(rest, sizeof rest, "%.*s", (int)(comma - colon - 1), colon + 1);
        if (name[0] == 'd' && strchr("qkv", name[1]) && name[1] &&
            qkv_parse_int(rest, 0, QKV_EXPLAIN_MAX_W, &r) == 0 && qkv_parse_int(comma + 1, 0, QKV_EXPLAIN_MAX_W, &c) == 0) {
            *which = name[1], *row = (int)r, *col = (int)c;
            return 0;
        }
    }
    return qkv_set_error("--check '%.40s': expected dq:I,J, dk:I,J or dv:I,J (row I, column J)", text), -1;
}

/* ---- printing -------------------------------------------------------------------- */

static void print_matrix(const qkv_explain_matrix *m) {
    printf("  %-8s [%d,%d]  %s\n", m->name, m->rows, m->cols, m->formula);
    for (int i = 0; i < m->rows; i++) {
        printf("        ");
        for (int j = 0; j < m->cols; j++) printf(" %9.4f", (double)m->values[(size_t)i * m->cols + j]);
        putchar('\n');
    }
}

/* D_i written out from the result's dO, O and dO*O of head h: the terms and their sum. */
static void print_rows_sum(const qkv_explain_result *r, int h) {
    const qkv_explain_matrix *d_out = qkv_explain_find(r, "dO", r->heads > 1 ? h : -1);
    const qkv_explain_matrix *out = qkv_explain_find(r, "O", h), *product = qkv_explain_find(r, "dO*O", h);
    const qkv_explain_matrix *rows = qkv_explain_find(r, "D", h);
    for (int i = 0; i < rows->rows; i++) {
        printf("        D_%d = ", i);
        for (int k = 0; k < product->cols; k++)
            printf("%s%.4f x %.4f", k ? " + " : "", (double)d_out->values[i * d_out->cols + k],
                   (double)out->values[i * out->cols + k]);
        printf(" = %.4f\n", (double)rows->values[i]);
    }
}

static void print_result(const qkv_explain_input *in, const qkv_explain_result *r) {
    printf("qkv explain attention: your step (mask %s, positions %s)\n\n", qkv_explain_mask_names[in->mask],
           qkv_pos_kind_name(in->pos));
    for (const char *line = r->setup; *line;) {
        size_t n = strcspn(line, "\n");
        printf("  %.*s\n", (int)n, line);
        line += n + (line[n] == '\n');
    }
    const char *section = "";
    int head = -2;
    for (int i = 0; i < r->n; i++) {
        const qkv_explain_matrix *m = &r->matrices[i];
        if (strcmp(section, m->section) != 0) {
            section = m->section;
            head = -2;
            if (strcmp(section, "backward") == 0) printf("\nBackward (the tape's qkv_backward of L = %.4f)\n", r->loss);
            else if (strcmp(section, "forward") == 0)
                printf("\nForward (composed from the library's ops: split heads, matmul, scale, add, softmax, matmul)\n");
            else printf("\n%c%s\n", section[0] - 'a' + 'A', section + 1);
        }
        if (r->heads > 1 && m->head != head && m->head >= 0) printf(" head %d\n", m->head);
        if (r->heads > 1 && m->head != head && m->head < 0 && head >= 0) printf(" all heads\n");
        head = m->head;
        print_matrix(m);
        if (strcmp(m->name, "D") == 0) print_rows_sum(r, m->head);
    }
    printf("\nThe fused qkv_attention op on the same inputs: max |fused - composed| over O, dQ, dK, dV = %.2e\n",
           (double)r->fused_diff);
}

static int explain_step(const qkv_explain_options *o) {
    qkv_explain_input in;
    if (make_input(o, &in) != 0) return fail(qkv_last_error());
    char which = 0;
    int row = 0, col = 0;
    if (o->check && parse_check(o->check, &which, &row, &col) != 0) return fail(qkv_last_error());
    double analytic = 0, numeric = 0;
    if (o->check && qkv_explain_check(&in, which, row, col, &analytic, &numeric) != 0) return fail(qkv_last_error());
    qkv_explain_result result;
    if (qkv_explain_step(&in, &result) != 0) return fail(qkv_last_error());
    print_result(&in, &result);
    qkv_explain_result_free(&result);
    if (!o->check) return 0;
    double diff = fabs(analytic - numeric);
    int ok = diff <= 1e-2 * (1 + fabs(analytic));
    printf("\ncheck dL/d%c[%d,%d]: analytic (the tape's backward) %.6f, numeric (central difference, h = 1e-3) %.6f, "
           "|difference| %.2e %s\n", (char)(which - 'a' + 'A'), row, col, analytic, numeric, diff, ok ? "ok" : "FAILED");
    return ok ? 0 : 1;
}

/* ---- the command ----------------------------------------------------------------- */

/* The worked example: only --mask (none, causal, padding), --pos (its schemes) and --threads given. */
static int is_worked_example(const qkv_explain_options *o, const unsigned char *given) {
    const char *walk[QKV_POS_COUNT + 1];
    qkv_pos_kind kinds[QKV_POS_COUNT];
    int n = qkv_explain_schemes(walk, kinds), known = 0;
    for (int i = 0; i < n; i++) known |= kinds[i] == qkv_explain_pos_kinds[o->pos];
    if (!known || o->mask > QKV_EXPLAIN_MASK_PADDING) return 0;
    for (int i = 0; i < N_FIELDS; i++) {
        size_t at = qkv_explain_fields[i].offset;
        int walk_flag = at == offsetof(qkv_explain_options, mask) || at == offsetof(qkv_explain_options, pos) ||
                        at == offsetof(qkv_explain_options, threads);
        if (given[i] && !walk_flag) return 0;
    }
    return 1;
}

static int explain_attention(int argc, char **argv) {
    qkv_explain_fields_ready();
    qkv_explain_options o;
    qkv_fields_defaults(qkv_explain_fields, N_FIELDS, &o);
    qkv_arg args[QKV_MAX_COMMAND_FLAGS];
    unsigned char given[QKV_MAX_COMMAND_FLAGS] = {0};
    int n = qkv_args_from_fields(qkv_explain_fields, N_FIELDS, &o, args);
    int parsed = qkv_command_parse_args(&attention, "explain attention", argc, argv, args, n, given);
    if (parsed != 0) return parsed > 0 ? 0 : 2;
    qkv_set_threads(o.threads);
    if (is_worked_example(&o, given)) return qkv_explain_attention(o.mask, qkv_explain_pos_kinds[o.pos]);
    return explain_step(&o);
}

static const qkv_command_spec *const topics[] = {&attention, NULL};

const qkv_command_spec qkv_command_explain = {
    "explain", "TOPIC", 1, "a computation step by step, forward and backward:", NULL, 0, topics, "topic",
    qkv_cmd_explain};

int qkv_cmd_explain(int argc, char **argv) { return qkv_command_dispatch(&qkv_command_explain, argc, argv); }
