/* transformer.h — feed-forward, encoder and decoder blocks, and the three stacks.
 *
 * Feed-forward: FFN(x) = fc2(act(fc1(x))), d_model -> d_ff -> d_model.
 *
 * Encoder block, pre-LN (the default) and post-LN (the 2017 paper's):
 *   pre:   x = x + MHA(LN1(x));       x = x + FFN(LN2(x))
 *   post:  x = LN1(x + MHA(x));       x = LN2(x + FFN(x))
 * Decoder block: causal self-attention, cross-attention to the encoder memory
 * (with the source padding mask), then feed-forward, each with its residual and
 * LayerNorm placed the same way.
 *
 * Stacks:
 *   encoder-only    qkv_encoder with causal 0 (bidirectional)
 *   decoder-only    qkv_encoder with causal 1 (GPT-style: causal self-attention only)
 *   encoder-decoder qkv_encoder for the source + qkv_decoder for the target
 * A stack owns its positions (positions.h): learned and sinusoidal are added to the
 * input, RoPE and p-RoPE rotate q and k in every layer, ALiBi, T5 and FIRE bias every layer's scores
 * (T5: one table shared by the layers, as in T5's decoder-only use here).
 * Pre-LN stacks end with a final LayerNorm, as in GPT-2 and PyTorch's norm_first.
 * Residual dropout (p = dropout) is applied to each sublayer's output while
 * training.
 *
 * Incremental decoding (inference): a causal qkv_encoder or a qkv_decoder can be
 * fed a few new positions at a time with one qkv_kv_cache per layer; the outputs
 * equal those of the full causal pass. The decoder's cross-attention K/V of the
 * memory are computed once per source (qkv_decoder_memory) and reused each step.
 */
#ifndef QKV_TRANSFORMER_H
#define QKV_TRANSFORMER_H

#include "layers/mha.h"
#include "layers/norm.h"
#include "layers/positions.h"

typedef struct qkv_block_config {
    int d_model, n_heads, d_ff;
    qkv_activation activation;   /* QKV_ACT_GELU (tanh), QKV_ACT_GELU_EXACT (erf) or QKV_ACT_RELU */
    int post_ln;                 /* 0: pre-LN (default), 1: post-LN */
    float dropout;               /* residual dropout while training */
    float ln_eps;                /* every LayerNorm's eps; 0: 1e-5 (PyTorch's layer_norm_eps) */
    float attn_scale;            /* the stacks' attention scale; 0: 1/sqrt(d_head) */
} qkv_block_config;

/* One residual sublayer placed as cfg says: pre-LN x + drop(f(LN(x))), post-LN
 * LN(x + drop(f(x))). Every block here is made of these; blocks built elsewhere
 * (the DETR decoder, the Perceiver) use the same placement through it. */
typedef qkv_tensor *(*qkv_sublayer_fn)(qkv_tape *tape, const void *ctx, qkv_tensor *input);
qkv_tensor *qkv_residual(qkv_tape *tape, const qkv_block_config *cfg, const qkv_ln *ln, qkv_tensor *x,
                         qkv_sublayer_fn fn, const void *ctx);
/* The feed-forward sublayer for qkv_residual: ffn is a const qkv_ffn *. */
qkv_tensor *qkv_ffn_sublayer(qkv_tape *tape, const void *ffn, qkv_tensor *x);
/* Stops (name, the sizes) unless d_model, d_ff, n_heads >= 1, heads divide
 * d_model, dropout is in [0, 1) and ln_eps, attn_scale >= 0: every block and
 * layer built of blocks checks. */
void qkv_block_config_check(const char *name, const qkv_block_config *cfg);

typedef struct qkv_ffn {
    qkv_linear fc1, fc2;
    qkv_activation activation;
} qkv_ffn;

void qkv_ffn_init(qkv_ffn *ffn, qkv_params *params, const char *name, int d_model, int d_ff,
                  qkv_activation activation, qkv_rng *rng);
qkv_tensor *qkv_ffn_forward(qkv_tape *tape, const qkv_ffn *ffn, qkv_tensor *x);

typedef struct qkv_encoder_block {
    qkv_block_config cfg;
    qkv_ln ln1, ln2;
    qkv_mha attn;
    qkv_ffn ffn;
} qkv_encoder_block;

void qkv_encoder_block_init(qkv_encoder_block *block, qkv_params *params, const char *name,
                            const qkv_block_config *cfg, qkv_rng *rng);
/* cache NULL: the whole sequence. Otherwise x holds the next positions after the
 * cache's and self-attention goes through qkv_mha_decode (causal). */
qkv_tensor *qkv_encoder_block_forward(qkv_tape *tape, const qkv_encoder_block *block, qkv_tensor *x,
                                      const qkv_mha_call *call, qkv_kv_cache *cache);

typedef struct qkv_decoder_block {
    qkv_block_config cfg;
    qkv_ln ln1, ln2, ln3;
    qkv_mha self_attn, cross_attn;
    qkv_ffn ffn;
} qkv_decoder_block;

void qkv_decoder_block_init(qkv_decoder_block *block, qkv_params *params, const char *name,
                            const qkv_block_config *cfg, qkv_rng *rng);
/* memory_kv: qkv_mha_project_kv(tape, &block->cross_attn, memory, NULL, NULL),
 * computed once per source and reused for every target step. self_call must be
 * causal for training; cross_call carries the source padding mask. */
qkv_tensor *qkv_decoder_block_forward(qkv_tape *tape, const qkv_decoder_block *block, qkv_tensor *x,
                                      const qkv_mha_kv *memory_kv, const qkv_mha_call *self_call,
                                      const qkv_mha_call *cross_call, qkv_kv_cache *cache);

typedef struct qkv_stack_config {
    qkv_block_config block;
    int n_layers;
    qkv_pos_kind positions;
    int max_len;                 /* rows of a learned table */
    qkv_rope_opts rope;          /* RoPE's base, layout and fraction (zero: base 10000,
                                  * interleaved pairs, the whole head); offset and
                                  * positions must stay 0 / NULL */
    qkv_pos_opts pos_opts;       /* t5 buckets, randomized positions; zeros: defaults */
} qkv_stack_config;

typedef struct qkv_encoder {
    qkv_stack_config cfg;
    int causal;
    qkv_positions pos;
    qkv_encoder_block *blocks;
    qkv_ln final_ln;             /* pre-LN only */
} qkv_encoder;

void qkv_encoder_init(qkv_encoder *enc, qkv_params *params, const char *name,
                      const qkv_stack_config *cfg, int causal, qkv_rng *rng);
void qkv_encoder_free(qkv_encoder *enc);
/* x [B,T,d_model] (already embedded); key_padding [B,T] (1 = real) or NULL. */
qkv_tensor *qkv_encoder_forward(qkv_tape *tape, const qkv_encoder *enc, qkv_tensor *x,
                                const qkv_tensor *key_padding);

/* One cache per layer for a causal stack (caches: enc->cfg.n_layers of them). */
void qkv_stack_caches_init(qkv_kv_cache *caches, int n_layers, const qkv_mha *attn_of_layer0, int batch,
                           int max_len);
void qkv_stack_caches_free(qkv_kv_cache *caches, int n_layers);
/* Causal stacks only: x [B,Tn,d_model] are the positions after caches[0].len. */
qkv_tensor *qkv_encoder_decode(qkv_tape *tape, const qkv_encoder *enc, qkv_tensor *x, qkv_kv_cache *caches);

typedef struct qkv_decoder {
    qkv_stack_config cfg;
    qkv_positions pos;
    qkv_decoder_block *blocks;
    qkv_ln final_ln;
} qkv_decoder;

void qkv_decoder_init(qkv_decoder *dec, qkv_params *params, const char *name,
                      const qkv_stack_config *cfg, qkv_rng *rng);
void qkv_decoder_free(qkv_decoder *dec);
/* y [B,T,d_model] (embedded targets), memory [B,S,d_model] (the encoder's output),
 * src_padding [B,S] and tgt_padding [B,T] (1 = real) or NULL. Causal. */
qkv_tensor *qkv_decoder_forward(qkv_tape *tape, const qkv_decoder *dec, qkv_tensor *y,
                                qkv_tensor *memory, const qkv_tensor *src_padding,
                                const qkv_tensor *tgt_padding);
/* Cross-attention K/V of memory for every layer (memory_kv: n_layers entries). */
void qkv_decoder_memory(qkv_tape *tape, const qkv_decoder *dec, qkv_tensor *memory, qkv_mha_kv *memory_kv);
/* y [B,Tn,d_model]: the next target positions after caches[0].len. */
qkv_tensor *qkv_decoder_decode(qkv_tape *tape, const qkv_decoder *dec, qkv_tensor *y,
                               const qkv_mha_kv *memory_kv, const qkv_tensor *src_padding,
                               qkv_kv_cache *caches);

#endif
