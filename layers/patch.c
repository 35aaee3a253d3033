/* patch.c — patch embedding. See patch.h. */
#include "layers/patch.h"

#include "core/error.h"
#include "core/ops/ops.h"
#include "core/ops/ops_position.h"

void qkv_patch_embed_init(qkv_patch_embed *pe, qkv_params *params, const char *name,
                          const qkv_patch_config *cfg, qkv_rng *rng) {
    QKV_CHECK(cfg->channels >= 1 && cfg->patch >= 1 && cfg->d_model >= 1,
              "patch_embed %s: channels %d, patch %d, d_model %d must be >= 1", name, cfg->channels, cfg->patch,
              cfg->d_model);
    QKV_CHECK(cfg->positions != QKV_PATCH_POS_SINUSOIDAL || cfg->d_model % 4 == 0,
              "patch_embed %s: 2-D sinusoidal positions need d_model %d a multiple of 4", name, cfg->d_model);
    QKV_CHECK(cfg->positions != QKV_PATCH_POS_LEARNED || cfg->max_tokens >= 1,
              "patch_embed %s: learned positions need max_tokens >= 1 (got %d)", name, cfg->max_tokens);
    char full[QKV_NAME_MAX];
    pe->cfg = *cfg;
    int in = cfg->channels * cfg->patch * cfg->patch;
    qkv_linear_init(&pe->proj, params, qkv_name_join(full, name, "proj"), in, cfg->d_model, 1, rng);
    pe->pos = NULL;
    if (cfg->positions == QKV_PATCH_POS_LEARNED) {
        pe->pos = qkv_params_new(params, qkv_name_join(full, name, "pos"), 2, (int[]){cfg->max_tokens, cfg->d_model});
        qkv_fill_normal(pe->pos->data, pe->pos->size, rng, 0.0f, 0.02f);
    }
}

/* The [T,D] positions of a rows x cols grid, or NULL. */
static qkv_tensor *grid_positions(qkv_tape *tape, const qkv_patch_embed *pe, int rows, int cols) {
    int t = rows * cols, d = pe->cfg.d_model;
    switch (pe->cfg.positions) {
    case QKV_PATCH_POS_SINUSOIDAL: {
        qkv_tensor *pos = qkv_tape_tensor(tape, 2, (int[]){t, d});
        qkv_positions_2d(pos->data, rows, cols, d, 0.0f);
        return pos;
    }
    case QKV_PATCH_POS_LEARNED:
        qkv_position_check_length("patch_embed: learned positions", t, pe->cfg.max_tokens);
        return t == pe->cfg.max_tokens ? pe->pos : qkv_slice(tape, pe->pos, 0, 0, t);
    case QKV_PATCH_POS_NONE: break;
    }
    return NULL;
}

qkv_tensor *qkv_patch_embed_forward(qkv_tape *tape, const qkv_patch_embed *pe, qkv_tensor *images,
                                    qkv_tensor **pos_out) {
    char s[QKV_SHAPE_STR_LEN];
    const qkv_patch_config *c = &pe->cfg;
    QKV_CHECK(images->ndim == 4 && images->shape[1] == c->channels,
              "patch_embed: images %s must be [B,%d,H,W]", qkv_shape_str(images, s, sizeof s), c->channels);
    QKV_CHECK(images->shape[2] % c->patch == 0 && images->shape[3] % c->patch == 0,
              "patch_embed: images %s: H and W must be multiples of the patch size %d",
              qkv_shape_str(images, s, sizeof s), c->patch);
    qkv_tensor *tokens = qkv_linear_forward(tape, &pe->proj, qkv_patchify(tape, images, c->patch));
    qkv_tensor *pos = grid_positions(tape, pe, images->shape[2] / c->patch, images->shape[3] / c->patch);
    if (pos_out) *pos_out = pos;
    return pos && !c->skip_add ? qkv_add(tape, tokens, pos) : tokens;
}
