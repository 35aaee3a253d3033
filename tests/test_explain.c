/* test_explain.c — seeing inside one step: `qkv explain attention` on typed Q, K, V
 * (train/experiments/explain_step.c: the result against attention written out in
 * double here, every position scheme's path, the entry check against finite
 * differences, bad input refused), the tape described for other callers and its
 * --dot labels (core/ops/tape_show.c), and `qkv attn --grads` with the gradients
 * inside a model's attention (train/tasks/sequence_attention.c,
 * core/ops/attention_grads.c). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "core/ops/attention_grads.h"
#include "core/ops/ops.h"
#include "tests/test_util.h"
#include "train/experiments/explain.h"
#include "train/tasks/sequence.h"

/* stdout of ../qkv args in a malloc'd string; the exit status. */
static int qkv_stdout(const char *args, char **out) {
    char command[1024];
    snprintf(command, sizeof command, "%s %s 2>/dev/null", qkv_binary(), args);
    FILE *p = popen(command, "r");
    ck_assert_ptr_nonnull(p);
    size_t cap = 1 << 16, len = 0, got;
    char *text = malloc(cap);
    while ((got = fread(text + len, 1, cap - len - 1, p)) > 0) {
        len += got;
        if (cap - len < 1024) text = realloc(text, cap *= 2);
    }
    text[len] = '\0';
    *out = text;
    int status = pclose(p);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static void set(qkv_explain_input *in, const char *name, const char *text) {
    ck_assert_msg(qkv_explain_input_set(in, name, name, text) == 0, "%s: %s", name, qkv_last_error());
}

/* Two heads, three queries, four keys, a causal mask, a given C. */
static void two_head_input(qkv_explain_input *in) {
    qkv_explain_input_init(in);
    in->heads = 2;
    set(in, "q", "0.5,-1,0.25,2; 1,0.5,-0.5,0; -1,1,1,0.5");
    set(in, "k", "1,0,0.5,-0.5; 0,1,1,1; -0.5,0.5,0,2; 1,1,-1,0");
    set(in, "v", "1,2,0,-1; 3,-4,1,0; 0.5,6,2,2; -2,1,0,3");
    set(in, "target", "1,0,-1,2; 0,1,0.5,0; 2,-1,0,1");
    in->mask = QKV_EXPLAIN_MASK_CAUSAL;
}

static const float *values(const qkv_explain_result *r, const char *name, int head) {
    const qkv_explain_matrix *m = qkv_explain_find(r, name, head);
    ck_assert_msg(m != NULL, "no matrix %s of head %d", name, head);
    return m->values;
}

/* Attention and its backward written out in double, head by head, against the step. */
START_TEST(typed_step_matches_attention_written_out) {
    qkv_explain_input in;
    two_head_input(&in);
    qkv_explain_result r;
    ck_assert_msg(qkv_explain_step(&in, &r) == 0, "%s", qkv_last_error());
    ck_assert_int_eq(r.heads, 2);
    ck_assert_int_eq(r.d_head, 2);
    enum { TQ = 3, TK = 4, D = 2, W = 4 };
    double scale = 1 / sqrt(2.0), loss = 0, dq_all[TQ][W] = {{0}}, dk_all[TK][W] = {{0}}, dv_all[TK][W] = {{0}};
    for (int h = 0; h < 2; h++) {
        double p[TQ][TK], o[TQ][D], dp[TQ][TK], ds[TQ][TK], rows[TQ];
        for (int i = 0; i < TQ; i++) {
            double s[TK], top = -INFINITY, sum = 0;
            for (int j = 0; j < TK; j++) {
                s[j] = 0;
                for (int c = 0; c < D; c++) s[j] += (double)in.q[i * W + h * D + c] * in.k[j * W + h * D + c];
                s[j] = j > i + TK - TQ ? -INFINITY : s[j] * scale;
                if (s[j] > top) top = s[j];
            }
            for (int j = 0; j < TK; j++) sum += p[i][j] = exp(s[j] - top);
            for (int j = 0; j < TK; j++) p[i][j] /= sum;
            rows[i] = 0;
            for (int c = 0; c < D; c++) {
                o[i][c] = 0;
                for (int j = 0; j < TK; j++) o[i][c] += p[i][j] * in.v[j * W + h * D + c];
                loss += o[i][c] * in.target[i * W + h * D + c];
                rows[i] += o[i][c] * in.target[i * W + h * D + c];   /* D_i = dO_i . O_i, dO = C */
            }
            for (int j = 0; j < TK; j++) {
                dp[i][j] = 0;
                for (int c = 0; c < D; c++) dp[i][j] += (double)in.target[i * W + h * D + c] * in.v[j * W + h * D + c];
                ds[i][j] = p[i][j] * (dp[i][j] - rows[i]);
            }
        }
        for (int i = 0; i < TQ; i++)
            for (int j = 0; j < TK; j++)
                for (int c = 0; c < D; c++) {
                    dq_all[i][h * D + c] += scale * ds[i][j] * in.k[j * W + h * D + c];
                    dk_all[j][h * D + c] += scale * ds[i][j] * in.q[i * W + h * D + c];
                    dv_all[j][h * D + c] += p[i][j] * in.target[i * W + h * D + c];
                }
        const float *got_p = values(&r, "P", h), *got_o = values(&r, "O", h), *got_dp = values(&r, "dP", h);
        const float *got_ds = values(&r, "dS", h), *got_rows = values(&r, "D", h);
        for (int i = 0; i < TQ; i++) {
            ck_assert_close(got_rows[i], rows[i], 1e-5);
            for (int c = 0; c < D; c++) ck_assert_close(got_o[i * D + c], o[i][c], 1e-5);
            for (int j = 0; j < TK; j++) {
                ck_assert_close(got_p[i * TK + j], p[i][j], 1e-5);
                ck_assert_close(got_dp[i * TK + j], dp[i][j], 1e-5);
                ck_assert_close(got_ds[i * TK + j], ds[i][j], 1e-5);
            }
        }
        /* the mask: -inf above the shifted diagonal, P exactly 0 there */
        ck_assert(isinf(values(&r, "M", -1)[0 * TK + 2]) && got_p[0 * TK + 2] == 0.0f);
    }
    ck_assert_close(r.loss, loss, 1e-5);
    const float *dq = values(&r, "dQ", -1), *dk = values(&r, "dK", -1), *dv = values(&r, "dV", -1);
    for (int c = 0; c < W; c++) {
        for (int i = 0; i < TQ; i++) ck_assert_close(dq[i * W + c], dq_all[i][c], 1e-5);
        for (int j = 0; j < TK; j++) ck_assert_close(dk[j * W + c], dk_all[j][c], 1e-5);
        for (int j = 0; j < TK; j++) ck_assert_close(dv[j * W + c], dv_all[j][c], 1e-5);
    }
    ck_assert_float_le(r.fused_diff, 1e-5);
    qkv_explain_result_free(&r);
    qkv_explain_result_free(&r); /* safe twice */
}
END_TEST

/* Every scheme acting inside attention: its matrices are there, the fused op
 * agrees, and entries of dQ, dK, dV agree with central differences. */
START_TEST(every_scheme_and_mask_checks_out) {
    const char *names[QKV_POS_COUNT + 1];
    qkv_pos_kind kinds[QKV_POS_COUNT];
    int n = qkv_explain_step_schemes(names, kinds);
    ck_assert_int_eq(n, 6); /* none, rope, alibi, t5, p-rope, fire */
    for (int s = 0; s < n; s++)
        for (int mask = 0; mask < QKV_EXPLAIN_MASK_COUNT; mask++) {
            qkv_explain_input in;
            two_head_input(&in);
            in.pos = kinds[s];
            in.mask = mask;
            in.key_length = 3;
            in.prope = 0.5f; /* one of the head's two pairs turns: one head of width 4 */
            if (kinds[s] == QKV_POS_PROPE) in.heads = 1;
            in.loss = mask % 2 ? QKV_EXPLAIN_LOSS_MSE : QKV_EXPLAIN_LOSS_DOT;
            set(&in, "keep", "1,1,0,0; 0,1,1,0; 1,0,0,1");
            qkv_explain_result r;
            ck_assert_msg(qkv_explain_step(&in, &r) == 0, "%s: %s", names[s], qkv_last_error());
            ck_assert_msg(r.fused_diff < 1e-4, "%s mask %d: fused differs by %g", names[s], mask, (double)r.fused_diff);
            int bias = kinds[s] == QKV_POS_ALIBI || kinds[s] == QKV_POS_T5 || kinds[s] == QKV_POS_FIRE;
            int rotated = kinds[s] == QKV_POS_ROPE || kinds[s] == QKV_POS_PROPE;
            ck_assert_int_eq(qkv_explain_find(&r, "B", 0) != NULL, bias);
            ck_assert_int_eq(qkv_explain_find(&r, "Qr", 0) != NULL, rotated);
            ck_assert_int_eq(qkv_explain_find(&r, "M", -1) != NULL, mask != QKV_EXPLAIN_MASK_NONE);
            if (kinds[s] == QKV_POS_ALIBI && mask != QKV_EXPLAIN_MASK_CAUSAL) /* -slope_h |i - j|, query i at i + 1: head 1's slope 1/4 */
                ck_assert_close(values(&r, "B", 1)[0 * 4 + 3], -0.25 * 2, 1e-6);
            if (kinds[s] == QKV_POS_T5) { /* the table's gradient holds every dB entry once */
                const qkv_explain_matrix *table = qkv_explain_find(&r, "dtable", -1);
                double sum_table = 0, sum_bias = 0;
                for (int i = 0; i < table->rows * table->cols; i++) sum_table += table->values[i];
                for (int h = 0; h < 2; h++)
                    for (int i = 0; i < 12; i++) sum_bias += values(&r, "dB", h)[i];
                ck_assert_close(sum_table, sum_bias, 1e-5);
            }
            if (kinds[s] == QKV_POS_FIRE) ck_assert_ptr_nonnull(qkv_explain_find(&r, "dc", -1));
            qkv_explain_result_free(&r);
            const struct { char which; int row, col; } entries[] = {{'q', 2, 1}, {'k', 1, 3}, {'v', 3, 0}};
            for (int e = 0; e < 3; e++) {
                double analytic, numeric;
                ck_assert(qkv_explain_check(&in, entries[e].which, entries[e].row, entries[e].col, &analytic,
                                            &numeric) == 0);
                ck_assert_msg(fabs(analytic - numeric) < 2e-3 * (1 + fabs(analytic)), "%s mask %d d%c: %g vs %g",
                              names[s], mask, entries[e].which, analytic, numeric);
            }
        }
}
END_TEST

START_TEST(bad_input_is_one_line) {
    float m[64];
    int rows, cols;
    ck_assert_int_eq(qkv_explain_parse_matrix("--q", "1,0; 0,1", m, 8, 8, &rows, &cols), 0);
    ck_assert(rows == 2 && cols == 2 && m[2] == 0 && m[3] == 1);
    ck_assert_int_eq(qkv_explain_parse_matrix("--q", "1 2\n3 4", m, 8, 8, &rows, &cols), 0);
    ck_assert(rows == 2 && m[3] == 4);
    const char *bad[][2] = {{"1,x", "not a number"}, {"1,0; 1", "ragged"}, {"", "no numbers"},
                            {"1;;2", "empty"},      {"1;2;3", "more than 2 rows"}, {"1,2,3", "more than 2"},
                            {"1,,2", "empty number"}};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        ck_assert_int_eq(qkv_explain_parse_matrix("--q", bad[i][0], m, 2, 2, &rows, &cols), -1);
        expect_last_error("--q", bad[i][1]);
    }
    qkv_explain_input in;
    qkv_explain_input_init(&in);
    set(&in, "q", "1,2,3");
    ck_assert_int_eq(qkv_explain_input_set(&in, "k", "--k", "1,2"), -1);
    expect_last_error("--k", "[1,2]");
    set(&in, "k", "1,2,3; 4,5,6");
    set(&in, "v", "1;2");
    in.heads = 2;
    ck_assert_int_eq(qkv_explain_check_input(&in), -1);
    expect_last_error("--heads 2", "does not divide");
    qkv_explain_result r;
    ck_assert_int_eq(qkv_explain_step(&in, &r), -1);
    ck_assert_int_eq(r.n, 0);
    in.heads = 1;
    in.pos = QKV_POS_ROPE;
    ck_assert_int_eq(qkv_explain_check_input(&in), -1);
    expect_last_error("--pos rope", "odd");
    in.pos = QKV_POS_SINUSOIDAL;
    ck_assert_int_eq(qkv_explain_check_input(&in), -1);
    in.pos = QKV_POS_NONE;
    in.mask = QKV_EXPLAIN_MASK_PADDING;
    in.key_length = 3;
    ck_assert_int_eq(qkv_explain_check_input(&in), -1);
    expect_last_error("--key-length 3", "1..2");
    double a, b;
    in.mask = QKV_EXPLAIN_MASK_NONE;
    ck_assert_int_eq(qkv_explain_check(&in, 'q', 1, 0, &a, &b), -1);
    expect_last_error("--check dq:1,0", "outside");

    /* the command line: one line, exit 2 */
    static const char *const args[][2] = {
        {"--q \"1,x\"", "--q: 'x' is not a number"},
        {"--q \"1,0;1\"", "ragged rows"},
        {"--q \"1;2;3;4;5;6;7;8;9\"", "more than 8 rows"},
        {"--q \"1,0,1\" --k \"1,0,1\" --v \"1,2\" --heads 2", "does not divide"},
        {"--q \"1,2,3,4,5,6,7,8,9,1\" --k \"1,2,3,4,5,6,7,8,9,1\" --v \"1,2\" --heads 1", "at most 8"},
        {"--mask keep", "needs --keep"},
        {"--check dz:0,0", "--check"},
        {"--pos t5 --t5-buckets 2", "--t5-buckets 2"},
        {"--pos p-rope --p-rope 0.4", "keeps none turning"},
        {"--file /nonexistent/x.txt", "/nonexistent/x.txt"},
    };
    for (size_t i = 0; i < sizeof args / sizeof *args; i++) {
        char cmd[256], line[512];
        snprintf(cmd, sizeof cmd, "explain attention %s", args[i][0]);
        ck_assert_int_eq(run_qkv(cmd, line, sizeof line), 2);
        ck_assert_msg(strstr(line, args[i][1]) != NULL, "%s: '%s' lacks '%s'", cmd, line, args[i][1]);
    }
}
END_TEST

/* The command line prints the result's matrices, D written out, and the check. */
START_TEST(command_line_prints_the_step) {
    scratch_dir_create();
    const char *file = scratch_file("step.txt");
    const char text[] = "# two queries\nq = 1,0; 0,1\nk = 1,0; 0,1; 1,1\n\nv = 1,2; 3,4; 5,6\ntarget = 1,0; 0,1\n";
    write_file_bytes(file, text, sizeof text - 1);
    char args[512], *out;
    snprintf(args, sizeof args, "explain attention --file %s --mask causal --check dq:1,0", file);
    ck_assert_int_eq(qkv_stdout(args, &out), 0);
    const char *expected[] = {"your step (mask causal, positions none)", "0.6698    0.3302    0.0000",
                              "D_1 = 0.0000 x 3.4067 + 1.0000 x 4.4067 = 4.4067", "dQ       [2,2]  scale dS K",
                              "check dL/dQ[1,0]: analytic (the tape's backward) 0.115344", "ok\n"};
    for (size_t i = 0; i < sizeof expected / sizeof *expected; i++)
        ck_assert_msg(strstr(out, expected[i]) != NULL, "output lacks '%s':\n%s", expected[i], out);
    free(out);
    /* the same step typed as flags prints the same */
    char *typed;
    ck_assert_int_eq(qkv_stdout("explain attention --q \"1,0; 0,1\" --k \"1,0; 0,1; 1,1\" --v \"1,2; 3,4; 5,6\" "
                                "--target \"1,0; 0,1\" --mask causal --check dq:1,0", &typed), 0);
    ck_assert_int_eq(qkv_stdout(args, &out), 0);
    ck_assert_str_eq(typed, out);
    free(typed);
    free(out);
    /* T5 on the worked example, and the file refused line by line */
    ck_assert_int_eq(qkv_stdout("explain attention --pos t5", &out), 0);
    ck_assert_msg(strstr(out, "table    [8,1]") && strstr(out, "dtable") && strstr(out, "B        [1,3]"), "%s", out);
    free(out);
    const char broken[] = "q = 1,0\nw = 2\n";
    write_file_bytes(file, broken, sizeof broken - 1);
    char line[512];
    snprintf(args, sizeof args, "explain attention --file %s", file);
    ck_assert_int_eq(run_qkv(args, line, sizeof line), 2);
    ck_assert_msg(strstr(line, "line 2") && strstr(line, "'w'"), "%s", line);
    scratch_dir_remove();
}
END_TEST

/* ---- the tape described, and --dot ------------------------------------------------- */

START_TEST(tape_described_with_gradient_norms) {
    qkv_tape *tape = qkv_tape_create(1);
    qkv_tensor *w = tensor_of(2, (int[]){3, 2}, (float[]){1, -2, 3, 0.5f, -1, 2}, 1);
    qkv_tensor *x = tensor_of(2, (int[]){4, 3}, NULL, 0);
    for (int i = 0; i < 12; i++) x->data[i] = (float)(i % 5) - 2;
    w->name = strdup("w");
    qkv_tensor *h = qkv_matmul(tape, x, w, 0, 0);
    qkv_tensor *loss = qkv_sum_all(tape, qkv_mul(tape, h, h));
    qkv_backward(tape, loss);
    qkv_tape_graph g;
    qkv_tape_describe(tape, &g);
    ck_assert_int_eq(g.n_nodes, 3);
    ck_assert_int_eq(g.n_leaves, 2);
    const qkv_tape_entry *mm = &g.entries[0], *mul = &g.entries[1], *xe = &g.entries[3], *we = &g.entries[4];
    ck_assert_str_eq(mm->op, "matmul");
    ck_assert(mm->inputs[0] == 3 && mm->inputs[1] == 4 && xe->leaf == 2 && we->leaf == 1);
    ck_assert_str_eq(we->op, "w");
    ck_assert(mul->inputs[0] == 0 && mul->inputs[1] == 0);
    /* dL/dh = 2h, so |grad| of the matmul's output is 2 |h| */
    ck_assert_close(mm->grad_norm, 2 * mm->norm, 1e-6);
    ck_assert_ptr_eq(mm->values, h->data);
    double norm = 0;
    for (int i = 0; i < 6; i++) norm += (double)w->grad[i] * w->grad[i];
    ck_assert_close(we->grad_norm, sqrt(norm), 1e-6);
    ck_assert_float_eq(we->min, -2);
    ck_assert_float_eq(we->max, 3);
    ck_assert_close(we->mean, 3.5 / 6, 1e-7);
    ck_assert(xe->grad_norm == -1 && xe->grad == NULL);
    char expect[128];
    snprintf(expect, sizeof expect, "#0 matmul\\n[4,2]\\nmean %.4g [%.4g, %.4g]\\n|grad| %.4g", mm->mean,
             (double)mm->min, (double)mm->max, mm->grad_norm);
    qkv_tape_graph_free(&g);

    scratch_dir_create();
    const char *path = scratch_file("t.dot");
    ck_assert_int_eq(qkv_tape_write_dot(tape, path), 0);
    char *text = read_text(path);
    ck_assert_msg(strstr(text, expect), "'%s' not in\n%s", expect, text);
    ck_assert_msg(strstr(text, "leaf1 [label=\"w\\n[3,2]\\nmean 0.5833 [-2, 3]\\n|grad| "), "%s", text);
    free(text);
    scratch_dir_remove();
    qkv_tape_free(tape);
    qkv_tensor_free(w);
    qkv_tensor_free(x);
}
END_TEST

/* ---- attention gradients of a model ------------------------------------------------- */

START_TEST(model_attention_grads_are_consistent) {
    qkv_seq_model_config c;
    qkv_seq_model_default_config(&c);
    c.data.min_len = c.data.max_len = 4;
    c.data.vocab = 5;
    c.layers = 2, c.heads = 2, c.dim = 8, c.ff = 16, c.batch = 2, c.test_size = 2;
    for (int arch = 0; arch < 3; arch++) {
        c.data.arch = arch;
        c.pos = arch == QKV_ARCH_ENCODER ? QKV_POS_ROPE : QKV_POS_ALIBI;
        qkv_seq_model m;
        qkv_seq_model_init(&m, &c);
        qkv_tape *tape = qkv_tape_create(1), *ops = qkv_tape_create(1);
        qkv_tape_set_grad(ops, 0);
        const int32_t x[4] = {3, 5, 4, 7};
        qkv_seq_attention a;
        qkv_seq_model_attention_grads(&m, tape, ops, x, 4, &a);
        ck_assert_int_eq(a.n_rows, arch == QKV_ARCH_SEQ2SEQ ? 6 : 2);
        ck_assert(a.loss > 0 && isfinite(a.loss));
        ck_assert_int_eq(a.target[0], 7); /* reversed */
        for (int r = 0; r < a.n_rows; r++) {
            const qkv_seq_attention_row *row = &a.rows[r];
            int tq = row->weights->shape[2], tk = row->weights->shape[3], d = row->dq->shape[3];
            assert_shape(row->ds, 4, (int[]){1, 2, tq, tk});
            assert_shape(row->dk, 4, (int[]){1, 2, tk, d});
            double total = 0;
            for (int i = 0; i < 2 * tq; i++) { /* softmax backward: each row of dS sums to 0 */
                double sum = 0;
                for (int j = 0; j < tk; j++) sum += row->ds->data[i * tk + j], total += fabs(row->ds->data[i * tk + j]);
                ck_assert_msg(fabs(sum) < 1e-6, "row %d of dS sums to %g", i, sum);
            }
            ck_assert_msg(total > 0, "dS of row %d is all zero", r);
            /* dS = P * (dP - D) with D = rowsum(dO * O), which equals rowsum(dP * P) */
            for (int i = 0; i < 2 * tq; i++) {
                double shift = 0;
                for (int j = 0; j < tk; j++) shift += (double)row->dp->data[i * tk + j] * row->weights->data[i * tk + j];
                for (int j = 0; j < tk; j++)
                    ck_assert_close(row->ds->data[i * tk + j],
                                    row->weights->data[i * tk + j] * (row->dp->data[i * tk + j] - shift), 1e-5);
            }
        }
        qkv_seq_attention_free(&a);
        qkv_tape_free(ops);
        qkv_tape_free(tape);
        qkv_seq_model_free(&m);
    }
}
END_TEST

/* A fused node's P, dP, dS, dQ, dK, dV against the same attention composed of ops
 * and its tape's backward, in the heads_last layout the layers use. */
START_TEST(attention_node_grads_match_composed_ops) {
    enum { H = 2, TQ = 3, TK = 5, D = 4, DV = 3 };
    qkv_tensor *q = random_tensor(4, (int[]){1, TQ, H, D}, 1, 1), *k = random_tensor(4, (int[]){1, TK, H, D}, 2, 1);
    qkv_tensor *v = random_tensor(4, (int[]){1, TK, H, DV}, 3, 1);
    float seed[TQ * H * DV];
    fill_normal_seeded(seed, TQ * H * DV, 4, 0, 1);
    qkv_tape *tape = qkv_tape_create(1), *ops = qkv_tape_create(1), *ref = qkv_tape_create(1);
    qkv_tape_set_grad(ops, 0);
    qkv_attention_opts opts = {.causal = 1, .heads_last = 1};
    qkv_tensor *out = qkv_attention(tape, q, k, v, &opts, NULL);
    qkv_backward_seeded(tape, out, seed);
    qkv_attention_grads g;
    qkv_attention_node_grads(ops, &tape->nodes[tape->n_nodes - 1], &g);
    float *fused[3] = {copy_floats(q->grad, q->size), copy_floats(k->grad, k->size), copy_floats(v->grad, v->size)};
    qkv_tensor_zero_grad(q), qkv_tensor_zero_grad(k), qkv_tensor_zero_grad(v);

    const int perm[4] = {0, 2, 1, 3};
    qkv_tensor *qh = qkv_permute(ref, q, perm), *kh = qkv_permute(ref, k, perm), *vh = qkv_permute(ref, v, perm);
    qkv_tensor *mask = qkv_tape_zeros(ref, 2, (int[]){TQ, TK});
    for (int i = 0; i < TQ; i++)
        for (int j = i + TK - TQ + 1; j < TK; j++) mask->data[i * TK + j] = -INFINITY;
    qkv_tensor *logits = qkv_add(ref, qkv_scale(ref, qkv_matmul(ref, qh, kh, 0, 1), 0.5f), mask);
    qkv_tensor *p = qkv_softmax(ref, logits), *o = qkv_matmul(ref, p, vh, 0, 0);
    qkv_backward_seeded(ref, qkv_permute(ref, o, perm), seed);
    assert_floats_near(g.p->data, p->data, p->size, 1e-6);
    assert_floats_near(g.dp->data, p->grad, p->size, 1e-5);
    assert_floats_near(g.ds->data, logits->grad, p->size, 1e-5);
    assert_floats_near(g.dq->data, qh->grad, qh->size, 1e-5);
    assert_floats_near(g.dk->data, kh->grad, kh->size, 1e-5);
    assert_floats_near(g.dv->data, vh->grad, vh->size, 1e-5);
    /* and the node's own input gradients are what the composed backward gives the leaves */
    assert_floats_near(fused[0], q->grad, q->size, 1e-5);
    assert_floats_near(fused[2], v->grad, v->size, 1e-5);
    for (int i = 0; i < 3; i++) free(fused[i]);
    qkv_tape_free(ref);
    qkv_tape_free(ops);
    qkv_tape_free(tape);
    qkv_tensor_free(q), qkv_tensor_free(k), qkv_tensor_free(v);
}
END_TEST

START_TEST(attn_grads_writes_five_more_maps) {
    scratch_dir_create();
    char args[1024], line[512];
    const char *ckpt = strdup(scratch_file("rev.safetensors"));
    snprintf(args, sizeof args,
             "train reverse --len 3 --vocab 4 --layers 1 --heads 2 --dim 8 --ff 16 --batch 4 --test-size 4 --steps 3 "
             "--eval-every 0 --quiet --threads 1 --save %s", ckpt);
    ck_assert_int_eq(run_qkv(args, line, sizeof line), 0);
    snprintf(args, sizeof args, "attn %s --input \"3 1 2\" --out %s --grads", ckpt, scratch_file("m.png"));
    ck_assert_msg(run_qkv(args, line, sizeof line) == 0, "%s", line);
    const char *names[] = {"m.png", "m_dP.png", "m_dS.png", "m_dQ.png", "m_dK.png", "m_dV.png"};
    for (int i = 0; i < 6; i++) {
        size_t len;
        unsigned char *png = read_file_bytes(scratch_file(names[i]), &len);
        ck_assert_msg(len > 8 && memcmp(png, "\x89PNG", 4) == 0, "%s is not a PNG", names[i]);
        free(png);
    }
    ck_assert_int_eq(count_dir_entries(scratch_dir), 7);
    /* bad input: one line, exit 2, nothing written */
    snprintf(args, sizeof args, "attn %s --input \"3 1 9\" --out %s --grads", ckpt, scratch_file("n.png"));
    ck_assert_int_eq(run_qkv(args, line, sizeof line), 2);
    ck_assert_ptr_nonnull(strstr(line, "--input: symbol 9"));
    snprintf(args, sizeof args, "attn %s --input \"3 1 2\" --out %s --grads", ckpt, scratch_file("missing/n.png"));
    ck_assert_int_eq(run_qkv(args, line, sizeof line), 2);
    ck_assert_ptr_nonnull(strstr(line, "missing/n"));
    ck_assert_int_eq(count_dir_entries(scratch_dir), 7);
    free((void *)ckpt);
    scratch_dir_remove();
}
END_TEST

Suite *suite_explain(void) {
    Suite *s = suite_create("explain");
    TCase *tc = tcase_create("explain");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, typed_step_matches_attention_written_out);
    tcase_add_test(tc, every_scheme_and_mask_checks_out);
    tcase_add_test(tc, bad_input_is_one_line);
    tcase_add_test(tc, command_line_prints_the_step);
    tcase_add_test(tc, tape_described_with_gradient_norms);
    tcase_add_test(tc, attention_node_grads_match_composed_ops);
    tcase_add_test(tc, model_attention_grads_are_consistent);
    tcase_add_test(tc, attn_grads_writes_five_more_maps);
    suite_add_tcase(s, tc);
    return s;
}
