/* tokens.h — the attention step's token path (web/api.h's qkv_web_attention with
 * "tokens"): a tiny layer embeds the typed symbols and projects them into Q, K
 * and V, all on one tape of the library's ops:
 *     X = E[tokens] (+ P, the learned table or the sinusoidal one, when chosen),
 *     Q = X Wq,  K = X Wk,  V = X Wv          (self-attention: Tq = Tk = n)
 * E [vocab, width] is drawn N(0, 1) and Wq, Wk, Wv [width, width] N(0, 1/width)
 * from the seed (a learned table: layers/positions.h's init), and any of them
 * may be replaced by the caller's edited values ("weights": {"embed": rows, "wq":
 * ..., "wk": ..., "wv": ..., "pos": ...}). Q, K and V then go to the explained
 * step (train/experiments/explain.h) as typed ones would; its dQ, dK and dV come
 * back through this tape (three seeded backward passes), giving every weight's
 * gradient dL/dW.
 */
#ifndef QKV_WEB_TOKENS_H
#define QKV_WEB_TOKENS_H

#include "layers/positions.h"
#include "train/experiments/explain.h"
#include "web/wire.h"

#define QKV_WEB_MAX_VOCAB 64

typedef struct qkv_web_tokens {
    int n, vocab, width;
    int32_t ids[QKV_EXPLAIN_MAX_T];
    qkv_pos_kind added;            /* learned or sinusoidal: added to X; else none */
    qkv_params params;             /* embed, wq, wk, wv (and pos.table) */
    qkv_tensor *embed, *wq, *wk, *wv;
    qkv_positions positions;
    qkv_tape *tape;
    qkv_tensor *x, *q, *k, *v;
} qkv_web_tokens;

/* Reads "tokens", "vocab", "width" and "weights" of r and runs the forward: in's
 * Q, K, V and sizes set from it (pos: the scheme chosen; an added one leaves
 * in->pos none). 0, or -1 with qkv_last_error() (t freed). */
int qkv_web_tokens_forward(qkv_web_tokens *t, const qkv_web_request *r, qkv_pos_kind pos, unsigned long long seed,
                           qkv_explain_input *in);
/* The weights' gradients from the step's dQ, dK, dV. */
void qkv_web_tokens_backward(qkv_web_tokens *t, const qkv_explain_result *result);
/* ,"tokens":[..],"x":tensor,"weights":[{"name","shape","data","grad"},..] */
void qkv_web_tokens_write(const qkv_web_tokens *t, qkv_json_out *o);
void qkv_web_tokens_free(qkv_web_tokens *t);

#endif
