/* test_optim.c — optimizers, gradient clipping and learning-rate schedules.
 *
 * Against PyTorch: tests/make_optim_reference.py runs 5 steps of torch.optim.SGD
 * (momentum, Nesterov, weight decay), Adam (with and without L2) and AdamW on a
 * weight [4,5] and a bias [4] with fixed gradients, clip_grad_norm_ and torch's
 * schedulers, and writes ref/optim_*.npy (paths relative to tests/, where
 * `make test` runs). The configs in the tables below must match the script's.
 * Here the parameters after every step must agree with torch to
 *     |qkv - torch| <= 1e-6 * max(1, |torch|).
 * By hand: one SGD and one Adam step, AdamW's decoupled decay, clipping,
 * schedule values, the weight-decay rule, bad configs, and thread independence.
 */
#include "core/kernels/omp_shim.h"
#include <stdio.h>
#include <stdlib.h>

#include "tests/test_util.h"

#define REF_TOL 1e-6
#define REF_STEPS 5

/* ref/optim_<name>_<suffix>.npy; fails the test if missing or malformed. */
static qkv_tensor *load_ref(const char *name, const char *suffix) {
    char path[256];
    snprintf(path, sizeof path, "ref/optim_%s_%s.npy", name, suffix);
    qkv_tensor *t = qkv_npy_load(path, 0);
    ck_assert_msg(t != NULL, "%s (regenerate with make_optim_reference.py)", qkv_last_error());
    return t;
}

/* Requires |got - want| <= tol * max(1, |want|) elementwise, naming the worst. */
static void expect_close(const char *what, const float *got, const float *want, size_t n, double tol) {
    double worst = 0;
    size_t worst_i = 0;
    for (size_t i = 0; i < n; i++) {
        double err = fabs((double)got[i] - want[i]) / fmax(1.0, fabs(want[i]));
        if (!(err <= worst)) { worst = err; worst_i = i; } /* NaN counts as worst */
    }
    ck_assert_msg(worst <= tol, "%s[%zu]: qkv %.9g, torch %.9g (error %.3g > %g)", what, worst_i,
                  got[worst_i], want[worst_i], worst, tol);
}

static double grad_norm(const qkv_params *params) {
    double total = 0;
    for (int i = 0; i < params->n; i++)
        for (size_t j = 0; j < params->items[i]->size; j++)
            total += (double)params->items[i]->grad[j] * params->items[i]->grad[j];
    return sqrt(total);
}

/* ---- against torch -------------------------------------------------------------- */

typedef struct optim_ref_case {
    const char *name;
    qkv_optimizer_config config;   /* lr is the base; ref/..._lr.npy gives each step's */
} optim_ref_case;

static const optim_ref_case optim_ref_cases[] = {
    /* torch decays the bias too in the SGD cases */
    {"sgd_momentum", {.kind = QKV_OPT_SGD, .lr = 0.1f, .momentum = 0.9f, .weight_decay = 0.01f,
                      .decay_all = 1}},
    {"sgd_nesterov", {.kind = QKV_OPT_SGD, .lr = 0.1f, .momentum = 0.9f, .nesterov = 1, .weight_decay = 0.01f,
                      .decay_all = 1}},
    {"adam", {.kind = QKV_OPT_ADAM, .lr = 0.01f}},
    /* the bias is excluded from decay here and in torch (its group has weight_decay 0) */
    {"adam_l2", {.kind = QKV_OPT_ADAM, .lr = 0.01f, .weight_decay = 0.01f}},
    {"adamw", {.kind = QKV_OPT_ADAMW, .lr = 0.01f, .beta1 = 0.9f, .beta2 = 0.95f, .weight_decay = 0.1f}},
};
#define N_OPTIM_REF_CASES ((int)(sizeof optim_ref_cases / sizeof optim_ref_cases[0]))

START_TEST(optimizers_match_torch) {
    const optim_ref_case *c = &optim_ref_cases[_i];
    qkv_tensor *w0 = load_ref(c->name, "w0"), *b0 = load_ref(c->name, "b0");
    qkv_tensor *gw = load_ref(c->name, "gw"), *gb = load_ref(c->name, "gb"), *lr = load_ref(c->name, "lr");
    qkv_tensor *w_ref = load_ref(c->name, "w"), *b_ref = load_ref(c->name, "b");
    ck_assert_int_eq(lr->size, REF_STEPS);
    qkv_params params = {0};
    qkv_tensor *w = qkv_params_new(&params, "fc.weight", w0->ndim, w0->shape);
    qkv_tensor *b = qkv_params_new(&params, "fc.bias", b0->ndim, b0->shape);
    ck_assert_int_eq(gw->size, REF_STEPS * w->size);
    ck_assert_int_eq(w_ref->size, REF_STEPS * w->size);
    ck_assert_int_eq(gb->size, REF_STEPS * b->size);
    ck_assert_int_eq(b_ref->size, REF_STEPS * b->size);
    qkv_tensor_copy_from(w, w0->data);
    qkv_tensor_copy_from(b, b0->data);
    qkv_optimizer opt;
    qkv_optimizer_init(&opt, &c->config, &params);
    for (int t = 0; t < REF_STEPS; t++) {
        memcpy(w->grad, gw->data + t * w->size, w->size * sizeof(float));
        memcpy(b->grad, gb->data + t * b->size, b->size * sizeof(float));
        qkv_optimizer_step(&opt, &params, lr->data[t]);
        char what[64];
        snprintf(what, sizeof what, "%s step %d weight", c->name, t + 1);
        expect_close(what, w->data, w_ref->data + t * w->size, w->size, REF_TOL);
        snprintf(what, sizeof what, "%s step %d bias", c->name, t + 1);
        expect_close(what, b->data, b_ref->data + t * b->size, b->size, REF_TOL);
    }
    ck_assert_int_eq(opt.step, REF_STEPS);
    qkv_optimizer_free(&opt);
    qkv_params_free(&params);
    qkv_tensor *refs[] = {w0, b0, gw, gb, lr, w_ref, b_ref};
    for (size_t k = 0; k < sizeof refs / sizeof refs[0]; k++) qkv_tensor_free(refs[k]);
}
END_TEST

/* torch's clip multiplies by max_norm / (norm + 1e-6); qkv by max_norm / norm: for
 * the clipped case (norm ~13) the two differ by ~1e-7, well inside REF_TOL. */
static const char *const clip_ref_cases[] = {"clip_big", "clip_small"};

START_TEST(clip_matches_torch) {
    const char *name = clip_ref_cases[_i];
    qkv_tensor *gw = load_ref(name, "gw"), *gb = load_ref(name, "gb");
    qkv_tensor *gw_out = load_ref(name, "gw_out"), *gb_out = load_ref(name, "gb_out");
    qkv_tensor *norm = load_ref(name, "norm");
    qkv_params params = {0};
    qkv_tensor *w = qkv_params_new(&params, "fc.weight", gw->ndim, gw->shape);
    qkv_tensor *b = qkv_params_new(&params, "fc.bias", gb->ndim, gb->shape);
    memcpy(w->grad, gw->data, w->size * sizeof(float));
    memcpy(b->grad, gb->data, b->size * sizeof(float));
    double before = qkv_clip_grad_norm(&params, 1.0);
    ck_assert_msg(fabs(before - norm->data[0]) <= REF_TOL * norm->data[0], "%s: norm %.9g, torch %.9g", name,
                  before, norm->data[0]);
    expect_close(name, w->grad, gw_out->data, w->size, REF_TOL);
    expect_close(name, b->grad, gb_out->data, b->size, REF_TOL);
    qkv_params_free(&params);
    qkv_tensor *refs[] = {gw, gb, gw_out, gb_out, norm};
    for (size_t k = 0; k < sizeof refs / sizeof refs[0]; k++) qkv_tensor_free(refs[k]);
}
END_TEST

START_TEST(schedules_match_torch) {
    const qkv_schedule cosine = {.kind = QKV_SCHED_COSINE, .warmup = 4, .total = 12, .min_factor = 0.1f};
    const qkv_schedule step = {.kind = QKV_SCHED_STEP, .step_size = 3, .gamma = 0.5f};
    const struct { const char *name; const qkv_schedule *schedule; } cases[] = {
        {"cosine", &cosine}, {"step", &step}};
    for (int k = 0; k < 2; k++) {
        qkv_tensor *ref = load_ref("schedule", cases[k].name);
        float got[64];
        ck_assert_uint_le(ref->size, 64);
        for (size_t s = 0; s < ref->size; s++) got[s] = qkv_schedule_factor(cases[k].schedule, (long)s);
        expect_close(cases[k].name, got, ref->data, ref->size, REF_TOL);
        qkv_tensor_free(ref);
    }
}
END_TEST

/* ---- by hand -------------------------------------------------------------------- */

START_TEST(sgd_step_by_hand) {
    qkv_params params = {0};
    qkv_tensor *p = qkv_params_new(&params, "p", 1, (int[]){2});
    qkv_tensor_copy_from(p, (float[]){1.0f, -2.0f});
    qkv_optimizer opt;
    qkv_optimizer_init(&opt, &(qkv_optimizer_config){.kind = QKV_OPT_SGD, .lr = 0.1f, .momentum = 0.9f},
                       &params);
    ck_assert_int_eq(opt.n_slots, 1);
    /* step 1: v = g = (1, 2); p = (1 - 0.1, -2 - 0.2) */
    p->grad[0] = 1.0f; p->grad[1] = 2.0f;
    qkv_optimizer_step(&opt, &params, 0.1f);
    ck_assert_float_eq_tol(p->data[0], 0.9f, 1e-7f);
    ck_assert_float_eq_tol(p->data[1], -2.2f, 1e-6f);
    /* step 2: v = 0.9 * (1, 2) + (1, 2) = (1.9, 3.8) */
    qkv_optimizer_step(&opt, &params, 0.1f);
    ck_assert_float_eq_tol(p->data[0], 0.9f - 0.19f, 1e-6f);
    ck_assert_float_eq_tol(p->data[1], -2.2f - 0.38f, 1e-6f);
    qkv_optimizer_free(&opt);
    qkv_params_free(&params);
}
END_TEST

START_TEST(sgd_nesterov_with_weight_decay_by_hand) {
    qkv_params params = {0};
    qkv_tensor *p = qkv_params_new(&params, "w", 2, (int[]){1, 1}); /* 2-D: decays */
    p->data[0] = 1.0f;
    qkv_optimizer opt;
    qkv_optimizer_init(&opt, &(qkv_optimizer_config){.kind = QKV_OPT_SGD, .lr = 0.1f, .momentum = 0.5f,
                                                     .nesterov = 1, .weight_decay = 0.1f}, &params);
    /* d = 0.5 + 0.1 * 1 = 0.6; v = 0.6; p = 1 - 0.1 (0.6 + 0.5 * 0.6) = 0.91 */
    p->grad[0] = 0.5f;
    qkv_optimizer_step(&opt, &params, 0.1f);
    ck_assert_float_eq_tol(p->data[0], 0.91f, 1e-6f);
    /* d = 0.5 + 0.091 = 0.591; v = 0.3 + 0.591 = 0.891; p = 0.91 - 0.1 (0.591 + 0.4455) */
    qkv_optimizer_step(&opt, &params, 0.1f);
    ck_assert_float_eq_tol(p->data[0], 0.80635f, 1e-6f);
    ck_assert_float_eq_tol(opt.state[0][0], 0.891f, 1e-6f);
    qkv_optimizer_free(&opt);
    qkv_params_free(&params);
}
END_TEST

START_TEST(adam_step_by_hand) {
    qkv_params params = {0};
    qkv_tensor *p = qkv_params_new(&params, "p", 1, (int[]){2});
    qkv_tensor_copy_from(p, (float[]){1.0f, -1.0f});
    qkv_optimizer opt;
    qkv_optimizer_init(&opt, &(qkv_optimizer_config){.kind = QKV_OPT_ADAM, .lr = 0.1f}, &params);
    ck_assert_float_eq(opt.config.beta1, 0.9f); /* 0 means the defaults */
    ck_assert_float_eq(opt.config.beta2, 0.999f);
    ck_assert_float_eq(opt.config.eps, 1e-8f);
    ck_assert_int_eq(opt.n_slots, 2);
    /* step 1: m = 0.1 g, s = 0.001 g^2; after bias correction m^ = g, s^ = g^2, so
     * p moves by lr g / (|g| + eps) = lr sign(g): (0.9, -0.9) */
    p->grad[0] = 0.5f; p->grad[1] = -2.0f;
    qkv_optimizer_step(&opt, &params, 0.1f);
    ck_assert_float_eq_tol(p->data[0], 0.9f, 1e-7f);
    ck_assert_float_eq_tol(p->data[1], -0.9f, 1e-7f);
    /* m = (1 - b1) g, s = (1 - b2) g^2, where 1 - 0.999f is 0.00099998713 in float */
    ck_assert_float_eq_tol(opt.state[0][0], (1.0f - 0.9f) * 0.5f, 1e-9f);
    ck_assert_float_eq_tol(opt.state[1][1], (1.0f - 0.999f) * 4.0f, 1e-10f);
    /* step 2, g = (1, 0): m = (0.145, -0.18), s = (0.00124975, 0.003996),
     * m^ = m / 0.19, s^ = s / 0.001999: p = (0.9 - 0.1 * 0.7631579 / 0.7906884,
     * -0.9 + 0.1 * 0.9473684 / 1.4138593) = (0.8034818, -0.8329942) */
    p->grad[0] = 1.0f; p->grad[1] = 0.0f;
    qkv_optimizer_step(&opt, &params, 0.1f);
    ck_assert_float_eq_tol(p->data[0], 0.8034818f, 1e-6f);
    ck_assert_float_eq_tol(p->data[1], -0.8329942f, 1e-6f);
    qkv_optimizer_free(&opt);
    qkv_params_free(&params);
}
END_TEST

START_TEST(adamw_decay_is_decoupled_and_skips_biases) {
    for (int decay_all = 0; decay_all <= 1; decay_all++) {
        qkv_params params = {0};
        qkv_tensor *w = qkv_params_new(&params, "fc.weight", 2, (int[]){1, 2});
        qkv_tensor *b = qkv_params_new(&params, "fc.bias", 1, (int[]){2});
        qkv_tensor_fill(w, 2.0f);
        qkv_tensor_fill(b, 2.0f);
        qkv_optimizer opt;
        qkv_optimizer_config config = {.kind = QKV_OPT_ADAMW, .lr = 0.1f, .weight_decay = 0.1f,
                                       .decay_all = decay_all};
        qkv_optimizer_init(&opt, &config, &params);
        /* zero gradient: the Adam part is 0 / (0 + eps) = 0, so only p *= 1 - lr wd */
        qkv_optimizer_step(&opt, &params, 0.1f);
        for (int j = 0; j < 2; j++) {
            ck_assert_float_eq_tol(w->data[j], 1.98f, 1e-6f);
            ck_assert_float_eq(b->data[j], decay_all ? w->data[j] : 2.0f);
        }
        qkv_optimizer_free(&opt);
        qkv_params_free(&params);
    }
}
END_TEST

/* Two parameters (a weight and a bias) filled with normal values from seed. */
static void random_params(qkv_params *params, int rows, int cols, uint64_t seed) {
    qkv_rng rng = qkv_rng_make(seed);
    qkv_tensor *w = qkv_params_new(params, "fc.weight", 2, (int[]){rows, cols});
    qkv_tensor *b = qkv_params_new(params, "fc.bias", 1, (int[]){rows});
    qkv_fill_normal(w->data, w->size, &rng, 0.0f, 1.0f);
    qkv_fill_normal(b->data, b->size, &rng, 0.0f, 1.0f);
}

static void random_grads(const qkv_params *params, qkv_rng *rng, float std) {
    for (int i = 0; i < params->n; i++)
        qkv_fill_normal(params->items[i]->grad, params->items[i]->size, rng, 0.0f, std);
}

START_TEST(adamw_with_lr_zero_leaves_params_bitwise) {
    qkv_params params = {0};
    random_params(&params, 7, 9, 11);
    float before_w[63], before_b[7];
    memcpy(before_w, params.items[0]->data, sizeof before_w);
    memcpy(before_b, params.items[1]->data, sizeof before_b);
    qkv_optimizer opt;
    qkv_optimizer_init(&opt, &(qkv_optimizer_config){.kind = QKV_OPT_ADAMW, .lr = 0.01f, .weight_decay = 0.1f,
                                                     .decay_all = 1}, &params);
    qkv_rng rng = qkv_rng_make(12);
    for (int t = 0; t < 3; t++) {
        random_grads(&params, &rng, 1.0f);
        qkv_optimizer_step(&opt, &params, 0.0f);
    }
    ck_assert_int_eq(memcmp(before_w, params.items[0]->data, sizeof before_w), 0);
    ck_assert_int_eq(memcmp(before_b, params.items[1]->data, sizeof before_b), 0);
    ck_assert_float_ne(opt.state[0][0], 0.0f); /* the moments did move */
    qkv_optimizer_free(&opt);
    qkv_params_free(&params);
}
END_TEST

/* The step's return: the NaN/Inf values the parameters and the state hold after
 * it, counted as the update writes them, for each kind, against a count of the
 * whole state after the step; 0 for finite gradients. */
static size_t count_state(const qkv_optimizer *opt, const qkv_params *params) {
    size_t bad = 0;
    for (int i = 0; i < params->n; i++) {
        bad += qkv_count_nonfinite(params->items[i]->data, params->items[i]->size);
        for (int slot = 0; slot < opt->n_slots; slot++)
            bad += qkv_count_nonfinite(opt->state[slot * opt->n_params + i], params->items[i]->size);
    }
    return bad;
}

START_TEST(step_counts_the_nonfinite_values_it_writes) {
    const qkv_optimizer_config configs[] = {
        {.kind = QKV_OPT_SGD, .lr = 0.1f},
        {.kind = QKV_OPT_SGD, .lr = 0.1f, .momentum = 0.9f},
        {.kind = QKV_OPT_ADAM, .lr = 0.01f},
        {.kind = QKV_OPT_ADAMW, .lr = 0.01f, .weight_decay = 0.1f},
    };
    const size_t per_bad_gradient[] = {1, 2, 3, 3}; /* p, and each state slot */
    for (int c = 0; c < 4; c++) {
        qkv_params params = {0};
        random_params(&params, 7, 9, 11 + c);
        qkv_optimizer opt;
        qkv_optimizer_init(&opt, &configs[c], &params);
        qkv_rng rng = qkv_rng_make(40 + c);
        random_grads(&params, &rng, 1.0f);
        ck_assert_uint_eq(qkv_optimizer_step(&opt, &params, configs[c].lr), 0);
        random_grads(&params, &rng, 1.0f);
        params.items[0]->grad[5] = NAN;
        params.items[1]->grad[2] = INFINITY;
        size_t bad = qkv_optimizer_step(&opt, &params, configs[c].lr);
        ck_assert_uint_eq(bad, 2 * per_bad_gradient[c]);
        ck_assert_uint_eq(bad, count_state(&opt, &params));
        qkv_optimizer_free(&opt);
        qkv_params_free(&params);
    }
}
END_TEST

START_TEST(clip_rescales_to_exactly_the_threshold) {
    qkv_params params = {0};
    qkv_tensor *p = qkv_params_new(&params, "p", 1, (int[]){2});
    p->grad[0] = 3.0f; p->grad[1] = -4.0f;
    ck_assert_double_eq(qkv_clip_grad_norm(&params, 1.0), 5.0);
    ck_assert_float_eq_tol(p->grad[0], 0.6f, 1e-7f);
    ck_assert_float_eq_tol(p->grad[1], -0.8f, 1e-7f);
    qkv_params_free(&params);

    /* many chunks, several parameters */
    random_params(&params, 301, 37, 5);
    qkv_rng rng = qkv_rng_make(6);
    random_grads(&params, &rng, 1.0f);
    double norm = grad_norm(&params);
    ck_assert_double_eq_tol(qkv_clip_grad_norm(&params, 0.5), norm, 1e-9 * norm);
    ck_assert_double_eq_tol(grad_norm(&params), 0.5, 0.5e-6);
    qkv_params_free(&params);
}
END_TEST

START_TEST(clip_leaves_small_and_nonfinite_gradients_untouched) {
    qkv_params params = {0};
    random_params(&params, 50, 20, 7);
    qkv_rng rng = qkv_rng_make(8);
    random_grads(&params, &rng, 0.01f);
    float before[1000];
    memcpy(before, params.items[0]->grad, sizeof before);
    double norm = grad_norm(&params);
    ck_assert_double_eq_tol(qkv_clip_grad_norm(&params, 10.0), norm, 1e-9 * norm);
    ck_assert_double_eq_tol(qkv_clip_grad_norm(&params, norm), norm, 1e-9 * norm); /* at the threshold */
    ck_assert_int_eq(memcmp(before, params.items[0]->grad, sizeof before), 0);
    params.items[1]->grad[3] = INFINITY;
    ck_assert(isinf(qkv_clip_grad_norm(&params, 1.0)));
    ck_assert_int_eq(memcmp(before, params.items[0]->grad, sizeof before), 0);
    qkv_params_free(&params);
}
END_TEST

START_TEST(weight_decay_rule_excludes_biases_norms_and_tables) {
    qkv_params params = {0};
    const struct { const char *name; int ndim; int shape[2]; int decays; } cases[] = {
        {"fc.weight", 2, {3, 2}, 1},        {"enc.0.attn.wq", 2, {4, 4}, 1},
        {"fc.bias", 1, {3}, 0},             {"enc.0.ln1.weight", 1, {4}, 0},
        {"pos.table", 2, {8, 4}, 0},        {"tok_embed.weight", 2, {10, 4}, 0},
        {"embed", 2, {10, 4}, 0},           {"fc.table_proj", 2, {2, 2}, 1},
        {"scale", 0, {0}, 0},
    };
    const int n = (int)(sizeof cases / sizeof cases[0]);
    for (int k = 0; k < n; k++) {
        qkv_tensor *t = qkv_params_new(&params, cases[k].name, cases[k].ndim, cases[k].shape);
        ck_assert_msg(qkv_param_decays(t) == cases[k].decays, "%s: decays %d", cases[k].name,
                      qkv_param_decays(t));
    }
    for (int decay_all = 0; decay_all <= 1; decay_all++) {
        qkv_optimizer opt;
        qkv_optimizer_config config = {.kind = QKV_OPT_ADAMW, .lr = 0.1f, .weight_decay = 0.1f,
                                       .decay_all = decay_all};
        qkv_optimizer_init(&opt, &config, &params);
        for (int k = 0; k < n; k++) ck_assert_int_eq(opt.decays[k], decay_all || cases[k].decays);
        qkv_optimizer_free(&opt);
    }
    qkv_params_free(&params);
}
END_TEST

START_TEST(names_and_state_slots) {
    for (int k = QKV_OPT_SGD; k <= QKV_OPT_ADAMW; k++)
        ck_assert_int_eq(qkv_opt_kind_parse(qkv_opt_kind_name((qkv_opt_kind)k)), k);
    ck_assert_str_eq(qkv_opt_kind_name(QKV_OPT_ADAMW), "adamw");
    ck_assert_int_eq(qkv_opt_kind_parse("Adam"), -1);
    ck_assert_int_eq(qkv_opt_kind_parse(""), -1);
    ck_assert_int_eq(qkv_schedule_kind_parse("constant"), QKV_SCHED_CONSTANT);
    ck_assert_int_eq(qkv_schedule_kind_parse("cosine"), QKV_SCHED_COSINE);
    ck_assert_int_eq(qkv_schedule_kind_parse("step"), QKV_SCHED_STEP);
    ck_assert_int_eq(qkv_schedule_kind_parse("linear"), -1);

    qkv_params params = {0};
    random_params(&params, 3, 2, 1);
    qkv_optimizer opt;
    qkv_optimizer_init(&opt, &(qkv_optimizer_config){.kind = QKV_OPT_SGD, .lr = 0.1f}, &params);
    ck_assert_int_eq(opt.n_slots, 0);
    EXPECT_FATAL(qkv_optimizer_slot_name(&opt, 0), "slot 0");
    qkv_optimizer_free(&opt);
    qkv_optimizer_init(&opt, &(qkv_optimizer_config){.kind = QKV_OPT_SGD, .lr = 0.1f, .momentum = 0.9f},
                       &params);
    ck_assert_str_eq(qkv_optimizer_slot_name(&opt, 0), "v");
    qkv_optimizer_free(&opt);
    qkv_optimizer_init(&opt, &(qkv_optimizer_config){.kind = QKV_OPT_ADAM, .lr = 0.1f}, &params);
    ck_assert_str_eq(qkv_optimizer_slot_name(&opt, 0), "m");
    ck_assert_str_eq(qkv_optimizer_slot_name(&opt, 1), "s");
    EXPECT_FATAL(qkv_optimizer_slot_name(&opt, 2), "slot 2");
    for (int k = 0; k < opt.n_slots * opt.n_params; k++) /* zero-filled, sized per parameter */
        for (size_t j = 0; j < params.items[k % 2]->size; j++) ck_assert_float_eq(opt.state[k][j], 0.0f);
    qkv_optimizer_free(&opt);
    qkv_params_free(&params);
}
END_TEST

START_TEST(schedule_values_by_hand) {
    const qkv_schedule constant = {.kind = QKV_SCHED_CONSTANT};
    ck_assert_float_eq(qkv_schedule_factor(&constant, 0), 1.0f);
    ck_assert_float_eq(qkv_schedule_factor(&constant, 1000000), 1.0f);

    const qkv_schedule cosine = {.kind = QKV_SCHED_COSINE, .warmup = 10, .total = 110, .min_factor = 0.1f};
    ck_assert_float_eq_tol(qkv_schedule_factor(&cosine, 0), 0.1f, 1e-7f);   /* warmup start: 1/10 */
    ck_assert_float_eq_tol(qkv_schedule_factor(&cosine, 4), 0.5f, 1e-7f);
    ck_assert_float_eq(qkv_schedule_factor(&cosine, 9), 1.0f);             /* warmup end */
    ck_assert_float_eq(qkv_schedule_factor(&cosine, 10), 1.0f);            /* cosine start */
    ck_assert_float_eq_tol(qkv_schedule_factor(&cosine, 60), 0.55f, 1e-7f); /* midpoint: 0.1 + 0.9 / 2 */
    ck_assert_float_eq_tol(qkv_schedule_factor(&cosine, 110), 0.1f, 1e-7f); /* end */
    ck_assert_float_eq_tol(qkv_schedule_factor(&cosine, 5000), 0.1f, 1e-7f);/* after */
    for (long s = 10; s < 110; s++) /* decreasing through the cosine */
        ck_assert_float_ge(qkv_schedule_factor(&cosine, s), qkv_schedule_factor(&cosine, s + 1));

    const qkv_schedule no_warmup = {.kind = QKV_SCHED_COSINE, .total = 4};
    ck_assert_float_eq(qkv_schedule_factor(&no_warmup, 0), 1.0f);
    ck_assert_float_eq_tol(qkv_schedule_factor(&no_warmup, 2), 0.5f, 1e-7f);
    ck_assert_float_eq(qkv_schedule_factor(&no_warmup, 4), 0.0f);

    const qkv_schedule step = {.kind = QKV_SCHED_STEP, .step_size = 30, .gamma = 0.1f};
    ck_assert_float_eq(qkv_schedule_factor(&step, 0), 1.0f);
    ck_assert_float_eq(qkv_schedule_factor(&step, 29), 1.0f);
    ck_assert_float_eq_tol(qkv_schedule_factor(&step, 30), 0.1f, 1e-8f);
    ck_assert_float_eq_tol(qkv_schedule_factor(&step, 95), 0.001f, 1e-10f);
}
END_TEST

/* ---- errors --------------------------------------------------------------------- */

START_TEST(bad_configs_stop_naming_the_option) {
    qkv_params params = {0};
    random_params(&params, 2, 2, 3);
    qkv_optimizer opt;
#define EXPECT_BAD_CONFIG(substring, ...) \
    EXPECT_FATAL(qkv_optimizer_init(&opt, &(qkv_optimizer_config){__VA_ARGS__}, &params), substring)
    EXPECT_BAD_CONFIG("sgd: nesterov needs momentum > 0", .kind = QKV_OPT_SGD, .lr = 0.1f, .nesterov = 1);
    EXPECT_BAD_CONFIG("sgd: lr = -0.1", .kind = QKV_OPT_SGD, .lr = -0.1f);
    EXPECT_BAD_CONFIG("adam: lr = nan", .kind = QKV_OPT_ADAM, .lr = NAN);
    EXPECT_BAD_CONFIG("sgd: momentum = 1", .kind = QKV_OPT_SGD, .lr = 0.1f, .momentum = 1.0f);
    EXPECT_BAD_CONFIG("sgd: momentum = -0.5", .kind = QKV_OPT_SGD, .lr = 0.1f, .momentum = -0.5f);
    EXPECT_BAD_CONFIG("adamw: weight_decay = -0.01", .kind = QKV_OPT_ADAMW, .lr = 0.1f,
                      .weight_decay = -0.01f);
    EXPECT_BAD_CONFIG("adam: beta1 = 1", .kind = QKV_OPT_ADAM, .lr = 0.1f, .beta1 = 1.0f);
    EXPECT_BAD_CONFIG("adam: beta1 = 1.5", .kind = QKV_OPT_ADAM, .lr = 0.1f, .beta1 = 1.5f);
    EXPECT_BAD_CONFIG("adamw: beta2 = -0.9", .kind = QKV_OPT_ADAMW, .lr = 0.1f, .beta2 = -0.9f);
    EXPECT_BAD_CONFIG("adam: eps = -1e-08", .kind = QKV_OPT_ADAM, .lr = 0.1f, .eps = -1e-8f);
    EXPECT_BAD_CONFIG("adam: nesterov applies to SGD only", .kind = QKV_OPT_ADAM, .lr = 0.1f, .nesterov = 1);
    EXPECT_BAD_CONFIG("optimizer: unknown kind 7", .kind = (qkv_opt_kind)7, .lr = 0.1f);
#undef EXPECT_BAD_CONFIG

    qkv_optimizer_init(&opt, &(qkv_optimizer_config){.kind = QKV_OPT_ADAM, .lr = 0.1f}, &params);
    EXPECT_FATAL(qkv_optimizer_step(&opt, &params, -1.0f), "adam: lr = -1");
    qkv_params other = {0};
    qkv_params_new(&other, "w", 1, (int[]){2});
    EXPECT_FATAL(qkv_optimizer_step(&opt, &other, 0.1f),
                 "adam: optimizer made for 2 parameters, stepped with 1");
    ck_assert_int_eq(opt.step, 0); /* nothing happened */
    qkv_optimizer_free(&opt);
    qkv_params_free(&other);

    EXPECT_FATAL(qkv_clip_grad_norm(&params, 0.0), "clip_grad_norm: max_norm = 0");
    EXPECT_FATAL(qkv_clip_grad_norm(&params, -1.0), "clip_grad_norm: max_norm = -1");
    qkv_params_free(&params);
}
END_TEST

START_TEST(bad_schedules_stop_naming_the_field) {
    const qkv_schedule backwards = {.kind = QKV_SCHED_COSINE, .warmup = 10, .total = 10};
    EXPECT_FATAL(qkv_schedule_factor(&backwards, 0), "schedule cosine: total = 10 must exceed warmup = 10");
    const qkv_schedule negative_warmup = {.kind = QKV_SCHED_COSINE, .warmup = -1, .total = 10};
    EXPECT_FATAL(qkv_schedule_factor(&negative_warmup, 0), "warmup = -1");
    const qkv_schedule bad_min = {.kind = QKV_SCHED_COSINE, .total = 10, .min_factor = 2.0f};
    EXPECT_FATAL(qkv_schedule_factor(&bad_min, 0), "min_factor = 2");
    const qkv_schedule zero_step = {.kind = QKV_SCHED_STEP, .gamma = 0.5f};
    EXPECT_FATAL(qkv_schedule_factor(&zero_step, 0), "schedule step: step_size = 0");
    const qkv_schedule zero_gamma = {.kind = QKV_SCHED_STEP, .step_size = 5};
    EXPECT_FATAL(qkv_schedule_factor(&zero_gamma, 0), "schedule step: gamma = 0");
    const qkv_schedule constant = {.kind = QKV_SCHED_CONSTANT};
    EXPECT_FATAL(qkv_schedule_factor(&constant, -1), "schedule: step -1");
    const qkv_schedule unknown = {.kind = (qkv_schedule_kind)9};
    EXPECT_FATAL(qkv_schedule_factor(&unknown, 0), "schedule: unknown kind 9");
}
END_TEST

/* ---- threads -------------------------------------------------------------------- */

/* 3 AdamW steps on a weight of 401 x 499 (above the parallel threshold, odd so the
 * threads' boundaries fall mid-vector), with `threads` threads; returns the weight. */
static float *adamw_steps(int threads) {
    int saved = qkv_threads();
    qkv_set_threads(threads);
    qkv_params params = {0};
    random_params(&params, 401, 499, 21);
    qkv_optimizer opt;
    qkv_optimizer_config config = {.kind = QKV_OPT_ADAMW, .lr = 0.01f, .weight_decay = 0.1f};
    qkv_optimizer_init(&opt, &config, &params);
    qkv_rng rng = qkv_rng_make(22);
    for (int t = 0; t < 3; t++) {
        random_grads(&params, &rng, 1.0f);
        qkv_optimizer_step(&opt, &params, 0.01f);
    }
    size_t n = params.items[0]->size;
    float *out = malloc(3 * n * sizeof(float)); /* weight, m, s */
    memcpy(out, params.items[0]->data, n * sizeof(float));
    memcpy(out + n, opt.state[0], n * sizeof(float));
    memcpy(out + 2 * n, opt.state[2], n * sizeof(float));
    qkv_optimizer_free(&opt);
    qkv_params_free(&params);
    qkv_set_threads(saved);
    return out;
}

START_TEST(adam_step_is_thread_independent) {
    float *one = adamw_steps(1), *two = adamw_steps(2);
    ck_assert_int_eq(memcmp(one, two, 3 * 401 * 499 * sizeof(float)), 0);
    free(one);
    free(two);
}
END_TEST

static double clip_norm_with(int threads, float *clipped_first) {
    int saved = qkv_threads();
    qkv_set_threads(threads);
    qkv_params params = {0};
    random_params(&params, 401, 499, 31);
    qkv_rng rng = qkv_rng_make(32);
    random_grads(&params, &rng, 1.0f);
    double norm = qkv_clip_grad_norm(&params, 1.0);
    *clipped_first = params.items[0]->grad[0];
    qkv_params_free(&params);
    qkv_set_threads(saved);
    return norm;
}

START_TEST(clip_norm_is_thread_independent) {
    float first1, first2;
    double one = clip_norm_with(1, &first1), two = clip_norm_with(2, &first2);
    ck_assert_int_eq(memcmp(&one, &two, sizeof one), 0);
    ck_assert_int_eq(memcmp(&first1, &first2, sizeof first1), 0);
    ck_assert_double_gt(one, 1.0);
}
END_TEST

Suite *suite_optim(void) {
    Suite *s = suite_create("optim");
    TCase *tc = tcase_create("optim");
    tcase_set_timeout(tc, 0);
    tcase_add_loop_test(tc, optimizers_match_torch, 0, N_OPTIM_REF_CASES);
    tcase_add_loop_test(tc, clip_matches_torch, 0, 2);
    tcase_add_test(tc, schedules_match_torch);
    tcase_add_test(tc, sgd_step_by_hand);
    tcase_add_test(tc, sgd_nesterov_with_weight_decay_by_hand);
    tcase_add_test(tc, adam_step_by_hand);
    tcase_add_test(tc, adamw_decay_is_decoupled_and_skips_biases);
    tcase_add_test(tc, adamw_with_lr_zero_leaves_params_bitwise);
    tcase_add_test(tc, step_counts_the_nonfinite_values_it_writes);
    tcase_add_test(tc, clip_rescales_to_exactly_the_threshold);
    tcase_add_test(tc, clip_leaves_small_and_nonfinite_gradients_untouched);
    tcase_add_test(tc, weight_decay_rule_excludes_biases_norms_and_tables);
    tcase_add_test(tc, names_and_state_slots);
    tcase_add_test(tc, schedule_values_by_hand);
    tcase_add_test(tc, bad_configs_stop_naming_the_option);
    tcase_add_test(tc, bad_schedules_stop_naming_the_field);
    tcase_add_test(tc, adam_step_is_thread_independent);
    tcase_add_test(tc, clip_norm_is_thread_independent);
    suite_add_tcase(s, tc);
    return s;
}
