/* ops_elementwise.c — elementwise ops: broadcast binary ops (add, sub, mul, div),
 * unary maps (one row each in the table QKV_UNARY_OPS, core/ops/unary_ops.h: scale, add_scalar, relu,
 * abs, gelu, gelu_exact, tanh, sigmoid, exp, log, sqrt, silu) and inverted dropout.
 *
 * Contract (see ops.h):
 *  - Binary ops broadcast numpy-style: shapes are right-aligned, each pair of dims
 *    is equal or one of them is 1; anything else stops with
 *        "add: [2,3] + [4]: shapes do not broadcast".
 *  - Backward adds (+=) into the gradients of inputs that require one; a broadcast
 *    input receives the output gradient summed over its broadcast dims, in double,
 *    each input element summed by one thread in output order (so the result is
 *    bitwise independent of the thread count).
 *  - log and sqrt of non-positive inputs follow IEEE (-inf, NaN); no error.
 *  - dropout(p) needs p in [0, 1). In eval mode (tape->training == 0) or with p == 0
 *    it is the identity and returns x itself (no copy, no node), like PyTorch.
 *    Otherwise element i is kept when uniform(seed, first + i) >= p, with `first`
 *    reserved from the tape's RNG, and scaled by 1 / (1 - p).
 *
 * Structure: one broadcast engine (bcast_plan + bcast_map + accumulate_to_input)
 * serves all four binary ops and dropout; one unary engine (unary_value,
 * unary_slope, generated from the table QKV_UNARY_OPS) serves every unary op. Each engine switches on the op outside its
 * inner loops, so every inner loop is a tight loop with a constant op.
 */
#include "core/ops/ops.h"

#include <math.h>
#include <string.h>

#include "core/mathfn.h"
#include "core/error.h"
#include "core/kernels/fastmath.h"
#include "core/kernels/multiversion.h"
#include "core/kernels/parallel.h"

#define ELEM_CHUNK 4096   /* elements per parallel work item */
#define INLINE static inline __attribute__((always_inline))

/* ---- parallel helper --------------------------------------------------------- */

typedef void (*range_fn)(const void *ctx, size_t begin, size_t end);

/* Calls fn on [0, n) in pieces of `grain` items; pieces are independent, so any
 * thread may run any piece. work decides whether threads are worth starting. */
static void parallel_ranges(size_t n, size_t grain, size_t work, range_fn fn, const void *ctx) {
    size_t pieces = (n + grain - 1) / grain;
    QKV_FOR(QKV_PARALLEL(work), schedule(static), (size_t p = 0; p < pieces; p++), {
        size_t begin = p * grain;
        fn(ctx, begin, begin + grain < n ? begin + grain : n);
    });
}

/* ---- broadcast plan ------------------------------------------------------------ */

enum operand { OPERAND_OUT, OPERAND_A, OPERAND_B };

/* The output shape with size-1 dims dropped and neighbouring dims merged when both
 * inputs broadcast them alike, right-aligned in 4 dims (padding dims are 1). Each
 * operand has element strides over it; a broadcast dim has stride 0. */
typedef struct bcast_plan {
    size_t shape[4];
    size_t stride[3][4];   /* [enum operand][dim] */
} bcast_plan;

static int padded_dim(const qkv_tensor *t, int ndim, int d) {
    int i = d - (ndim - t->ndim);
    return i >= 0 ? t->shape[i] : 1;
}

/* The broadcast output shape of a and b, or a stop naming op and both shapes. */
static int broadcast_shape(const char *op, const char *symbol, const qkv_tensor *a,
                           const qkv_tensor *b, int *shape) {
    int ndim = a->ndim > b->ndim ? a->ndim : b->ndim;
    for (int d = 0; d < ndim; d++) {
        int da = padded_dim(a, ndim, d), db = padded_dim(b, ndim, d);
        if (da != db && da != 1 && db != 1) {
            char sa[QKV_SHAPE_STR_LEN], sb[QKV_SHAPE_STR_LEN];
            qkv_fatal("%s: %s %s %s: shapes do not broadcast", op, qkv_shape_str(a, sa, sizeof sa),
                      symbol, qkv_shape_str(b, sb, sizeof sb));
        }
        shape[d] = da > db ? da : db;
    }
    return ndim;
}

static void plan_make(bcast_plan *plan, const qkv_tensor *a, const qkv_tensor *b, int ndim,
                      const int *shape) {
    size_t size[4];
    int reads[3][4];   /* 1: the operand walks this dim; 0: it is broadcast along it */
    int n = 0;
    for (int d = 0; d < ndim; d++) {
        if (shape[d] == 1) continue;
        int ra = padded_dim(a, ndim, d) != 1, rb = padded_dim(b, ndim, d) != 1;
        if (n > 0 && reads[OPERAND_A][n - 1] == ra && reads[OPERAND_B][n - 1] == rb) {
            size[n - 1] *= (size_t)shape[d];
            continue;
        }
        size[n] = (size_t)shape[d];
        reads[OPERAND_OUT][n] = 1, reads[OPERAND_A][n] = ra, reads[OPERAND_B][n] = rb;
        n++;
    }
    if (n == 0) { /* every dim is 1: one element that all operands read */
        size[0] = 1;
        reads[OPERAND_OUT][0] = reads[OPERAND_A][0] = reads[OPERAND_B][0] = 1;
        n = 1;
    }
    for (int d = 0; d < 4; d++) { /* right-align the n merged dims */
        int src = d - (4 - n);
        plan->shape[d] = src >= 0 ? size[src] : 1;
        for (int op = 0; op < 3; op++) plan->stride[op][d] = src >= 0 ? (size_t)reads[op][src] : 0;
    }
    for (int op = 0; op < 3; op++) { /* turn the 0/1 read flags into strides */
        size_t step = 1;
        for (int d = 3; d >= 0; d--) {
            if (!plan->stride[op][d]) continue;
            plan->stride[op][d] = step;
            step *= plan->shape[d];
        }
    }
}

/* ---- binary kernels -------------------------------------------------------------- */

enum binary_kind { BINARY_ADD, BINARY_SUB, BINARY_MUL, BINARY_DIV };

INLINE float binary_value(enum binary_kind k, float x, float y) {
    switch (k) {
    case BINARY_ADD: return x + y;
    case BINARY_SUB: return x - y;
    case BINARY_MUL: return x * y;
    default: return x / y;
    }
}

/* out[i] = x[i*sx] op y[i*sy] for i < n, with sx, sy in {0, 1}: one loop per case. */
INLINE void binary_run(enum binary_kind k, size_t n, const float *x, size_t sx, const float *y,
                       size_t sy, float *out) {
    if (sx && sy) {
        for (size_t i = 0; i < n; i++) out[i] = binary_value(k, x[i], y[i]);
    } else if (sx) {
        const float y0 = y[0];
        for (size_t i = 0; i < n; i++) out[i] = binary_value(k, x[i], y0);
    } else if (sy) {
        const float x0 = x[0];
        for (size_t i = 0; i < n; i++) out[i] = binary_value(k, x0, y[i]);
    } else {
        const float v = binary_value(k, x[0], y[0]);
        for (size_t i = 0; i < n; i++) out[i] = v;
    }
}

static void binary_row(enum binary_kind k, size_t n, const float *x, size_t sx, const float *y,
                       size_t sy, float *out) {
    switch (k) {
    case BINARY_ADD: binary_run(BINARY_ADD, n, x, sx, y, sy, out); break;
    case BINARY_SUB: binary_run(BINARY_SUB, n, x, sx, y, sy, out); break;
    case BINARY_MUL: binary_run(BINARY_MUL, n, x, sx, y, sy, out); break;
    case BINARY_DIV: binary_run(BINARY_DIV, n, x, sx, y, sy, out); break;
    }
}

/* One work item of bcast_map: a piece of one output row (the last plan dim). */
typedef struct map_job {
    enum binary_kind kind;
    const bcast_plan *plan;
    const float *x, *y;
    const size_t *sx, *sy;
    float *out;
    size_t pieces_per_row, piece_len;
} map_job;

/* Element offset of output row `row` (over the first 3 plan dims) for strides s. */
static size_t row_offset(const bcast_plan *p, const size_t *s, size_t row) {
    size_t i2 = row % p->shape[2], i1 = (row / p->shape[2]) % p->shape[1];
    size_t i0 = row / (p->shape[2] * p->shape[1]);
    return i0 * s[0] + i1 * s[1] + i2 * s[2];
}

INLINE void map_pieces_body(const void *ctx, size_t begin, size_t end) {
    const map_job *j = ctx;
    size_t n = j->plan->shape[3];
    for (size_t t = begin; t < end; t++) {
        size_t row = t / j->pieces_per_row, col = (t % j->pieces_per_row) * j->piece_len;
        size_t len = n - col < j->piece_len ? n - col : j->piece_len;
        binary_row(j->kind, len, j->x + row_offset(j->plan, j->sx, row) + col * j->sx[3], j->sx[3],
                   j->y + row_offset(j->plan, j->sy, row) + col * j->sy[3], j->sy[3],
                   j->out + row * n + col);
    }
}
QKV_MULTIVERSION(map_pieces, (const void *ctx, size_t begin, size_t end), (ctx, begin, end))

/* out = x op y over the plan's output shape; x, y are read with strides sx, sy. */
static void bcast_map(enum binary_kind k, const bcast_plan *p, const float *x, const size_t *sx,
                      const float *y, const size_t *sy, float *out) {
    size_t n = p->shape[3], rows = p->shape[0] * p->shape[1] * p->shape[2];
    size_t piece_len = n < ELEM_CHUNK ? n : ELEM_CHUNK;
    map_job job = {k, p, x, y, sx, sy, out, (n + piece_len - 1) / piece_len, piece_len};
    size_t items = rows * job.pieces_per_row;
    parallel_ranges(items, ELEM_CHUNK / piece_len, rows * n, map_pieces, &job);
}

/* ---- unary kernels ---------------------------------------------------------------- */

#define GELU_BETA 0.7978845608028654f    /* sqrt(2 / pi) */
#define GELU_KAPPA 0.044715f
#define INV_SQRT_2PI 0.3989422804014327f /* 1 / sqrt(2 pi) */

/* Helpers of rows that need more than one expression. */
INLINE float gelu_tanh_inner(float x) { return qkv_fast_tanhf(GELU_BETA * (x + GELU_KAPPA * x * x * x)); }
INLINE float phi_cdf(float x) { return 0.5f * (1.0f + qkv_math_erff(x * (float)M_SQRT1_2)); }
INLINE float sigmoid_value(float x) { /* exp of a non-positive number only: no overflow */
    float e = qkv_fast_exp_nonpositive(-fabsf(x));
    return x >= 0.0f ? 1.0f / (1.0f + e) : e / (1.0f + e);
}
/* d[0.5 x (1 + t)] = 0.5 (1 + t) + 0.5 x (1 - t^2) beta (1 + 3 kappa x^2), t = tanh(beta (x + kappa x^3)) */
INLINE float gelu_tanh_slope(float x) {
    float t = gelu_tanh_inner(x);
    return 0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * GELU_BETA * (1.0f + 3.0f * GELU_KAPPA * x * x);
}
/* d[x s(x)] = s + x s (1 - s) = s (1 + x (1 - s)), s = sigmoid(x) */
INLINE float silu_slope(float x) {
    float s = sigmoid_value(x);
    return s * (1.0f + x * (1.0f - s));
}

/* The table of unary ops is QKV_UNARY_OPS (core/ops/unary_ops.h); from it: */
#define UNARY_ROW(KIND, name, cost, check, check_c, value, slope) {name, cost},
const qkv_unary_op qkv_unary_ops[] = {QKV_UNARY_OPS(UNARY_ROW)};
const int qkv_unary_op_count = QKV_UNARY_COUNT;

/* y = f(x); c is the scale or the added constant. */
#define VALUE_CASE(KIND, name, cost, check, check_c, value, slope) case QKV_UNARY_##KIND: return (value);
INLINE float unary_value(qkv_unary_kind k, float x, float c) {
    (void)c;
    switch (k) { QKV_UNARY_OPS(VALUE_CASE) default: return 0.0f; }
}

/* dy/dx at x, given y = f(x). */
#define SLOPE_CASE(KIND, name, cost, check, check_c, value, slope) case QKV_UNARY_##KIND: return (slope);
INLINE float unary_slope(qkv_unary_kind k, float x, float y, float c) {
    (void)x, (void)y, (void)c;
    switch (k) { QKV_UNARY_OPS(SLOPE_CASE) default: return 0.0f; }
}

static size_t unary_cost(qkv_unary_kind k) { return (size_t)qkv_unary_ops[k].cost; }

typedef struct unary_job {
    qkv_unary_kind kind;
    float c;
    const float *x, *y, *g;   /* input, output, output gradient */
    float *out;               /* forward: y; backward: the input's gradient */
    int assign;               /* backward into a new gradient buffer: out = 0 + ..., no memset */
} unary_job;

INLINE void unary_forward_run(qkv_unary_kind k, const unary_job *j, size_t begin, size_t end) {
    for (size_t i = begin; i < end; i++) j->out[i] = unary_value(k, j->x[i], j->c);
}

/* out += g * slope, or into a new buffer out = 0 + g * slope: the bits a zeroed
 * buffer would get (0 + -0 is +0), without the memset pass. */
INLINE void unary_backward_run(qkv_unary_kind k, const unary_job *j, size_t begin, size_t end) {
    if (j->assign)
        for (size_t i = begin; i < end; i++) j->out[i] = 0.0f + j->g[i] * unary_slope(k, j->x[i], j->y[i], j->c);
    else
        for (size_t i = begin; i < end; i++) j->out[i] += j->g[i] * unary_slope(k, j->x[i], j->y[i], j->c);
}

#define FORWARD_CASE(KIND, name, cost, check, check_c, value, slope) \
    case QKV_UNARY_##KIND: unary_forward_run(QKV_UNARY_##KIND, j, begin, end); break;
#define BACKWARD_CASE(KIND, name, cost, check, check_c, value, slope) \
    case QKV_UNARY_##KIND: unary_backward_run(QKV_UNARY_##KIND, j, begin, end); break;

INLINE void unary_forward_range_body(const void *ctx, size_t begin, size_t end) {
    const unary_job *j = ctx;
    switch (j->kind) { QKV_UNARY_OPS(FORWARD_CASE) default: break; }
}
QKV_MULTIVERSION(unary_forward_range, (const void *ctx, size_t begin, size_t end), (ctx, begin, end))

INLINE void unary_backward_range_body(const void *ctx, size_t begin, size_t end) {
    const unary_job *j = ctx;
    switch (j->kind) { QKV_UNARY_OPS(BACKWARD_CASE) default: break; }
}
QKV_MULTIVERSION(unary_backward_range, (const void *ctx, size_t begin, size_t end), (ctx, begin, end))

static void unary_apply(range_fn fn, const unary_job *job, size_t n) {
    parallel_ranges(n, ELEM_CHUNK, n * unary_cost(job->kind), fn, job);
}

/* ---- gradient of a broadcast input ---------------------------------------------- */

#define REDUCE_COLS 64 /* gradient elements of one input row per work item */

/* Work item t: up to REDUCE_COLS elements of one row (last plan dim) of the input's
 * gradient, each summed in double over the output elements that read it, in output
 * order. Items split rows into column blocks so that a bias-like [D] input,
 * which has a single row, still spreads over threads. */
typedef struct reduce_job {
    const bcast_plan *plan;
    const size_t *s;          /* the input's strides */
    size_t in_shape[4];
    size_t col_blocks;        /* items per input row */
    const float *contrib;     /* out-shaped: what each output element adds */
    float sign;
    float *grad;
} reduce_job;

static void reduce_pieces(const void *ctx, size_t begin, size_t end) {
    const reduce_job *j = ctx;
    const bcast_plan *p = j->plan;
    const size_t *s = j->s, *in = j->in_shape;
    size_t n = p->shape[3], m = in[3];
    for (size_t t = begin; t < end; t++) {
        size_t r = t / j->col_blocks, k0 = (t % j->col_blocks) * REDUCE_COLS;
        size_t k1 = k0 + REDUCE_COLS < m ? k0 + REDUCE_COLS : m;
        size_t jj[3] = {r / (in[1] * in[2]), (r / in[2]) % in[1], r % in[2]};
        size_t lo[3], hi[3];
        for (int d = 0; d < 3; d++) { /* the output rows that read input row r */
            lo[d] = s[d] ? jj[d] : 0;
            hi[d] = s[d] ? jj[d] + 1 : p->shape[d];
        }
        double acc[REDUCE_COLS] = {0};
        for (size_t i0 = lo[0]; i0 < hi[0]; i0++)
            for (size_t i1 = lo[1]; i1 < hi[1]; i1++)
                for (size_t i2 = lo[2]; i2 < hi[2]; i2++) {
                    const float *c = j->contrib + ((i0 * p->shape[1] + i1) * p->shape[2] + i2) * n;
                    if (s[3]) {
                        for (size_t k = k0; k < k1; k++) acc[k - k0] += c[k];
                    } else { /* the input row is one element, broadcast along the row */
                        double sum = acc[0];
                        for (size_t k = 0; k < n; k++) sum += c[k];
                        acc[0] = sum;
                    }
                }
        for (size_t k = k0; k < k1; k++) j->grad[r * m + k] += j->sign * (float)acc[k - k0];
    }
}

/* grad(input) += sign * (contrib summed over the dims the input is broadcast along). */
static void accumulate_to_input(const bcast_plan *p, enum operand which, qkv_tensor *input,
                                const float *contrib, float sign) {
    size_t out_size = p->shape[0] * p->shape[1] * p->shape[2] * p->shape[3];
    if (input->size == out_size) { /* not broadcast: grad += sign * contrib */
        float beta, *grad = qkv_tensor_grad_to_write(input, &beta);
        unary_job job = {QKV_UNARY_SCALE, sign, contrib, contrib, contrib, grad, beta == 0.0f};
        unary_apply(unary_backward_range, &job, out_size);
        return;
    }
    float *grad = qkv_tensor_grad(input);
    reduce_job job = {p, p->stride[which], {0}, 0, contrib, sign, grad};
    for (int d = 0; d < 4; d++) job.in_shape[d] = job.s[d] ? p->shape[d] : 1;
    job.col_blocks = (job.in_shape[3] + REDUCE_COLS - 1) / REDUCE_COLS;
    size_t rows = job.in_shape[0] * job.in_shape[1] * job.in_shape[2];
    parallel_ranges(rows * job.col_blocks, 1, out_size, reduce_pieces, &job);
}

/* ---- binary ops -------------------------------------------------------------------- */

static const char *const binary_symbol[] = {"+", "-", "*", "/"};

/* add: da = g, db = g.  sub: da = g, db = -g.  mul: da = g b, db = g a.
 * div: da = g / b, db = -g a / b^2 = -(g / b) * y; each summed over broadcast dims. */
static void binary_backward(qkv_node *node) {
    const bcast_plan *p = node->saved;
    const size_t *s_out = p->stride[OPERAND_OUT], *s_a = p->stride[OPERAND_A], *s_b = p->stride[OPERAND_B];
    qkv_tensor *a = node->inputs[0], *b = node->inputs[1], *out = node->out;
    qkv_tape *tape = out->tape;
    const float *g = out->grad;
    float *tmp = NULL;
    enum binary_kind k = (enum binary_kind)node->iarg[0];
    if (k == BINARY_MUL || k == BINARY_DIV) tmp = qkv_tape_alloc(tape, out->size * sizeof(float));
    switch (k) {
    case BINARY_ADD:
    case BINARY_SUB:
        if (a->requires_grad) accumulate_to_input(p, OPERAND_A, a, g, 1.0f);
        if (b->requires_grad) accumulate_to_input(p, OPERAND_B, b, g, k == BINARY_SUB ? -1.0f : 1.0f);
        break;
    case BINARY_MUL:
        if (a->requires_grad) {
            bcast_map(BINARY_MUL, p, g, s_out, b->data, s_b, tmp);
            accumulate_to_input(p, OPERAND_A, a, tmp, 1.0f);
        }
        if (b->requires_grad) {
            bcast_map(BINARY_MUL, p, g, s_out, a->data, s_a, tmp);
            accumulate_to_input(p, OPERAND_B, b, tmp, 1.0f);
        }
        break;
    case BINARY_DIV:
        bcast_map(BINARY_DIV, p, g, s_out, b->data, s_b, tmp);
        if (a->requires_grad) accumulate_to_input(p, OPERAND_A, a, tmp, 1.0f);
        if (b->requires_grad) {
            bcast_map(BINARY_MUL, p, tmp, s_out, out->data, s_out, tmp);
            accumulate_to_input(p, OPERAND_B, b, tmp, -1.0f);
        }
        break;
    }
}

static qkv_tensor *binary_op(qkv_tape *tape, const char *op, enum binary_kind k, qkv_tensor *a,
                             qkv_tensor *b) {
    qkv_tensor_check_live(a, op);
    qkv_tensor_check_live(b, op);
    int shape[QKV_MAX_DIMS];
    int ndim = broadcast_shape(op, binary_symbol[k], a, b, shape);
    bcast_plan plan;
    plan_make(&plan, a, b, ndim, shape);
    qkv_tensor *out = qkv_tape_tensor(tape, ndim, shape);
    bcast_map(k, &plan, a->data, plan.stride[OPERAND_A], b->data, plan.stride[OPERAND_B], out->data);
    qkv_tensor *inputs[2] = {a, b};
    qkv_node *node = qkv_tape_record(tape, op, out, binary_backward, 2, inputs);
    if (node) {
        bcast_plan *saved = qkv_tape_alloc(tape, sizeof plan);
        *saved = plan;
        node->saved = saved;
        node->iarg[0] = (int)k;
    }
    return out;
}

qkv_tensor *qkv_add(qkv_tape *tape, qkv_tensor *a, qkv_tensor *b) { return binary_op(tape, "add", BINARY_ADD, a, b); }
qkv_tensor *qkv_sub(qkv_tape *tape, qkv_tensor *a, qkv_tensor *b) { return binary_op(tape, "sub", BINARY_SUB, a, b); }
qkv_tensor *qkv_mul(qkv_tape *tape, qkv_tensor *a, qkv_tensor *b) { return binary_op(tape, "mul", BINARY_MUL, a, b); }
qkv_tensor *qkv_div(qkv_tape *tape, qkv_tensor *a, qkv_tensor *b) { return binary_op(tape, "div", BINARY_DIV, a, b); }

/* ---- unary ops ---------------------------------------------------------------------- */

/* dx += g * f'(x, y), with f' from unary_slope. */
static void unary_backward(qkv_node *node) {
    qkv_tensor *x = node->inputs[0], *y = node->out;
    float beta, *dx = qkv_tensor_grad_to_write(x, &beta);
    unary_job job = {(qkv_unary_kind)node->iarg[0], node->farg[0], x->data, y->data, y->grad,
                     dx, beta == 0.0f};
    unary_apply(unary_backward_range, &job, x->size);
}

static qkv_tensor *unary_op(qkv_tape *tape, qkv_unary_kind k, qkv_tensor *x, float c) {
    const char *op = qkv_unary_ops[k].name;
    qkv_tensor_check_live(x, op);
    qkv_tensor *out = qkv_tape_tensor(tape, x->ndim, x->shape);
    unary_job job = {k, c, x->data, NULL, NULL, out->data, 0};
    unary_apply(unary_forward_range, &job, x->size);
    qkv_node *node = qkv_tape_record(tape, op, out, unary_backward, 1, &x);
    if (node) {
        node->iarg[0] = (int)k;
        node->farg[0] = c;
    }
    return out;
}

qkv_tensor *qkv_scale(qkv_tape *tape, qkv_tensor *x, float s) { return unary_op(tape, QKV_UNARY_SCALE, x, s); }
qkv_tensor *qkv_add_scalar(qkv_tape *tape, qkv_tensor *x, float c) { return unary_op(tape, QKV_UNARY_ADD_SCALAR, x, c); }
qkv_tensor *qkv_relu(qkv_tape *tape, qkv_tensor *x) { return unary_op(tape, QKV_UNARY_RELU, x, 0.0f); }
qkv_tensor *qkv_abs(qkv_tape *tape, qkv_tensor *x) { return unary_op(tape, QKV_UNARY_ABS, x, 0.0f); }
qkv_tensor *qkv_gelu(qkv_tape *tape, qkv_tensor *x) { return unary_op(tape, QKV_UNARY_GELU, x, 0.0f); }
qkv_tensor *qkv_gelu_exact(qkv_tape *tape, qkv_tensor *x) { return unary_op(tape, QKV_UNARY_GELU_EXACT, x, 0.0f); }
qkv_tensor *qkv_tanh(qkv_tape *tape, qkv_tensor *x) { return unary_op(tape, QKV_UNARY_TANH, x, 0.0f); }
qkv_tensor *qkv_sigmoid(qkv_tape *tape, qkv_tensor *x) { return unary_op(tape, QKV_UNARY_SIGMOID, x, 0.0f); }
qkv_tensor *qkv_exp(qkv_tape *tape, qkv_tensor *x) { return unary_op(tape, QKV_UNARY_EXP, x, 0.0f); }
qkv_tensor *qkv_log(qkv_tape *tape, qkv_tensor *x) { return unary_op(tape, QKV_UNARY_LOG, x, 0.0f); }
qkv_tensor *qkv_sqrt(qkv_tape *tape, qkv_tensor *x) { return unary_op(tape, QKV_UNARY_SQRT, x, 0.0f); }
qkv_tensor *qkv_silu(qkv_tape *tape, qkv_tensor *x) { return unary_op(tape, QKV_UNARY_SILU, x, 0.0f); }

qkv_tensor *qkv_unary(qkv_tape *tape, qkv_unary_kind op, qkv_tensor *x, float c) {
    QKV_CHECK((int)op >= 0 && op < QKV_UNARY_COUNT, "unary: op %d of %d", (int)op, (int)QKV_UNARY_COUNT);
    return unary_op(tape, op, x, c);
}

/* ---- dropout ------------------------------------------------------------------------- */

typedef struct mask_job {
    float *mask;
    uint64_t seed, first;
    float p, keep_scale;
} mask_job;

static void draw_mask(const void *ctx, size_t begin, size_t end) {
    const mask_job *j = ctx;
    for (size_t i = begin; i < end; i++)
        j->mask[i] = qkv_u64_to_unit(qkv_rng_at(j->seed, j->first + i)) >= j->p ? j->keep_scale : 0.0f;
}

/* y = x * mask with mask in {0, 1/(1-p)}; recorded as a "dropout" node whose
 * backward is mul's: dx = g * mask (the mask is data, it gets no gradient). */
qkv_tensor *qkv_dropout(qkv_tape *tape, qkv_tensor *x, float p) {
    qkv_tensor_check_live(x, "dropout");
    char shape[QKV_SHAPE_STR_LEN];
    QKV_CHECK(p >= 0.0f && p < 1.0f, "dropout: %s: p = %g outside [0, 1)",
              qkv_shape_str(x, shape, sizeof shape), (double)p);
    if (!tape->training || p == 0.0f) return x;
    qkv_tensor *mask = qkv_tape_tensor(tape, x->ndim, x->shape);
    /* x is this tape's slice of a batch-major tensor: element i sits at
     * slice_index * size + i of the whole batch's (see tape.h). */
    uint64_t whole = qkv_rng_reserve(&tape->rng, (uint64_t)x->size * (uint64_t)tape->slice_count);
    mask_job job = {mask->data, tape->rng.seed, whole + (uint64_t)tape->slice_index * x->size, p,
                    1.0f / (1.0f - p)};
    parallel_ranges(x->size, ELEM_CHUNK, x->size * 8, draw_mask, &job);
    return binary_op(tape, "dropout", BINARY_MUL, x, mask);
}
