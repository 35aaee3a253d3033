/* explain.c — the walk-through of `qkv explain attention [--mask causal|none|padding]
 * [--pos none|sinusoidal|rope|alibi]` (cli/cmd_explain.c parses and prints the
 * usage): one small attention computation, step by step. The schemes it explains are
 * those of layers/positions.h's table without a trained table (qkv_explain_schemes).
 *
 * The worked example (the default): one query [1]; keys [0], [log 2], [log 3];
 * values [1,0], [0,2], [2,2]; d = 1 so the scale 1/sqrt(d) is 1. The scores are
 * 0, log 2, log 3, the weights 1/6, 2/6, 3/6 and the output [7/6, 5/3].
 *
 * Every intermediate is computed with the library's ops on a tape (matmul, scale,
 * add, softmax: the composed attention of explain_internal.h's qkv_explain_forward,
 * the same pass a step of typed inputs runs), its shape and values printed with
 * the formula; then the fused qkv_attention op computes the same thing and the
 * differences are printed. Backward starts from L = sum_i O_i . c with c = [1, 2],
 * so dO = c in every row, and prints
 *     dP = dO V^T,  dS = P * (dP - rowsum(dP * P)),  dQ = scale dS K,
 *     dK = scale dS^T Q,  dV = P^T dO,
 * each evaluated from the formula with ops, compared with the tape's backward
 * through the composed ops and checked against central finite differences of L
 * (the line "max |analytic - numeric|"); dQ, dK and dV also against the fused
 * op's backward.
 *
 * Variants (each documented in --help):
 *   --mask causal   three queries, each [1], at positions 0, 1, 2 over the same
 *                   keys: query i sees keys 0..i (weights 1 | 1/3 2/3 | 1/6 2/6 3/6).
 *   --mask padding  key 2 is padding (key_padding [1, 1, 0]): weights 1/3, 2/3, 0.
 *   --pos sinusoidal  adds the sinusoidal table to queries and keys (d = 1: sin t);
 *                   the query sits at the last position, 2 (queries are aligned
 *                   with the end of the keys, the library's convention).
 *   --pos rope      d = 2 (a zero second dimension), queries and keys rotated by
 *                   qkv_rope at their positions; scale 1/sqrt(2).
 *   --pos alibi     adds the ALiBi bias -slope * (i_pos - j) with slope 1/2, the first
 *                   of eight heads' slopes (one head's 1/256 would hardly move P).
 */
#include "train/experiments/explain.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/cancel.h"
#include "core/error.h"
#include "core/mathfn.h"
#include "core/ops/ops.h"
#include "core/ops/ops_position.h"
#include "train/experiments/explain_internal.h"

#define EPS 1e-3
#define TOL 1e-2
#define MAX_T 3

#define MASK_NONE QKV_EXPLAIN_MASK_NONE
#define MASK_CAUSAL QKV_EXPLAIN_MASK_CAUSAL
#define MASK_PADDING QKV_EXPLAIN_MASK_PADDING
#define POS_SINUSOIDAL QKV_POS_SINUSOIDAL
#define POS_ROPE QKV_POS_ROPE
#define POS_ALIBI QKV_POS_ALIBI

const char *const qkv_explain_mask_names[] = {"none", "causal", "padding", "keep", NULL};

/* A scheme the walk-through explains: no trained table, and its row's check
 * accepts the walk-through's one head of width 2, one pair (p-rope's share of
 * one pair keeps none turning). */
static int explainable(const qkv_pos_scheme *scheme) {
    return qkv_pos_keep_untrained(scheme) && qkv_pos_check(scheme->kind, 2, MAX_T, 1, NULL) == 0;
}

int qkv_explain_schemes(const char **names, qkv_pos_kind *kinds) {
    int n = 0;
    for (int i = 0; i < QKV_POS_COUNT; i++)
        if (explainable(&qkv_pos_schemes[i])) {
            if (kinds) kinds[n] = qkv_pos_schemes[i].kind;
            names[n++] = qkv_pos_schemes[i].name;
        }
    names[n] = NULL;
    return n;
}

/* The problem: the worked example as the inputs of a step (explain_internal.h's
 * state holds the leaves Q, K, V [1,T,d], after sinusoidal if any, and C, whose
 * every row is c), and what the walk reads of it. */
typedef struct problem {
    int tq, tk, d, dv, mask;
    qkv_pos_kind pos;            /* the walk's scheme (sinusoidal is in the leaves) */
    float scale;
    qkv_explain_input in;
    qkv_explain_state st;
    qkv_tensor *vh;              /* V [1,1,Tk,dv] on the composed tape: what P multiplies */
    int failures;                /* checks above TOL */
} problem;

/* ---- printing ---------------------------------------------------------------------- */

/* A tensor's last two dims as a matrix, with its name, shape and formula. */
static void print_matrix(const char *name, const char *formula, const qkv_tensor *t, const float *values) {
    int cols = t->ndim >= 1 ? t->shape[t->ndim - 1] : 1;
    int rows = t->ndim >= 2 ? t->shape[t->ndim - 2] : 1;
    const float *x = values ? values : t->data;
    printf("  %-4s [%d,%d]  %s\n", name, rows, cols, formula);
    for (int i = 0; i < rows; i++) {
        printf("        ");
        for (int j = 0; j < cols; j++) printf(" %9.4f", (double)x[(size_t)i * cols + j]);
        putchar('\n');
    }
}

static double max_abs_diff(const float *a, const float *b, size_t n) {
    double worst = 0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - (double)b[i]);
        if (isinf(a[i]) && a[i] == b[i]) d = 0;
        if (d > worst || d != d) worst = d;
    }
    return worst;
}

static void report_check(problem *p, const char *what, double diff) {
    int ok = diff <= TOL;
    p->failures += !ok;
    printf("        %s = %.2e  (tolerance %.0e) %s\n", what, diff, TOL, ok ? "ok" : "FAILED");
}

/* ---- the computation --------------------------------------------------------------- */

/* Queries sit at positions i + (Tk - Tq), keys at j (the library's alignment). */
static int query_position(const problem *p, int i) { return i + p->tk - p->tq; }

/* L = sum_i O_i . c, accumulated in double from O [.., Tq, dv]. */
static double loss_of(const problem *p, const qkv_tensor *o) {
    double sum = 0;
    for (size_t i = 0; i < o->size; i++) sum += (double)o->data[i] * p->st.target->data[i];
    return sum;
}

/* Central differences of L with respect to every element of x, where loss(p, x)
 * recomputes L from x on a scratch tape; returns max |analytic - numeric|. */
typedef double (*loss_from)(const problem *p, qkv_tape *tape, const qkv_tensor *x);

static double finite_difference(const problem *p, qkv_tensor *x, const float *analytic, loss_from loss) {
    qkv_tape *tape = qkv_tape_create(1);
    qkv_tape_set_grad(tape, 0);
    double worst = 0;
    for (size_t i = 0; i < x->size; i++) {
        float saved = x->data[i];
        if (isinf(saved)) continue; /* a masked logit: no neighborhood to differentiate in */
        x->data[i] = (float)(saved + EPS);
        double up = loss(p, tape, x);
        qkv_tape_reset(tape);
        x->data[i] = (float)(saved - EPS);
        double down = loss(p, tape, x);
        qkv_tape_reset(tape);
        x->data[i] = saved;
        double numeric = (up - down) / (2 * EPS), d = fabs(analytic[i] - numeric);
        if (d > worst || d != d) worst = d;
    }
    qkv_tape_free(tape);
    return worst;
}

static double loss_from_o(const problem *p, qkv_tape *tape, const qkv_tensor *o) { (void)tape; return loss_of(p, o); }

static double loss_from_p(const problem *p, qkv_tape *tape, const qkv_tensor *w) {
    return loss_of(p, qkv_matmul(tape, (qkv_tensor *)w, p->vh, 0, 0));
}

static double loss_from_s(const problem *p, qkv_tape *tape, const qkv_tensor *s) {
    return loss_of(p, qkv_matmul(tape, qkv_softmax(tape, (qkv_tensor *)s), p->vh, 0, 0));
}

/* Any leaf (q, k or v): the whole fused forward. */
static double loss_from_leaf(const problem *p, qkv_tape *tape, const qkv_tensor *unused) {
    (void)unused;
    qkv_explain_pass f;
    qkv_explain_forward(tape, &p->st, 1, &f);
    return loss_of(p, f.o);
}

/* An owned copy of an activation (finite differences perturb it in place). */
static qkv_tensor *owned_copy(const qkv_tensor *t) {
    qkv_tensor *c = qkv_tensor_create(NULL, t->ndim, t->shape, 0);
    memcpy(c->data, t->data, t->size * sizeof(float));
    return c;
}

/* x is perturbed in place when it is a leaf (owned), through a copy otherwise. */
static void check_against_fd(problem *p, const char *name, qkv_tensor *x, const float *analytic, loss_from loss) {
    qkv_tensor *target = x->owned ? x : owned_copy(x);
    char what[128];
    snprintf(what, sizeof what, "%s: max |analytic - numeric|", name);
    report_check(p, what, finite_difference(p, target, analytic, loss));
    if (target != x) qkv_tensor_free(target);
}

/* ---- the problem ------------------------------------------------------------------- */

/* The worked example's keys [0], [log 2], [log 3] and values [1,0], [0,2], [2,2]. */
static void worked_keys_values(float keys[3], float values[6]) {
    const float v[6] = {1, 0, 0, 2, 2, 2};
    keys[0] = 0.0f, keys[1] = qkv_math_logf(2.0f), keys[2] = qkv_math_logf(3.0f); /* qkv own log: same bits on any libc */
    memcpy(values, v, sizeof v);
}

void qkv_explain_worked_example(qkv_explain_input *in, int missing, int width) {
    float keys[3], values[6];
    worked_keys_values(keys, values);
    int tq = in->mask == QKV_EXPLAIN_MASK_CAUSAL ? 3 : 1;
    if (!in->dk) in->dk = width;
    if (missing & 2) {
        in->tk = 3;
        memset(in->k, 0, sizeof in->k);
        for (int j = 0; j < 3; j++) in->k[j * in->dk] = keys[j];
    }
    if (missing & 1) {
        in->tq = tq;
        memset(in->q, 0, sizeof in->q);
        for (int i = 0; i < tq; i++) in->q[i * in->dk] = 1.0f;
    }
    if (missing & 4) {
        in->dv = 2;
        memcpy(in->v, values, sizeof values);
    }
}

void qkv_explain_fill_missing(qkv_explain_input *in, int given) {
    qkv_explain_worked_example(in, 7 & ~given, in->pos == QKV_POS_PROPE ? 4 : in->pos == QKV_POS_ROPE ? 2 : 1);
}

/* The worked example as a step's input: c = [1, 2] in every row of C; key 2 is
 * padding; sinusoidal added to the leaves here (a step has no such scheme); ALiBi's
 * slope is a step's default for one head, 1/2: the steepest of an eight-head model's
 * 2^(-8h/8) (one head's own 1/256 would move P by 0.001). */
static void build(problem *p, int mask, qkv_pos_kind pos) {
    memset(p, 0, sizeof *p);
    p->mask = mask;
    p->pos = pos;
    p->tq = mask == MASK_CAUSAL ? 3 : 1;
    p->tk = 3;
    p->d = pos == POS_ROPE ? 2 : 1;
    p->dv = 2;
    p->scale = 1.0f / sqrtf((float)p->d);
    qkv_explain_input *in = &p->in;
    qkv_explain_input_init(in);
    in->mask = mask;
    in->key_length = 2;
    in->pos = pos == POS_SINUSOIDAL ? QKV_POS_NONE : pos;
    qkv_explain_worked_example(in, 7, p->d);
    if (pos == POS_SINUSOIDAL) { /* x += P[position]: queries at their positions, keys at 0..Tk-1 */
        float table[MAX_T * 2];
        qkv_sinusoidal_table(table, p->tk, p->d, 0, 0);
        for (int i = 0; i < p->tq; i++)
            for (int c = 0; c < p->d; c++) in->q[i * p->d + c] += table[query_position(p, i) * p->d + c];
        for (int j = 0; j < p->tk; j++)
            for (int c = 0; c < p->d; c++) in->k[j * p->d + c] += table[j * p->d + c];
    }
    in->target_given = 1;
    for (int i = 0; i < p->tq; i++) in->target[i * p->dv] = 1, in->target[i * p->dv + 1] = 2;
    qkv_explain_state_build(&p->st, in);
}

static void release(problem *p) { qkv_explain_state_free(&p->st); }

static void print_setup(const problem *p) {
    printf("qkv explain attention (mask %s, positions %s)\n\n", qkv_explain_mask_names[p->mask], qkv_pos_kind_name(p->pos));
    printf("Inputs: batch 1, 1 head, Tq = %d queries, Tk = %d keys, d = %d, dv = %d.\n", p->tq, p->tk, p->d, p->dv);
    if (p->mask == MASK_CAUSAL)
        printf("Causal: three queries [1] at positions 0, 1, 2; query i may attend to keys j <= i.\n");
    if (p->mask == MASK_PADDING) printf("Key padding [1, 1, 0]: key 2 is padding, no query may attend to it.\n");
    if (p->pos == POS_SINUSOIDAL)
        printf("Sinusoidal: Q and K already hold x + P[t], P[t][0] = sin(t) for d = 1 (query at position %d).\n",
               query_position(p, 0));
    if (p->pos == POS_ROPE)
        printf("RoPE: d = 2 (second dim 0); Q and K are rotated by angle t (base^0 = 1) at their positions,\n"
               "so each score depends on the offset between query and key only.\n");
    if (p->pos == POS_ALIBI)
        printf("ALiBi: bias[i][j] = -slope * (position(i) - j), slope = 2^-1 = 1/2: the first of eight heads'\n"
               "slopes 2^(-8h/8) (a single head's slope, 2^-8 = 1/256, would change P by about 0.001).\n");
    print_matrix("Q", "queries", p->st.q, NULL);
    print_matrix("K", "keys", p->st.k, NULL);
    print_matrix("V", "values", p->st.v, NULL);
}

/* ---- the walk ---------------------------------------------------------------------- */

/* The composed forward's activations, on one tape, and the fused op's on another
 * (explain_internal.h's one forward pass, shared with the step of typed inputs). */
typedef struct forward_pass {
    qkv_tape *tape, *fused_tape;
    qkv_explain_pass composed, fused;
    qkv_tensor *qr, *kr, *logits, *weights, *out;   /* composed: rotated Q, K; S'; P; O [1,1,Tq,dv] */
    qkv_tensor *fqr, *fkr, *fout;                   /* fused */
} forward_pass;

/* Prints S0, S, S' (with a mask or ALiBi), P and O, composed from ops. */
static void forward_composed(problem *p, forward_pass *f) {
    printf("\nForward (composed from the library's ops: matmul, scale, add, softmax, matmul)\n");
    qkv_explain_forward(f->tape, &p->st, 0, &f->composed);
    const qkv_explain_pass *c = &f->composed;
    f->qr = c->qr, f->kr = c->kr, f->logits = c->logits, f->weights = c->p, f->out = c->oh;
    p->vh = c->vh;
    if (p->pos == POS_ROPE) {
        print_matrix("Qr", "Q rotated: (x0 cos t - x1 sin t, x0 sin t + x1 cos t)", f->qr, NULL);
        print_matrix("Kr", "K rotated the same way at positions 0, 1, 2", f->kr, NULL);
    }
    print_matrix("S0", p->pos == POS_ROPE ? "scores = Qr Kr^T  (rotated query i . rotated key j)"
                                          : "scores = Q K^T  (query i . key j)", c->s0, NULL);
    char formula[128];
    snprintf(formula, sizeof formula, "scaled scores = S0 * scale, scale = 1/sqrt(d) = %.4f", (double)p->scale);
    print_matrix("S", formula, c->s, NULL);
    int alibi = p->pos == POS_ALIBI;
    if (p->mask != MASK_NONE || alibi)   /* S + B + M: the bias, then 0 or -inf */
        print_matrix("S'", p->mask != MASK_NONE && alibi ? "S + ALiBi bias, masked keys -inf"
                           : alibi ? "S + ALiBi bias" : "S with masked keys set to -inf", f->logits, NULL);
    print_matrix("P", "weights = softmax of each row: exp(S_ij - max_j) / sum_j exp(S_ij - max_j)", f->weights, NULL);
    print_matrix("O", "output = P V  (each row a weighted mean of the values)", f->out, NULL);
}

/* The fused op on its own tape, compared with the composed output and weights. */
static void forward_fused(problem *p, forward_pass *f) {
    qkv_explain_forward(f->fused_tape, &p->st, 1, &f->fused);
    qkv_tensor *fw = f->fused.p;
    f->fqr = f->fused.qr, f->fkr = f->fused.kr, f->fout = f->fused.oh;
    printf("  fused qkv_attention(Q, K, V) computes the same in one op:\n");
    report_check(p, "output: max |fused - composed|", max_abs_diff(f->fout->data, f->out->data, f->out->size));
    report_check(p, "weights: max |fused - composed|", max_abs_diff(fw->data, f->weights->data, f->weights->size));
}

/* dO, dP and dS from their formulas (evaluated with ops on tape ops), each against
 * the composed tape's backward and finite differences; returns dS. */
static qkv_tensor *backward_to_scores(problem *p, const forward_pass *f, qkv_tape *ops, qkv_tensor **d_out) {
    *d_out = qkv_tape_tensor(ops, f->out->ndim, f->out->shape); /* dO = c in every row */
    for (size_t i = 0; i < (*d_out)->size; i++) (*d_out)->data[i] = p->st.target->data[i];
    print_matrix("dO", "dL/dO = c in every row", *d_out, NULL);
    report_check(p, "dO vs the tape's backward: max |difference|",
                 max_abs_diff((*d_out)->data, f->out->grad, f->out->size));
    check_against_fd(p, "dO", f->out, (*d_out)->data, loss_from_o);

    qkv_tensor *d_p = qkv_matmul(ops, *d_out, p->vh, 0, 1);
    print_matrix("dP", "dO V^T  (dL/dP_ij = dO_i . V_j)", d_p, NULL);
    report_check(p, "dP vs the tape's backward: max |difference|", max_abs_diff(d_p->data, f->weights->grad, d_p->size));
    check_against_fd(p, "dP", f->weights, d_p->data, loss_from_p);

    qkv_tensor *row = qkv_sum(ops, qkv_mul(ops, d_p, f->weights), -1, 1);
    print_matrix("r", "rowsum(dP * P)  (= dO . O, the softmax's shift)", row, NULL);
    qkv_tensor *d_s = qkv_mul(ops, f->weights, qkv_sub(ops, d_p, row));
    print_matrix("dS", "P * (dP - rowsum(dP * P))  (softmax backward)", d_s, NULL);
    report_check(p, "dS vs the tape's backward: max |difference|", max_abs_diff(d_s->data, f->logits->grad, d_s->size));
    check_against_fd(p, "dS", f->logits, d_s->data, loss_from_s);
    return d_s;
}

/* dQ, dK, dV from their formulas against both backward passes and finite differences
 * (through qkv_rope's backward for the rotated leaves). composed_grad: the composed
 * tape's leaf gradients. */
static void backward_to_leaves(problem *p, const forward_pass *f, qkv_tape *ops, qkv_tensor *d_s, qkv_tensor *d_out,
                               float composed_grad[3][MAX_T * 2]) {
    qkv_tensor *d_q = qkv_scale(ops, qkv_matmul(ops, d_s, f->kr, 0, 0), p->scale);
    qkv_tensor *d_k = qkv_scale(ops, qkv_matmul(ops, d_s, f->qr, 1, 0), p->scale);
    qkv_tensor *d_v = qkv_matmul(ops, f->weights, d_out, 1, 0);
    struct { const char *name, *formula; qkv_tensor *formula_value, *leaf, *rotated, *fused_rotated; } grads[3] = {
        {"dQ", "scale dS K", d_q, p->st.q, f->qr, f->fqr},
        {"dK", "scale dS^T Q", d_k, p->st.k, f->kr, f->fkr},
        {"dV", "P^T dO", d_v, p->st.v, NULL, NULL},
    };
    for (int g = 0; g < 3; g++) {
        print_matrix(grads[g].name, grads[g].formula, grads[g].formula_value, NULL);
        char what[96];
        int rotated = p->pos == POS_ROPE && grads[g].rotated;
        const float *tape_grad = rotated ? grads[g].rotated->grad : composed_grad[g];
        const float *fused_grad = rotated ? grads[g].fused_rotated->grad : grads[g].leaf->grad;
        snprintf(what, sizeof what, "%s vs the tape's backward: max |difference|", grads[g].name);
        report_check(p, what, max_abs_diff(grads[g].formula_value->data, tape_grad, grads[g].leaf->size));
        snprintf(what, sizeof what, "%s vs the fused op's backward: max |difference|", grads[g].name);
        report_check(p, what, max_abs_diff(grads[g].formula_value->data, fused_grad, grads[g].leaf->size));
        if (rotated) {
            print_matrix(g == 0 ? "dQ0" : "dK0", "the unrotated leaf's gradient R(-t) dQ, through qkv_rope's backward",
                         grads[g].leaf, grads[g].leaf->grad);
            report_check(p, "vs the composed tape's: max |difference|",
                         max_abs_diff(grads[g].leaf->grad, composed_grad[g], grads[g].leaf->size));
        }
        char name[48];
        snprintf(name, sizeof name, rotated ? "%s0 (fused)" : "%s (fused)", grads[g].name);
        check_against_fd(p, name, grads[g].leaf, grads[g].leaf->grad, loss_from_leaf);
    }
}

/* Both backward passes, then the formulas checked against them. */
static void backward(problem *p, const forward_pass *f) {
    qkv_tensor *loss = f->composed.loss;
    printf("\nBackward of L = sum_i O_i . c, c = [%g, %g]: L = %.4f\n", (double)p->in.target[0], (double)p->in.target[1],
           loss_of(p, f->out));
    /* Both backward passes add into the leaves' gradients: keep the composed one
     * aside, then run the fused one from zero. */
    qkv_tensor *leaves[3] = {p->st.q, p->st.k, p->st.v};
    float composed_grad[3][MAX_T * 2];
    qkv_backward(f->tape, loss);
    for (int g = 0; g < 3; g++) {
        memcpy(composed_grad[g], leaves[g]->grad, leaves[g]->size * sizeof(float));
        qkv_tensor_zero_grad(leaves[g]);
    }
    qkv_backward(f->fused_tape, f->fused.loss);
    qkv_tape *ops = qkv_tape_create(1); /* the formulas, evaluated with ops */
    qkv_tape_set_grad(ops, 0);
    qkv_tensor *d_out, *d_s = backward_to_scores(p, f, ops, &d_out);
    backward_to_leaves(p, f, ops, d_s, d_out, composed_grad);
    qkv_tape_free(ops);
}

int qkv_explain_attention(int mask, qkv_pos_kind pos) {
    QKV_CHECK(mask >= MASK_NONE && mask <= MASK_PADDING && pos >= 0 && pos < QKV_POS_COUNT &&
                  explainable(&qkv_pos_schemes[pos]),
              "explain: mask %d, position scheme %d: not one the walk-through explains", mask, (int)pos);
    problem p;
    build(&p, mask, pos);
    print_setup(&p);
    forward_pass f = {.tape = qkv_tape_create(1), .fused_tape = qkv_tape_create(1)};
    forward_composed(&p, &f);
    forward_fused(&p, &f);
    backward(&p, &f);
    if (qkv_cancelled()) p.failures++; /* a signal cut the fused op short (core/cancel.h): no verdict */
    printf("\n%s\n", qkv_cancelled() ? "Stopped by a signal: the fused op was cut short, the numbers above mean nothing."
                     : p.failures ? "Some checks FAILED." : "Every check agrees within the tolerance.");
    qkv_tape_free(f.fused_tape);
    qkv_tape_free(f.tape);
    int failures = p.failures;
    release(&p);
    return failures ? 1 : 0;
}
