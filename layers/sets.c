/* sets.c — Set Transformer blocks, attention pooling, set pooling and DeepSets,
 * built from existing ops (linear, fused attention, layer norm, reductions). See
 * sets.h for the math, the residual variants and the padding contract. */
#include "layers/sets.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/ops/attention.h"
#include "core/error.h"
#include "core/ops/ops.h"

/* Added to padded rows before max pooling: below any real activation. */
#define PADDED_ROW_PENALTY (-1e30f)

/* ---- checks and small helpers ------------------------------------------------ */

static void check_block_config(const char *block, const char *name, const qkv_set_block_config *cfg) {
    QKV_CHECK(cfg->d >= 1 && cfg->n_heads >= 1 && cfg->d % cfg->n_heads == 0,
              "%s %s: %d heads do not divide width d = %d", block, name, cfg->n_heads, cfg->d);
    QKV_CHECK(cfg->residual == QKV_MAB_RESIDUAL_PROJECTED || cfg->residual == QKV_MAB_RESIDUAL_RAW,
              "%s %s: unknown residual variant %d", block, name, (int)cfg->residual);
    QKV_CHECK(isfinite(cfg->scale) && cfg->scale >= 0.0f, "%s %s: scale %g must be finite and >= 0 (0: default)",
              block, name, (double)cfg->scale);
}

static void check_width(const char *block, const char *name, const char *what, int width) {
    QKV_CHECK(width >= 1, "%s %s: %s %d must be >= 1", block, name, what, width);
}

/* x must be a batch of sets [B,N,width]. */
static void check_set(const char *block, const char *name, const char *what, const qkv_tensor *x, int width) {
    char shape[QKV_SHAPE_STR_LEN];
    qkv_tensor_check_live(x, block);
    QKV_CHECK(x->ndim == 3 && x->shape[2] == width, "%s %s: %s %s must be [B,N,%d]", block, name, what,
              qkv_shape_str(x, shape, sizeof shape), width);
}

/* mask, if any, must be [B,N] for the set x [B,N,d]. */
static void check_mask(const char *block, const qkv_tensor *mask, const qkv_tensor *x) {
    if (!mask) return;
    char ms[QKV_SHAPE_STR_LEN], xs[QKV_SHAPE_STR_LEN];
    qkv_tensor_check_live(mask, block);
    QKV_CHECK(mask->ndim == 2 && mask->shape[0] == x->shape[0] && mask->shape[1] == x->shape[1],
              "%s: mask %s does not match the set %s (must be [B,N])", block, qkv_shape_str(mask, ms, sizeof ms),
              qkv_shape_str(x, xs, sizeof xs));
}

/* The mask as a [B,N,1] tensor of 0 (padding) and 1 (real point), not on the
 * gradient path, so that it broadcasts over the feature axis. */
static qkv_tensor *mask_rows(qkv_tape *tape, const qkv_tensor *mask) {
    qkv_tensor *rows = qkv_tape_tensor(tape, 3, (int[]){mask->shape[0], mask->shape[1], 1});
    for (size_t i = 0; i < mask->size; i++) rows->data[i] = mask->data[i] != 0.0f ? 1.0f : 0.0f;
    return rows;
}

qkv_tensor *qkv_expand_batch(qkv_tape *tape, qkv_tensor *t, int b) {
    return qkv_add(tape, qkv_tape_zeros(tape, 3, (int[]){b, 1, 1}), t);
}

/* A learned [n,d] set of points (inducing points, seeds, queries): uniform in
 * +-sqrt(6 / ((n + 1) d)), the authors' xavier_uniform_ on a [1,n,d] tensor. */
static qkv_tensor *learned_points(qkv_params *params, const char *name, const char *part, int n, int d,
                                  qkv_rng *rng) {
    char full[QKV_NAME_MAX];
    qkv_tensor *t = qkv_params_new(params, qkv_name_join(full, name, part), 2, (int[]){n, d});
    float bound = sqrtf(6.0f / ((float)(n + 1) * (float)d));
    qkv_fill_uniform(t->data, t->size, rng, -bound, bound);
    return t;
}

qkv_tensor *qkv_set_zero_padding(qkv_tape *tape, qkv_tensor *x, const qkv_tensor *mask) {
    if (!mask) return x;
    QKV_CHECK(x->ndim == 3, "set_zero_padding: set must be [B,N,d], got %d dims", x->ndim);
    check_mask("set_zero_padding", mask, x);
    return qkv_mul(tape, x, mask_rows(tape, mask));
}

/* ---- rFF ----------------------------------------------------------------------- */

void qkv_rff_init(qkv_rff *rff, qkv_params *params, const char *name, int d_in, int d_out, qkv_rng *rng) {
    qkv_linear_init(&rff->fc, params, name, d_in, d_out, 1, rng);
}

qkv_tensor *qkv_rff_forward(qkv_tape *tape, const qkv_rff *rff, qkv_tensor *x) {
    return qkv_relu(tape, qkv_linear_forward(tape, &rff->fc, x));
}

/* ---- MAB ----------------------------------------------------------------------- */

void qkv_mab_init(qkv_mab *mab, qkv_params *params, const char *name, int d_q, int d_k,
                  const qkv_set_block_config *cfg, qkv_rng *rng) {
    check_block_config("mab", name, cfg);
    check_width("mab", name, "query width d_q", d_q);
    check_width("mab", name, "key width d_k", d_k);
    QKV_CHECK(cfg->residual != QKV_MAB_RESIDUAL_RAW || d_q == cfg->d,
              "mab %s: the raw residual adds the query to the output, so d_q %d must equal d %d "
              "(project the input first, or use the projected residual)", name, d_q, cfg->d);
    char full[QKV_NAME_MAX];
    memset(mab, 0, sizeof *mab);
    snprintf(mab->name, sizeof mab->name, "%s", name);
    mab->cfg = *cfg;
    mab->d_q = d_q;
    mab->d_k = d_k;
    int d = cfg->d;
    qkv_linear_init(&mab->fc_q, params, qkv_name_join(full, name, "fc_q"), d_q, d, 1, rng);
    qkv_linear_init(&mab->fc_k, params, qkv_name_join(full, name, "fc_k"), d_k, d, 1, rng);
    qkv_linear_init(&mab->fc_v, params, qkv_name_join(full, name, "fc_v"), d_k, d, 1, rng);
    if (cfg->residual == QKV_MAB_RESIDUAL_RAW)
        qkv_linear_init(&mab->wo, params, qkv_name_join(full, name, "wo"), d, d, 1, rng);
    qkv_rff_init(&mab->fc_o, params, qkv_name_join(full, name, "fc_o"), d, d, rng);
    if (cfg->layer_norm) {
        qkv_ln_init(&mab->ln0, params, qkv_name_join(full, name, "ln0"), d);
        qkv_ln_init(&mab->ln1, params, qkv_name_join(full, name, "ln1"), d);
    }
}

static void check_mab_inputs(const qkv_mab *mab, const qkv_tensor *x, const qkv_tensor *y,
                             const qkv_tensor *y_mask) {
    char xs[QKV_SHAPE_STR_LEN], ys[QKV_SHAPE_STR_LEN];
    check_set("mab", mab->name, "keys", y, mab->d_k);
    qkv_tensor_check_live(x, "mab");
    int shared = x->ndim == 2 && x->shape[1] == mab->d_q;
    int batched = x->ndim == 3 && x->shape[2] == mab->d_q && x->shape[0] == y->shape[0];
    QKV_CHECK(shared || batched, "mab %s: queries %s must be [B,Nq,%d] or [Nq,%d] with keys %s",
              mab->name, qkv_shape_str(x, xs, sizeof xs), mab->d_q, mab->d_q, qkv_shape_str(y, ys, sizeof ys));
    check_mask("mab", y_mask, y);
}

/* MAB(x, y) without checks or zeroing (see sets.h):
 *   q = fc_q(x); O = attention(q, fc_k(y), fc_v(y), key_padding) over heads in place
 *   H = LN0(R + O')  with O' = O, R = q (projected)  or  O' = wo(O), R = x (raw)
 *   out = LN1(H + relu(fc_o(H))) */
static qkv_tensor *mab_apply(qkv_tape *tape, const qkv_mab *mab, qkv_tensor *x, qkv_tensor *y,
                             const qkv_tensor *y_mask) {
    int heads = mab->cfg.n_heads;
    qkv_tensor *q = qkv_linear_forward(tape, &mab->fc_q, x);
    /* heads read where the projections wrote them (attention.h, heads_last) */
    qkv_tensor *q_heads = qkv_heads_view(tape, q->ndim == 2 ? qkv_expand_batch(tape, q, y->shape[0]) : q, heads);
    qkv_tensor *k_heads = qkv_heads_view(tape, qkv_linear_forward(tape, &mab->fc_k, y), heads);
    qkv_tensor *v_heads = qkv_heads_view(tape, qkv_linear_forward(tape, &mab->fc_v, y), heads);
    qkv_attention_opts opts = {.scale = mab->cfg.scale, .key_padding = y_mask, .heads_last = 1};
    qkv_tensor *o = qkv_heads_join(tape, qkv_attention(tape, q_heads, k_heads, v_heads, &opts, NULL));
    qkv_tensor *h = mab->cfg.residual == QKV_MAB_RESIDUAL_RAW
                        ? qkv_add(tape, qkv_linear_forward(tape, &mab->wo, o), x)
                        : qkv_add(tape, o, q);
    if (mab->cfg.layer_norm) h = qkv_ln_forward(tape, &mab->ln0, h);
    h = qkv_add(tape, h, qkv_rff_forward(tape, &mab->fc_o, h));
    if (mab->cfg.layer_norm) h = qkv_ln_forward(tape, &mab->ln1, h);
    return h;
}

qkv_tensor *qkv_mab_forward(qkv_tape *tape, const qkv_mab *mab, qkv_tensor *x, qkv_tensor *y,
                            const qkv_tensor *y_mask) {
    check_mab_inputs(mab, x, y, y_mask);
    return mab_apply(tape, mab, x, qkv_set_zero_padding(tape, y, y_mask), y_mask);
}

/* ---- SAB and ISAB ------------------------------------------------------------- */

void qkv_sab_init(qkv_sab *sab, qkv_params *params, const char *name, int d_in,
                  const qkv_set_block_config *cfg, qkv_rng *rng) {
    check_block_config("sab", name, cfg);
    check_width("sab", name, "input width", d_in);
    char full[QKV_NAME_MAX];
    qkv_mab_init(&sab->mab, params, qkv_name_join(full, name, "mab"), d_in, d_in, cfg, rng);
}

qkv_tensor *qkv_sab_forward(qkv_tape *tape, const qkv_sab *sab, qkv_tensor *x, const qkv_tensor *mask) {
    check_set("sab", sab->mab.name, "set", x, sab->mab.d_q);
    check_mask("sab", mask, x);
    x = qkv_set_zero_padding(tape, x, mask);
    return mab_apply(tape, &sab->mab, x, x, mask);
}

void qkv_isab_init(qkv_isab *isab, qkv_params *params, const char *name, int d_in, int m,
                   const qkv_set_block_config *cfg, qkv_rng *rng) {
    check_block_config("isab", name, cfg);
    check_width("isab", name, "input width", d_in);
    check_width("isab", name, "inducing points m", m);
    char full[QKV_NAME_MAX];
    isab->m = m;
    isab->inducing = learned_points(params, name, "I", m, cfg->d, rng);
    qkv_mab_init(&isab->mab0, params, qkv_name_join(full, name, "mab0"), cfg->d, d_in, cfg, rng);
    qkv_mab_init(&isab->mab1, params, qkv_name_join(full, name, "mab1"), d_in, cfg->d, cfg, rng);
}

/* H = MAB0(I, X) summarizes the real points into m rows (key_padding on X); then
 * every point attends to those m rows (no mask: they are all real). */
qkv_tensor *qkv_isab_forward(qkv_tape *tape, const qkv_isab *isab, qkv_tensor *x, const qkv_tensor *mask) {
    check_set("isab", isab->mab0.name, "set", x, isab->mab0.d_k);
    check_mask("isab", mask, x);
    x = qkv_set_zero_padding(tape, x, mask);
    qkv_tensor *h = mab_apply(tape, &isab->mab0, isab->inducing, x, mask);
    return mab_apply(tape, &isab->mab1, x, h, NULL);
}

/* ---- PMA ----------------------------------------------------------------------- */

void qkv_pma_init(qkv_pma *pma, qkv_params *params, const char *name, int n_seeds, int with_rff,
                  const qkv_set_block_config *cfg, qkv_rng *rng) {
    check_block_config("pma", name, cfg);
    check_width("pma", name, "seed count k", n_seeds);
    char full[QKV_NAME_MAX];
    memset(pma, 0, sizeof *pma);
    pma->k = n_seeds;
    pma->with_rff = with_rff != 0;
    pma->seeds = learned_points(params, name, "S", n_seeds, cfg->d, rng);
    if (pma->with_rff) qkv_rff_init(&pma->rff, params, qkv_name_join(full, name, "rff"), cfg->d, cfg->d, rng);
    qkv_mab_init(&pma->mab, params, qkv_name_join(full, name, "mab"), cfg->d, cfg->d, cfg, rng);
}

qkv_tensor *qkv_pma_forward(qkv_tape *tape, const qkv_pma *pma, qkv_tensor *z, const qkv_tensor *mask) {
    check_set("pma", pma->mab.name, "set", z, pma->mab.d_k);
    check_mask("pma", mask, z);
    z = qkv_set_zero_padding(tape, z, mask);
    if (pma->with_rff) z = qkv_rff_forward(tape, &pma->rff, z);
    return mab_apply(tape, &pma->mab, pma->seeds, z, mask);
}

/* ---- attention pooling ---------------------------------------------------------- */

void qkv_attn_pool_init(qkv_attn_pool *pool, qkv_params *params, const char *name, int d_in, int d,
                        int n_heads, qkv_rng *rng) {
    QKV_CHECK(d >= 1 && n_heads >= 1 && d % n_heads == 0, "attn_pool %s: %d heads do not divide width d = %d",
              name, n_heads, d);
    check_width("attn_pool", name, "input width", d_in);
    char full[QKV_NAME_MAX];
    pool->d_in = d_in;
    pool->d = d;
    pool->query = learned_points(params, name, "query", 1, d, rng);
    qkv_mha_init(&pool->attn, params, qkv_name_join(full, name, "attn"), d, n_heads, d_in, d_in, 1, rng);
}

qkv_tensor *qkv_attn_pool_forward(qkv_tape *tape, const qkv_attn_pool *pool, qkv_tensor *x,
                                  const qkv_tensor *mask, qkv_tensor **weights_out) {
    check_set("attn_pool", pool->attn.wq.weight->name, "set", x, pool->d_in);
    check_mask("attn_pool", mask, x);
    int b = x->shape[0];
    x = qkv_set_zero_padding(tape, x, mask);
    qkv_mha_call call = {.key_padding = mask, .weights = weights_out ? 2 : 0, .weights_out = weights_out};
    qkv_tensor *pooled = qkv_mha_forward(tape, &pool->attn, qkv_expand_batch(tape, pool->query, b), x, &call);
    return qkv_reshape(tape, pooled, 2, (int[]){b, pool->d});
}

/* ---- pooling ------------------------------------------------------------------- */

static const char *const pool_names[] = {"sum", "mean", "max"};

int qkv_set_pool_parse(const char *name) { return qkv_name_lookup(name, pool_names, 3); }

const char *qkv_set_pool_name(qkv_set_pool pool) {
    return pool >= QKV_POOL_SUM && pool <= QKV_POOL_MAX ? pool_names[pool] : "unknown";
}

/* Per set, from the mask: [B,1] tensors of 1/max(1, real count) (mean) and of
 * 1 if the set has a real point, else 0 (max of an empty set is 0). */
static qkv_tensor *per_set_factor(qkv_tape *tape, const qkv_tensor *mask, int reciprocal_count) {
    int b = mask->shape[0], n = mask->shape[1];
    qkv_tensor *f = qkv_tape_tensor(tape, 2, (int[]){b, 1});
    for (int i = 0; i < b; i++) {
        int count = 0;
        for (int j = 0; j < n; j++) count += mask->data[(size_t)i * n + j] != 0.0f;
        f->data[i] = reciprocal_count ? 1.0f / (float)(count > 0 ? count : 1) : (float)(count > 0);
    }
    return f;
}

/* [B,N,1]: 0 on real rows, PADDED_ROW_PENALTY on padded ones. */
static qkv_tensor *padding_penalty(qkv_tape *tape, const qkv_tensor *rows) {
    qkv_tensor *p = qkv_tape_tensor(tape, 3, rows->shape);
    for (size_t i = 0; i < rows->size; i++) p->data[i] = rows->data[i] != 0.0f ? 0.0f : PADDED_ROW_PENALTY;
    return p;
}

/* Without a mask: plain sum, mean or max over axis 1. With one: padded rows are
 * zeroed (sum), then divided by the real count (mean), or zeroed and pushed
 * below every real row before the max, whose result is zeroed for empty sets. */
qkv_tensor *qkv_set_pool_forward(qkv_tape *tape, qkv_tensor *x, const qkv_tensor *mask, qkv_set_pool pool) {
    char shape[QKV_SHAPE_STR_LEN];
    qkv_tensor_check_live(x, "set_pool");
    QKV_CHECK(x->ndim == 3, "set_pool: set %s must be [B,N,d]", qkv_shape_str(x, shape, sizeof shape));
    QKV_CHECK(pool >= QKV_POOL_SUM && pool <= QKV_POOL_MAX, "set_pool: unknown pooling %d", (int)pool);
    check_mask("set_pool", mask, x);
    if (!mask) {
        if (pool == QKV_POOL_SUM) return qkv_sum(tape, x, 1, 0);
        return pool == QKV_POOL_MEAN ? qkv_mean(tape, x, 1, 0) : qkv_max(tape, x, 1, 0);
    }
    qkv_tensor *rows = mask_rows(tape, mask);
    qkv_tensor *real = qkv_mul(tape, x, rows);
    if (pool == QKV_POOL_SUM) return qkv_sum(tape, real, 1, 0);
    if (pool == QKV_POOL_MEAN) return qkv_mul(tape, qkv_sum(tape, real, 1, 0), per_set_factor(tape, mask, 1));
    qkv_tensor *largest = qkv_max(tape, qkv_add(tape, real, padding_penalty(tape, rows)), 1, 0);
    return qkv_mul(tape, largest, per_set_factor(tape, mask, 0));
}

/* ---- DeepSets ------------------------------------------------------------------ */

/* An MLP in -> width -> ... -> width -> out with n linear layers (n >= 1). */
static void init_mlp(qkv_mlp *mlp, qkv_params *params, const char *name, const char *part, int n, int in,
                     int width, int out, qkv_rng *rng) {
    int widths[QKV_MLP_MAX_LAYERS + 1];
    for (int i = 0; i <= n; i++) widths[i] = i == 0 ? in : i == n ? out : width;
    char full[QKV_NAME_MAX];
    qkv_mlp_init(mlp, params, qkv_name_join(full, name, part), n, widths, QKV_ACT_RELU, rng);
}

void qkv_deepsets_init(qkv_deepsets *ds, qkv_params *params, const char *name,
                       const qkv_deepsets_config *cfg, qkv_rng *rng) {
    ds->cfg = *cfg;
    if (ds->cfg.phi_layers == 0) ds->cfg.phi_layers = 2;
    if (ds->cfg.rho_layers == 0) ds->cfg.rho_layers = 2;
    const qkv_deepsets_config *c = &ds->cfg;
    QKV_CHECK(c->d_in >= 1 && c->width >= 1 && c->d_out >= 1,
              "deepsets %s: widths d_in %d, width %d, d_out %d must be >= 1", name, c->d_in, c->width, c->d_out);
    QKV_CHECK(c->phi_layers >= 1 && c->phi_layers <= QKV_MLP_MAX_LAYERS && c->rho_layers >= 1 &&
                  c->rho_layers <= QKV_MLP_MAX_LAYERS,
              "deepsets %s: phi %d and rho %d layers must be in 1..%d", name, c->phi_layers, c->rho_layers,
              QKV_MLP_MAX_LAYERS);
    QKV_CHECK(c->pool >= QKV_POOL_SUM && c->pool <= QKV_POOL_MAX, "deepsets %s: unknown pooling %d", name,
              (int)c->pool);
    init_mlp(&ds->phi, params, name, "phi", c->phi_layers, c->d_in, c->width, c->width, rng);
    init_mlp(&ds->rho, params, name, "rho", c->rho_layers, c->width, c->width, c->d_out, rng);
}

qkv_tensor *qkv_deepsets_forward(qkv_tape *tape, const qkv_deepsets *ds, qkv_tensor *x,
                                 const qkv_tensor *mask) {
    check_set("deepsets", ds->phi.layers[0].weight->name, "set", x, ds->cfg.d_in);
    check_mask("deepsets", mask, x);
    qkv_tensor *features = qkv_mlp_forward(tape, &ds->phi, qkv_set_zero_padding(tape, x, mask));
    return qkv_mlp_forward(tape, &ds->rho, qkv_set_pool_forward(tape, features, mask, ds->cfg.pool));
}
