/* checks_attention.c — gradient-check cases for multi-head attention, the blocks, the
 * stacks and graph attention. Each case's setup builds the module (its parameters
 * are checked along with the input x); fn runs it. */
#include <stdlib.h>

#include "core/alloc.h"
#include "core/check/gradcheck.h"
#include "core/ops/ops.h"
#include "layers/check/checks.h"
#include "layers/graph.h"
#include "layers/transformer.h"

typedef struct layer_cfg {
    int d, heads, kdim, vdim, d_ff, n_layers;
    int causal, padding, post_ln, rope, alibi;
    qkv_pos_kind pos;
    int portable;    /* the portability options: exact GELU, eps 1e-6, scale 0.3, RoPE halves base 500 of 3/4 */
} layer_cfg;

/* A [B,T] padding mask whose last sequence has its final two positions padded. */
static qkv_tensor *padding_mask(qkv_tape *tape, int b, int t) {
    qkv_tensor *m = qkv_tape_tensor(tape, 2, (int[]){b, t});
    qkv_tensor_fill(m, 1.0f);
    for (int j = t - 2; j < t; j++) if (j >= 1) m->data[(size_t)(b - 1) * t + j] = 0.0f;
    return m;
}

/* ---- multi-head attention -------------------------------------------------- */

typedef struct { layer_cfg cfg; qkv_mha mha; qkv_positions pos; } mha_module;

static void *mha_setup(qkv_params *params, qkv_rng *rng, const void *ctx) {
    mha_module *m = qkv_calloc(1, sizeof *m, "a gradient-check module");
    m->cfg = *(const layer_cfg *)ctx;
    qkv_mha_init(&m->mha, params, "mha", m->cfg.d, m->cfg.heads, m->cfg.kdim, m->cfg.vdim, 1, rng);
    qkv_positions_init(&m->pos, params, "pos", m->cfg.rope ? QKV_POS_ROPE : m->cfg.alibi ? QKV_POS_ALIBI : QKV_POS_NONE,
                       m->cfg.d, 16, m->cfg.heads, rng);
    return m;
}

/* inputs: x [B,Tq,d], and for cross-attention ctx [B,Tk,kdim] (kdim == vdim). */
static qkv_tensor *mha_case(qkv_tape *tape, qkv_tensor *const *in, const void *module) {
    const mha_module *m = module;
    qkv_tensor *x = in[0], *ctx = m->cfg.kdim ? in[1] : NULL;
    int tk = ctx ? ctx->shape[1] : x->shape[1];
    qkv_mha_call call = {0};
    call.causal = m->cfg.causal;
    call.key_padding = m->cfg.padding ? padding_mask(tape, x->shape[0], tk) : NULL;
    call.rope = qkv_positions_rope(&m->pos);
    call.bias = qkv_positions_bias(tape, &m->pos, x->shape[1], tk, !m->cfg.causal);
    return qkv_mha_forward(tape, &m->mha, x, ctx, &call);
}

/* ---- blocks and stacks ----------------------------------------------------- */

typedef struct {
    layer_cfg cfg;
    qkv_encoder_block enc_block;
    qkv_decoder_block dec_block;
    qkv_encoder enc;
    qkv_decoder dec;
    qkv_ffn ffn;
    qkv_graph_attention graph;
} block_module;

static qkv_block_config block_config(const layer_cfg *c) {
    qkv_block_config b = {.d_model = c->d, .n_heads = c->heads, .d_ff = c->d_ff, .activation = QKV_ACT_GELU,
                          .post_ln = c->post_ln};
    if (c->portable) {
        b.activation = QKV_ACT_GELU_EXACT;
        b.ln_eps = 1e-6f;
        b.attn_scale = 0.3f;
    }
    return b;
}

static void *encoder_block_setup(qkv_params *params, qkv_rng *rng, const void *ctx) {
    block_module *m = qkv_calloc(1, sizeof *m, "a gradient-check module");
    m->cfg = *(const layer_cfg *)ctx;
    qkv_block_config b = block_config(&m->cfg);
    qkv_encoder_block_init(&m->enc_block, params, "block", &b, rng);
    return m;
}

static qkv_tensor *encoder_block_case(qkv_tape *tape, qkv_tensor *const *in, const void *module) {
    const block_module *m = module;
    qkv_mha_call call = {.causal = m->cfg.causal};
    return qkv_encoder_block_forward(tape, &m->enc_block, in[0], &call, NULL);
}

static void *decoder_block_setup(qkv_params *params, qkv_rng *rng, const void *ctx) {
    block_module *m = qkv_calloc(1, sizeof *m, "a gradient-check module");
    m->cfg = *(const layer_cfg *)ctx;
    qkv_block_config b = block_config(&m->cfg);
    qkv_decoder_block_init(&m->dec_block, params, "block", &b, rng);
    return m;
}

/* inputs: y [B,T,d], memory [B,S,d] */
static qkv_tensor *decoder_block_case(qkv_tape *tape, qkv_tensor *const *in, const void *module) {
    const block_module *m = module;
    qkv_mha_kv kv = qkv_mha_project_kv(tape, &m->dec_block.cross_attn, in[1], NULL, NULL);
    qkv_mha_call self = {.causal = 1};
    qkv_mha_call cross = {.key_padding = padding_mask(tape, in[1]->shape[0], in[1]->shape[1])};
    return qkv_decoder_block_forward(tape, &m->dec_block, in[0], &kv, &self, &cross, NULL);
}

static qkv_stack_config stack_config(const layer_cfg *c) {
    qkv_stack_config s = {.block = block_config(c), .n_layers = c->n_layers, .positions = c->pos, .max_len = 8};
    if (c->portable) s.rope = (qkv_rope_opts){.base = 500.0f, .split_halves = 1, .rotary_fraction = 0.75f};
    /* FIRE: a narrow MLP, so few ReLU inputs lie within the differences' eps of 0 */
    if (c->pos == QKV_POS_FIRE) s.pos_opts.fire_width = 4;
    return s;
}

static void *encoder_setup(qkv_params *params, qkv_rng *rng, const void *ctx) {
    block_module *m = qkv_calloc(1, sizeof *m, "a gradient-check module");
    m->cfg = *(const layer_cfg *)ctx;
    qkv_stack_config s = stack_config(&m->cfg);
    qkv_encoder_init(&m->enc, params, "enc", &s, m->cfg.causal, rng);
    return m;
}

static qkv_tensor *encoder_case(qkv_tape *tape, qkv_tensor *const *in, const void *module) {
    const block_module *m = module;
    const qkv_tensor *pad = m->cfg.padding ? padding_mask(tape, in[0]->shape[0], in[0]->shape[1]) : NULL;
    return qkv_encoder_forward(tape, &m->enc, in[0], pad);
}

static void *decoder_setup(qkv_params *params, qkv_rng *rng, const void *ctx) {
    block_module *m = qkv_calloc(1, sizeof *m, "a gradient-check module");
    m->cfg = *(const layer_cfg *)ctx;
    qkv_stack_config s = stack_config(&m->cfg);
    qkv_decoder_init(&m->dec, params, "dec", &s, rng);
    return m;
}

static qkv_tensor *decoder_case(qkv_tape *tape, qkv_tensor *const *in, const void *module) {
    const block_module *m = module;
    qkv_tensor *src_pad = padding_mask(tape, in[1]->shape[0], in[1]->shape[1]);
    return qkv_decoder_forward(tape, &m->dec, in[0], in[1], src_pad, NULL);
}

static void *ffn_setup(qkv_params *params, qkv_rng *rng, const void *ctx) {
    block_module *m = qkv_calloc(1, sizeof *m, "a gradient-check module");
    m->cfg = *(const layer_cfg *)ctx;
    qkv_ffn_init(&m->ffn, params, "ffn", m->cfg.d, m->cfg.d_ff, QKV_ACT_GELU, rng);
    return m;
}

static qkv_tensor *ffn_case(qkv_tape *tape, qkv_tensor *const *in, const void *module) {
    return qkv_ffn_forward(tape, &((const block_module *)module)->ffn, in[0]);
}

static void *graph_setup(qkv_params *params, qkv_rng *rng, const void *ctx) {
    block_module *m = qkv_calloc(1, sizeof *m, "a gradient-check module");
    m->cfg = *(const layer_cfg *)ctx;
    qkv_graph_attention_init(&m->graph, params, "gat", m->cfg.d, m->cfg.heads, rng);
    return m;
}

/* A path graph 0 - 1 - 2 - ... (edges both ways); self-loops come from the layer. */
static qkv_tensor *graph_case(qkv_tape *tape, qkv_tensor *const *in, const void *module) {
    int n = in[0]->shape[1];
    qkv_tensor *adj = qkv_tape_zeros(tape, 2, (int[]){n, n});
    for (int i = 0; i + 1 < n; i++) adj->data[i * n + i + 1] = adj->data[(i + 1) * n + i] = 1.0f;
    return qkv_graph_attention_forward(tape, &((const block_module *)module)->graph, in[0], adj, NULL);
}

static void stack_teardown(void *module) {
    block_module *m = module;
    qkv_encoder_free(&m->enc);
    qkv_decoder_free(&m->dec);
    free(m);
}

static const layer_cfg self_plain = {.d = 8, .heads = 2};
static const layer_cfg self_masked = {.d = 8, .heads = 2, .causal = 1, .padding = 1};
static const layer_cfg self_rope = {.d = 8, .heads = 2, .causal = 1, .rope = 1};
static const layer_cfg self_alibi = {.d = 8, .heads = 2, .causal = 1, .alibi = 1};
static const layer_cfg cross = {.d = 8, .heads = 4, .kdim = 6, .vdim = 6, .padding = 1};
static const layer_cfg block_pre = {.d = 8, .heads = 2, .d_ff = 12};
static const layer_cfg block_post = {.d = 8, .heads = 2, .d_ff = 12, .post_ln = 1, .causal = 1};
static const layer_cfg enc_learned = {.d = 8, .heads = 2, .d_ff = 8, .n_layers = 2, .pos = QKV_POS_LEARNED, .padding = 1};
static const layer_cfg enc_sin = {.d = 8, .heads = 2, .d_ff = 8, .n_layers = 1, .pos = QKV_POS_SINUSOIDAL};
static const layer_cfg gpt_rope = {.d = 8, .heads = 2, .d_ff = 8, .n_layers = 2, .pos = QKV_POS_ROPE, .causal = 1};
static const layer_cfg gpt_alibi = {.d = 8, .heads = 2, .d_ff = 8, .n_layers = 1, .pos = QKV_POS_ALIBI, .causal = 1};
static const layer_cfg gpt_rope_portable = {.d = 16, .heads = 2, .d_ff = 8, .n_layers = 1, .pos = QKV_POS_ROPE,
                                            .causal = 1, .portable = 1};
static const layer_cfg dec_portable = {.d = 8, .heads = 2, .d_ff = 8, .n_layers = 1, .pos = QKV_POS_LEARNED,
                                       .portable = 1};
static const layer_cfg gpt_t5 = {.d = 8, .heads = 2, .d_ff = 8, .n_layers = 2, .pos = QKV_POS_T5, .causal = 1};
static const layer_cfg enc_t5 = {.d = 8, .heads = 2, .d_ff = 8, .n_layers = 1, .pos = QKV_POS_T5, .padding = 1};
static const layer_cfg gpt_fire = {.d = 8, .heads = 2, .d_ff = 8, .n_layers = 2, .pos = QKV_POS_FIRE, .causal = 1};
static const layer_cfg enc_fire = {.d = 8, .heads = 2, .d_ff = 8, .n_layers = 1, .pos = QKV_POS_FIRE, .padding = 1};
static const layer_cfg gpt_prope = {.d = 16, .heads = 2, .d_ff = 8, .n_layers = 2, .pos = QKV_POS_PROPE, .causal = 1};
static const layer_cfg dec_cfg = {.d = 8, .heads = 2, .d_ff = 8, .n_layers = 2, .pos = QKV_POS_SINUSOIDAL};
static const layer_cfg graph_cfg = {.d = 8, .heads = 2};

static const qkv_gradcheck_case cases[] = {
    {"mha self [2,3,8] 2 heads", mha_case, 1, {3}, {{2, 3, 8}},
     .ctx = &self_plain, .setup = mha_setup, .teardown = free},
    {"mha self causal+padding [2,4,8]", mha_case, 1, {3}, {{2, 4, 8}},
     .ctx = &self_masked, .setup = mha_setup, .teardown = free},
    {"mha self causal rope [1,5,8]", mha_case, 1, {3}, {{1, 5, 8}},
     .ctx = &self_rope, .setup = mha_setup, .teardown = free},
    {"mha self causal alibi [1,5,8]", mha_case, 1, {3}, {{1, 5, 8}},
     .ctx = &self_alibi, .setup = mha_setup, .teardown = free},
    {"mha cross [2,3,8] x [2,5,6] kdim 6", mha_case, 2, {3, 3}, {{2, 3, 8}, {2, 5, 6}},
     .ctx = &cross, .setup = mha_setup, .teardown = free},
    {"mha self [1,1,8] T=1", mha_case, 1, {3}, {{1, 1, 8}},
     .ctx = &self_plain, .setup = mha_setup, .teardown = free},
    {"ffn [2,3,8] d_ff 12", ffn_case, 1, {3}, {{2, 3, 8}},
     .ctx = &block_pre, .setup = ffn_setup, .teardown = stack_teardown},
    {"encoder block pre-LN [2,3,8]", encoder_block_case, 1, {3}, {{2, 3, 8}},
     .ctx = &block_pre, .setup = encoder_block_setup, .teardown = stack_teardown},
    {"encoder block post-LN causal [2,3,8]", encoder_block_case, 1, {3}, {{2, 3, 8}},
     .ctx = &block_post, .setup = encoder_block_setup, .teardown = stack_teardown},
    {"decoder block [2,3,8] memory [2,4,8]", decoder_block_case, 2, {3, 3}, {{2, 3, 8}, {2, 4, 8}},
     .ctx = &block_pre, .setup = decoder_block_setup, .teardown = stack_teardown},
    {"encoder 2 layers learned pos + padding", encoder_case, 1, {3}, {{2, 4, 8}},
     .ctx = &enc_learned, .setup = encoder_setup, .teardown = stack_teardown},
    {"encoder 1 layer sinusoidal", encoder_case, 1, {3}, {{2, 4, 8}},
     .ctx = &enc_sin, .setup = encoder_setup, .teardown = stack_teardown},
    {"decoder-only 2 layers rope", encoder_case, 1, {3}, {{2, 4, 8}},
     .ctx = &gpt_rope, .setup = encoder_setup, .teardown = stack_teardown},
    {"decoder-only 1 layer alibi", encoder_case, 1, {3}, {{1, 5, 8}},
     .ctx = &gpt_alibi, .setup = encoder_setup, .teardown = stack_teardown},
    {"decoder-only 2 layers t5 bias (one-sided buckets)", encoder_case, 1, {3}, {{1, 6, 8}},
     .ctx = &gpt_t5, .setup = encoder_setup, .teardown = stack_teardown},
    {"encoder 1 layer t5 bias (bidirectional) + padding", encoder_case, 1, {3}, {{2, 5, 8}},
     .ctx = &enc_t5, .setup = encoder_setup, .teardown = stack_teardown},
    {"decoder-only 2 layers fire bias (MLP, c, L)", encoder_case, 1, {3}, {{1, 6, 8}},
     .ctx = &gpt_fire, .setup = encoder_setup, .teardown = stack_teardown},
    {"encoder 1 layer fire bias (|i - j|) + padding", encoder_case, 1, {3}, {{2, 5, 8}},
     .ctx = &enc_fire, .setup = encoder_setup, .teardown = stack_teardown},
    {"decoder-only 2 layers p-rope 0.75 of 4 pairs", encoder_case, 1, {3}, {{2, 4, 16}},
     .ctx = &gpt_prope, .setup = encoder_setup, .teardown = stack_teardown},
    {"encoder-decoder: decoder 2 layers", decoder_case, 2, {3, 3}, {{2, 3, 8}, {2, 4, 8}},
     .ctx = &dec_cfg, .setup = decoder_setup, .teardown = stack_teardown},
    {"decoder-only rope halves base 500 fraction 3/4, gelu-exact, eps, scale", encoder_case, 1, {3}, {{2, 4, 16}},
     .ctx = &gpt_rope_portable, .setup = encoder_setup, .teardown = stack_teardown},
    {"encoder-decoder gelu-exact, eps 1e-6, scale 0.3", decoder_case, 2, {3, 3}, {{2, 3, 8}, {2, 4, 8}},
     .ctx = &dec_portable, .setup = decoder_setup, .teardown = stack_teardown},
    {"graph attention path graph [2,5,8]", graph_case, 1, {3}, {{2, 5, 8}},
     .ctx = &graph_cfg, .setup = graph_setup, .teardown = stack_teardown},
};

const qkv_gradcheck_group qkv_checks_attention_layers = {"blocks", cases, (int)(sizeof cases / sizeof cases[0])};
