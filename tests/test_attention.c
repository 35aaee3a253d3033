/* test_attention.c — the fused attention op (core/ops/ops_attention.c): a worked
 * example, agreement with the same computation composed from primitive ops
 * (matmul, scale, add, softmax), fully masked rows, huge logits, causal decoding
 * with a cache, returned weights, gradient accumulation, error paths and thread
 * independence. */
#include "tests/test_util.h"

#include "core/ops/attention.h"

#include <stdlib.h>

/* ---- helpers ------------------------------------------------------------------- */

/* The q, k, v and optional bias of one problem, with gradients. */
typedef struct problem {
    qkv_tensor *q, *k, *v, *bias;
} problem;

static problem make_problem(uint64_t seed, int B, int H, int Tq, int Tk, int dk, int dv,
                            int bias_ndim, const int *bias_shape) {
    qkv_rng rng = qkv_rng_make(seed);
    problem p;
    p.q = random_tensor_from(&rng, 4, (const int[]){B, H, Tq, dk}, 1);
    p.k = random_tensor_from(&rng, 4, (const int[]){B, H, Tk, dk}, 1);
    p.v = random_tensor_from(&rng, 4, (const int[]){B, H, Tk, dv}, 1);
    p.bias = bias_shape ? random_tensor_from(&rng, bias_ndim, bias_shape, 1) : NULL;
    return p;
}

static void problem_zero_grad(problem *p) {
    qkv_tensor_zero_grad(p->q);
    qkv_tensor_zero_grad(p->k);
    qkv_tensor_zero_grad(p->v);
    if (p->bias) qkv_tensor_zero_grad(p->bias);
}

static void problem_free(problem *p) {
    qkv_tensor_free(p->q);
    qkv_tensor_free(p->k);
    qkv_tensor_free(p->v);
    qkv_tensor_free(p->bias);
}

/* Forward, then backward seeded with fixed random weights; returns the output. */
static qkv_tensor *run_fused(qkv_tape *tape, problem *p, qkv_attention_opts opts) {
    opts.bias = p->bias;
    qkv_tensor *out = qkv_attention(tape, p->q, p->k, p->v, &opts, NULL);
    backward_random(tape, out, 99);
    return out;
}

/* Whether query i of (b,h) may attend to key j, spelled out independently. */
static int allowed(const qkv_attention_opts *o, int B, int H, int Tq, int Tk, int b, int h, int i, int j) {
    (void)B;
    if (o->causal && j - i > Tk - Tq) return 0;
    if (o->key_padding && o->key_padding->data[b * Tk + j] == 0.0f) return 0;
    if (o->keep) {
        size_t at = o->keep->ndim == 2 ? (size_t)i * Tk + j : (((size_t)b * H + h) * Tq + i) * Tk + j;
        if (o->keep->data[at] == 0.0f) return 0;
    }
    return 1;
}

/* softmax(scale Q K^T + bias + M) V from primitive ops, M = 0 or -1e9 (no -inf). */
static qkv_tensor *composed_attention(qkv_tape *tape, problem *p, const qkv_attention_opts *o) {
    int B = p->q->shape[0], H = p->q->shape[1], Tq = p->q->shape[2], Tk = p->k->shape[2];
    float scale = o->scale != 0.0f ? o->scale : 1.0f / sqrtf((float)p->q->shape[3]);
    qkv_tensor *s = qkv_scale(tape, qkv_matmul(tape, p->q, p->k, 0, 1), scale);
    if (p->bias) s = qkv_add(tape, s, p->bias);
    qkv_tensor *mask = qkv_tape_tensor(tape, 4, (const int[]){B, H, Tq, Tk});
    size_t at = 0;
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++)
            for (int i = 0; i < Tq; i++)
                for (int j = 0; j < Tk; j++)
                    mask->data[at++] = allowed(o, B, H, Tq, Tk, b, h, i, j) ? 0.0f : -1e9f;
    return qkv_matmul(tape, qkv_softmax(tape, qkv_add(tape, s, mask)), p->v, 0, 0);
}

/* ---- gradient checks and the worked example --------------------------------------- */

/* One query [1]; keys [0], [log 2], [log 3]; values [1,0], [0,2], [2,2]; scale 1:
 * scores 0, log 2, log 3 -> weights 1/6, 2/6, 3/6 -> out [7/6, 5/3]. */
START_TEST(attention_worked_example) {
    qkv_tape *tape = qkv_tape_create(1);
    qkv_tensor *q = tensor_of(4, (const int[]){1, 1, 1, 1}, (const float[]){1}, 0);
    qkv_tensor *k = tensor_of(4, (const int[]){1, 1, 3, 1}, (const float[]){0, logf(2.0f), logf(3.0f)}, 0);
    qkv_tensor *v = tensor_of(4, (const int[]){1, 1, 3, 2}, (const float[]){1, 0, 0, 2, 2, 2}, 0);
    qkv_tensor *w = NULL;
    qkv_attention_opts opts = {.scale = 1.0f, .weights = 1};
    qkv_tensor *out = qkv_attention(tape, q, k, v, &opts, &w);
    assert_shape(out, 4, (const int[]){1, 1, 1, 2});
    ck_assert_ptr_nonnull(w);
    ck_assert_close(w->data[0], 1.0 / 6, 1e-6);
    ck_assert_close(w->data[1], 2.0 / 6, 1e-6);
    ck_assert_close(w->data[2], 3.0 / 6, 1e-6);
    ck_assert_close(out->data[0], 7.0 / 6, 1e-6);
    ck_assert_close(out->data[1], 5.0 / 3, 1e-6);
    ck_assert_int_eq(tape->n_nodes, 0); /* nothing requires a gradient */
    qkv_tensor_free(q);
    qkv_tensor_free(k);
    qkv_tensor_free(v);
    qkv_tape_free(tape);
}
END_TEST

/* ---- agreement with the composed computation --------------------------------------- */

static void compare_with_composed(int B, int H, int Tq, int Tk, int dk, int dv, int bias_ndim,
                                  const int *bias_shape, qkv_attention_opts opts) {
    qkv_tape *tape = qkv_tape_create(1);
    problem p = make_problem(7, B, H, Tq, Tk, dk, dv, bias_ndim, bias_shape);
    qkv_tensor *fused = run_fused(tape, &p, opts);
    size_t out_size = fused->size; /* fused dies at the reset below */
    float *fused_out = copy_floats(fused->data, out_size);
    qkv_tensor *fused_grads[4] = {p.q, p.k, p.v, p.bias};
    float *grads[4] = {0};
    for (int i = 0; i < 4; i++)
        if (fused_grads[i]) grads[i] = copy_floats(fused_grads[i]->grad, fused_grads[i]->size);

    qkv_tape_reset(tape);
    problem_zero_grad(&p);
    qkv_tensor *ref = composed_attention(tape, &p, &opts);
    backward_random(tape, ref, 99);

    ck_assert_uint_eq(ref->size, out_size);
    assert_floats_close(fused_out, ref->data, ref->size, 1e-5, "out");
    const char *names[4] = {"dq", "dk", "dv", "dbias"};
    for (int i = 0; i < 4; i++) {
        if (!fused_grads[i]) continue;
        assert_floats_close(grads[i], fused_grads[i]->grad, fused_grads[i]->size, 1e-4, names[i]);
        free(grads[i]);
    }
    free(fused_out);
    problem_free(&p);
    qkv_tape_free(tape);
}

/* ops_attention.c's test hook: 1 forces 64 x 64 blocks and P recomputed in backward. */
extern int qkv__attention_square_blocks;

/* Output and every gradient of one problem, with the given blocking. */
static float *run_blocked(int square, int B, int H, int Tq, int Tk, int d, const int *bias_shape,
                          qkv_attention_opts opts, size_t *n) {
    qkv__attention_square_blocks = square;
    qkv_tape *tape = qkv_tape_create(1);
    problem p = make_problem(11, B, H, Tq, Tk, d, d, bias_shape ? 4 : 0, bias_shape);
    qkv_tensor *out = run_fused(tape, &p, opts);
    qkv_tensor *parts[5] = {out, p.q, p.k, p.v, p.bias};
    *n = 0;
    for (int i = 0; i < 5; i++) *n += parts[i] ? parts[i]->size : 0;
    float *all = malloc(*n * sizeof *all), *at = all;
    for (int i = 0; i < 5; i++) {
        if (!parts[i]) continue;
        memcpy(at, i == 0 ? parts[i]->data : parts[i]->grad, parts[i]->size * sizeof(float));
        at += parts[i]->size;
    }
    problem_free(&p);
    qkv_tape_free(tape);
    qkv__attention_square_blocks = 0;
    return all;
}

/* Short sequences take blocks longer than 64 on their long side (a few keys:
 * tall; a few queries: wide), and with at most 64 keys the backward takes the
 * forward's P~ instead of recomputing it: the same bits as 64 x 64 blocks with P
 * recomputed, under every mask and a learned bias, for the Set Transformer's,
 * the reversal's and the text model's shapes and edge sizes; 130 x 100 causal
 * skips masked key blocks with S kept. */
START_TEST(attention_short_blocks_equal_square_blocks) {
    const int shapes[][3] = {{256, 16, 32}, {16, 256, 32}, {200, 10, 16}, {7, 300, 8}, {1, 256, 16},
                             {100, 64, 16}, {64, 100, 8}, {130, 3, 4}, {16, 16, 16}, {64, 64, 32},
                             {5, 33, 8}, {40, 7, 12}, {130, 100, 8}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        int Tq = shapes[s][0], Tk = shapes[s][1], d = shapes[s][2], B = 2, H = 2;
        float *padding = malloc((size_t)B * Tk * sizeof *padding);
        for (int i = 0; i < B * Tk; i++) padding[i] = i % Tk == 0 || i % 5 != 2;
        qkv_tensor *padding_t = tensor_of(2, (const int[]){B, Tk}, padding, 0);
        const int bias_shape[4] = {1, H, Tq, Tk};
        qkv_attention_opts cases[3] = {{0}, {.causal = 1}, {.key_padding = padding_t, .scale = 0.3f}};
        for (int c = 0; c < 3; c++)
            for (int with_bias = 0; with_bias <= 1; with_bias++) {
                size_t n_square, n_short;
                const int *bias = with_bias ? bias_shape : NULL;
                float *square = run_blocked(1, B, H, Tq, Tk, d, bias, cases[c], &n_square);
                float *tall_or_wide = run_blocked(0, B, H, Tq, Tk, d, bias, cases[c], &n_short);
                ck_assert_uint_eq(n_square, n_short);
                ck_assert_msg(memcmp(square, tall_or_wide, n_square * sizeof(float)) == 0,
                              "Tq %d Tk %d d %d case %d bias %d: short blocks differ from 64 x 64", Tq, Tk, d, c,
                              with_bias);
                free(square);
                free(tall_or_wide);
            }
        qkv_tensor_free(padding_t);
        free(padding);
    }
}
END_TEST

START_TEST(attention_matches_composed_ops) {
    /* No mask, default scale. */
    compare_with_composed(2, 2, 5, 5, 8, 8, 0, NULL, (qkv_attention_opts){0});
    /* Every mask at once, a learned bias, Tq < Tk, dk != dv, a custom scale. Key 0
     * is always allowed, so no row is fully masked (there the composed softmax is
     * uniform instead of 0). */
    const int B = 2, H = 3, Tq = 5, Tk = 7;
    float padding[2 * 7] = {1, 1, 0, 1, 1, 0, 1,   1, 0, 1, 1, 1, 1, 0};
    float keep[2 * 3 * 5 * 7];
    qkv_rng rng = qkv_rng_make(5);
    for (int i = 0; i < B * H * Tq * Tk; i++) keep[i] = (i % Tk == 0 || qkv_rng_uniform(&rng) < 0.7f);
    qkv_tensor *padding_t = tensor_of(2, (const int[]){B, Tk}, padding, 0);
    qkv_tensor *keep_t = tensor_of(4, (const int[]){B, H, Tq, Tk}, keep, 0);
    qkv_attention_opts opts = {.scale = 0.5f, .causal = 1, .key_padding = padding_t, .keep = keep_t};
    compare_with_composed(B, H, Tq, Tk, 6, 4, 4, (const int[]){1, H, Tq, Tk}, opts);
    compare_with_composed(B, H, Tq, Tk, 6, 4, 2, (const int[]){Tq, 1}, opts);
    qkv_tensor_free(padding_t);
    qkv_tensor_free(keep_t);
}
END_TEST

/* Sequences longer than one 64 x 64 block: the online softmax across key blocks,
 * partial edge blocks, causal block skipping with Tq != Tk, and both block kernels
 * (plain loops for small d, the gemm kernel for d = 64). */
START_TEST(attention_long_sequences_match_composed_ops) {
    compare_with_composed(1, 2, 150, 150, 8, 8, 0, NULL, (qkv_attention_opts){.causal = 1});
    compare_with_composed(1, 1, 70, 200, 64, 40, 0, NULL, (qkv_attention_opts){.causal = 1});
    compare_with_composed(2, 1, 130, 65, 64, 64, 0, NULL, (qkv_attention_opts){0});
    const int B = 1, H = 2, Tq = 97, Tk = 131;
    float padding[131], keep[97 * 131];
    qkv_rng rng = qkv_rng_make(6);
    for (int j = 0; j < Tk; j++) padding[j] = j == 0 || qkv_rng_uniform(&rng) < 0.8f;
    for (int i = 0; i < Tq * Tk; i++) keep[i] = (i % Tk == 0 || qkv_rng_uniform(&rng) < 0.7f);
    qkv_tensor *padding_t = tensor_of(2, (const int[]){B, Tk}, padding, 0);
    qkv_tensor *keep_t = tensor_of(2, (const int[]){Tq, Tk}, keep, 0);
    qkv_attention_opts opts = {.scale = 0.3f, .causal = 1, .key_padding = padding_t, .keep = keep_t};
    compare_with_composed(B, H, Tq, Tk, 16, 24, 3, (const int[]){H, Tq, Tk}, opts);
    compare_with_composed(B, H, Tq, Tk, 48, 64, 2, (const int[]){1, Tk}, opts);
    qkv_tensor_free(padding_t);
    qkv_tensor_free(keep_t);
}
END_TEST

/* ---- numerics ---------------------------------------------------------------------- */

/* keep row 2 is empty and batch 1 is all padding: those rows give exactly 0 and
 * pass exactly 0 gradient, with no NaN or Inf anywhere. */
START_TEST(attention_fully_masked_rows_are_zero) {
    const int B = 2, H = 2, Tq = 4, Tk = 3, d = 5;
    qkv_tape *tape = qkv_tape_create(1);
    problem p = make_problem(3, B, H, Tq, Tk, d, d, 2, (const int[]){Tq, Tk});
    qkv_tensor *keep = tensor_of(2, (const int[]){Tq, Tk},
                                 (const float[]){1, 1, 0, 0, 1, 1, 0, 0, 0, 1, 0, 1}, 0);
    qkv_tensor *padding = tensor_of(2, (const int[]){B, Tk}, (const float[]){1, 1, 1, 0, 0, 0}, 0);
    qkv_tensor *w = NULL;
    qkv_attention_opts opts = {.key_padding = padding, .keep = keep, .bias = p.bias, .weights = 1};
    qkv_tensor *out = qkv_attention(tape, p.q, p.k, p.v, &opts, &w);
    float *seed = malloc(out->size * sizeof(float));
    for (size_t i = 0; i < out->size; i++) seed[i] = 1.0f + (float)i;
    qkv_backward_seeded(tape, out, seed);
    free(seed);

    qkv_tensor *all[4] = {p.q, p.k, p.v, p.bias};
    for (int t = 0; t < 4; t++) assert_all_finite(all[t]->grad, all[t]->size, "grad");
    assert_all_finite(out->data, out->size, "out");
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++)
            for (int i = 0; i < Tq; i++) {
                int masked = b == 1 || i == 2;
                size_t row = ((size_t)b * H + h) * Tq + i;
                double wsum = 0.0;
                for (int j = 0; j < Tk; j++) wsum += w->data[row * Tk + j];
                ck_assert_close(wsum, masked ? 0.0 : 1.0, 1e-6);
                for (int c = 0; c < d && masked; c++) {
                    ck_assert_float_eq(out->data[row * d + c], 0.0f);
                    ck_assert_float_eq(p.q->grad[row * d + c], 0.0f);
                }
            }
    /* No query of batch 1 attends, so its keys and values get no gradient. */
    size_t half = p.k->size / 2;
    for (size_t i = half; i < p.k->size; i++) {
        ck_assert_float_eq(p.k->grad[i], 0.0f);
        ck_assert_float_eq(p.v->grad[i], 0.0f);
    }
    /* Bias row 2 only ever meets masked rows; masked keys get nothing either. */
    for (int j = 0; j < Tk; j++) ck_assert_float_eq(p.bias->grad[2 * Tk + j], 0.0f);
    ck_assert_float_eq(p.bias->grad[0 * Tk + 2], 0.0f);
    ck_assert_float_ne(p.bias->grad[0 * Tk + 0], 0.0f);
    problem_free(&p);
    qkv_tensor_free(keep);
    qkv_tensor_free(padding);
    qkv_tape_free(tape);
}
END_TEST

/* Logits of +-1e4 give one-hot attention, finite values and gradients. With the
 * larger keys masked, the row max is taken over the allowed keys only, so a row
 * whose only allowed logit is -1e4 still attends to it (weight 1, not NaN). */
START_TEST(attention_huge_logits_are_stable) {
    qkv_tape *tape = qkv_tape_create(1);
    qkv_tensor *q = tensor_of(4, (const int[]){1, 1, 2, 1}, (const float[]){100, -100}, 1);
    qkv_tensor *k = tensor_of(4, (const int[]){1, 1, 3, 1}, (const float[]){100, -100, 99}, 1);
    qkv_tensor *v = tensor_of(4, (const int[]){1, 1, 3, 2}, (const float[]){1, 2, 3, 4, 5, 6}, 1);
    /* Logits: row 0 = 1e4, -1e4, 9900; row 1 = -1e4, 1e4, -9900. */
    const float no_mask[3] = {1, 1, 1}, mask_first[3] = {0, 1, 1}, only_middle[3] = {0, 1, 0};
    const float *paddings[3] = {no_mask, mask_first, only_middle};
    const int expect_key[3][2] = {{0, 1}, {2, 1}, {1, 1}};
    for (int c = 0; c < 3; c++) {
        qkv_tape_reset(tape);
        qkv_tensor *padding = tensor_of(2, (const int[]){1, 3}, paddings[c], 0);
        qkv_tensor *w = NULL;
        qkv_attention_opts opts = {.scale = 1.0f, .key_padding = padding, .weights = 1};
        qkv_tensor *out = qkv_attention(tape, q, k, v, &opts, &w);
        for (int i = 0; i < 2; i++) {
            int key = expect_key[c][i];
            for (int j = 0; j < 3; j++) ck_assert_close(w->data[i * 3 + j], j == key ? 1.0 : 0.0, 1e-6);
            ck_assert_close(out->data[i * 2 + 0], v->data[key * 2 + 0], 1e-6);
            ck_assert_close(out->data[i * 2 + 1], v->data[key * 2 + 1], 1e-6);
        }
        qkv_backward_seeded(tape, out, (const float[]){1, -1, 0.5f, 2});
        assert_all_finite(q->grad, q->size, "dq");
        assert_all_finite(k->grad, k->size, "dk");
        assert_all_finite(v->grad, v->size, "dv");
        qkv_tensor_free(padding);
    }
    qkv_tensor_free(q);
    qkv_tensor_free(k);
    qkv_tensor_free(v);
    qkv_tape_free(tape);
}
END_TEST

/* Decoding with a cache: query t against the first t+1 keys (causal, Tq = 1,
 * Tk = t+1) equals row t of the full causal pass; so do the last two queries
 * against all keys (Tq = 2). */
START_TEST(attention_causal_offset_matches_full_pass) {
    const int B = 2, H = 2, T = 6, d = 8;
    qkv_tape *tape = qkv_tape_create(1);
    qkv_rng rng = qkv_rng_make(11);
    qkv_tensor *q = random_tensor_from(&rng, 4, (const int[]){B, H, T, d}, 0);
    qkv_tensor *k = random_tensor_from(&rng, 4, (const int[]){B, H, T, d}, 0);
    qkv_tensor *v = random_tensor_from(&rng, 4, (const int[]){B, H, T, d}, 0);
    qkv_attention_opts causal = {.causal = 1};
    qkv_tensor *full = qkv_attention(tape, q, k, v, &causal, NULL);
    for (int rows = 1; rows <= 2; rows++)
        for (int t = rows - 1; t < T; t++) {
            int len = t + 1; /* keys in the cache */
            qkv_tensor *qs = qkv_tape_tensor(tape, 4, (const int[]){B, H, rows, d});
            qkv_tensor *ks = qkv_tape_tensor(tape, 4, (const int[]){B, H, len, d});
            qkv_tensor *vs = qkv_tape_tensor(tape, 4, (const int[]){B, H, len, d});
            for (int bh = 0; bh < B * H; bh++) {
                memcpy(qs->data + (size_t)bh * rows * d, q->data + ((size_t)bh * T + t + 1 - rows) * d,
                       (size_t)rows * d * sizeof(float));
                memcpy(ks->data + (size_t)bh * len * d, k->data + (size_t)bh * T * d,
                       (size_t)len * d * sizeof(float));
                memcpy(vs->data + (size_t)bh * len * d, v->data + (size_t)bh * T * d,
                       (size_t)len * d * sizeof(float));
            }
            qkv_tensor *step = qkv_attention(tape, qs, ks, vs, &causal, NULL);
            for (int bh = 0; bh < B * H; bh++)
                assert_floats_close(step->data + (size_t)bh * rows * d,
                                    full->data + ((size_t)bh * T + t + 1 - rows) * d, (size_t)rows * d,
                                    1e-6, "decoded row");
        }
    qkv_tensor_free(q);
    qkv_tensor_free(k);
    qkv_tensor_free(v);
    qkv_tape_free(tape);
}
END_TEST

/* Per-head weights: rows sum to 1 (0 when fully masked) and out = weights V;
 * head-averaged weights are their mean over heads. */
START_TEST(attention_returned_weights) {
    const int B = 2, H = 3, Tq = 4, Tk = 5, d = 3;
    qkv_tape *tape = qkv_tape_create(1);
    problem p = make_problem(21, B, H, Tq, Tk, d, d, 0, NULL);
    qkv_tensor *padding = tensor_of(2, (const int[]){B, Tk},
                                    (const float[]){1, 1, 1, 0, 1,   0, 0, 1, 1, 0}, 0);
    qkv_tensor *w1 = NULL, *w2 = NULL;
    qkv_attention_opts opts = {.causal = 1, .key_padding = padding, .weights = 1};
    qkv_tensor *out = qkv_attention(tape, p.q, p.k, p.v, &opts, &w1);
    opts.weights = 2;
    qkv_attention(tape, p.q, p.k, p.v, &opts, &w2);
    assert_shape(w1, 4, (const int[]){B, H, Tq, Tk});
    assert_shape(w2, 3, (const int[]){B, Tq, Tk});
    ck_assert(!w1->requires_grad && !w2->requires_grad);
    for (int b = 0; b < B; b++)
        for (int i = 0; i < Tq; i++) {
            /* Causal offset Tk - Tq = 1: query i sees keys 0..i+1; batch 1's first
             * real key is 2, so its query 0 sees nothing. */
            int masked = b == 1 && i == 0;
            for (int h = 0; h < H; h++) {
                const float *row = w1->data + (((size_t)b * H + h) * Tq + i) * Tk;
                double sum = 0.0;
                for (int j = 0; j < Tk; j++) sum += row[j];
                ck_assert_close(sum, masked ? 0.0 : 1.0, 1e-6);
                for (int c = 0; c < d; c++) {
                    double expect = 0.0;
                    for (int j = 0; j < Tk; j++)
                        expect += row[j] * p.v->data[(((size_t)b * H + h) * Tk + j) * d + c];
                    ck_assert_close(out->data[(((size_t)b * H + h) * Tq + i) * d + c], expect, 1e-5);
                }
            }
            for (int j = 0; j < Tk; j++) {
                double mean = 0.0;
                for (int h = 0; h < H; h++) mean += w1->data[(((size_t)b * H + h) * Tq + i) * Tk + j];
                ck_assert_close(w2->data[((size_t)b * Tq + i) * Tk + j], mean / H, 1e-6);
            }
        }
    /* weights 0: *weights_out is cleared. */
    opts.weights = 0;
    qkv_attention(tape, p.q, p.k, p.v, &opts, &w1);
    ck_assert_ptr_null(w1);
    problem_free(&p);
    qkv_tensor_free(padding);
    qkv_tape_free(tape);
}
END_TEST

/* Backward adds into existing gradients; no-grad mode records nothing. */
START_TEST(attention_accumulates_and_respects_no_grad) {
    qkv_tape *tape = qkv_tape_create(1);
    problem p = make_problem(4, 1, 2, 3, 4, 2, 3, 1, (const int[]){4});
    run_fused(tape, &p, (qkv_attention_opts){.causal = 1});
    ck_assert_int_eq(tape->n_nodes, 1);
    ck_assert_str_eq(tape->nodes[0].op, "attention");
    qkv_tensor *all[4] = {p.q, p.k, p.v, p.bias};
    float *once[4];
    for (int t = 0; t < 4; t++) once[t] = copy_floats(all[t]->grad, all[t]->size);
    qkv_tape_reset(tape);
    run_fused(tape, &p, (qkv_attention_opts){.causal = 1});
    for (int t = 0; t < 4; t++) {
        for (size_t i = 0; i < all[t]->size; i++) once[t][i] *= 2.0f;
        assert_floats_close(all[t]->grad, once[t], all[t]->size, 1e-6, "twice the gradient");
        free(once[t]);
    }
    qkv_tape_reset(tape);
    qkv_tape_set_grad(tape, 0);
    qkv_tensor *out = qkv_attention(tape, p.q, p.k, p.v, NULL, NULL);
    ck_assert_int_eq(tape->n_nodes, 0);
    ck_assert(!out->requires_grad);
    problem_free(&p);
    qkv_tape_free(tape);
}
END_TEST

/* ---- errors ------------------------------------------------------------------------ */

START_TEST(attention_bad_arguments_stop) {
    qkv_tape *tape = qkv_tape_create(1);
    qkv_tensor *q = qkv_tensor_create(NULL, 4, (const int[]){2, 4, 5, 8}, 0);
    qkv_tensor *k = qkv_tensor_create(NULL, 4, (const int[]){2, 4, 6, 8}, 0);
    qkv_tensor *v = qkv_tensor_create(NULL, 4, (const int[]){2, 4, 6, 3}, 0);
    qkv_tensor *k7 = qkv_tensor_create(NULL, 4, (const int[]){2, 4, 6, 7}, 0);
    qkv_tensor *k_heads = qkv_tensor_create(NULL, 4, (const int[]){2, 3, 6, 8}, 0);
    qkv_tensor *v_short = qkv_tensor_create(NULL, 4, (const int[]){2, 4, 5, 3}, 0);
    qkv_tensor *q3 = qkv_tensor_create(NULL, 3, (const int[]){2, 5, 8}, 0);
    qkv_tensor *pad_bad = qkv_tensor_create(NULL, 2, (const int[]){2, 5}, 0);
    qkv_tensor *keep_bad = qkv_tensor_create(NULL, 2, (const int[]){5, 5}, 0);
    qkv_tensor *keep_bad4 = qkv_tensor_create(NULL, 4, (const int[]){2, 1, 5, 6}, 0);
    qkv_tensor *bias_bad = qkv_tensor_create(NULL, 3, (const int[]){3, 5, 6}, 0);
    qkv_tensor *w = NULL;

    EXPECT_FATAL(qkv_attention(tape, q, k7, v, NULL, NULL), "attention: q [2,4,5,8] k [2,4,6,7]: dk 8 != 7");
    EXPECT_FATAL(qkv_attention(tape, q3, k, v, NULL, NULL), "attention: q [2,5,8] k [2,4,6,8] v [2,4,6,3]: q, k and v must be 4-D");
    EXPECT_FATAL(qkv_attention(tape, q, k_heads, v, NULL, NULL), "attention: q [2,4,5,8] k [2,3,6,8]: B,H 2,4 != 2,3");
    EXPECT_FATAL(qkv_attention(tape, q, k, v_short, NULL, NULL), "attention: k [2,4,6,8] v [2,4,5,3]: B,H,Tk");
    EXPECT_FATAL(qkv_attention(tape, NULL, k, v, NULL, NULL), "attention: input tensor is NULL");
    EXPECT_FATAL(qkv_attention(tape, q, k, v, &(qkv_attention_opts){.key_padding = pad_bad}, NULL),
                 "attention: key_padding [2,5] must be [B,Tk] = [2,6]");
    EXPECT_FATAL(qkv_attention(tape, q, k, v, &(qkv_attention_opts){.keep = keep_bad}, NULL),
                 "attention: keep [5,5] must be [Tq,Tk] = [5,6] or [B,H,Tq,Tk] = [2,4,5,6]");
    EXPECT_FATAL(qkv_attention(tape, q, k, v, &(qkv_attention_opts){.keep = keep_bad4}, NULL),
                 "attention: keep [2,1,5,6]");
    EXPECT_FATAL(qkv_attention(tape, q, k, v, &(qkv_attention_opts){.bias = bias_bad}, NULL),
                 "attention: bias [3,5,6] does not broadcast to [B,H,Tq,Tk] = [2,4,5,6]");
    EXPECT_FATAL(qkv_attention(tape, q, k, v, &(qkv_attention_opts){.weights = 3}, &w),
                 "attention: opts->weights 3");
    EXPECT_FATAL(qkv_attention(tape, q, k, v, &(qkv_attention_opts){.weights = 1}, NULL),
                 "attention: opts->weights 1 asks for weights but weights_out is NULL");
    EXPECT_FATAL(qkv_attention(tape, q, k, v, &(qkv_attention_opts){.scale = NAN}, NULL),
                 "attention: scale nan is not finite");
    /* An activation used after its tape was reset. */
    qkv_tensor *stale = qkv_tape_zeros(tape, 4, (const int[]){2, 4, 5, 8});
    qkv_tape_reset(tape);
    EXPECT_FATAL(qkv_attention(tape, stale, k, v, NULL, NULL), "attention: activation");

    qkv_tensor *owned[] = {q, k, v, k7, k_heads, v_short, q3, pad_bad, keep_bad, keep_bad4, bias_bad};
    for (size_t i = 0; i < sizeof owned / sizeof owned[0]; i++) qkv_tensor_free(owned[i]);
    qkv_tape_free(tape);
}
END_TEST

/* ---- threads ----------------------------------------------------------------------- */

/* Forward and backward with every mask and a learned bias, on 1 and 2 threads:
 * bitwise the same output and gradients. */
enum { TI_B = 4, TI_H = 4, TI_T = 64, TI_D = 16, TI_QKV = TI_B * TI_H * TI_T * TI_D };

/* out gets the output, dq, dk, dv and dbias of one masked, biased problem. */
static void attention_forward_backward(float *out, void *padding) {
    qkv_tape *tape = qkv_tape_create(1);
    problem p = make_problem(8, TI_B, TI_H, TI_T, TI_T, TI_D, TI_D, 4, (const int[]){1, TI_H, TI_T, TI_T});
    qkv_tensor *y = run_fused(tape, &p, (qkv_attention_opts){.causal = 1, .key_padding = padding});
    out = append_floats(out, y->data, y->size);
    qkv_tensor *inputs[4] = {p.q, p.k, p.v, p.bias};
    for (int t = 0; t < 4; t++) out = append_floats(out, inputs[t]->grad, inputs[t]->size);
    problem_free(&p);
    qkv_tape_free(tape);
}

/* Several query and key blocks per head and d = 64 (the gemm kernel). */
enum { TL_B = 1, TL_H = 3, TL_T = 150, TL_D = 64, TL_QKV = TL_B * TL_H * TL_T * TL_D };

static void long_attention_forward_backward(float *out, void *unused) {
    (void)unused;
    qkv_tape *tape = qkv_tape_create(1);
    problem p = make_problem(9, TL_B, TL_H, TL_T, TL_T, TL_D, TL_D, 0, NULL);
    qkv_tensor *y = run_fused(tape, &p, (qkv_attention_opts){.causal = 1});
    out = append_floats(out, y->data, y->size);
    qkv_tensor *inputs[3] = {p.q, p.k, p.v};
    for (int t = 0; t < 3; t++) out = append_floats(out, inputs[t]->grad, inputs[t]->size);
    problem_free(&p);
    qkv_tape_free(tape);
}

START_TEST(attention_is_thread_independent) {
    qkv_tensor *padding = qkv_tensor_create(NULL, 2, (const int[]){TI_B, TI_T}, 0);
    for (int i = 0; i < TI_B * TI_T; i++) padding->data[i] = (i % TI_T) < TI_T - 5 * (i / TI_T);
    expect_same_for_1_and_2_threads(attention_forward_backward, padding,
                                    4 * (size_t)TI_QKV + (size_t)TI_H * TI_T * TI_T,
                                    "attention out, dq, dk, dv, dbias");
    expect_same_for_1_and_2_threads(long_attention_forward_backward, NULL, 4 * (size_t)TL_QKV,
                                    "long attention out, dq, dk, dv");
    qkv_tensor_free(padding);
}
END_TEST

/* heads_last reads q, k, v as [B,T,H,d] and writes out as [B,T,H,d]: the same
 * bits as the [B,H,T,d] op on the permuted tensors, forward and every gradient,
 * with a causal mask, padding, a learned bias and more than one key block. */
static void attention_layouts_run(int heads_last, const float *qkv_values[3], const int *dims,
                                  float *out, float *grads[3], float *dbias) {
    const int B = dims[0], H = dims[1], Tq = dims[2], Tk = dims[3], dk = dims[4], dv = dims[5];
    const int T[3] = {Tq, Tk, Tk}, d[3] = {dk, dk, dv};
    qkv_tape *tape = qkv_tape_create(1);
    qkv_tensor *in[3];
    for (int t = 0; t < 3; t++) {
        int shape[4] = {B, H, T[t], d[t]};
        if (heads_last) shape[1] = T[t], shape[2] = H;
        in[t] = tensor_of(4, shape, NULL, 1);
        /* element (b,h,i,e) of the [B,H,T,d] values, placed in this layout */
        for (int b = 0; b < B; b++)
            for (int h = 0; h < H; h++)
                for (int i = 0; i < T[t]; i++)
                    for (int e = 0; e < d[t]; e++) {
                        size_t from = (((size_t)b * H + h) * T[t] + i) * d[t] + e;
                        size_t to = heads_last ? (((size_t)b * T[t] + i) * H + h) * d[t] + e : from;
                        in[t]->data[to] = qkv_values[t][from];
                    }
    }
    qkv_tensor *bias = random_tensor(4, (const int[]){1, H, Tq, Tk}, 11, 1);
    float padding[2 * 70];
    for (int i = 0; i < B * Tk; i++) padding[i] = i % 7 != 3;
    qkv_tensor *padding_t = tensor_of(2, (const int[]){B, Tk}, padding, 0);
    qkv_attention_opts opts = {.causal = 1, .key_padding = padding_t, .bias = bias, .heads_last = heads_last};
    qkv_tensor *o = qkv_attention(tape, in[0], in[1], in[2], &opts, NULL);
    float *seed = malloc(o->size * sizeof(float)), *placed = malloc(o->size * sizeof(float));
    fill_normal_seeded(seed, o->size, 12, 0.0f, 1.0f); /* dL/dout in [B,H,Tq,dv] order */
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++)
            for (int i = 0; i < Tq; i++)
                for (int e = 0; e < dv; e++) {
                    size_t at = (((size_t)b * H + h) * Tq + i) * dv + e;
                    placed[heads_last ? (((size_t)b * Tq + i) * H + h) * dv + e : at] = seed[at];
                }
    qkv_backward_seeded(tape, o, placed);
    free(seed);
    free(placed);
    for (int b = 0; b < B; b++) /* out and the gradients back in [B,H,T,d] order */
        for (int h = 0; h < H; h++)
            for (int t = 0; t < 4; t++) {
                int rows = t == 0 ? Tq : T[t - 1], width = t == 0 ? dv : d[t - 1];
                const float *src = t == 0 ? o->data : in[t - 1]->grad;
                float *dst = t == 0 ? out : grads[t - 1];
                for (int i = 0; i < rows; i++)
                    for (int e = 0; e < width; e++) {
                        size_t at = (((size_t)b * H + h) * rows + i) * width + e;
                        size_t from = heads_last ? (((size_t)b * rows + i) * H + h) * width + e : at;
                        dst[at] = src[from];
                    }
            }
    memcpy(dbias, bias->grad, bias->size * sizeof(float));
    for (int t = 0; t < 3; t++) qkv_tensor_free(in[t]);
    qkv_tensor_free(bias);
    qkv_tensor_free(padding_t);
    qkv_tape_free(tape);
}

START_TEST(attention_heads_last_matches_heads_first) {
    const int dims[6] = {2, 3, 67, 70, 16, 8}, B = 2, H = 3, Tq = 67, Tk = 70;
    size_t nq = (size_t)B * H * Tq * 16, nk = (size_t)B * H * Tk * 16, nv = (size_t)B * H * Tk * 8;
    size_t no = (size_t)B * H * Tq * 8, nb = (size_t)H * Tq * Tk;
    float *values[3] = {malloc(nq * 4), malloc(nk * 4), malloc(nv * 4)};
    fill_normal_seeded(values[0], nq, 1, 0, 1);
    fill_normal_seeded(values[1], nk, 2, 0, 1);
    fill_normal_seeded(values[2], nv, 3, 0, 1);
    float *out[2], *grads[2][3], *dbias[2];
    for (int l = 0; l < 2; l++) {
        out[l] = malloc(no * 4);
        grads[l][0] = malloc(nq * 4), grads[l][1] = malloc(nk * 4), grads[l][2] = malloc(nv * 4);
        dbias[l] = malloc(nb * 4);
        attention_layouts_run(l, (const float **)values, dims, out[l], grads[l], dbias[l]);
    }
    ck_assert_msg(memcmp(out[0], out[1], no * 4) == 0, "heads_last: out differs");
    ck_assert_msg(memcmp(grads[0][1], grads[1][1], nk * 4) == 0, "heads_last: dk differs");
    ck_assert_msg(memcmp(grads[0][2], grads[1][2], nv * 4) == 0, "heads_last: dv differs");
    ck_assert_msg(memcmp(grads[0][0], grads[1][0], nq * 4) == 0, "heads_last: dq differs");
    ck_assert_msg(memcmp(dbias[0], dbias[1], nb * 4) == 0, "heads_last: dbias differs");
    for (int l = 0; l < 2; l++) {
        free(out[l]);
        free(dbias[l]);
        for (int t = 0; t < 3; t++) free(grads[l][t]);
    }
    for (int t = 0; t < 3; t++) free(values[t]);
}
END_TEST

/* Gradients into buffers no one has written yet: the first products assign
 * (attention_backward.c), and the forward's first key block assigns the output.
 * q, k and v as activations of the tape (one a reshaped view, as the heads of a
 * layer are) must give bitwise the gradients that parameters, whose buffers add,
 * get: one block or several a head, causal (a head's blocks partly skipped),
 * padding that empties a whole sequence, both layouts. And q = k = v, one
 * buffer for three gradients, the sum of the three taken apart. */
static void activation_grads(problem *p, qkv_attention_opts opts, int as_activations, float *grads[3]) {
    qkv_tape *tape = qkv_tape_create(1);
    problem_zero_grad(p);
    qkv_tensor *leaf[3] = {p->q, p->k, p->v}, *in[3] = {p->q, p->k, p->v};
    if (as_activations)
        for (int t = 0; t < 3; t++) {
            const int *shape = leaf[t]->shape, flat[3] = {shape[0], shape[1], shape[2] * shape[3]};
            qkv_tensor *a = qkv_scale(tape, qkv_reshape(tape, leaf[t], 3, flat), 1.0f);
            in[t] = qkv_reshape(tape, a, 4, shape);
        }
    qkv_tensor *out = qkv_attention(tape, in[0], in[1], in[2], &opts, NULL);
    backward_random(tape, out, 7);
    for (int t = 0; t < 3; t++) grads[t] = copy_floats(leaf[t]->grad, leaf[t]->size);
    qkv_tape_free(tape);
}

START_TEST(attention_new_gradient_buffers_are_assigned) {
    const int shapes[][3] = {{16, 16, 8}, {256, 16, 8}, {16, 256, 8}, {150, 150, 8}, {70, 200, 16}, {5, 7, 4}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        int Tq = shapes[s][0], Tk = shapes[s][1], d = shapes[s][2], B = 2, H = 2;
        float *padding = malloc((size_t)B * Tk * sizeof *padding);
        for (int i = 0; i < B * Tk; i++) padding[i] = i < Tk && i % 3 != 1; /* batch 1: all padding */
        qkv_tensor *padding_t = tensor_of(2, (const int[]){B, Tk}, padding, 0);
        qkv_attention_opts cases[4] = {{0}, {.causal = 1}, {.key_padding = padding_t}, {.causal = 1, .heads_last = 1}};
        for (int c = 0; c < 4; c++) {
            /* [B,H,T,d], or [B,T,H,d] with heads_last */
            int last = cases[c].heads_last, q_shape[4] = {B, last ? Tq : H, last ? H : Tq, d},
                kv_shape[4] = {B, last ? Tk : H, last ? H : Tk, d};
            qkv_rng rng = qkv_rng_make(100 + s);
            problem p = {random_tensor_from(&rng, 4, q_shape, 1), random_tensor_from(&rng, 4, kv_shape, 1),
                         random_tensor_from(&rng, 4, kv_shape, 1), NULL};
            float *want[3], *got[3];
            activation_grads(&p, cases[c], 0, want);
            activation_grads(&p, cases[c], 1, got);
            size_t sizes[3] = {p.q->size, p.k->size, p.v->size};
            for (int t = 0; t < 3; t++) {
                ck_assert_msg(memcmp(want[t], got[t], sizes[t] * sizeof(float)) == 0,
                              "Tq %d Tk %d case %d: gradient %d of activations differs", Tq, Tk, c, t);
                free(want[t]);
                free(got[t]);
            }
            problem_free(&p);
        }
        qkv_tensor_free(padding_t);
        free(padding);
    }
    /* q = k = v: one activation, its gradient the sum of the three */
    for (int causal = 0; causal <= 1; causal++) {
        problem p = make_problem(9, 2, 2, 20, 20, 8, 8, 0, NULL);
        memcpy(p.k->data, p.q->data, p.q->size * sizeof(float));
        memcpy(p.v->data, p.q->data, p.q->size * sizeof(float));
        qkv_attention_opts opts = {.causal = causal};
        float *apart[3];
        activation_grads(&p, opts, 1, apart);
        qkv_tape *tape = qkv_tape_create(1);
        problem_zero_grad(&p);
        qkv_tensor *x = qkv_scale(tape, p.q, 1.0f);
        backward_random(tape, qkv_attention(tape, x, x, x, &opts, NULL), 7);
        float sum[2 * 2 * 20 * 8];
        for (size_t i = 0; i < p.q->size; i++) sum[i] = apart[0][i] + apart[1][i] + apart[2][i];
        assert_floats_close(p.q->grad, sum, p.q->size, 1e-5, "q = k = v: the sum of the three gradients");
        for (int t = 0; t < 3; t++) free(apart[t]);
        qkv_tape_free(tape);
        problem_free(&p);
    }
}
END_TEST

/* Output and the three gradients of one forward and backward, copied out. */
static void output_and_grads(problem *p, qkv_attention_opts opts, float *got[4]) {
    qkv_tape *tape = qkv_tape_create(1);
    problem_zero_grad(p);
    qkv_tensor *out = qkv_attention(tape, p->q, p->k, p->v, &opts, NULL);
    got[0] = copy_floats(out->data, out->size);
    backward_random(tape, out, 11);
    qkv_tensor *leaf[3] = {p->q, p->k, p->v};
    for (int t = 0; t < 3; t++) got[1 + t] = copy_floats(leaf[t]->grad, leaf[t]->size);
    qkv_tape_free(tape);
}

/* The causal mask's products skip what its band makes zero or unneeded (block_product.h:
 * columns of S and dP past the diagonal, the zero terms of P V, dS K, P^T dO, dS^T Q);
 * the same mask as a keep matrix runs every product in full. Both give the same bits:
 * one key block and several, Tq = Tk, Tq < Tk and Tq > Tk (the first rows see no
 * key), one query, head widths of one and several vectors, both layouts. */
START_TEST(attention_causal_band_equals_keep_mask) {
    const int shapes[][3] = {{64, 64, 32}, {64, 64, 16}, {16, 16, 8}, {1, 64, 32}, {40, 100, 32},
                             {100, 40, 16}, {130, 130, 16}, {70, 200, 64}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        int Tq = shapes[s][0], Tk = shapes[s][1], d = shapes[s][2], B = 2, H = 2;
        float *keep = malloc((size_t)Tq * Tk * sizeof *keep);
        for (int i = 0; i < Tq; i++)
            for (int j = 0; j < Tk; j++) keep[i * Tk + j] = j - i <= Tk - Tq;
        qkv_tensor *keep_t = tensor_of(2, (const int[]){Tq, Tk}, keep, 0);
        for (int last = 0; last <= 1; last++) {
            int q_shape[4] = {B, last ? Tq : H, last ? H : Tq, d}, kv_shape[4] = {B, last ? Tk : H, last ? H : Tk, d};
            qkv_rng rng = qkv_rng_make(200 + s);
            problem p = {random_tensor_from(&rng, 4, q_shape, 1), random_tensor_from(&rng, 4, kv_shape, 1),
                         random_tensor_from(&rng, 4, kv_shape, 1), NULL};
            float *banded[4], *full[4];
            output_and_grads(&p, (qkv_attention_opts){.causal = 1, .heads_last = last}, banded);
            output_and_grads(&p, (qkv_attention_opts){.keep = keep_t, .heads_last = last}, full);
            size_t sizes[4] = {(size_t)B * H * Tq * d, p.q->size, p.k->size, p.v->size};
            static const char *what[4] = {"output", "dq", "dk", "dv"};
            for (int t = 0; t < 4; t++) {
                ck_assert_msg(memcmp(banded[t], full[t], sizes[t] * sizeof(float)) == 0,
                              "Tq %d Tk %d d %d heads_last %d: causal %s differs from the keep mask's", Tq, Tk,
                              d, last, what[t]);
                free(banded[t]);
                free(full[t]);
            }
            problem_free(&p);
        }
        qkv_tensor_free(keep_t);
        free(keep);
    }
}
END_TEST

Suite *suite_attention(void) {
    Suite *s = suite_create("attention");
    TCase *tc = tcase_create("attention");
    tcase_set_timeout(tc, 0);
    tcase_add_test(tc, attention_worked_example);
    tcase_add_test(tc, attention_short_blocks_equal_square_blocks);
    tcase_add_test(tc, attention_matches_composed_ops);
    tcase_add_test(tc, attention_long_sequences_match_composed_ops);
    tcase_add_test(tc, attention_causal_band_equals_keep_mask);
    tcase_add_test(tc, attention_fully_masked_rows_are_zero);
    tcase_add_test(tc, attention_huge_logits_are_stable);
    tcase_add_test(tc, attention_causal_offset_matches_full_pass);
    tcase_add_test(tc, attention_returned_weights);
    tcase_add_test(tc, attention_accumulates_and_respects_no_grad);
    tcase_add_test(tc, attention_bad_arguments_stop);
    tcase_add_test(tc, attention_is_thread_independent);
    tcase_add_test(tc, attention_heads_last_matches_heads_first);
    tcase_add_test(tc, attention_new_gradient_buffers_are_assigned);
    suite_add_tcase(s, tc);
    return s;
}
