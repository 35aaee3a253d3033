/* perceiver.h — learned latents that read a large input (Perceiver, Jaegle et al.
 * 2021), and learned output queries that read the latents (Perceiver IO, 2022).
 *
 * Block: M learned latents z0 [M,D] (param "<name>.latents", init N(0, 0.02))
 * cross-attend to an input x [B,N,Din] once, then run self-attention blocks:
 *   z = z0 + CrossAttn(LN_q(z0), LN_in(x))      q from the latents; k, v from x
 *   z = z + FFN(LN(z))
 *   z = EncoderBlock_j(z), j = 1..n_self_layers (transformer.h, bidirectional)
 *   out = LN_out(z)                              [B,M,D]
 * The cross-attention costs O(M*N) (never N^2), so N can be large. With no input
 * positions the output does not depend on the order of the N inputs. An input
 * key padding mask [B,N] (1 = real) leaves padded inputs out of the attention.
 * Residuals are pre-LN as written (block.post_ln 1 places them post-LN instead,
 * through qkv_residual); the input norm LN_in is always applied.
 *
 * Decoder (Perceiver IO): K learned output queries [K,Dq] ("<name>.queries")
 * cross-attend to the latents [B,M,D]:
 *   y = q0 + CrossAttn(LN_q(q0), LN_lat(z));   y = y + FFN(LN(y));
 *   out = Linear(LN_out(y))                      [B,K,Dout]
 *
 * Parameter names: "<name>.latents", "<name>.ln_in", "<name>.ln_q",
 * "<name>.cross_attn.w{q,k,v,o}", "<name>.ln_ffn", "<name>.ffn.fc{1,2}",
 * "<name>.self.<j>.*" (encoder blocks), "<name>.ln_out"; the decoder has
 * "<name>.queries", "<name>.ln_q", "<name>.ln_latent", "<name>.cross_attn.*",
 * "<name>.ln_ffn", "<name>.ffn.*", "<name>.ln_out", "<name>.out".
 */
#ifndef QKV_PERCEIVER_H
#define QKV_PERCEIVER_H

#include "layers/linear.h"
#include "layers/norm.h"
#include "layers/transformer.h"

#define QKV_PERCEIVER_MAX_LAYERS 8

/* Learned queries [n,D], shared by the batch, that read a context [B,T,Dctx]:
 *   y = q + CrossAttn(LN_q(q), LN_ctx(context)),  y = y + FFN(LN_ffn(y)).
 * The part the Perceiver block and the Perceiver IO decoder have in common. */
typedef struct qkv_query_reader {
    qkv_tensor *queries;      /* [n,D]: the block's "latents", the decoder's "queries" */
    qkv_ln ln_q, ln_ctx, ln_ffn;
    qkv_mha cross_attn;       /* d_model D, kdim = vdim = Dctx */
    qkv_ffn ffn;
} qkv_query_reader;

typedef struct qkv_perceiver_config {
    qkv_block_config block;   /* latent width D = block.d_model, heads, d_ff, ... */
    int d_input;              /* Din */
    int n_latents;            /* M */
    int n_self_layers;        /* 0 .. QKV_PERCEIVER_MAX_LAYERS latent self-attention blocks */
} qkv_perceiver_config;

typedef struct qkv_perceiver {
    qkv_perceiver_config cfg;
    qkv_query_reader read;    /* queries "latents" [M,D]; ln_ctx "ln_in"; context width Din */
    qkv_ln ln_out;
    qkv_encoder_block self[QKV_PERCEIVER_MAX_LAYERS];
} qkv_perceiver;

void qkv_perceiver_init(qkv_perceiver *p, qkv_params *params, const char *name, const qkv_perceiver_config *cfg,
                        qkv_rng *rng);
/* x [B,N,Din] -> latents [B,M,D]; key_padding [B,N] (1 = real) or NULL. */
qkv_tensor *qkv_perceiver_forward(qkv_tape *tape, const qkv_perceiver *p, qkv_tensor *x,
                                  const qkv_tensor *key_padding);

typedef struct qkv_perceiver_decoder_config {
    qkv_block_config block;   /* query width Dq = block.d_model, heads, d_ff, ... */
    int d_latent;             /* D of the latents read */
    int n_queries;            /* K */
    int d_out;                /* Dout */
} qkv_perceiver_decoder_config;

typedef struct qkv_perceiver_decoder {
    qkv_perceiver_decoder_config cfg;
    qkv_query_reader read;    /* queries "queries" [K,Dq]; ln_ctx "ln_latent"; context width D */
    qkv_ln ln_out;
    qkv_linear out;           /* Dq -> Dout */
} qkv_perceiver_decoder;

void qkv_perceiver_decoder_init(qkv_perceiver_decoder *dec, qkv_params *params, const char *name,
                                const qkv_perceiver_decoder_config *cfg, qkv_rng *rng);
/* latents [B,M,D] -> [B,K,Dout]. */
qkv_tensor *qkv_perceiver_decoder_forward(qkv_tape *tape, const qkv_perceiver_decoder *dec, qkv_tensor *latents);

#endif
