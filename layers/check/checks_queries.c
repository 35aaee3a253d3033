/* checks_queries.c — gradient-check cases for the learned-query layers: the patch
 * embedding (patch.h), the DETR decoder with its heads (detr.h), the Perceiver
 * block and the Perceiver IO decoder (perceiver.h). Each case's setup builds the
 * module (its parameters are checked along with the inputs); fn runs it.
 *
 * The DETR case returns every layer's logits and boxes joined along the last
 * axis, so the check covers the auxiliary outputs too. Feed-forward layers use
 * GELU here (smooth); the box head's ReLU units are moved away from the kink as
 * in checks_sets.c (weights / 4, biases +-2.5 on alternate units) so finite
 * differences never straddle it. The Perceiver's learned latents start at
 * N(0, 0.02) and LayerNorm divides them by their std, so a finite-difference step
 * of 1e-3 is 5% of their scale and its truncation error came near the tolerance
 * (7e-3 in 12 seeds): the block's checks scale them to std ~1 first. */
#include <stdlib.h>

#include "layers/check/checks.h"
#include "core/alloc.h"
#include "core/ops/ops.h"
#include "layers/detr.h"
#include "layers/patch.h"
#include "layers/perceiver.h"

enum module_kind { PATCH, DETR, PERCEIVER, PERCEIVER_IO };

typedef struct queries_cfg {
    enum module_kind kind;
    int channels, patch, d, heads, layers;   /* PATCH: channels, patch; all: width d */
    qkv_patch_pos positions;
    int max_tokens, skip_add;
    int n_queries, n_classes, post_ln;       /* DETR */
    int with_pos, padding;                   /* DETR memory_pos [S,D]; a padded last memory row */
    int d_input, n_latents, d_out;           /* PERCEIVER(_IO) */
} queries_cfg;

typedef struct {
    queries_cfg cfg;
    qkv_patch_embed patch;
    qkv_detr detr;
    qkv_perceiver perceiver;
    qkv_perceiver_decoder decoder;
} queries_module;

static void to_unit_scale(qkv_tensor *t) {
    for (size_t i = 0; i < t->size; i++) t->data[i] *= 50.0f;
}

static qkv_block_config block_of(const queries_cfg *c) {
    return (qkv_block_config){.d_model = c->d, .n_heads = c->heads, .d_ff = 2 * c->d, .activation = QKV_ACT_GELU,
                              .post_ln = c->post_ln};
}

static void *queries_setup(qkv_params *params, qkv_rng *rng, const void *ctx) {
    queries_module *m = qkv_calloc(1, sizeof *m, "a gradient-check module");
    const queries_cfg *c = &m->cfg;
    m->cfg = *(const queries_cfg *)ctx;
    switch (c->kind) {
    case PATCH: {
        qkv_patch_config pc = {.channels = c->channels, .patch = c->patch, .d_model = c->d,
                               .positions = c->positions, .max_tokens = c->max_tokens, .skip_add = c->skip_add};
        qkv_patch_embed_init(&m->patch, params, "patch", &pc, rng);
        break;
    }
    case DETR: {
        qkv_detr_config dc = {.block = block_of(c), .n_layers = c->layers, .n_queries = c->n_queries,
                              .n_classes = c->n_classes};
        qkv_detr_init(&m->detr, params, "dec", &dc, rng);
        qkv_check_mlp_away_from_kinks(&m->detr.box_head);
        break;
    }
    case PERCEIVER: {
        qkv_perceiver_config pc = {.block = block_of(c), .d_input = c->d_input, .n_latents = c->n_latents,
                                   .n_self_layers = c->layers};
        qkv_perceiver_init(&m->perceiver, params, "perc", &pc, rng);
        to_unit_scale(m->perceiver.read.queries);
        break;
    }
    case PERCEIVER_IO: {
        qkv_perceiver_decoder_config dc = {.block = block_of(c), .d_latent = c->d_input, .n_queries = c->n_queries,
                                           .d_out = c->d_out};
        qkv_perceiver_decoder_init(&m->decoder, params, "io", &dc, rng);
        break;
    }
    }
    return m;
}

/* [B,S] mask whose last batch row has its final entry padded (when S > 1). */
static qkv_tensor *padding_mask(qkv_tape *tape, int b, int s) {
    qkv_tensor *mask = qkv_tape_tensor(tape, 2, (int[]){b, s});
    qkv_tensor_fill(mask, 1.0f);
    if (s > 1) mask->data[(size_t)b * s - 1] = 0.0f;
    return mask;
}

/* Every layer's logits and boxes side by side: [B,N,L*(C+5)]. */
static qkv_tensor *detr_outputs(qkv_tape *tape, const qkv_detr_out *out) {
    qkv_tensor *parts[2 * QKV_DETR_MAX_LAYERS];
    for (int l = 0; l < out->n_layers; l++) {
        parts[2 * l] = out->logits[l];
        parts[2 * l + 1] = out->boxes[l];
    }
    return qkv_concat(tape, 2 * out->n_layers, parts, -1);
}

/* inputs: PATCH images [B,C,H,W]; DETR memory [B,S,D] and memory_pos [S,D];
 * PERCEIVER x [B,N,Din]; PERCEIVER_IO latents [B,M,D]. */
static qkv_tensor *queries_case(qkv_tape *tape, qkv_tensor *const *in, const void *module) {
    const queries_module *m = module;
    const queries_cfg *c = &m->cfg;
    const qkv_tensor *mask = c->padding ? padding_mask(tape, in[0]->shape[0], in[0]->shape[1]) : NULL;
    switch (c->kind) {
    case PATCH: return qkv_patch_embed_forward(tape, &m->patch, in[0], NULL);
    case DETR: {
        qkv_detr_out out = qkv_detr_forward(tape, &m->detr, in[0], c->with_pos ? in[1] : NULL, mask);
        return detr_outputs(tape, &out);
    }
    case PERCEIVER: return qkv_perceiver_forward(tape, &m->perceiver, in[0], mask);
    case PERCEIVER_IO: return qkv_perceiver_decoder_forward(tape, &m->decoder, in[0]);
    }
    return NULL;
}

static const queries_cfg patch_sin = {PATCH, .channels = 3, .patch = 2, .d = 8};
static const queries_cfg patch_learned = {PATCH, .channels = 1, .patch = 2, .d = 6, .positions = QKV_PATCH_POS_LEARNED,
                                          .max_tokens = 8};
static const queries_cfg patch_none = {PATCH, .channels = 2, .patch = 3, .d = 5, .positions = QKV_PATCH_POS_NONE};
static const queries_cfg patch_skip = {PATCH, .channels = 2, .patch = 1, .d = 4, .skip_add = 1};
static const queries_cfg detr_pre = {DETR, .d = 8, .heads = 2, .layers = 2, .n_queries = 3, .n_classes = 2,
                                     .with_pos = 1};
static const queries_cfg detr_post_pad = {DETR, .d = 8, .heads = 2, .layers = 2, .n_queries = 3, .n_classes = 3,
                                          .post_ln = 1, .with_pos = 1, .padding = 1};
static const queries_cfg detr_one = {DETR, .d = 4, .heads = 1, .layers = 1, .n_queries = 1, .n_classes = 1};
static const queries_cfg perc = {PERCEIVER, .d = 8, .heads = 2, .layers = 1, .d_input = 5, .n_latents = 3};
static const queries_cfg perc_pad = {PERCEIVER, .d = 8, .heads = 2, .layers = 2, .d_input = 4, .n_latents = 2,
                                     .post_ln = 1, .padding = 1};
static const queries_cfg perc_bare = {PERCEIVER, .d = 4, .heads = 1, .layers = 0, .d_input = 3, .n_latents = 1};
static const queries_cfg perc_io = {PERCEIVER_IO, .d = 8, .heads = 2, .d_input = 6, .n_queries = 3, .d_out = 2};
static const queries_cfg perc_io_one = {PERCEIVER_IO, .d = 4, .heads = 2, .d_input = 4, .n_queries = 1, .d_out = 3};

#define QUERIES_CASE(label, cfg, ...) \
    {label, queries_case, __VA_ARGS__, .ctx = &cfg, .setup = queries_setup, .teardown = free}

static const qkv_gradcheck_case cases[] = {
    QUERIES_CASE("patch_embed sin [2,3,4,6] P=2 D=8", patch_sin, 1, {4}, {{2, 3, 4, 6}}),
    QUERIES_CASE("patch_embed learned [1,1,4,4] (4 of 8 rows)", patch_learned, 1, {4}, {{1, 1, 4, 4}}),
    QUERIES_CASE("patch_embed learned [2,1,4,8] all rows", patch_learned, 1, {4}, {{2, 1, 4, 8}}),
    QUERIES_CASE("patch_embed none [1,2,3,6] P=3", patch_none, 1, {4}, {{1, 2, 3, 6}}),
    QUERIES_CASE("patch_embed skip_add [1,2,2,2] P=1", patch_skip, 1, {4}, {{1, 2, 2, 2}}),
    QUERIES_CASE("detr pre-LN 2 layers [2,5,8] + pos", detr_pre, 2, {3, 2}, {{2, 5, 8}, {5, 8}}),
    QUERIES_CASE("detr post-LN padding [2,4,8] + pos", detr_post_pad, 2, {3, 2}, {{2, 4, 8}, {4, 8}}),
    QUERIES_CASE("detr B=1 N=1 S=1 no pos", detr_one, 1, {3}, {{1, 1, 4}}),
    QUERIES_CASE("perceiver [2,6,5] M=3 1 self", perc, 1, {3}, {{2, 6, 5}}),
    QUERIES_CASE("perceiver post-LN padding [2,5,4] M=2", perc_pad, 1, {3}, {{2, 5, 4}}),
    QUERIES_CASE("perceiver [1,1,3] M=1 no self", perc_bare, 1, {3}, {{1, 1, 3}}),
    QUERIES_CASE("perceiver_io [2,4,6] K=3 -> 2", perc_io, 1, {3}, {{2, 4, 6}}),
    QUERIES_CASE("perceiver_io [1,1,4] K=1 -> 3", perc_io_one, 1, {3}, {{1, 1, 4}}),
};

const qkv_gradcheck_group qkv_checks_queries = {"queries", cases, (int)(sizeof cases / sizeof cases[0])};
