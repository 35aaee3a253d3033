/* optimizer.c — SGD, Adam and AdamW behind one interface; see optimizer.h.
 *
 * Contract: qkv_optimizer_init checks every option of the chosen kind before it
 * allocates anything (a bad value stops through qkv_fatal naming the option),
 * fills in Adam's defaults and allocates zeroed state. Options of another kind
 * (momentum for Adam, betas for SGD) are ignored, except nesterov, which only SGD
 * has. qkv_optimizer_step applies one update to every parameter, element by
 * element, each element on one thread, so the result does not depend on the
 * thread count. The per-step constants (bias corrections, the decoupled decay
 * factor) are computed once per step in double and rounded to float.
 */
#include "optim/optimizer.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "core/kernels/multiversion.h"
#include "core/kernels/parallel.h"

#define ADAM_DEFAULT_BETA1 0.9f
#define ADAM_DEFAULT_BETA2 0.999f
#define ADAM_DEFAULT_EPS 1e-8f
/* Rough cost of one element's update, for QKV_PARALLEL (Adam has a sqrt and a divide). */
#define SGD_WORK 4
#define ADAM_WORK 16
/* Elements per piece of the parallel update (core/ops/params.h). */
#define UPDATE_PIECE 16384

const char *const qkv_opt_kind_names[] = {"sgd", "adam", "adamw", NULL};
#define N_KINDS ((int)(sizeof qkv_opt_kind_names / sizeof qkv_opt_kind_names[0]) - 1)

int qkv_opt_kind_parse(const char *name) { return qkv_name_lookup(name, qkv_opt_kind_names, N_KINDS); }

const char *qkv_opt_kind_name(qkv_opt_kind kind) {
    QKV_CHECK((int)kind >= 0 && (int)kind < N_KINDS, "optimizer: unknown kind %d", (int)kind);
    return qkv_opt_kind_names[kind];
}

const char *qkv_optimizer_slot_name(const qkv_optimizer *opt, int slot) {
    QKV_CHECK(slot >= 0 && slot < opt->n_slots, "%s: state slot %d out of range (it has %d)",
              qkv_opt_kind_name(opt->config.kind), slot, opt->n_slots);
    if (opt->config.kind == QKV_OPT_SGD) return "v";
    return slot == 0 ? "m" : "s";
}

/* Ends with suffix. */
static int ends_with(const char *s, const char *suffix) {
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && strcmp(s + n - k, suffix) == 0;
}

int qkv_param_decays(const qkv_tensor *param) {
    if (param->ndim <= 1) return 0; /* biases, norm gains and scalars */
    const char *name = param->name;
    if (name && (strstr(name, "embed") || ends_with(name, ".table"))) return 0;
    return 1;
}

/* ---- configuration ------------------------------------------------------------ */

/* Stops unless lo <= value < hi (NaN fails too). */
static void check_range(const char *kind, const char *option, float value, float lo, float hi) {
    QKV_CHECK(value >= lo && value < hi, "%s: %s = %g must be in [%g, %g)", kind, option, (double)value,
              (double)lo, (double)hi);
}

static void check_non_negative(const char *kind, const char *option, float value) {
    QKV_CHECK(value >= 0.0f && isfinite(value), "%s: %s = %g must be finite and >= 0", kind, option,
              (double)value);
}

/* The config with Adam's defaults filled in, validated. */
static qkv_optimizer_config checked_config(const qkv_optimizer_config *config) {
    QKV_CHECK((int)config->kind >= 0 && (int)config->kind < N_KINDS, "optimizer: unknown kind %d",
              (int)config->kind);
    qkv_optimizer_config c = *config;
    const char *kind = qkv_opt_kind_names[c.kind];
    check_non_negative(kind, "lr", c.lr);
    check_non_negative(kind, "weight_decay", c.weight_decay);
    if (c.kind == QKV_OPT_SGD) {
        check_range(kind, "momentum", c.momentum, 0.0f, 1.0f);
        QKV_CHECK(!c.nesterov || c.momentum > 0.0f, "sgd: nesterov needs momentum > 0 (momentum = %g)",
                  (double)c.momentum);
        return c;
    }
    QKV_CHECK(!c.nesterov, "%s: nesterov applies to SGD only", kind);
    if (c.beta1 == 0.0f) c.beta1 = ADAM_DEFAULT_BETA1;
    if (c.beta2 == 0.0f) c.beta2 = ADAM_DEFAULT_BETA2;
    if (c.eps == 0.0f) c.eps = ADAM_DEFAULT_EPS;
    check_range(kind, "beta1", c.beta1, 0.0f, 1.0f);
    check_range(kind, "beta2", c.beta2, 0.0f, 1.0f);
    QKV_CHECK(c.eps > 0.0f && isfinite(c.eps), "%s: eps = %g must be finite and > 0", kind, (double)c.eps);
    return c;
}


int qkv_optimizer_slot_count(const qkv_optimizer_config *config) {
    return config->kind != QKV_OPT_SGD ? 2 : config->momentum > 0.0f ? 1 : 0;
}

void qkv_optimizer_init(qkv_optimizer *opt, const qkv_optimizer_config *config, const qkv_params *params) {
    qkv_optimizer_config c = checked_config(config);
    for (int i = 0; i < params->n; i++)
        QKV_CHECK(params->items[i]->grad, "%s: parameter %s has no gradient buffer", qkv_opt_kind_names[c.kind],
                  params->items[i]->name);
    memset(opt, 0, sizeof *opt);
    opt->config = c;
    opt->n_params = params->n;
    opt->n_slots = qkv_optimizer_slot_count(&c);
    opt->state = qkv_calloc((size_t)opt->n_slots * (size_t)params->n, sizeof *opt->state, "the optimizer state");
    for (int slot = 0; slot < opt->n_slots; slot++)
        for (int i = 0; i < params->n; i++)
            opt->state[slot * params->n + i] = qkv_calloc(params->items[i]->size, sizeof(float), "the optimizer state");
    opt->decays = qkv_calloc((size_t)params->n, 1, "the optimizer state");
    for (int i = 0; i < params->n; i++)
        opt->decays[i] = (unsigned char)(c.decay_all || qkv_param_decays(params->items[i]));
}

void qkv_optimizer_free(qkv_optimizer *opt) {
    for (int k = 0; opt->state && k < opt->n_slots * opt->n_params; k++) free(opt->state[k]);
    free(opt->state);
    free(opt->decays);
    memset(opt, 0, sizeof *opt);
}

/* ---- updates ------------------------------------------------------------------ */

/* SGD on n elements: d = g + wd p; v = mu v + d; p -= lr (nesterov ? d + mu v : v).
 * v is NULL without momentum: p -= lr d. */
static inline __attribute__((always_inline)) void sgd_update_body(float *restrict p, const float *restrict g,
                                                                  float *restrict v, size_t n, float lr,
                                                                  float wd, float mu, int nesterov) {
    for (size_t j = 0; j < n; j++) {
        float d = g[j] + wd * p[j];
        if (v) {
            v[j] = mu * v[j] + d;
            d = nesterov ? d + mu * v[j] : v[j];
        }
        p[j] -= lr * d;
    }
}
/* Compiled for each vector width (multiversion.h): square root and division are
 * correctly rounded at every width, so every path gives the same bits. */
QKV_MULTIVERSION(sgd_update, (float *restrict p, const float *restrict g, float *restrict v, size_t n, float lr,
                              float wd, float mu, int nesterov), (p, g, v, n, lr, wd, mu, nesterov))

/* One step's constants for Adam(W), shared by every parameter. */
typedef struct adam_step {
    float beta1, beta2, one_minus_beta1, one_minus_beta2, eps;
    float step_size;      /* lr / (1 - beta1^t) */
    float sqrt_bc2;       /* sqrt(1 - beta2^t) */
} adam_step;

/* Adam on n elements, as torch: keep = 1 - lr wd for AdamW's decoupled decay (1
 * otherwise), l2 = wd for Adam's coupled decay (0 otherwise).
 *   p *= keep; d = g + l2 p; m = b1 m + (1-b1) d; s = b2 s + (1-b2) d^2;
 *   p -= step_size m / (sqrt(s) / sqrt_bc2 + eps) */
static inline __attribute__((always_inline)) void adam_update_body(float *restrict p, const float *restrict g,
                                                                   float *restrict m, float *restrict s,
                                                                   size_t n, const adam_step *a, float keep,
                                                                   float l2) {
    const float beta1 = a->beta1, beta2 = a->beta2, c1 = a->one_minus_beta1, c2 = a->one_minus_beta2;
    const float step_size = a->step_size, sqrt_bc2 = a->sqrt_bc2, eps = a->eps;
    for (size_t j = 0; j < n; j++) {
        float pj = p[j] * keep;
        float d = g[j] + l2 * pj;
        float mj = beta1 * m[j] + c1 * d, sj = beta2 * s[j] + c2 * d * d;
        m[j] = mj;
        s[j] = sj;
        p[j] = pj - step_size * mj / (sqrtf(sj) / sqrt_bc2 + eps);
    }
}
QKV_MULTIVERSION(adam_update, (float *restrict p, const float *restrict g, float *restrict m, float *restrict s,
                               size_t n, const adam_step *a, float keep, float l2),
                 (p, g, m, s, n, a, keep, l2))

static adam_step adam_constants(const qkv_optimizer_config *c, long t, float lr) {
    double bc1 = 1.0 - pow((double)c->beta1, (double)t), bc2 = 1.0 - pow((double)c->beta2, (double)t);
    return (adam_step){
        .beta1 = c->beta1, .beta2 = c->beta2,
        .one_minus_beta1 = (float)(1.0 - (double)c->beta1),
        .one_minus_beta2 = (float)(1.0 - (double)c->beta2),
        .eps = c->eps, .step_size = (float)((double)lr / bc1), .sqrt_bc2 = (float)sqrt(bc2),
    };
}

size_t qkv_optimizer_step(qkv_optimizer *opt, const qkv_params *params, float lr) {
    const qkv_optimizer_config *c = &opt->config;
    const char *kind = qkv_opt_kind_name(c->kind);
    QKV_CHECK(params->n == opt->n_params, "%s: optimizer made for %d parameters, stepped with %d", kind,
              opt->n_params, params->n);
    check_non_negative(kind, "lr", lr);
    opt->step++;
    adam_step a = c->kind == QKV_OPT_SGD ? (adam_step){0} : adam_constants(c, opt->step, lr);
    /* One parallel pass over the model's pieces (params.h): every element's update
     * is independent, so any thread may take any piece. */
    int n_pieces;
    qkv_param_piece *pieces = qkv_params_pieces(params, UPDATE_PIECE, &n_pieces);
    size_t total = qkv_params_count(params), bad = 0;
    QKV_FOR(QKV_PARALLEL(total * (c->kind == QKV_OPT_SGD ? SGD_WORK : ADAM_WORK)), schedule(dynamic, 1) reduction(+ : bad),
            (int k = 0; k < n_pieces; k++), {
        const qkv_param_piece *q = &pieces[k];
        int i = q->param;
        qkv_tensor *p = params->items[i];
        size_t at = q->begin, n = q->end - q->begin;
        float wd = opt->decays[i] ? c->weight_decay : 0.0f;
        float *slot0 = opt->n_slots > 0 ? opt->state[i] + at : NULL;
        float *second = c->kind == QKV_OPT_SGD ? NULL : opt->state[params->n + i] + at;
        if (c->kind == QKV_OPT_SGD) {
            sgd_update(p->data + at, p->grad + at, slot0, n, lr, wd, c->momentum, c->nesterov);
        } else {
            int decoupled = c->kind == QKV_OPT_ADAMW;
            float keep = decoupled ? (float)(1.0 - (double)lr * wd) : 1.0f;
            adam_update(p->data + at, p->grad + at, slot0, second, n, &a, keep, decoupled ? 0.0f : wd);
        }
        /* the piece's new values, still in cache: the trainer's check needs no pass of its own */
        bad += qkv_count_nonfinite(p->data + at, n) + (slot0 ? qkv_count_nonfinite(slot0, n) : 0) +
               (second ? qkv_count_nonfinite(second, n) : 0);
    });
    free(pieces);
    return bad;
}
