/* explain_step.c — one attention step of the caller's Q, K and V, every matrix
 * kept (explain.h: qkv_explain_step, qkv_explain_check).
 *
 * The step runs on a tape, composed of the library's ops so that every
 * intermediate is a node whose value and gradient the tape holds:
 *     Qh, Kh, Vh = split_heads(Q, K, V)          [1,H,T,d]  (reshape, permute)
 *     Qr, Kr     = rope(Qh), rope(Kh)            rope, p-rope only
 *     S0 = Qr Kr^T;  S = scale * S0;  S' = S + B + M;  P = softmax(S');  Oh = P Vh
 *     O  = merge_heads(Oh)                       [1,Tq,dv]
 *     L  = sum(O * C)  or  1/2 sum((O - Y)^2)
 * B is the scheme's bias (alibi, t5, fire: layers/positions.h's row, through
 * qkv_positions_bias; t5's and fire's carry gradients to their parameters), M the
 * mask (0 or -inf). qkv_backward(L) then fills every node's gradient: dO, dP (P's),
 * dS (S''s), dQ, dK, dV (the leaves'). D = rowsum(dO * O) is two ops (mul, sum)
 * on a second tape, from the tape's dO and O. The result copies them all.
 * The fused qkv_attention op runs the same step (same inputs, bias and masks) on
 * a third tape, and the largest difference of its O, dQ, dK and dV from the
 * composed ones is the result's fused_diff.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/ops/attention.h"
#include "core/ops/ops.h"
#include "layers/mha.h"
#include "train/experiments/explain.h"
#include "train/experiments/explain_internal.h"

#define FD_STEP 1e-3
#define MAX_MATRICES 160

typedef qkv_explain_state step;
typedef qkv_explain_pass pass;

/* ---- the problem ------------------------------------------------------------------- */

static qkv_tensor *leaf(const char *name, int rows, int cols, const float *values, int grad) {
    qkv_tensor *t = qkv_tensor_create(name, 3, (int[]){1, rows, cols}, grad);
    memcpy(t->data, values, (size_t)rows * cols * sizeof(float));
    return t;
}

/* alibi's default slopes: the first H of an eight-head model's 2^(-8h/8). */
#define ALIBI_DEFAULT_HEADS 8

static void build_positions(step *st, qkv_rng *rng) {
    const qkv_explain_input *in = st->in;
    qkv_pos_opts opts;
    qkv_explain_pos_opts(in, &opts);
    qkv_rope_opts rope = {0};
    rope.base = in->rope_base;
    opts.rope = &rope;
    qkv_positions_init_opts(&st->pos, &st->params, "pos", in->pos, in->dk, in->tk, st->H, &opts, rng);
    if (in->pos == QKV_POS_ALIBI) {
        float eight[ALIBI_DEFAULT_HEADS];
        qkv_alibi_slopes(eight, ALIBI_DEFAULT_HEADS);
        for (int h = 0; h < st->H; h++) st->pos.slopes[h] = in->alibi_slopes[h] > 0 ? in->alibi_slopes[h] : eight[h];
    }
    if (in->pos == QKV_POS_T5) /* N(0, 1) rather than N(0, 0.02): a bias that visibly moves P */
        qkv_fill_normal(st->pos.t5->data, st->pos.t5->size, rng, 0.0f, 1.0f);
}

static void build_masks(step *st) {
    const qkv_explain_input *in = st->in;
    if (in->mask == QKV_EXPLAIN_MASK_NONE) return;
    st->mask = qkv_tensor_create("M", 2, (int[]){in->tq, in->tk}, 0);
    for (int i = 0; i < in->tq; i++)
        for (int j = 0; j < in->tk; j++) st->mask->data[i * in->tk + j] = qkv_explain_hidden(in, i, j) ? -INFINITY : 0;
    if (in->mask == QKV_EXPLAIN_MASK_PADDING) {
        st->key_padding = qkv_tensor_create("key_padding", 2, (int[]){1, in->tk}, 0);
        for (int j = 0; j < in->tk; j++) st->key_padding->data[j] = j < in->key_length;
    }
    if (in->mask == QKV_EXPLAIN_MASK_KEEP) {
        st->keep = qkv_tensor_create("keep", 2, (int[]){in->tq, in->tk}, 0);
        for (int i = 0; i < in->tq * in->tk; i++) st->keep->data[i] = in->keep[i] != 0.0f;
    }
}

void qkv_explain_state_build(step *st, const qkv_explain_input *in) {
    memset(st, 0, sizeof *st);
    st->in = in;
    st->H = in->heads;
    st->d = in->dk / in->heads;
    st->dvh = in->dv / in->heads;
    st->symmetric = in->mask != QKV_EXPLAIN_MASK_CAUSAL;
    st->scale = in->scale > 0 ? in->scale : 1.0f / sqrtf((float)st->d);
    st->q = leaf("Q", in->tq, in->dk, in->q, 1);
    st->k = leaf("K", in->tk, in->dk, in->k, 1);
    st->v = leaf("V", in->tk, in->dv, in->v, 1);
    st->target = leaf(in->loss == QKV_EXPLAIN_LOSS_DOT ? "C" : "Y", in->tq, in->dv, in->target, 0);
    qkv_rng base = qkv_rng_make(in->seed), target_rng = qkv_rng_split_at(base, 0), pos_rng = qkv_rng_split_at(base, 1);
    if (!in->target_given) qkv_fill_normal(st->target->data, st->target->size, &target_rng, 0.0f, 1.0f);
    build_positions(st, &pos_rng);
    build_masks(st);
}

void qkv_explain_state_free(step *st) {
    qkv_tensor *all[] = {st->q, st->k, st->v, st->target, st->mask, st->key_padding, st->keep};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        if (all[i]) qkv_tensor_free(all[i]);
    qkv_params_free(&st->params);
}

/* ---- one pass -------------------------------------------------------------------- */

static qkv_tensor *rotate(qkv_tape *tape, const step *st, qkv_tensor *x, int offset) {
    const qkv_rope_opts *rope = qkv_positions_rope(&st->pos);
    if (!rope) return x;
    qkv_rope_opts at = *rope;
    at.offset = offset;
    return qkv_rope(tape, x, &at);
}

void qkv_explain_forward(qkv_tape *tape, const step *st, int fused, pass *f) {
    const qkv_explain_input *in = st->in;
    memset(f, 0, sizeof *f);
    f->qh = qkv_split_heads(tape, st->q, st->H);
    f->kh = qkv_split_heads(tape, st->k, st->H);
    f->vh = qkv_split_heads(tape, st->v, st->H);
    f->qr = rotate(tape, st, f->qh, in->tk - in->tq);
    f->kr = rotate(tape, st, f->kh, 0);
    f->bias = qkv_positions_bias(tape, &st->pos, in->tq, in->tk, st->symmetric);
    if (fused) {
        qkv_attention_opts opts = {0};
        opts.scale = st->scale;
        opts.causal = in->mask == QKV_EXPLAIN_MASK_CAUSAL;
        opts.key_padding = st->key_padding;
        opts.keep = st->keep;
        opts.bias = f->bias;
        opts.weights = 1;
        f->oh = qkv_attention(tape, f->qr, f->kr, f->vh, &opts, &f->p);
    } else {
        f->s0 = qkv_matmul(tape, f->qr, f->kr, 0, 1);
        f->s = qkv_scale(tape, f->s0, st->scale);
        f->logits = f->s;
        if (f->bias) f->logits = qkv_add(tape, f->logits, f->bias);
        if (st->mask) f->logits = qkv_add(tape, f->logits, st->mask);
        f->p = qkv_softmax(tape, f->logits);
        f->oh = qkv_matmul(tape, f->p, f->vh, 0, 0);
    }
    f->o = qkv_merge_heads(tape, f->oh);
    if (in->loss == QKV_EXPLAIN_LOSS_DOT) {
        f->loss = qkv_sum_all(tape, qkv_mul(tape, f->o, st->target));
    } else {
        qkv_tensor *diff = qkv_sub(tape, f->o, st->target);
        f->loss = qkv_scale(tape, qkv_sum_all(tape, qkv_mul(tape, diff, diff)), 0.5f);
    }
}

/* L of an output O, accumulated in double: the finite differences' measure. */
static double loss_of(const step *st, const qkv_tensor *o) {
    double sum = 0;
    for (size_t i = 0; i < o->size; i++) {
        double x = o->data[i], t = st->target->data[i];
        sum += st->in->loss == QKV_EXPLAIN_LOSS_DOT ? x * t : 0.5 * (x - t) * (x - t);
    }
    return sum;
}

static void zero_grads(step *st) {
    qkv_tensor_zero_grad(st->q);
    qkv_tensor_zero_grad(st->k);
    qkv_tensor_zero_grad(st->v);
    qkv_params_zero_grad(&st->params);
}

/* ---- the result ------------------------------------------------------------------ */

static const float *values_or_zeros(const qkv_tensor *t, const float *values, qkv_tape *ops) {
    if (values) return values;
    return qkv_tape_zeros(ops, t->ndim, t->shape)->data;
}

static void add(qkv_explain_result *r, const char *section, const char *name, const char *formula, int head,
                int rows, int cols, const float *values) {
    QKV_CHECK(r->n < MAX_MATRICES, "explain: more than %d matrices", MAX_MATRICES);
    float *copy = malloc((size_t)rows * cols * sizeof *copy);
    if (!copy) qkv_fatal("explain: out of memory");
    memcpy(copy, values, (size_t)rows * cols * sizeof *copy);
    r->matrices[r->n++] = (qkv_explain_matrix){section, name, formula, head, rows, cols, copy};
}

/* A tensor [1,H,R,C] (or [1,R,C] for head -1): one matrix per head, or the whole. */
static void add_heads(qkv_explain_result *r, const char *section, const char *name, const char *formula,
                      const qkv_tensor *t, const float *values, int head) {
    int rows = t->shape[t->ndim - 2], cols = t->shape[t->ndim - 1];
    add(r, section, name, formula, head, rows, cols, values + (head < 0 ? 0 : (size_t)head * rows * cols));
}

/* A parameter of the scheme, as a matrix [shape[0], rest]. */
static void add_param(qkv_explain_result *r, const char *section, const char *name, const char *formula,
                      const qkv_tensor *t, const float *values) {
    int rows = t->ndim >= 2 ? t->shape[0] : 1;
    add(r, section, name, formula, -1, rows, (int)(t->size / rows), values);
}

static void setup_line(qkv_explain_result *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void setup_line(qkv_explain_result *r, const char *fmt, ...) {
    size_t at = strlen(r->setup);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->setup + at, sizeof r->setup - at, fmt, ap);
    va_end(ap);
    at = strlen(r->setup);
    if (at + 1 < sizeof r->setup) strcpy(r->setup + at, "\n");
}

/* The scheme's parameters (values) or their gradients (grads). */
static void add_position_params(qkv_explain_result *r, const step *st, qkv_tape *ops, int grads) {
    const qkv_positions *pos = &st->pos;
    const char *section = grads ? "backward" : "positions";
    if (st->in->pos == QKV_POS_ALIBI && !grads)
        add(r, section, "slopes", "ALiBi's slope of each head: B_h[i][j] = -slope_h * |i - j|", -1, 1, st->H,
            pos->slopes);
    if (st->in->pos == QKV_POS_T5) {
        if (!grads) {
            float *ids = qkv_tape_alloc(ops, (size_t)st->in->tq * st->in->tk * sizeof(float));
            for (int i = 0; i < st->in->tq; i++)
                for (int j = 0; j < st->in->tk; j++)
                    ids[i * st->in->tk + j] = (float)qkv_t5_bucket(j - (i + st->in->tk - st->in->tq), st->symmetric,
                                                                   pos->t5_buckets, pos->t5_max_distance);
            add(r, section, "bucket", "T5's bucket of j - i (layers/positions.h's qkv_t5_bucket)", -1, st->in->tq,
                st->in->tk, ids);
        }
        add_param(r, section, grads ? "dtable" : "table",
                  grads ? "dL/dtable: dB summed into the bucket each entry read" : "T5's table [buckets, heads], N(0,1)",
                  pos->t5, grads ? values_or_zeros(pos->t5, pos->t5->grad, ops) : pos->t5->data);
    }
    if (st->in->pos == QKV_POS_FIRE) {
        if (!grads) {
            qkv_tensor *u = qkv_fire_distance(ops, pos->fire_c, pos->fire_l_scale, st->in->tq, st->in->tk,
                                              pos->fire_l_init);
            add(r, section, "u", "psi(i - j) / psi(max(i, L)), psi(x) = log(|c x| + 1)", -1, st->in->tq, st->in->tk,
                u->data);
        }
        const qkv_tensor *params[6] = {pos->fire_fc1.weight, pos->fire_fc1.bias, pos->fire_fc2.weight,
                                       pos->fire_fc2.bias, pos->fire_c, pos->fire_l_scale};
        static const char *const names[2][6] = {{"fc1.w", "fc1.b", "fc2.w", "fc2.b", "c", "l_scale"},
                                               {"dfc1.w", "dfc1.b", "dfc2.w", "dfc2.b", "dc", "dl_scale"}};
        static const char *const what[2][6] = {
            {"FIRE's MLP, layer 1: h = relu(w u + b), width rows", "layer 1's bias", "layer 2: B = w h + b, one row per head",
             "layer 2's bias", "c in psi(x) = log(|c x| + 1)", "L = l_scale * 512 in psi(max(i, L))"},
            {"dL/dfc1.w", "dL/dfc1.b", "dL/dfc2.w", "dL/dfc2.b", "dL/dc", "dL/dl_scale"}};
        for (int i = 0; i < 6; i++)
            add_param(r, section, names[grads][i], what[grads][i], params[i],
                      grads ? values_or_zeros(params[i], params[i]->grad, ops) : params[i]->data);
    }
}

static void describe_setup(qkv_explain_result *r, const step *st) {
    const qkv_explain_input *in = st->in;
    setup_line(r, "batch 1, %d head%s, Tq = %d queries, Tk = %d keys, head widths d = %d (Q, K), dv = %d (V)",
               st->H, st->H > 1 ? "s" : "", in->tq, in->tk, st->d, st->dvh);
    if (st->H > 1) setup_line(r, "head h reads columns h*d .. h*d + d-1 of Q and K and h*dv .. of V");
    setup_line(r, "query i sits at position i + %d, key j at j", in->tk - in->tq);
    setup_line(r, "mask %s%s", qkv_explain_mask_names[in->mask],
               in->mask == QKV_EXPLAIN_MASK_PADDING ? " (keys j >= the key length are padding)" : "");
    const qkv_rope_opts *rope = qkv_positions_rope(&st->pos);
    if (rope)
        setup_line(r, "positions %s: pairs (2i, 2i+1) turn by position * %g^(-2i/d)%s", qkv_pos_kind_name(in->pos),
                   (double)(rope->base > 0 ? rope->base : 10000.0f),
                   in->pos == QKV_POS_PROPE ? "; only the fastest share p of the pairs turns" : "");
    else setup_line(r, "positions %s%s", qkv_pos_kind_name(in->pos), st->pos.kind == QKV_POS_NONE ? "" :
                    " (its bias B is added to the scaled scores)");
    if (in->pos == QKV_POS_PROPE) setup_line(r, "p-rope share p = %g", (double)st->pos.rope.keep_fraction);
    if (in->pos == QKV_POS_T5) setup_line(r, "t5: %d buckets, max distance %d, %s", st->pos.t5_buckets,
                                          st->pos.t5_max_distance, st->symmetric ? "bidirectional" : "causal");
    if (in->pos == QKV_POS_FIRE) setup_line(r, "fire: width %d, c = %g, L = %g * l_scale", st->pos.fire_fc1.out,
                                            (double)st->pos.fire_c->data[0], (double)st->pos.fire_l_init);
    setup_line(r, "scale = %.6g%s", (double)st->scale, in->scale > 0 ? " (given)" : " = 1/sqrt(d)");
    setup_line(r, in->loss == QKV_EXPLAIN_LOSS_DOT ? "loss L = sum_ij O_ij C_ij, so dO = C (C %s)"
                                                   : "loss L = 1/2 sum_ij (O_ij - Y_ij)^2, so dO = O - Y (Y %s)",
               in->target_given ? "given" : "drawn N(0, 1) from the seed");
}

static void collect_forward(qkv_explain_result *r, const step *st, const pass *f, qkv_tape *ops) {
    const qkv_explain_input *in = st->in;
    add(r, "inputs", "Q", "queries, all heads' columns", -1, in->tq, in->dk, st->q->data);
    add(r, "inputs", "K", "keys", -1, in->tk, in->dk, st->k->data);
    add(r, "inputs", "V", "values", -1, in->tk, in->dv, st->v->data);
    add(r, "inputs", in->loss == QKV_EXPLAIN_LOSS_DOT ? "C" : "Y", in->loss == QKV_EXPLAIN_LOSS_DOT ? "the loss weights" : "the loss target", -1,
        in->tq, in->dv, st->target->data);
    add_position_params(r, st, ops, 0);
    add(r, "forward", "scale", "1/sqrt(d), or as given", -1, 1, 1, &st->scale);
    if (st->mask) add(r, "forward", "M", "mask: 0 where query i may attend to key j, -inf elsewhere", -1, in->tq,
                      in->tk, st->mask->data);
    for (int h = 0; h < st->H; h++) {
        if (f->qr != f->qh) {
            add_heads(r, "forward", "Qr", "Q rotated at the query positions", f->qr, f->qr->data, h);
            add_heads(r, "forward", "Kr", "K rotated at the key positions", f->kr, f->kr->data, h);
        }
        add_heads(r, "forward", "S0", f->qr != f->qh ? "Qr Kr^T" : "Q K^T  (query i . key j)", f->s0, f->s0->data, h);
        add_heads(r, "forward", "S", "scale * S0", f->s, f->s->data, h);
        if (f->bias) add_heads(r, "forward", "B", "the position bias", f->bias, f->bias->data, h);
        if (f->logits != f->s) add_heads(r, "forward", "S'", f->bias && st->mask ? "S + B + M" : f->bias ? "S + B"
                                                                                            : "S + M",
                                         f->logits, f->logits->data, h);
        add_heads(r, "forward", "P", "softmax of each row: exp(S'_ij - max_j) / sum_j exp(S'_ij - max_j)", f->p,
                  f->p->data, h);
        add_heads(r, "forward", "O", "P V  (each row a weighted mean of the values)", f->oh, f->oh->data, h);
    }
    if (st->H > 1) add_heads(r, "forward", "O", "the heads' outputs side by side", f->o, f->o->data, -1);
}

static const float *grad_of(const qkv_tensor *t, qkv_tape *ops) { return values_or_zeros(t, t->grad, ops); }

static void collect_backward(qkv_explain_result *r, const step *st, const pass *f, qkv_tape *ops) {
    add_heads(r, "backward", "dO", st->in->loss == QKV_EXPLAIN_LOSS_DOT ? "dL/dO = C" : "dL/dO = O - Y", f->o,
              grad_of(f->o, ops), -1);
    /* D = rowsum(dO * O), with ops, from the tape's dO and O per head */
    qkv_tensor *d_oh = qkv_tape_view(ops, 4, f->oh->shape, (float *)grad_of(f->oh, ops));
    qkv_tensor *product = qkv_mul(ops, d_oh, f->oh), *rows = qkv_sum(ops, product, -1, 1);
    for (int h = 0; h < st->H; h++) {
        if (st->H > 1) add_heads(r, "backward", "dO", "this head's columns of dO", d_oh, d_oh->data, h);
        add_heads(r, "backward", "dO*O", "dO_ik O_ik, elementwise", product, product->data, h);
        add_heads(r, "backward", "D", "D_i = rowsum(dO * O) = sum_j dP_ij P_ij", rows, rows->data, h);
        add_heads(r, "backward", "dV", "P^T dO", f->vh, grad_of(f->vh, ops), h);
        add_heads(r, "backward", "dP", "dO V^T  (dL/dP_ij = dO_i . V_j)", f->p, grad_of(f->p, ops), h);
        add_heads(r, "backward", "dS", "P * (dP - D)  (softmax backward; 0 where masked)", f->logits,
                  grad_of(f->logits, ops), h);
        if (f->bias && f->bias->requires_grad)
            add_heads(r, "backward", "dB", "dS (the bias is added unscaled)", f->bias, grad_of(f->bias, ops), h);
        if (f->qr != f->qh) {
            add_heads(r, "backward", "dQr", "scale dS Kr", f->qr, grad_of(f->qr, ops), h);
            add_heads(r, "backward", "dKr", "scale dS^T Qr", f->kr, grad_of(f->kr, ops), h);
        }
        const char *dq = f->qr != f->qh ? "R(-t) dQr, through rope's backward" : "scale dS K";
        const char *dk = f->qr != f->qh ? "R(-t) dKr" : "scale dS^T Q";
        add_heads(r, "backward", "dQ", dq, f->qh, grad_of(f->qh, ops), h);
        add_heads(r, "backward", "dK", dk, f->kh, grad_of(f->kh, ops), h);
    }
    if (st->H > 1) {
        add_heads(r, "backward", "dQ", "dL/dQ, the heads side by side", st->q, grad_of(st->q, ops), -1);
        add_heads(r, "backward", "dK", "dL/dK", st->k, grad_of(st->k, ops), -1);
        add_heads(r, "backward", "dV", "dL/dV", st->v, grad_of(st->v, ops), -1);
    }
    add_position_params(r, st, ops, 1);
}

static float max_diff(const float *a, const float *b, size_t n) {
    float worst = 0;
    for (size_t i = 0; i < n; i++) {
        float d = fabsf(a[i] - b[i]);
        if (d > worst || d != d) worst = d;
    }
    return worst;
}

/* The fused op's O, dQ, dK, dV, kept aside; the leaves' gradients zeroed after. */
static void fused_reference(step *st, float *saved, size_t *n) {
    qkv_tape *tape = qkv_tape_create(1);
    pass f;
    qkv_explain_forward(tape, st, 1, &f);
    qkv_backward(tape, f.loss);
    const qkv_tensor *parts[4] = {f.o, st->q, st->k, st->v};
    *n = 0;
    for (int i = 0; i < 4; i++) {
        const float *x = i == 0 ? parts[i]->data : parts[i]->grad;
        memcpy(saved + *n, x, parts[i]->size * sizeof(float));
        *n += parts[i]->size;
    }
    zero_grads(st);
    qkv_tape_free(tape);
}

static float fused_difference(const step *st, const pass *f, const float *saved) {
    const qkv_tensor *parts[4] = {f->o, st->q, st->k, st->v};
    float worst = 0;
    size_t at = 0;
    for (int i = 0; i < 4; i++) {
        float d = max_diff(saved + at, i == 0 ? parts[i]->data : parts[i]->grad, parts[i]->size);
        if (d > worst || d != d) worst = d;
        at += parts[i]->size;
    }
    return worst;
}

int qkv_explain_step(const qkv_explain_input *in, qkv_explain_result *r) {
    memset(r, 0, sizeof *r);
    if (qkv_explain_check_input(in) != 0) return -1;
    step st;
    qkv_explain_state_build(&st, in);
    r->matrices = calloc(MAX_MATRICES, sizeof *r->matrices);
    if (!r->matrices) qkv_fatal("explain: out of memory");
    r->heads = st.H;
    r->d_head = st.d;
    r->dv_head = st.dvh;
    r->scale = st.scale;
    float saved[4 * QKV_EXPLAIN_MAX_T * QKV_EXPLAIN_MAX_W];
    size_t n_saved;
    fused_reference(&st, saved, &n_saved);

    qkv_tape *tape = qkv_tape_create(1), *ops = qkv_tape_create(1);
    qkv_tape_set_grad(ops, 0);
    pass f;
    qkv_explain_forward(tape, &st, 0, &f);
    qkv_backward(tape, f.loss);
    r->loss = loss_of(&st, f.o);
    r->fused_diff = fused_difference(&st, &f, saved);
    describe_setup(r, &st);
    collect_forward(r, &st, &f, ops);
    collect_backward(r, &st, &f, ops);
    qkv_tape_free(ops);
    qkv_tape_free(tape);
    qkv_explain_state_free(&st);
    return 0;
}

void qkv_explain_result_free(qkv_explain_result *r) {
    for (int i = 0; r->matrices && i < r->n; i++) free((void *)r->matrices[i].values);
    free(r->matrices);
    memset(r, 0, sizeof *r);
}

const qkv_explain_matrix *qkv_explain_find(const qkv_explain_result *r, const char *name, int head) {
    for (int i = 0; i < r->n; i++)
        if (r->matrices[i].head == head && strcmp(r->matrices[i].name, name) == 0) return &r->matrices[i];
    return NULL;
}

/* ---- one entry against finite differences ------------------------------------------ */

int qkv_explain_check(const qkv_explain_input *in, char which, int row, int col, double *analytic, double *numeric) {
    if (qkv_explain_check_input(in) != 0) return -1;
    int rows = which == 'q' ? in->tq : in->tk, cols = which == 'v' ? in->dv : in->dk;
    if (which != 'q' && which != 'k' && which != 'v')
        return qkv_set_error("--check: '%c' names no input: expected dq, dk or dv", which), -1;
    if (row < 0 || row >= rows || col < 0 || col >= cols)
        return qkv_set_error("--check d%c:%d,%d: outside d%c's [%d,%d]", which, row, col, which, rows, cols), -1;
    step st;
    qkv_explain_state_build(&st, in);
    qkv_tensor *x = which == 'q' ? st.q : which == 'k' ? st.k : st.v;
    size_t at = (size_t)row * cols + col;
    qkv_tape *tape = qkv_tape_create(1);
    pass f;
    qkv_explain_forward(tape, &st, 0, &f);
    qkv_backward(tape, f.loss);
    *analytic = x->grad[at];
    qkv_tape_set_grad(tape, 0);
    float saved = x->data[at], moved[2];
    double loss[2];
    for (int side = 0; side < 2; side++) {
        qkv_tape_reset(tape);
        x->data[at] = moved[side] = (float)(saved + (side ? -FD_STEP : FD_STEP));
        qkv_explain_forward(tape, &st, 0, &f);
        loss[side] = loss_of(&st, f.o);
    }
    x->data[at] = saved;
    /* over the step the floats actually took, not the 2h asked for */
    *numeric = (loss[0] - loss[1]) / ((double)moved[0] - (double)moved[1]);
    qkv_tape_free(tape);
    qkv_explain_state_free(&st);
    return 0;
}
