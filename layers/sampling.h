/* sampling.h — from one row of logits to the next token: greedy, temperature,
 * top-k and top-p (nucleus) sampling.
 *
 * The distribution is p = softmax(logits / T), computed in double with the
 * maximum subtracted (z_i = logit_i / T, w_i = exp(z_i - max z), p_i = w_i / sum w).
 * Tokens rank by decreasing logit, equal logits by lower index; softmax keeps that
 * order, so this is also the order of decreasing probability. Top-k keeps the first
 * k tokens of the ranking; top-p then keeps the shortest prefix of what is left whose
 * probabilities, renormalized over the top-k tokens and summed in rank order in
 * double, reach top_p. The kept weights are renormalized to sum to 1. top_p is read
 * as the decimal the float stands for: a sum reaches it from the midpoint between
 * top_p and the float below it on, so ten tokens of 0.1 reach 0.3f (0.300000012)
 * with three, not four.
 *
 * A draw takes exactly one u = qkv_rng_uniform(rng) (none when greedy) and returns
 * the first kept token, in index order, whose cumulative probability exceeds u:
 * the same logits, settings and rng state give the same token, on any thread count.
 *
 * Logits may hold -inf (a token that can never be drawn); NaN, +inf, or a row of
 * only -inf is a programmer error, as are settings outside qkv_sampling_check's
 * ranges. Nothing here records gradients.
 */
#ifndef QKV_SAMPLING_H
#define QKV_SAMPLING_H

#include "core/rng.h"

typedef struct qkv_sampling {
    float temperature;   /* 0: greedy (argmax, ties: the lowest index); else logits / temperature */
    int top_k;           /* 0: off; else keep the k largest (ties at the k-th: keep the lower indices, exactly k kept) */
    float top_p;         /* 1: off; else the nucleus: the smallest set of most probable tokens (by decreasing
                            probability, ties by lower index) whose probability sums to >= top_p, after top-k; so 0
                            keeps the likeliest token alone (greedy), as 0.0001 does: no jump at 0 */
} qkv_sampling;

/* 0, or -1 with a one-line qkv_last_error() naming the setting: temperature in [0, 100], top_k >= 0, top_p in [0, 1]
 * (for flags and checkpoints). */
int qkv_sampling_check(const qkv_sampling *s);

/* The probabilities the sampler draws from, written to probs[0..n) (zeros outside the kept set; they sum to 1, computed
 * in double and stored as float): softmax(logits / T) restricted to top-k then top-p and renormalized. Greedy: a one-hot.
 * scratch: n ints of work space (or NULL to allocate). For tests, and for explaining. */
void qkv_sampling_probs(const qkv_sampling *s, const float *logits, int n, float *probs, int *scratch);

/* The next token: greedy, or a draw u = qkv_rng_uniform(rng) (exactly one rng draw per call when not greedy, none when
 * greedy, so a seed fixes the whole text) against the cumulative kept probabilities in index order. Same inputs, same
 * token: no dependence on threads. */
int qkv_sample_token(const qkv_sampling *s, const float *logits, int n, qkv_rng *rng, int *scratch);

#endif
