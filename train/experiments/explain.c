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
 * add, softmax: the composed attention), its shape and values printed with the
 * formula; then the fused qkv_attention op computes the same thing and the
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

#include "core/ops/attention.h"
#include "core/cancel.h"
#include "core/error.h"
#include "core/ops/ops.h"
#include "core/ops/ops_position.h"

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

/* The problem: leaves and everything that stays fixed while L is differentiated. */
typedef struct problem {
    int tq, tk, d, dv, mask;
    qkv_pos_kind pos;
    float scale;
    qkv_tensor *q, *k, *v;       /* owned leaves [1,1,T,d] (after sinusoidal, if any) */
    qkv_tensor *c;               /* [dv], the loss weights */
    qkv_tensor *additive;        /* [Tq,Tk]: bias (ALiBi) + mask (0 or -inf), composed path */
    qkv_tensor *bias;            /* [Tq,Tk] ALiBi bias for the fused op, or NULL */
    qkv_tensor *key_padding;     /* [1,Tk] for the fused op, or NULL */
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

static qkv_tensor *rotate(qkv_tape *tape, const problem *p, qkv_tensor *x, int offset) {
    if (p->pos != POS_ROPE) return x;
    qkv_rope_opts opts = {0};
    opts.offset = offset;
    return qkv_rope(tape, x, &opts);
}

/* L = sum_i O_i . c, accumulated in double from O [.., Tq, dv]. */
static double loss_of(const problem *p, const qkv_tensor *o) {
    double sum = 0;
    for (size_t i = 0; i < o->size; i++) sum += (double)o->data[i] * p->c->data[i % p->dv];
    return sum;
}

static qkv_tensor *loss_tensor(qkv_tape *tape, const problem *p, qkv_tensor *o) {
    return qkv_sum_all(tape, qkv_mul(tape, o, p->c));
}

/* The fused op from the leaves: O, and the per-head weights if w is not NULL. */
static qkv_tensor *fused(qkv_tape *tape, const problem *p, qkv_tensor **qr, qkv_tensor **kr, qkv_tensor **w) {
    qkv_attention_opts opts = {0};
    opts.scale = p->scale;
    opts.causal = p->mask == MASK_CAUSAL;
    opts.key_padding = p->key_padding;
    opts.bias = p->bias;
    opts.weights = w ? 1 : 0;
    *qr = rotate(tape, p, p->q, p->tk - p->tq);
    *kr = rotate(tape, p, p->k, 0);
    return qkv_attention(tape, *qr, *kr, p->v, &opts, w);
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
    return loss_of(p, qkv_matmul(tape, (qkv_tensor *)w, p->v, 0, 0));
}

static double loss_from_s(const problem *p, qkv_tape *tape, const qkv_tensor *s) {
    return loss_of(p, qkv_matmul(tape, qkv_softmax(tape, (qkv_tensor *)s), p->v, 0, 0));
}

/* Any leaf (q, k or v): the whole fused forward. */
static double loss_from_leaf(const problem *p, qkv_tape *tape, const qkv_tensor *unused) {
    (void)unused;
    qkv_tensor *qr, *kr;
    return loss_of(p, fused(tape, p, &qr, &kr, NULL));
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

/* ALiBi's slopes for H heads are 2^(-8h/H), h = 1..H; the walk uses the first of H = 8. */
#define ALIBI_HEADS 8

static void build(problem *p, int mask, qkv_pos_kind pos) {
    memset(p, 0, sizeof *p);
    p->mask = mask;
    p->pos = pos;
    p->tq = mask == MASK_CAUSAL ? 3 : 1;
    p->tk = 3;
    p->d = pos == POS_ROPE ? 2 : 1;
    p->dv = 2;
    p->scale = 1.0f / sqrtf((float)p->d);
    const float keys[3] = {0.0f, logf(2.0f), logf(3.0f)}, values[6] = {1, 0, 0, 2, 2, 2};
    p->q = qkv_tensor_create("Q", 4, (int[]){1, 1, p->tq, p->d}, 1);
    p->k = qkv_tensor_create("K", 4, (int[]){1, 1, p->tk, p->d}, 1);
    p->v = qkv_tensor_create("V", 4, (int[]){1, 1, p->tk, p->dv}, 1);
    for (int i = 0; i < p->tq; i++) p->q->data[i * p->d] = 1.0f;           /* other dims 0 */
    for (int j = 0; j < p->tk; j++) p->k->data[j * p->d] = keys[j];
    memcpy(p->v->data, values, sizeof values);
    if (pos == POS_SINUSOIDAL) { /* x += P[position]: queries at their positions, keys at 0..Tk-1 */
        float table[MAX_T * 2];
        qkv_sinusoidal_table(table, p->tk, p->d, 0, 0);
        for (int i = 0; i < p->tq; i++)
            for (int c = 0; c < p->d; c++) p->q->data[i * p->d + c] += table[query_position(p, i) * p->d + c];
        for (int j = 0; j < p->tk; j++)
            for (int c = 0; c < p->d; c++) p->k->data[j * p->d + c] += table[j * p->d + c];
    }
    p->c = qkv_tensor_create("c", 1, (int[]){p->dv}, 0);
    p->c->data[0] = 1;
    p->c->data[1] = 2;
    p->additive = qkv_tensor_create("mask", 2, (int[]){p->tq, p->tk}, 0);
    if (pos == POS_ALIBI) { /* the steepest head of eight: one head's 1/256 would move P by 0.001 */
        float slopes[ALIBI_HEADS], slope;
        qkv_alibi_slopes(slopes, ALIBI_HEADS);
        slope = slopes[0];
        p->bias = qkv_tensor_create("alibi", 2, (int[]){p->tq, p->tk}, 0);
        qkv_alibi_bias(p->bias->data, &slope, 1, p->tq, p->tk, 0);
        memcpy(p->additive->data, p->bias->data, p->bias->size * sizeof(float));
    }
    if (mask == MASK_PADDING) {
        p->key_padding = qkv_tensor_create("key_padding", 2, (int[]){1, p->tk}, 0);
        const float real[3] = {1, 1, 0};
        memcpy(p->key_padding->data, real, sizeof real);
    }
    for (int i = 0; i < p->tq; i++)
        for (int j = 0; j < p->tk; j++) {
            int hidden = (mask == MASK_CAUSAL && j > query_position(p, i)) ||
                         (mask == MASK_PADDING && p->key_padding->data[j] == 0);
            if (hidden) p->additive->data[i * p->tk + j] = -INFINITY;
        }
}

static void release(problem *p) {
    qkv_tensor *all[] = {p->q, p->k, p->v, p->c, p->additive, p->bias, p->key_padding};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        if (all[i]) qkv_tensor_free(all[i]);
}

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
    print_matrix("Q", "queries", p->q, NULL);
    print_matrix("K", "keys", p->k, NULL);
    print_matrix("V", "values", p->v, NULL);
}

/* ---- the walk ---------------------------------------------------------------------- */

/* The composed forward's activations, on one tape, and the fused op's on another. */
typedef struct forward_pass {
    qkv_tape *tape, *fused_tape;
    qkv_tensor *qr, *kr, *logits, *weights, *out;   /* composed */
    qkv_tensor *fqr, *fkr, *fout;                   /* fused */
} forward_pass;

/* Prints S0, S, S' (with a mask or ALiBi), P and O, composed from ops. */
static void forward_composed(const problem *p, forward_pass *f) {
    qkv_tape *tape = f->tape;
    printf("\nForward (composed from the library's ops: matmul, scale, add, softmax, matmul)\n");
    f->qr = rotate(tape, p, p->q, p->tk - p->tq), f->kr = rotate(tape, p, p->k, 0);
    if (p->pos == POS_ROPE) {
        print_matrix("Qr", "Q rotated: (x0 cos t - x1 sin t, x0 sin t + x1 cos t)", f->qr, NULL);
        print_matrix("Kr", "K rotated the same way at positions 0, 1, 2", f->kr, NULL);
    }
    qkv_tensor *scores = qkv_matmul(tape, f->qr, f->kr, 0, 1);
    print_matrix("S0", p->pos == POS_ROPE ? "scores = Qr Kr^T  (rotated query i . rotated key j)"
                                          : "scores = Q K^T  (query i . key j)", scores, NULL);
    qkv_tensor *scaled = qkv_scale(tape, scores, p->scale);
    char formula[128];
    snprintf(formula, sizeof formula, "scaled scores = S0 * scale, scale = 1/sqrt(d) = %.4f", (double)p->scale);
    print_matrix("S", formula, scaled, NULL);
    f->logits = scaled;
    int alibi = p->pos == POS_ALIBI;
    if (p->mask != MASK_NONE || alibi) {
        f->logits = qkv_add(tape, scaled, p->additive);
        print_matrix("S'", p->mask != MASK_NONE && alibi ? "S + ALiBi bias, masked keys -inf"
                           : alibi ? "S + ALiBi bias" : "S with masked keys set to -inf", f->logits, NULL);
    }
    f->weights = qkv_softmax(tape, f->logits);
    print_matrix("P", "weights = softmax of each row: exp(S_ij - max_j) / sum_j exp(S_ij - max_j)", f->weights, NULL);
    f->out = qkv_matmul(tape, f->weights, p->v, 0, 0);
    print_matrix("O", "output = P V  (each row a weighted mean of the values)", f->out, NULL);
}

/* The fused op on its own tape, compared with the composed output and weights. */
static void forward_fused(problem *p, forward_pass *f) {
    qkv_tensor *fw = NULL;
    f->fout = fused(f->fused_tape, p, &f->fqr, &f->fkr, &fw);
    printf("  fused qkv_attention(Q, K, V) computes the same in one op:\n");
    report_check(p, "output: max |fused - composed|", max_abs_diff(f->fout->data, f->out->data, f->out->size));
    report_check(p, "weights: max |fused - composed|", max_abs_diff(fw->data, f->weights->data, f->weights->size));
}

/* dO, dP and dS from their formulas (evaluated with ops on tape ops), each against
 * the composed tape's backward and finite differences; returns dS. */
static qkv_tensor *backward_to_scores(problem *p, const forward_pass *f, qkv_tape *ops, qkv_tensor **d_out) {
    *d_out = qkv_tape_tensor(ops, f->out->ndim, f->out->shape); /* dO = c in every row */
    for (size_t i = 0; i < (*d_out)->size; i++) (*d_out)->data[i] = p->c->data[i % p->dv];
    print_matrix("dO", "dL/dO = c in every row", *d_out, NULL);
    report_check(p, "dO vs the tape's backward: max |difference|",
                 max_abs_diff((*d_out)->data, f->out->grad, f->out->size));
    check_against_fd(p, "dO", f->out, (*d_out)->data, loss_from_o);

    qkv_tensor *d_p = qkv_matmul(ops, *d_out, p->v, 0, 1);
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
        {"dQ", "scale dS K", d_q, p->q, f->qr, f->fqr},
        {"dK", "scale dS^T Q", d_k, p->k, f->kr, f->fkr},
        {"dV", "P^T dO", d_v, p->v, NULL, NULL},
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
    qkv_tensor *loss = loss_tensor(f->tape, p, f->out);
    printf("\nBackward of L = sum_i O_i . c, c = [%g, %g]: L = %.4f\n", (double)p->c->data[0], (double)p->c->data[1],
           loss_of(p, f->out));
    /* Both backward passes add into the leaves' gradients: keep the composed one
     * aside, then run the fused one from zero. */
    qkv_tensor *leaves[3] = {p->q, p->k, p->v};
    float composed_grad[3][MAX_T * 2];
    qkv_backward(f->tape, loss);
    for (int g = 0; g < 3; g++) {
        memcpy(composed_grad[g], leaves[g]->grad, leaves[g]->size * sizeof(float));
        qkv_tensor_zero_grad(leaves[g]);
    }
    qkv_backward(f->fused_tape, loss_tensor(f->fused_tape, p, f->fout));
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
