/* set_models.c — encoder + pooling + head for every set model kind. See
 * set_models.h. */
#include "layers/set_models.h"

#include <string.h>

#include "core/error.h"
#include "core/ops/ops.h"

const char *const qkv_set_model_kind_names[] = {"isab", "sab", "deepsets-max", "deepsets-mean",
                                                "deepsets-sum", "attnpool", NULL};
#define N_KINDS ((int)(sizeof qkv_set_model_kind_names / sizeof qkv_set_model_kind_names[0]) - 1)

int qkv_set_model_kind_parse(const char *name) {
    if (name && strcmp(name, "sab-pma") == 0) return QKV_SET_MODEL_SAB;
    return qkv_name_lookup(name, qkv_set_model_kind_names, N_KINDS);
}

const char *qkv_set_model_kind_name(qkv_set_model_kind kind) {
    return (int)kind >= 0 && (int)kind < N_KINDS ? qkv_set_model_kind_names[kind] : "unknown";
}

static int is_transformer(qkv_set_model_kind kind) {
    return kind == QKV_SET_MODEL_ISAB || kind == QKV_SET_MODEL_SAB;
}

static int is_deepsets(qkv_set_model_kind kind, qkv_set_pool *pool) {
    switch (kind) {
    case QKV_SET_MODEL_DEEPSETS_MAX: *pool = QKV_POOL_MAX; return 1;
    case QKV_SET_MODEL_DEEPSETS_MEAN: *pool = QKV_POOL_MEAN; return 1;
    case QKV_SET_MODEL_DEEPSETS_SUM: *pool = QKV_POOL_SUM; return 1;
    default: return 0;
    }
}

/* The config with defaults filled in, validated. */
static qkv_set_model_config complete_config(const char *name, const qkv_set_model_config *config) {
    qkv_set_model_config c = *config;
    if (c.n_layers == 0) c.n_layers = 2;
    if (c.n_inducing == 0) c.n_inducing = 16;
    QKV_CHECK((int)c.kind >= 0 && (int)c.kind < N_KINDS, "set_model %s: unknown kind %d", name, (int)c.kind);
    const char *kind = qkv_set_model_kind_names[c.kind];
    QKV_CHECK(c.d_in >= 1 && c.width >= 1 && c.n_outputs >= 1,
              "set_model %s (%s): d_in %d, width %d, n_outputs %d must be >= 1", name, kind, c.d_in, c.width,
              c.n_outputs);
    QKV_CHECK(c.n_heads >= 1 && c.width % c.n_heads == 0, "set_model %s (%s): %d heads do not divide width %d",
              name, kind, c.n_heads, c.width);
    QKV_CHECK(c.n_layers >= 1 && c.n_layers <= QKV_SET_MODEL_MAX_LAYERS, "set_model %s (%s): %d layers (1..%d)",
              name, kind, c.n_layers, QKV_SET_MODEL_MAX_LAYERS);
    QKV_CHECK(c.n_inducing >= 1, "set_model %s (%s): %d inducing points (>= 1)", name, kind, c.n_inducing);
    QKV_CHECK(c.residual == QKV_MAB_RESIDUAL_PROJECTED || c.residual == QKV_MAB_RESIDUAL_RAW,
              "set_model %s (%s): unknown residual variant %d", name, kind, (int)c.residual);
    return c;
}

/* isab, sab: [embed], L blocks, PMA_1, head. */
static void init_transformer(qkv_set_model *model, qkv_params *params, const char *name, qkv_rng *rng) {
    const qkv_set_model_config *c = &model->cfg;
    qkv_set_block_config block = {.d = c->width, .n_heads = c->n_heads, .layer_norm = c->layer_norm,
                                  .residual = c->residual};
    char full[QKV_NAME_MAX], enc[QKV_NAME_MAX];
    int d_in = c->d_in;
    model->has_embed = c->residual == QKV_MAB_RESIDUAL_RAW && c->d_in != c->width;
    if (model->has_embed) {
        qkv_linear_init(&model->embed, params, qkv_name_join(full, name, "embed"), c->d_in, c->width, 1, rng);
        d_in = c->width;
    }
    qkv_name_join(enc, name, "enc");
    for (int i = 0; i < c->n_layers; i++) {
        qkv_name_index(full, enc, i);
        if (c->kind == QKV_SET_MODEL_ISAB) qkv_isab_init(&model->isab[i], params, full, d_in, c->n_inducing, &block, rng);
        else qkv_sab_init(&model->sab[i], params, full, d_in, &block, rng);
        d_in = c->width;
    }
    qkv_pma_init(&model->pma, params, qkv_name_join(full, name, "pool"), 1, 1, &block, rng);
}

/* attnpool: phi (row-wise MLP d_in -> width ... width), attention pooling. */
static void init_attnpool(qkv_set_model *model, qkv_params *params, const char *name, qkv_rng *rng) {
    const qkv_set_model_config *c = &model->cfg;
    int widths[QKV_MLP_MAX_LAYERS + 1];
    for (int i = 0; i <= c->n_layers; i++) widths[i] = i == 0 ? c->d_in : c->width;
    char full[QKV_NAME_MAX];
    qkv_mlp_init(&model->phi, params, qkv_name_join(full, name, "phi"), c->n_layers, widths, QKV_ACT_RELU, rng);
    qkv_attn_pool_init(&model->attn_pool, params, qkv_name_join(full, name, "pool"), c->width, c->width,
                       c->n_heads, rng);
}

void qkv_set_model_init(qkv_set_model *model, qkv_params *params, const char *name,
                        const qkv_set_model_config *config, qkv_rng *rng) {
    memset(model, 0, sizeof *model);
    model->cfg = complete_config(name, config);
    const qkv_set_model_config *c = &model->cfg;
    qkv_set_pool pool;
    if (is_deepsets(c->kind, &pool)) {
        qkv_deepsets_config ds = {.d_in = c->d_in, .width = c->width, .d_out = c->n_outputs,
                                  .phi_layers = c->n_layers, .rho_layers = 2, .pool = pool};
        qkv_deepsets_init(&model->deepsets, params, name, &ds, rng);
        return;  /* rho is the head */
    }
    if (is_transformer(c->kind)) init_transformer(model, params, name, rng);
    else init_attnpool(model, params, name, rng);
    char full[QKV_NAME_MAX];
    qkv_linear_init(&model->head, params, qkv_name_join(full, name, "head"), c->width, c->n_outputs, 1, rng);
}

/* isab, sab: [B,N,d_in] -> [B,width]. */
static qkv_tensor *transformer_forward(qkv_tape *tape, const qkv_set_model *model, qkv_tensor *x,
                                       const qkv_tensor *mask) {
    const qkv_set_model_config *c = &model->cfg;
    if (model->has_embed) x = qkv_linear_forward(tape, &model->embed, x);
    for (int i = 0; i < c->n_layers; i++)
        x = c->kind == QKV_SET_MODEL_ISAB ? qkv_isab_forward(tape, &model->isab[i], x, mask)
                                          : qkv_sab_forward(tape, &model->sab[i], x, mask);
    qkv_tensor *pooled = qkv_pma_forward(tape, &model->pma, x, mask);
    return qkv_reshape(tape, pooled, 2, (int[]){x->shape[0], c->width});
}

qkv_tensor *qkv_set_model_forward(qkv_tape *tape, const qkv_set_model *model, qkv_tensor *x,
                                  const qkv_tensor *mask) {
    const qkv_set_model_config *c = &model->cfg;
    char xs[QKV_SHAPE_STR_LEN], ms[QKV_SHAPE_STR_LEN];
    qkv_tensor_check_live(x, "set_model");
    qkv_shape_str(x, xs, sizeof xs);
    QKV_CHECK(x->ndim == 3 && x->shape[2] == c->d_in, "set_model (%s): input %s must be [B,N,%d]",
              qkv_set_model_kind_names[c->kind], xs, c->d_in);
    if (mask) {
        qkv_tensor_check_live(mask, "set_model");
        QKV_CHECK(mask->ndim == 2 && mask->shape[0] == x->shape[0] && mask->shape[1] == x->shape[1],
                  "set_model (%s): mask %s does not match the input %s (must be [B,N])", qkv_set_model_kind_names[c->kind],
                  qkv_shape_str(mask, ms, sizeof ms), xs);
    }
    /* Every block and DeepSets zero their own padded input rows; only the layers
     * in front of them (the embedding, attnpool's phi) need it done here, before
     * a row-wise layer can grow huge padding values into Inf. */
    qkv_set_pool pool;
    if (is_deepsets(c->kind, &pool)) return qkv_deepsets_forward(tape, &model->deepsets, x, mask);
    if (model->has_embed || !is_transformer(c->kind)) x = qkv_set_zero_padding(tape, x, mask);
    qkv_tensor *summary = is_transformer(c->kind)
                              ? transformer_forward(tape, model, x, mask)
                              : qkv_attn_pool_forward(tape, &model->attn_pool, qkv_mlp_forward(tape, &model->phi, x),
                                                      mask, NULL);
    return qkv_linear_forward(tape, &model->head, summary);
}
