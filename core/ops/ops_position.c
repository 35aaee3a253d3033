/* ops_position.c — position encodings: the rotary op (forward and backward) and
 * the fixed helpers (sinusoidal tables, 2-D tables, ALiBi slopes and biases, the
 * learned-table length guard). The math is stated in positions.h.
 *
 * Every angle is (double)position * base^(-2i/width), with the position an exact
 * integer; sin and cos are taken in double and rounded to float once. The sinusoidal
 * table and RoPE share that code, so RoPE applied to (1, 0) pairs reproduces the
 * table's (cos, sin) columns bit for bit. Each output element is written by one
 * thread, so results do not depend on the thread count.
 */
#include <math.h>
#include <stdio.h>

#include "core/error.h"
#include "core/mathfn.h"
#include "core/kernels/parallel.h"
#include "core/ops/ops_position.h"

#define DEFAULT_BASE 10000.0
/* Rough cost of one sin/cos pair in flops, to size the parallel threshold. */
#define TRIG_WORK 32

/* base 0 -> 10000; otherwise it must be a positive number (NaN fails too).
 * what names the op and the shape, e.g. "sinusoidal: table [4,8]". */
static double resolve_base(const char *what, float base) {
    QKV_CHECK(base == 0.0f || base > 0.0f, "%s: base %g must be > 0 (0 means 10000)", what, (double)base);
    return base == 0.0f ? DEFAULT_BASE : (double)base;
}

/* "op: table [rows,d]" into buf, for messages. */
static const char *table_name(char *buf, size_t len, const char *op, int rows, int d) {
    snprintf(buf, len, "%s: table [%d,%d]", op, rows, d);
    return buf;
}

/* w_i = base^(-2i/width): how fast pair i turns per position step. */
static double pair_frequency(int i, int width, double base) { return pow(base, -2.0 * i / width); }

/* One sinusoidal row: dst[2i] = sin(pos w_i), dst[2i+1] = cos(pos w_i), w_i over width. */
static void sinusoid_row(float *dst, double pos, int width, double base) {
    for (int c = 0; c < width; c += 2) {
        double angle = pos * pair_frequency(c / 2, width, base);
        dst[c] = (float)qkv_math_sin(angle);
        if (c + 1 < width) dst[c + 1] = (float)qkv_math_cos(angle);
    }
}

void qkv_sinusoidal_table(float *out, int T, int d, int offset, float base) {
    QKV_CHECK(T >= 0 && d >= 1, "sinusoidal: table [%d,%d]: need T >= 0 and d >= 1", T, d);
    QKV_CHECK(out != NULL || T == 0, "sinusoidal: table [%d,%d]: output is NULL", T, d);
    char what[96];
    double b = resolve_base(table_name(what, sizeof what, "sinusoidal", T, d), base);
    QKV_FOR(QKV_PARALLEL((size_t)T * (size_t)d * TRIG_WORK), schedule(static), (int t = 0; t < T; t++), {
        sinusoid_row(out + (size_t)t * (size_t)d, (double)offset + t, d, b);
    });
}

void qkv_positions_2d(float *out, int rows, int cols, int d, float base) {
    QKV_CHECK(rows >= 1 && cols >= 1, "positions_2d: grid %dx%d: rows and cols must be >= 1", rows, cols);
    QKV_CHECK(d >= 4 && d % 4 == 0,
              "positions_2d: table [%d,%d]: d %d must be a positive multiple of 4 "
              "(two halves of sin/cos pairs)", rows * cols, d, d);
    QKV_CHECK(out != NULL, "positions_2d: table [%d,%d]: output is NULL", rows * cols, d);
    char what[96];
    double b = resolve_base(table_name(what, sizeof what, "positions_2d", rows * cols, d), base);
    int half = d / 2, n = rows * cols;
    QKV_FOR(QKV_PARALLEL((size_t)n * (size_t)d * TRIG_WORK), schedule(static), (int p = 0; p < n; p++), {
        float *dst = out + (size_t)p * (size_t)d;
        sinusoid_row(dst, p / cols, half, b);        /* the patch's row */
        sinusoid_row(dst + half, p % cols, half, b); /* the patch's column */
    });
}

int qkv_position_check_length(const char *what, int T, int T_max) {
    if (!what) what = "positions";
    QKV_CHECK(T >= 1, "%s: sequence length %d must be >= 1", what, T);
    QKV_CHECK(T <= T_max, "%s: sequence length %d exceeds the table's %d rows", what, T, T_max);
    return T;
}

/* ---- ALiBi ------------------------------------------------------------------ */

void qkv_alibi_slopes(float *slopes, int n_heads) {
    QKV_CHECK(n_heads >= 1, "alibi: n_heads %d must be >= 1", n_heads);
    QKV_CHECK(slopes != NULL, "alibi: slopes for %d heads: output is NULL", n_heads);
    int m = 1; /* the largest power of two <= n_heads */
    while (m <= n_heads / 2) m *= 2;
    for (int k = 1; k <= m; k++) slopes[k - 1] = (float)qkv_math_exp2(-8.0 * k / m);
    /* The rest: slopes k = 1, 3, 5, ... of the 2m-head sequence 2^(-8k/(2m)). */
    for (int j = 0; m + j < n_heads; j++) slopes[m + j] = (float)qkv_math_exp2(-8.0 * (2 * j + 1) / (2.0 * m));
}

void qkv_alibi_bias(float *bias, const float *slopes, int H, int Tq, int Tk, int symmetric) {
    QKV_CHECK(H >= 1 && Tq >= 1 && Tk >= 1, "alibi: bias [%d,%d,%d]: every dim must be >= 1", H, Tq, Tk);
    QKV_CHECK(bias != NULL && slopes != NULL, "alibi: bias [%d,%d,%d]: bias or slopes is NULL", H, Tq, Tk);
    size_t n_rows = (size_t)H * (size_t)Tq;
    QKV_FOR(QKV_PARALLEL(n_rows * (size_t)Tk), schedule(static), (size_t row = 0; row < n_rows; row++), {
        int h = (int)(row / (size_t)Tq), query_pos = (int)(row % (size_t)Tq) + (Tk - Tq);
        float *dst = bias + row * (size_t)Tk;
        for (int j = 0; j < Tk; j++) {
            int distance = query_pos - j;
            if (symmetric && distance < 0) distance = -distance;
            dst[j] = slopes[h] * (float)(-distance);
        }
    });
}

/* ---- RoPE --------------------------------------------------------------------- */

#define OP "rope"

/* What forward decided and backward reuses: the layout and the angle tables. */
typedef struct rope_plan {
    int T, d, rotated;     /* rotated = r, the even count of leading dims that turn */
    int pair_stride;       /* pair i is (i * pair_stride, i * pair_stride + partner): */
    int partner;           /*   interleaved (2i, 2i+1) or split halves (i, i + r/2) */
    int turning;           /* pairs i < turning rotate (p-RoPE: fewer than r/2) */
    int lists;             /* position lists: 1, or B with per-row positions */
    size_t rows_per_list;  /* rows of x (of d values) that read one list: T, or H*T */
    float *cos, *sin;      /* [lists, T, r/2]: cos and sin of position(t) * base^(-2i/r) */
} rope_plan;

/* r from the fraction: 0 or 1 -> d, otherwise fraction * d rounded down to even. */
static int rope_rotated_dims(const qkv_tensor *x, float fraction) {
    char xs[QKV_SHAPE_STR_LEN];
    int d = x->shape[x->ndim - 1];
    QKV_CHECK(fraction >= 0.0f && fraction <= 1.0f, OP ": x %s: rotary_fraction %g outside [0, 1]",
              qkv_shape_str(x, xs, sizeof xs), (double)fraction);
    if (fraction == 0.0f || fraction == 1.0f) {
        QKV_CHECK(d % 2 == 0 && d >= 2, OP ": x %s: head dim %d is odd; RoPE turns pairs of dims "
                  "(set rotary_fraction < 1 to rotate an even part)", qkv_shape_str(x, xs, sizeof xs), d);
        return d;
    }
    int r = (int)floor((double)fraction * d) / 2 * 2;
    QKV_CHECK(r >= 2, OP ": x %s: rotary_fraction %g rotates %d of %d dims; at least 2 must rotate",
              qkv_shape_str(x, xs, sizeof xs), (double)fraction, r, d);
    return r;
}

/* Validates x and opts and fills everything in the plan but the tables. */
static void rope_plan_make(rope_plan *p, const qkv_tensor *x, const qkv_rope_opts *o) {
    char xs[QKV_SHAPE_STR_LEN];
    QKV_CHECK(x->ndim >= 2, OP ": x %s: needs [T,d], [B,T,d] or [B,H,T,d]",
              qkv_shape_str(x, xs, sizeof xs));
    QKV_CHECK(o->offset == 0 || o->positions == NULL,
              OP ": x %s: give offset (%d) or positions, not both", qkv_shape_str(x, xs, sizeof xs), o->offset);
    p->T = x->shape[x->ndim - 2];
    p->d = x->shape[x->ndim - 1];
    p->rotated = rope_rotated_dims(x, o->rotary_fraction);
    p->pair_stride = o->split_halves ? 1 : 2;
    p->partner = o->split_halves ? p->rotated / 2 : 1;
    float keep = o->keep_fraction;
    QKV_CHECK(keep >= 0.0f && keep <= 1.0f, OP ": x %s: keep_fraction %g outside [0, 1]",
              qkv_shape_str(x, xs, sizeof xs), (double)keep);
    p->turning = keep == 0.0f || keep == 1.0f ? p->rotated / 2 : (int)floor((double)keep * (p->rotated / 2));
    QKV_CHECK(p->turning >= 1, OP ": x %s: keep_fraction %g of %d pairs keeps none turning",
              qkv_shape_str(x, xs, sizeof xs), (double)keep, p->rotated / 2);
    QKV_CHECK(o->positions_stride == 0 || (o->positions && x->ndim >= 3 && o->positions_stride >= p->T),
              OP ": x %s: per-row positions need [B,T,d] or [B,H,T,d], a list and a stride >= T, got stride %d",
              qkv_shape_str(x, xs, sizeof xs), o->positions_stride);
    p->lists = o->positions_stride ? x->shape[0] : 1;
    p->rows_per_list = x->size / (size_t)p->d / (size_t)p->lists;
}

/* cos/sin tables [lists, T, r/2], once per call: O(T r) trig instead of O(size).
 * Pairs from p->turning on (p-RoPE's removed low frequencies) get cos 1, sin 0. */
static void rope_fill_tables(qkv_tape *tape, rope_plan *p, const qkv_rope_opts *o, double base) {
    int half = p->rotated / 2, n_rows = p->lists * p->T;
    size_t n = (size_t)n_rows * (size_t)half;
    double *freq = qkv_tape_alloc(tape, (size_t)half * sizeof(double));
    for (int i = 0; i < half; i++) freq[i] = pair_frequency(i, p->rotated, base);
    p->cos = qkv_tape_alloc(tape, n * sizeof(float));
    p->sin = qkv_tape_alloc(tape, n * sizeof(float));
    QKV_FOR(QKV_PARALLEL(n * TRIG_WORK), schedule(static), (int row = 0; row < n_rows; row++), {
        int list = row / p->T, t = row % p->T;
        double pos = o->positions ? (double)o->positions[(size_t)list * o->positions_stride + t]
                                  : (double)o->offset + t;
        for (int i = 0; i < half; i++) {
            double angle = pos * freq[i];
            p->cos[(size_t)row * half + i] = i < p->turning ? (float)qkv_math_cos(angle) : 1.0f;
            p->sin[(size_t)row * half + i] = i < p->turning ? (float)qkv_math_sin(angle) : 0.0f;
        }
    });
}

/* One row at position table row t: dst = R(sign * theta) src on the rotated pairs
 * and src on the pass-through dims; accumulate adds (+=) instead of storing. */
static void rotate_row(const rope_plan *p, size_t t, float sign, const float *src, float *dst,
                       int accumulate) {
    int half = p->rotated / 2;
    const float *cos_t = p->cos + t * (size_t)half, *sin_t = p->sin + t * (size_t)half;
    for (int i = 0; i < half; i++) {
        int a = i * p->pair_stride, b = a + p->partner;
        float c = cos_t[i], s = sign * sin_t[i];
        float ya = src[a] * c - src[b] * s, yb = src[a] * s + src[b] * c;
        dst[a] = accumulate ? dst[a] + ya : ya;
        dst[b] = accumulate ? dst[b] + yb : yb;
    }
    for (int k = p->rotated; k < p->d; k++) dst[k] = accumulate ? dst[k] + src[k] : src[k];
}

/* Every row of a [..., T, d] buffer; rows are independent. */
static void rotate_rows(const rope_plan *p, float sign, const float *src, float *dst, size_t size,
                        int accumulate) {
    size_t n_rows = size / (size_t)p->d;
    QKV_FOR(QKV_PARALLEL(size * 4), schedule(static), (size_t row = 0; row < n_rows; row++), {
        size_t at = row * (size_t)p->d;
        size_t table_row = row / p->rows_per_list * (size_t)p->T + row % (size_t)p->T;
        rotate_row(p, table_row, sign, src + at, dst + at, accumulate);
    });
}

/* y = R(theta) x with R orthogonal, so dx += R(theta)^T dy = R(-theta) dy
 * (and dx += dy on the pass-through dims). */
static void rope_backward(qkv_node *node) {
    qkv_tensor *x = node->inputs[0];
    if (!x->requires_grad) return;
    rotate_rows(node->saved, -1.0f, node->out->grad, qkv_tensor_grad(x), x->size, 1);
}

qkv_tensor *qkv_rope(qkv_tape *tape, qkv_tensor *x, const qkv_rope_opts *opts) {
    static const qkv_rope_opts defaults = {0};
    const qkv_rope_opts *o = opts ? opts : &defaults;
    qkv_tensor_check_live(x, OP);
    rope_plan *p = qkv_tape_alloc(tape, sizeof *p);
    rope_plan_make(p, x, o);
    char what[QKV_SHAPE_STR_LEN + 16], xs[QKV_SHAPE_STR_LEN];
    snprintf(what, sizeof what, OP ": x %s", qkv_shape_str(x, xs, sizeof xs));
    rope_fill_tables(tape, p, o, resolve_base(what, o->base));

    qkv_tensor *y = qkv_tape_tensor(tape, x->ndim, x->shape);
    rotate_rows(p, 1.0f, x->data, y->data, x->size, 0);

    qkv_node *node = qkv_tape_record(tape, OP, y, rope_backward, 1, &x);
    if (node) node->saved = p;
    return y;
}

/* ---- FIRE's distance ------------------------------------------------------------ */

#undef OP
#define OP "fire_distance"

typedef struct fire_plan {
    int tq, tk;
    float l_init;
} fire_plan;

/* The pieces of u at (qi, r = |qi - j|) for c and L: numerator, denominator, m. */
typedef struct fire_terms { float num, den, m; } fire_terms;

static fire_terms fire_at(float c, float l, int qi, int r) {
    fire_terms f;
    f.num = qkv_math_logf(fabsf(c * (float)r) + 1.0f);
    f.m = fmaxf((float)qi, l);
    f.den = qkv_math_logf(fabsf(c * f.m) + 1.0f) + QKV_FIRE_EPS;
    return f;
}

static float fire_threshold(const qkv_tensor *l_scale, float l_init) { return fabsf(l_scale->data[0] * l_init); }

static float sign_of(float v) { return (float)((v > 0.0f) - (v < 0.0f)); }

/* u = num / den:  du = dnum / den - num dden / den^2, with
 *   dnum/dc = sgn(c) r / (|c| r + 1),   dden/dc = sgn(c m) m / (|c m| + 1),
 *   dden/dl_scale = sgn(c m) c / (|c m| + 1) * sgn(l_scale l_init) l_init   where L > qi. */
static void fire_distance_backward(qkv_node *node) {
    const fire_plan *p = node->saved;
    qkv_tensor *c = node->inputs[0], *l_scale = node->inputs[1];
    const float *g = node->out->grad;
    float cv = c->data[0], l = fire_threshold(l_scale, p->l_init);
    double dc = 0.0, dl = 0.0;
    for (int i = 0; i < p->tq; i++) {
        int qi = i + p->tk - p->tq;
        for (int j = 0; j < p->tk; j++) {
            int r = qi > j ? qi - j : j - qi;
            fire_terms f = fire_at(cv, l, qi, r);
            double up = g[(size_t)i * p->tk + j];
            double dnum_dc = sign_of(cv) * (double)r / (fabs((double)cv * r) + 1.0);
            double cm = (double)cv * f.m, dden_dm = sign_of((float)cm) * cv / (fabs(cm) + 1.0);
            double dden_dc = sign_of((float)cm) * f.m / (fabs(cm) + 1.0);
            double du_dden = -(double)f.num / ((double)f.den * f.den);
            dc += up * (dnum_dc / f.den + du_dden * dden_dc);
            if (l > (float)qi)
                dl += up * du_dden * dden_dm * sign_of(l_scale->data[0] * p->l_init) * p->l_init;
        }
    }
    if (c->requires_grad) qkv_tensor_grad(c)[0] += (float)dc;
    if (l_scale->requires_grad) qkv_tensor_grad(l_scale)[0] += (float)dl;
}

qkv_tensor *qkv_fire_distance(qkv_tape *tape, qkv_tensor *c, qkv_tensor *l_scale, int tq, int tk, float l_init) {
    char cs[QKV_SHAPE_STR_LEN], ls[QKV_SHAPE_STR_LEN];
    qkv_tensor_check_live(c, OP);
    qkv_tensor_check_live(l_scale, OP);
    QKV_CHECK(c->size == 1 && l_scale->size == 1 && tq >= 1 && tk >= tq,
              OP ": c %s and l_scale %s must hold one value each, 1 <= Tq %d <= Tk %d",
              qkv_shape_str(c, cs, sizeof cs), qkv_shape_str(l_scale, ls, sizeof ls), tq, tk);
    fire_plan *p = qkv_tape_alloc(tape, sizeof *p);
    *p = (fire_plan){tq, tk, l_init};
    qkv_tensor *u = qkv_tape_tensor(tape, 2, (int[]){tq, tk});
    float cv = c->data[0], l = fire_threshold(l_scale, l_init);
    for (int i = 0; i < tq; i++) {
        int qi = i + tk - tq;
        for (int j = 0; j < tk; j++) {
            fire_terms f = fire_at(cv, l, qi, qi > j ? qi - j : j - qi);
            u->data[(size_t)i * tk + j] = f.num / f.den;
        }
    }
    qkv_tensor *inputs[2] = {c, l_scale};
    qkv_node *node = qkv_tape_record(tape, OP, u, fire_distance_backward, 2, inputs);
    if (node) node->saved = p;
    return u;
}
