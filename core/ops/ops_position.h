/* positions.h — position encodings: fixed tables, the rotary op, ALiBi biases.
 *
 * Attention alone cannot tell token order apart; these helpers put position back.
 * Notation: t is a position, d a width, i a pair index, base defaults to 10000.
 *
 *  - Sinusoidal (Vaswani et al. 2017), a fixed table added to the embeddings:
 *        P[t][2i]   = sin((t + offset) * w_i),   w_i = base^(-2i/d),
 *        P[t][2i+1] = cos((t + offset) * w_i).
 *    An odd d ends with one sin column. Each pair turns by the fixed angle w_i per
 *    step, so P[t] . P[t+k] = sum_i cos(k w_i) depends on k only.
 *  - 2-D sinusoidal, for image patches numbered row by row: the first d/2 columns
 *    are the 1-D table of width d/2 at the patch's row, the last d/2 at its column.
 *  - Rotary (RoPE, Su et al., arXiv:2104.09864), an op on queries and keys: pair
 *    (a_i, b_i) of the first r dims of the row at position p is rotated by
 *        theta = p * base^(-2i/r),   (y_a, y_b) = (x_a cos - x_b sin, x_a sin + x_b cos),
 *    and the other d - r dims pass through. Since R(m)^T R(n) = R(n - m), the score
 *    (R_m q) . (R_n k) depends on the contents and the offset n - m only.
 *  - Learned positions are a parameter table [T_max, d] read with qkv_embedding and
 *    added with qkv_add by the layer; qkv_position_check_length guards its length.
 *  - ALiBi (Press et al. 2022): no vectors at all; each head h adds -m_h * distance
 *    to its attention scores, with a fixed geometric slope m_h per head.
 *
 * Angles are computed in double from the exact integer position and rounded to
 * float once, so tables and rotations are the same for any length (no table limit)
 * and bitwise the same for any thread count. Bad arguments stop through qkv_fatal
 * naming the helper ("rope", "sinusoidal", "alibi", ...) and the shapes.
 */
#ifndef QKV_POSITIONS_H
#define QKV_POSITIONS_H

#include <stdint.h>

#include "core/ops/tape.h"

/* out [T, d] = the sinusoidal table above for positions offset .. offset + T - 1.
 * T >= 0, d >= 1; base 0 means 10000, otherwise base > 0. */
void qkv_sinusoidal_table(float *out, int T, int d, int offset, float base);

/* out [rows * cols, d] (patch r * cols + c): columns [0, d/2) = the sinusoidal row r
 * of width d/2, columns [d/2, d) = the sinusoidal row c of width d/2. d must be a
 * multiple of 4 (each half is made of whole sin/cos pairs). base as above. */
void qkv_positions_2d(float *out, int rows, int cols, int d, float base);

typedef struct qkv_rope_opts {
    float base;              /* 0: 10000 */
    int split_halves;        /* 0: pairs (2i, 2i+1), as in RoFormer;
                              * 1: pairs (i, i + r/2), as in GPT-NeoX and HF Llama */
    float rotary_fraction;   /* 0 or 1: r = d; in (0, 1): r = fraction * d rounded down
                              * to even, and dims [r, d) pass through unchanged */
    int offset;              /* positions are offset + t ... */
    const int32_t *positions;/* ... or, if not NULL, positions[t] (T of them, e.g. the
                              * slots of a KV cache); offset must then be 0 */
    float keep_fraction;     /* p-RoPE (Barbero et al. 2025): 0 or 1: every pair turns; in
                              * (0, 1): only pairs i < floor(p * r/2), the highest
                              * frequencies, turn, and the lower ones keep angle 0 (the
                              * identity); their frequencies stay base^(-2i/r) */
    int positions_stride;    /* 0: positions[t] for every batch row; > 0: per-row
                              * positions, batch row b (x's first dim, x [B,T,d] or
                              * [B,H,T,d]) reads positions[b * positions_stride + t] */
} qkv_rope_opts;

/* Rotary position embedding of x [T, d], [B, T, d] or [B, H, T, d] (the last two
 * dims are always T and d); opts may be NULL (all defaults). Returns y of x's shape.
 * Stops if fewer than 2 or an odd number of dims would rotate (e.g. odd d with the
 * whole width), or on a fraction outside [0, 1], a keep_fraction that keeps no
 * pair turning, a base <= 0, offset together with positions, or per-row positions
 * for a 2-D x. Backward: the rotation is orthogonal, dx = R(-theta) dy. */
qkv_tensor *qkv_rope(qkv_tape *tape, qkv_tensor *x, const qkv_rope_opts *opts);

/* For learned position tables: returns T if 1 <= T <= T_max, otherwise stops with
 * "<what>: sequence length T exceeds the table's T_max rows" (nobody reads past the
 * table). what names the caller, e.g. "learned positions". */
int qkv_position_check_length(const char *what, int T, int T_max);

/* ALiBi slopes, the reference get_slopes rule: for n a power of two,
 *     slope_k = 2^(-8k/n),  k = 1..n        (8 heads: 1/2, 1/4, ..., 1/256);
 * otherwise, with m = 2^floor(log2 n): the m slopes for m heads, followed by the
 * slopes k = 1, 3, 5, ... (every other one, from the first) of the 2m-head
 * sequence, 2^(-8k/(2m)), until there are n. Examples:
 *     6 heads:  1/4, 1/16, 1/64, 1/256, 1/2, 1/8
 *     12 heads: 1/2, ..., 1/256, 2^-0.5, 2^-1.5, 2^-2.5, 2^-3.5
 * n_heads >= 1. */
void qkv_alibi_slopes(float *slopes, int n_heads);

/* bias [H, Tq, Tk] to add to the attention scores. Query i sits at the absolute
 * position qi = i + (Tk - Tq) (the queries are the last Tq of the Tk keys, as with a
 * KV cache; Tq == Tk for plain self-attention). Key j gets
 *     symmetric == 0 (causal):  bias = -slope_h * (qi - j)
 *     symmetric != 0:           bias = -slope_h * |qi - j|
 * In the causal form keys after the query (j > qi) get a positive bias: the causal
 * mask must remove them. H, Tq, Tk >= 1. */
void qkv_alibi_bias(float *bias, const float *slopes, int H, int Tq, int Tk, int symmetric);

/* FIRE's progressively interpolated distance (Li et al. 2023, arXiv 2310.04418,
 * its reference code), u [Tq, Tk], for queries at the last Tq of Tk positions
 * (qi = i + Tk - Tq) and keys j:
 *     L = |l_scale * l_init|,   psi(x) = log(|c x| + 1),
 *     u[i][j] = psi(qi - j) / (psi(max(qi, L)) + 1e-6)
 * The |.| of the reference makes u symmetric in qi - j: keys after the query (a
 * bidirectional stack) get the value of the same distance before it. c [1] and
 * l_scale [1] are parameters (learned in the reference: c from 0.1, l_scale from
 * 1 with l_init = 512 fixed); backward adds dL/dc and dL/dl_scale (through L only
 * where L > qi, the max's branch). Float32 arithmetic in the reference's order. */
qkv_tensor *qkv_fire_distance(qkv_tape *tape, qkv_tensor *c, qkv_tensor *l_scale, int tq, int tk, float l_init);
#define QKV_FIRE_EPS 1e-6f

#endif
