/* test_sets.c — the set layers (sets.h) and set models (set_models.h): the MAB
 * formula against a plain double-precision reference (both residual
 * variants, with and without LN), permutation equivariance and invariance,
 * padding (a padded set gives the unpadded set's output, whatever the padded rows
 * hold), batches of sets of different sizes, parameter names and counts, errors,
 * and thread independence. Set QKV_VERBOSE=1 to print the measured errors. */
#include "tests/test_util.h"

#include <stdio.h>
#include <stdlib.h>

#define W 8   /* width of every block under test */

static void report(const char *what, const char *name, double err) {
    if (getenv("QKV_VERBOSE")) printf("sets: %-28s %-16s %.3g\n", what, name, err);
}

/* max |a - b| / max |b|, over n floats */
static double relative_error(const float *a, const float *b, size_t n) {
    double diff = 0, scale = 0;
    for (size_t i = 0; i < n; i++) {
        diff = larger(diff, fabs((double)a[i] - b[i]));
        scale = larger(scale, fabs((double)b[i]));
    }
    return diff / scale;
}

/* ---- every block and model as one "subject": x [B,N,d_in] (+ mask) -> out ---- */

enum subject_id {
    SAB, SAB_RAW_LN, ISAB, ISAB_RAW_LN, MAB_SHARED_QUERIES, PMA, PMA_LN, ATTN_POOL, POOL_SUM, POOL_MEAN,
    POOL_MAX, DEEPSETS_SUM, DEEPSETS_MEAN, DEEPSETS_MAX, MODEL_ISAB, MODEL_ISAB_RAW_LN, MODEL_SAB,
    MODEL_DEEPSETS_MAX, MODEL_DEEPSETS_MEAN, MODEL_DEEPSETS_SUM, MODEL_ATTNPOOL, N_SUBJECTS
};

static const char *const subject_names[N_SUBJECTS] = {
    "sab", "sab raw LN", "isab", "isab raw LN", "mab shared queries", "pma", "pma LN", "attn_pool",
    "pool sum", "pool mean", "pool max", "deepsets sum", "deepsets mean", "deepsets max", "model isab",
    "model isab raw LN", "model sab", "model deepsets-max", "model deepsets-mean", "model deepsets-sum",
    "model attnpool"};

typedef struct subject {
    enum subject_id id;
    int d_in, equivariant;   /* equivariant: out [B,N,W]; otherwise invariant */
    qkv_params params;
    qkv_tensor *queries;     /* MAB_SHARED_QUERIES: [3,W] */
    qkv_mab mab;
    qkv_sab sab;
    qkv_isab isab;
    qkv_pma pma;
    qkv_attn_pool attn_pool;
    qkv_deepsets deepsets;
    qkv_set_model model;
} subject;

static void init_model(subject *s, qkv_set_model_kind kind, int d_in, int raw_ln, qkv_rng *rng) {
    qkv_set_model_config c = {.kind = kind, .d_in = d_in, .width = W, .n_heads = 2, .n_outputs = 3,
                              .n_inducing = 3, .layer_norm = raw_ln, .residual = raw_ln};
    qkv_set_model_init(&s->model, &s->params, "model", &c, rng);
}

static subject *make_subject(enum subject_id id) {
    subject *s = calloc(1, sizeof *s);
    qkv_rng rng = qkv_rng_make(100 + (uint64_t)id);
    qkv_set_block_config plain = {.d = W, .n_heads = 2};
    qkv_set_block_config raw_ln = {.d = W, .n_heads = 2, .layer_norm = 1, .residual = QKV_MAB_RESIDUAL_RAW};
    qkv_deepsets_config ds = {.d_in = 3, .width = W, .d_out = 3};
    s->id = id;
    s->d_in = W;
    s->equivariant = id <= ISAB_RAW_LN;
    switch (id) {
    case SAB: s->d_in = 5; qkv_sab_init(&s->sab, &s->params, "sab", 5, &plain, &rng); break;
    case SAB_RAW_LN: qkv_sab_init(&s->sab, &s->params, "sab", W, &raw_ln, &rng); break;
    case ISAB: s->d_in = 3; qkv_isab_init(&s->isab, &s->params, "isab", 3, 4, &plain, &rng); break;
    case ISAB_RAW_LN: qkv_isab_init(&s->isab, &s->params, "isab", W, 2, &raw_ln, &rng); break;
    case MAB_SHARED_QUERIES:
        qkv_mab_init(&s->mab, &s->params, "mab", W, W, &plain, &rng);
        s->queries = qkv_params_new(&s->params, "queries", 2, (int[]){3, W});
        qkv_fill_normal(s->queries->data, s->queries->size, &rng, 0, 1);
        break;
    case PMA: qkv_pma_init(&s->pma, &s->params, "pma", 2, 1, &plain, &rng); break;
    case PMA_LN: qkv_pma_init(&s->pma, &s->params, "pma", 1, 0, &raw_ln, &rng); break;
    case ATTN_POOL: s->d_in = 5; qkv_attn_pool_init(&s->attn_pool, &s->params, "pool", 5, W, 2, &rng); break;
    case POOL_SUM: case POOL_MEAN: case POOL_MAX: break;
    case DEEPSETS_SUM: case DEEPSETS_MEAN: case DEEPSETS_MAX:
        s->d_in = 3;
        ds.pool = (qkv_set_pool)(id - DEEPSETS_SUM);
        qkv_deepsets_init(&s->deepsets, &s->params, "ds", &ds, &rng);
        break;
    case MODEL_ISAB: s->d_in = 3; init_model(s, QKV_SET_MODEL_ISAB, 3, 0, &rng); break;
    case MODEL_ISAB_RAW_LN: s->d_in = 3; init_model(s, QKV_SET_MODEL_ISAB, 3, 1, &rng); break;
    case MODEL_SAB: s->d_in = 3; init_model(s, QKV_SET_MODEL_SAB, 3, 0, &rng); break;
    case MODEL_DEEPSETS_MAX: case MODEL_DEEPSETS_MEAN: case MODEL_DEEPSETS_SUM: case MODEL_ATTNPOOL:
        s->d_in = 3;
        init_model(s, (qkv_set_model_kind)(QKV_SET_MODEL_DEEPSETS_MAX + (id - MODEL_DEEPSETS_MAX)), 3, 0, &rng);
        break;
    case N_SUBJECTS: break;
    }
    return s;
}

static void free_subject(subject *s) {
    qkv_params_free(&s->params);
    free(s);
}

static qkv_tensor *run_subject(qkv_tape *tape, const subject *s, qkv_tensor *x, const qkv_tensor *mask) {
    switch (s->id) {
    case SAB: case SAB_RAW_LN: return qkv_sab_forward(tape, &s->sab, x, mask);
    case ISAB: case ISAB_RAW_LN: return qkv_isab_forward(tape, &s->isab, x, mask);
    case MAB_SHARED_QUERIES: return qkv_mab_forward(tape, &s->mab, s->queries, x, mask);
    case PMA: case PMA_LN: return qkv_pma_forward(tape, &s->pma, x, mask);
    case ATTN_POOL: return qkv_attn_pool_forward(tape, &s->attn_pool, x, mask, NULL);
    case POOL_SUM: case POOL_MEAN: case POOL_MAX:
        return qkv_set_pool_forward(tape, x, mask, (qkv_set_pool)(s->id - POOL_SUM));
    case DEEPSETS_SUM: case DEEPSETS_MEAN: case DEEPSETS_MAX: return qkv_deepsets_forward(tape, &s->deepsets, x, mask);
    default: return qkv_set_model_forward(tape, &s->model, x, mask);
    }
}

/* Rows of x [B,N,d] reordered: out[b][i] = x[b][perm[i]]. */
static qkv_tensor *permute_rows(qkv_tape *tape, const qkv_tensor *x, const int *perm) {
    qkv_tensor *out = qkv_tape_tensor(tape, 3, x->shape);
    int n = x->shape[1], d = x->shape[2];
    for (int b = 0; b < x->shape[0]; b++)
        for (int i = 0; i < n; i++)
            memcpy(out->data + ((size_t)b * n + i) * d, x->data + ((size_t)b * n + perm[i]) * d, (size_t)d * sizeof(float));
    return out;
}

/* Row i of set b of y [B,N,d] (equivariant) or the whole output of set b. */
static const float *set_output(const qkv_tensor *y, int b, size_t *len) {
    *len = y->size / (size_t)y->shape[0];
    return y->data + (size_t)b * *len;
}

/* ---- gradients and the MAB formula -------------------------------------------- */

static double linear_at(const qkv_linear *l, const double *in, int o) {
    double s = l->bias ? l->bias->data[o] : 0.0;
    for (int i = 0; i < l->in; i++) s += (double)l->weight->data[(size_t)o * l->in + i] * in[i];
    return s;
}

static void layer_norm_row(double *h, int d) {
    double mean = 0, var = 0;
    for (int c = 0; c < d; c++) mean += h[c] / d;
    for (int c = 0; c < d; c++) var += (h[c] - mean) * (h[c] - mean) / d;
    for (int c = 0; c < d; c++) h[c] = (h[c] - mean) / sqrt(var + 1e-5);  /* gain 1, bias 0 at init */
}

/* MAB(x, y) for one set, in double, straight from the formulas in sets.h. */
static void reference_mab(const qkv_mab *mab, const float *x, int nq, const float *y, int nk, double *out) {
    int d = mab->cfg.d, heads = mab->cfg.n_heads, dh = d / heads;
    double scale = mab->cfg.scale > 0 ? mab->cfg.scale : 1.0 / sqrt(dh);
    double q[8][W], k[8][W], v[8][W], xi[W], yj[W];
    for (int j = 0; j < nk; j++) {
        for (int c = 0; c < mab->d_k; c++) yj[c] = y[j * mab->d_k + c];
        for (int c = 0; c < d; c++) k[j][c] = linear_at(&mab->fc_k, yj, c), v[j][c] = linear_at(&mab->fc_v, yj, c);
    }
    for (int i = 0; i < nq; i++) {
        for (int c = 0; c < mab->d_q; c++) xi[c] = x[i * mab->d_q + c];
        for (int c = 0; c < d; c++) q[i][c] = linear_at(&mab->fc_q, xi, c);
        double o[W] = {0}, h[W];
        for (int hd = 0; hd < heads; hd++) {
            double s[8], mx = -1e300, z = 0;
            for (int j = 0; j < nk; j++) {
                s[j] = 0;
                for (int c = hd * dh; c < (hd + 1) * dh; c++) s[j] += q[i][c] * k[j][c] * scale;
                mx = larger(mx, s[j]);
            }
            for (int j = 0; j < nk; j++) z += (s[j] = exp(s[j] - mx));
            for (int j = 0; j < nk; j++)
                for (int c = hd * dh; c < (hd + 1) * dh; c++) o[c] += s[j] / z * v[j][c];
        }
        for (int c = 0; c < d; c++)
            h[c] = mab->cfg.residual == QKV_MAB_RESIDUAL_RAW ? xi[c] + linear_at(&mab->wo, o, c) : q[i][c] + o[c];
        if (mab->cfg.layer_norm) layer_norm_row(h, d);
        for (int c = 0; c < d; c++) out[i * d + c] = h[c] + fmax(0.0, linear_at(&mab->fc_o.fc, h, c));
        if (mab->cfg.layer_norm) layer_norm_row(out + i * d, d);
    }
}

START_TEST(mab_matches_the_formula_for_both_residuals) {
    const qkv_set_block_config cfgs[] = {
        {.d = W, .n_heads = 2},
        {.d = W, .n_heads = 4, .layer_norm = 1},
        {.d = W, .n_heads = 2, .residual = QKV_MAB_RESIDUAL_RAW},
        {.d = W, .n_heads = 1, .residual = QKV_MAB_RESIDUAL_RAW, .layer_norm = 1},
        {.d = W, .n_heads = 2, .scale = 0.35355339f},  /* the authors' 1/sqrt(d) */
    };
    for (int t = 0; t < 5; t++) {
        qkv_params params = {0};
        qkv_rng rng = qkv_rng_make(7 + (uint64_t)t);
        qkv_mab mab;
        int d_q = cfgs[t].residual == QKV_MAB_RESIDUAL_RAW ? W : 3;
        qkv_mab_init(&mab, &params, "mab", d_q, 5, &cfgs[t], &rng);
        qkv_tape *tape = qkv_tape_create(1);
        qkv_tensor *x = random_tape_tensor(tape, 3, (int[]){1, 4, d_q}, 1), *y = random_tape_tensor(tape, 3, (int[]){1, 6, 5}, 2);
        qkv_tensor *out = qkv_mab_forward(tape, &mab, x, y, NULL);
        assert_shape(out, 3, (int[]){1, 4, W});
        double expected[4 * W];
        float expected_f[4 * W];
        reference_mab(&mab, x->data, 4, y->data, 6, expected);
        for (int i = 0; i < 4 * W; i++) expected_f[i] = (float)expected[i];
        assert_floats_close(out->data, expected_f, 4 * W, 1e-5, "mab vs reference");
        qkv_tape_free(tape);
        qkv_params_free(&params);
    }
}
END_TEST

START_TEST(masked_pooling_by_hand) {
    qkv_tape *tape = qkv_tape_create(1);
    /* two sets of 3 points of width 2; set 0 has points 0 and 2, set 1 none */
    const float xs[] = {1, -4, 100, 100, 3, -2, 5, 6, 7, 8, 9, 10};
    const float ms[] = {1, 0, 1, 0, 0, 0};
    qkv_tensor *x = qkv_tape_tensor(tape, 3, (int[]){2, 3, 2}), *mask = qkv_tape_tensor(tape, 2, (int[]){2, 3});
    qkv_tensor_copy_from(x, xs);
    qkv_tensor_copy_from(mask, ms);
    const float sum[] = {4, -6, 0, 0}, mean[] = {2, -3, 0, 0}, max[] = {3, -2, 0, 0};
    assert_values_near(qkv_set_pool_forward(tape, x, mask, QKV_POOL_SUM), sum, 4, 0);
    assert_values_near(qkv_set_pool_forward(tape, x, mask, QKV_POOL_MEAN), mean, 4, 0);
    assert_values_near(qkv_set_pool_forward(tape, x, mask, QKV_POOL_MAX), max, 4, 0);
    ck_assert_int_eq(qkv_set_pool_parse("max"), QKV_POOL_MAX);
    ck_assert_int_eq(qkv_set_pool_parse("median"), -1);
    ck_assert_str_eq(qkv_set_pool_name(QKV_POOL_MEAN), "mean");
    qkv_tape_free(tape);
}
END_TEST

START_TEST(attention_pool_weights_skip_padding) {
    qkv_params params = {0};
    qkv_rng rng = qkv_rng_make(4);
    qkv_attn_pool pool;
    qkv_attn_pool_init(&pool, &params, "pool", 3, W, 2, &rng);
    qkv_tape *tape = qkv_tape_create(1);
    qkv_tensor *x = random_tape_tensor(tape, 3, (int[]){2, 4, 3}, 5), *weights = NULL;
    qkv_tensor *mask = qkv_tape_tensor(tape, 2, (int[]){2, 4});
    const float ms[] = {1, 1, 1, 1, 0, 1, 0, 1};
    qkv_tensor_copy_from(mask, ms);
    qkv_tensor *y = qkv_attn_pool_forward(tape, &pool, x, mask, &weights);
    assert_shape(y, 2, (int[]){2, W});
    assert_shape(weights, 3, (int[]){2, 1, 4});
    for (int b = 0; b < 2; b++) {
        double total = 0;
        for (int j = 0; j < 4; j++) {
            float w = weights->data[b * 4 + j];
            if (ms[b * 4 + j] == 0) ck_assert_float_eq(w, 0.0f);
            else ck_assert_float_gt(w, 0.0f);
            total += w;
        }
        ck_assert_double_lt(fabs(total - 1.0), 1e-6);
    }
    qkv_tape_free(tape);
    qkv_params_free(&params);
}
END_TEST

/* ---- symmetries ------------------------------------------------------------------ */

START_TEST(permutation_equivariance_and_invariance) {
    static const int perm[6] = {4, 0, 5, 2, 1, 3};
    for (int id = 0; id < N_SUBJECTS; id++) {
        subject *s = make_subject((enum subject_id)id);
        qkv_tape *tape = qkv_tape_create(1);
        qkv_tape_set_grad(tape, 0);
        qkv_tensor *x = random_tape_tensor(tape, 3, (int[]){2, 6, s->d_in}, 11);
        qkv_tensor *fx = run_subject(tape, s, x, NULL);
        qkv_tensor *fpx = run_subject(tape, s, permute_rows(tape, x, perm), NULL);
        qkv_tensor *expected = s->equivariant ? permute_rows(tape, fx, perm) : fx;
        double err = relative_error(fpx->data, expected->data, fx->size);
        report(s->equivariant ? "equivariance" : "invariance", subject_names[id], err);
        ck_assert_msg(err < 1e-5, "%s: permutation error %g", subject_names[id], err);
        qkv_tape_free(tape);
        free_subject(s);
    }
}
END_TEST

/* Runs a set of 5 points alone, and as the real rows of a set of 8 whose padded
 * rows {1, 4, 6} hold N(0, 100^2) draws (huge 0) or alternating +-huge; returns
 * the relative difference of the real outputs. Near FLT_MAX, any row-wise layer
 * applied to an unzeroed padded row overflows to Inf, and 0 * Inf = NaN would
 * reach the real outputs through attention or pooling. */
static double padded_vs_alone(subject *s, float huge) {
    static const int real_rows[5] = {0, 2, 3, 5, 7};
    qkv_tape *tape = qkv_tape_create(1);
    qkv_tape_set_grad(tape, 0);
    int d = s->d_in;
    qkv_tensor *x = random_tape_tensor(tape, 3, (int[]){1, 5, d}, 21);
    qkv_tensor *padded = random_tape_tensor(tape, 3, (int[]){1, 8, d}, 22);
    qkv_tensor *mask = qkv_tape_zeros(tape, 2, (int[]){1, 8});
    for (int r = 0; r < 8 * d; r++) padded->data[r] *= huge ? 0.0f : 100.0f;   /* random padding */
    for (int r = 0; r < 8 * d; r++) padded->data[r] += (r % 2 ? -huge : huge);  /* or huge padding */
    for (int i = 0; i < 5; i++) {
        memcpy(padded->data + (size_t)real_rows[i] * d, x->data + (size_t)i * d, (size_t)d * sizeof(float));
        mask->data[real_rows[i]] = 1.0f;
    }
    qkv_tensor *alone = run_subject(tape, s, x, NULL), *with_padding = run_subject(tape, s, padded, mask);
    assert_all_finite(with_padding->data, with_padding->size, subject_names[s->id]);
    qkv_tensor *got = with_padding;
    if (s->equivariant) {
        got = qkv_tape_tensor(tape, 3, alone->shape);
        for (int i = 0; i < 5; i++)
            memcpy(got->data + (size_t)i * W, with_padding->data + (size_t)real_rows[i] * W, W * sizeof(float));
    }
    double err = relative_error(got->data, alone->data, alone->size);
    qkv_tape_free(tape);
    return err;
}

START_TEST(padding_does_not_change_any_output) {
    for (int id = 0; id < N_SUBJECTS; id++) {
        subject *s = make_subject((enum subject_id)id);
        double random_err = padded_vs_alone(s, 0.0f), huge_err = padded_vs_alone(s, 3e38f);
        report("padded vs alone (random)", subject_names[id], random_err);
        report("padded vs alone (+-3e38)", subject_names[id], huge_err);
        ck_assert_msg(random_err < 1e-5, "%s: random padding changes the output by %g", subject_names[id], random_err);
        ck_assert_msg(huge_err < 1e-5, "%s: huge padding changes the output by %g", subject_names[id], huge_err);
        free_subject(s);
    }
}
END_TEST

START_TEST(sets_of_different_sizes_in_one_batch_equal_each_alone) {
    static const int sizes[4] = {5, 2, 1, 4};
    for (int id = 0; id < N_SUBJECTS; id++) {
        subject *s = make_subject((enum subject_id)id);
        qkv_tape *tape = qkv_tape_create(1);
        qkv_tape_set_grad(tape, 0);
        qkv_tensor *x = random_tape_tensor(tape, 3, (int[]){4, 5, s->d_in}, 31);
        qkv_tensor *mask = qkv_tape_zeros(tape, 2, (int[]){4, 5});
        for (int b = 0; b < 4; b++)
            for (int i = 0; i < sizes[b]; i++) mask->data[b * 5 + i] = 1.0f;
        qkv_tensor *batch = run_subject(tape, s, x, mask);
        for (int b = 0; b < 4; b++) {
            qkv_tensor *one = qkv_slice(tape, qkv_slice(tape, x, 0, b, b + 1), 1, 0, sizes[b]);
            qkv_tensor *alone = run_subject(tape, s, one, NULL);
            size_t len;
            const float *in_batch = set_output(batch, b, &len);
            double err = relative_error(in_batch, alone->data, alone->size);  /* real rows come first */
            ck_assert_msg(err < 1e-5, "%s: set %d of size %d differs by %g", subject_names[id], b, sizes[b], err);
        }
        qkv_tape_free(tape);
        free_subject(s);
    }
}
END_TEST

START_TEST(empty_sets_give_finite_outputs) {
    for (int id = 0; id < N_SUBJECTS; id++) {
        subject *s = make_subject((enum subject_id)id);
        qkv_tape *tape = qkv_tape_create(1);
        qkv_tensor *x = random_tape_tensor(tape, 3, (int[]){2, 3, s->d_in}, 41);
        qkv_tensor *mask = qkv_tape_zeros(tape, 2, (int[]){2, 3});
        mask->data[0] = 1.0f;   /* set 1 is empty */
        qkv_tensor *y = run_subject(tape, s, x, mask);
        assert_all_finite(y->data, y->size, subject_names[id]);
        if (y->requires_grad) {
            backward_ones(tape, y);
            for (int p = 0; p < s->params.n; p++)
                assert_all_finite(s->params.items[p]->grad, s->params.items[p]->size, s->params.items[p]->name);
        }
        qkv_tape_free(tape);
        free_subject(s);
    }
}
END_TEST

/* ---- parameters, kinds and errors ---------------------------------------------------- */

static void expect_param(const qkv_params *params, const char *name, int d0, int d1) {
    qkv_tensor *t = qkv_params_find(params, name);
    ck_assert_msg(t != NULL, "no parameter %s", name);
    ck_assert_int_eq(t->shape[0], d0);
    if (d1) ck_assert_int_eq(t->shape[1], d1);
}

START_TEST(parameter_names_and_counts) {
    qkv_params params = {0};
    qkv_rng rng = qkv_rng_make(3);
    qkv_mab mab;
    qkv_set_block_config plain = {.d = W, .n_heads = 2}, raw_ln = {.d = W, .n_heads = 2, .layer_norm = 1, .residual = 1};
    qkv_mab_init(&mab, &params, "m", 3, 5, &plain, &rng);   /* fc_q 3*8+8, fc_k, fc_v 5*8+8, fc_o 8*8+8 */
    ck_assert_uint_eq(qkv_params_count(&params), 32 + 48 + 48 + 72);
    expect_param(&params, "m.fc_o.weight", W, W);
    ck_assert_ptr_null(qkv_params_find(&params, "m.wo.weight"));
    qkv_params_free(&params);
    qkv_mab_init(&mab, &params, "m", W, 5, &raw_ln, &rng);  /* + wo 72 + ln0, ln1 32 */
    ck_assert_uint_eq(qkv_params_count(&params), 72 + 48 + 48 + 72 + 72 + 32);
    expect_param(&params, "m.ln1.bias", W, 0);
    qkv_params_free(&params);

    qkv_isab isab;
    qkv_pma pma;
    qkv_isab_init(&isab, &params, "isab", 3, 16, &plain, &rng);
    qkv_pma_init(&pma, &params, "pma", 2, 1, &plain, &rng);
    expect_param(&params, "isab.I", 16, W);
    expect_param(&params, "isab.mab0.fc_k.weight", W, 3);
    expect_param(&params, "isab.mab1.fc_q.weight", W, 3);
    expect_param(&params, "pma.S", 2, W);
    expect_param(&params, "pma.rff.weight", W, W);
    qkv_params_free(&params);

    /* The points model: ISAB(16) x 2 from 3-D points, width 128, PMA(1), 10 classes.
     * ISAB0 = I 2048 + mab0 (16512 + 512 + 512 + 16512) + mab1 (512 + 3 * 16512);
     * ISAB1 = 2048 + 8 * 16512; PMA = 128 + 16512 (rFF) + 4 * 16512; head 1290. */
    qkv_set_model model;
    qkv_set_model_config points = {.kind = QKV_SET_MODEL_ISAB, .d_in = 3, .width = 128, .n_heads = 4, .n_outputs = 10};
    qkv_set_model_init(&model, &params, "net", &points, &rng);
    ck_assert_uint_eq(qkv_params_count(&params), 86144 + 134144 + 82688 + 1290);
    ck_assert_int_eq(model.cfg.n_layers, 2);
    ck_assert_int_eq(model.cfg.n_inducing, 16);
    expect_param(&params, "net.enc.1.mab1.fc_o.weight", 128, 128);
    expect_param(&params, "net.pool.S", 1, 128);
    expect_param(&params, "net.head.weight", 10, 128);
    ck_assert_ptr_null(qkv_params_find(&params, "net.embed.weight"));
    qkv_params_free(&params);

    qkv_set_model_config ds = {.kind = QKV_SET_MODEL_DEEPSETS_SUM, .d_in = 1, .width = 64, .n_heads = 1, .n_outputs = 1};
    qkv_set_model_init(&model, &params, "net", &ds, &rng);
    expect_param(&params, "net.phi.0.weight", 64, 1);
    expect_param(&params, "net.rho.1.weight", 1, 64);
    ck_assert_ptr_null(qkv_params_find(&params, "net.head.weight"));
    qkv_params_free(&params);

    qkv_set_model_config raw = {.kind = QKV_SET_MODEL_SAB, .d_in = 3, .width = W, .n_heads = 2, .n_outputs = 2,
                                .residual = QKV_MAB_RESIDUAL_RAW};
    qkv_set_model_init(&model, &params, "net", &raw, &rng);
    expect_param(&params, "net.embed.weight", W, 3);
    expect_param(&params, "net.enc.0.mab.wo.weight", W, W);
    qkv_params_free(&params);
}
END_TEST

START_TEST(model_kind_names) {
    for (int k = 0; k <= QKV_SET_MODEL_ATTNPOOL; k++)
        ck_assert_int_eq(qkv_set_model_kind_parse(qkv_set_model_kind_name((qkv_set_model_kind)k)), k);
    ck_assert_int_eq(qkv_set_model_kind_parse("deepsets-max"), QKV_SET_MODEL_DEEPSETS_MAX);
    ck_assert_int_eq(qkv_set_model_kind_parse("sab-pma"), QKV_SET_MODEL_SAB);
    ck_assert_int_eq(qkv_set_model_kind_parse("isab2"), -1);
    ck_assert_int_eq(qkv_set_model_kind_parse(NULL), -1);
    ck_assert_str_eq(qkv_set_model_kind_name((qkv_set_model_kind)99), "unknown");
}
END_TEST

START_TEST(bad_configs_and_shapes_stop_with_clear_messages) {
    qkv_params params = {0};
    qkv_rng rng = qkv_rng_make(5);
    qkv_mab mab;
    qkv_sab sab;
    qkv_isab isab;
    qkv_pma pma;
    qkv_attn_pool pool;
    qkv_set_model model;
    qkv_set_block_config bad_heads = {.d = 10, .n_heads = 3}, plain = {.d = W, .n_heads = 2};
    qkv_set_block_config raw = {.d = W, .n_heads = 2, .residual = QKV_MAB_RESIDUAL_RAW};
    EXPECT_FATAL(qkv_mab_init(&mab, &params, "m", 4, 4, &bad_heads, &rng), "mab m: 3 heads do not divide width d = 10");
    EXPECT_FATAL(qkv_sab_init(&sab, &params, "s", 4, &bad_heads, &rng), "sab s: 3 heads do not divide");
    EXPECT_FATAL(qkv_isab_init(&isab, &params, "i", 4, 4, &bad_heads, &rng), "isab i: 3 heads");
    EXPECT_FATAL(qkv_isab_init(&isab, &params, "i", 4, 0, &plain, &rng), "inducing points m 0");
    EXPECT_FATAL(qkv_pma_init(&pma, &params, "p", 1, 1, &bad_heads, &rng), "pma p: 3 heads");
    EXPECT_FATAL(qkv_attn_pool_init(&pool, &params, "a", 4, 10, 3, &rng), "attn_pool a: 3 heads do not divide width d = 10");
    EXPECT_FATAL(qkv_mab_init(&mab, &params, "m", 3, 4, &raw, &rng), "d_q 3 must equal d 8");
    EXPECT_FATAL(qkv_sab_init(&sab, &params, "s", 0, &plain, &rng), "sab s: input width 0");
    qkv_set_model_config mc = {.kind = QKV_SET_MODEL_ISAB, .d_in = 3, .width = 10, .n_heads = 4, .n_outputs = 2};
    EXPECT_FATAL(qkv_set_model_init(&model, &params, "net", &mc, &rng), "set_model net (isab): 4 heads do not divide width 10");
    mc.width = W, mc.n_layers = 9;
    EXPECT_FATAL(qkv_set_model_init(&model, &params, "net", &mc, &rng), "9 layers (1..8)");
    mc.n_layers = 0, mc.d_in = 0;
    EXPECT_FATAL(qkv_set_model_init(&model, &params, "net", &mc, &rng), "d_in 0");
    mc.d_in = 3, mc.kind = (qkv_set_model_kind)42;
    EXPECT_FATAL(qkv_set_model_init(&model, &params, "net", &mc, &rng), "unknown kind 42");
    qkv_params_free(&params);

    qkv_sab_init(&sab, &params, "s", 4, &plain, &rng);
    qkv_mab_init(&mab, &params, "m", 6, 4, &plain, &rng);
    mc.kind = QKV_SET_MODEL_SAB;
    qkv_set_model_init(&model, &params, "net", &mc, &rng);
    qkv_tape *tape = qkv_tape_create(1);
    qkv_tensor *x = random_tape_tensor(tape, 3, (int[]){2, 5, 4}, 1);
    EXPECT_FATAL(qkv_sab_forward(tape, &sab, random_tape_tensor(tape, 3, (int[]){2, 5, 3}, 1), NULL),
                 "sab s.mab: set [2,5,3] must be [B,N,4]");
    EXPECT_FATAL(qkv_sab_forward(tape, &sab, x, qkv_tape_zeros(tape, 2, (int[]){2, 4})),
                 "sab: mask [2,4] does not match the set [2,5,4]");
    EXPECT_FATAL(qkv_mab_forward(tape, &mab, random_tape_tensor(tape, 3, (int[]){3, 2, 6}, 1), x, NULL),
                 "mab m: queries [3,2,6] must be [B,Nq,6] or [Nq,6] with keys [2,5,4]");
    EXPECT_FATAL(qkv_set_pool_forward(tape, random_tape_tensor(tape, 2, (int[]){2, 5}, 1), NULL, QKV_POOL_MAX),
                 "set_pool: set [2,5] must be [B,N,d]");
    EXPECT_FATAL(qkv_set_model_forward(tape, &model, x, NULL), "set_model (sab): input [2,5,4] must be [B,N,3]");
    qkv_tape_free(tape);
    qkv_params_free(&params);
}
END_TEST

/* ---- threads ------------------------------------------------------------------------- */

typedef struct { qkv_set_model model; qkv_params params; } thread_case;

/* Output, then every parameter gradient, of one forward + backward. */
static void run_model_step(float *out, void *ctx) {
    thread_case *t = ctx;
    qkv_tape *tape = qkv_tape_create(1);
    qkv_tensor *x = random_tape_tensor(tape, 3, (int[]){4, 128, 3}, 51);
    qkv_tensor *mask = qkv_tape_tensor(tape, 2, (int[]){4, 128});
    for (int i = 0; i < 4 * 128; i++) mask->data[i] = (i % 128) < 128 - 17 * (i / 128);
    qkv_params_zero_grad(&t->params);
    qkv_tensor *y = qkv_set_model_forward(tape, &t->model, x, mask);
    backward_random(tape, y, 52);
    out = append_floats(out, y->data, y->size);
    for (int p = 0; p < t->params.n; p++) out = append_floats(out, t->params.items[p]->grad, t->params.items[p]->size);
    qkv_tape_free(tape);
}

START_TEST(model_step_is_thread_independent) {
    qkv_set_model_kind kinds[] = {QKV_SET_MODEL_ISAB, QKV_SET_MODEL_DEEPSETS_MAX, QKV_SET_MODEL_ATTNPOOL};
    for (int k = 0; k < 3; k++) {
        thread_case t = {0};
        qkv_rng rng = qkv_rng_make(9);
        qkv_set_model_config c = {.kind = kinds[k], .d_in = 3, .width = 32, .n_heads = 4, .n_outputs = 5,
                                  .layer_norm = 1};
        qkv_set_model_init(&t.model, &t.params, "net", &c, &rng);
        expect_same_for_1_and_2_threads(run_model_step, &t, 4 * 5 + qkv_params_count(&t.params),
                                        qkv_set_model_kind_name(kinds[k]));
        qkv_params_free(&t.params);
    }
}
END_TEST

Suite *suite_sets(void) {
    Suite *s = suite_create("sets");
    TCase *tc = tcase_create("sets");
    tcase_set_timeout(tc, 0);
    tcase_add_test(tc, mab_matches_the_formula_for_both_residuals);
    tcase_add_test(tc, masked_pooling_by_hand);
    tcase_add_test(tc, attention_pool_weights_skip_padding);
    tcase_add_test(tc, permutation_equivariance_and_invariance);
    tcase_add_test(tc, padding_does_not_change_any_output);
    tcase_add_test(tc, sets_of_different_sizes_in_one_batch_equal_each_alone);
    tcase_add_test(tc, empty_sets_give_finite_outputs);
    tcase_add_test(tc, parameter_names_and_counts);
    tcase_add_test(tc, model_kind_names);
    tcase_add_test(tc, bad_configs_and_shapes_stop_with_clear_messages);
    tcase_add_test(tc, model_step_is_thread_independent);
    suite_add_tcase(s, tc);
    return s;
}
