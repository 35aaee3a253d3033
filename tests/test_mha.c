/* test_mha.c — multi-head attention, positions as a module, blocks, stacks and
 * graph attention: K/V reuse, the decoding cache, and the symmetries the theory
 * promises (permutation equivariance and invariance, causality). */
#include "tests/test_util.h"

#include <stdlib.h>

#define B 2
#define T 5
#define D 8

/* A [b,t,d] input on the tape, N(0, 1) from seed. */
static qkv_tensor *random_input(qkv_tape *tape, int b, int t, int d, uint64_t seed) {
    return random_tape_tensor(tape, 3, (int[]){b, t, d}, seed);
}

/* Rows of x [B,T,d] reordered: out[b][i] = x[b][perm[i]]. */
static qkv_tensor *permute_rows(qkv_tape *tape, const qkv_tensor *x, const int *perm) {
    qkv_tensor *out = qkv_tape_tensor(tape, x->ndim, x->shape);
    int t = x->shape[1], d = x->shape[2];
    for (int b = 0; b < x->shape[0]; b++)
        for (int i = 0; i < t; i++)
            memcpy(out->data + ((size_t)b * t + i) * d, x->data + ((size_t)b * t + perm[i]) * d,
                   (size_t)d * sizeof(float));
    return out;
}

static double max_abs(const qkv_tensor *x) {
    double m = 0;
    for (size_t i = 0; i < x->size; i++) m = larger(m, fabs(x->data[i]));
    return m;
}

/* max |a - b| / max |b| */
static double relative_difference(const qkv_tensor *a, const qkv_tensor *b) {
    double m = 0;
    for (size_t i = 0; i < a->size; i++) m = larger(m, fabs((double)a->data[i] - b->data[i]));
    return m / max_abs(b);
}

static const int perm5[T] = {3, 0, 4, 1, 2};

START_TEST(heads_must_divide_width) {
    qkv_params params = {0};
    qkv_rng rng = qkv_rng_make(1);
    qkv_mha mha;
    EXPECT_FATAL(qkv_mha_init(&mha, &params, "attn", 10, 3, 0, 0, 1, &rng), "3 heads do not divide d_model 10");
    qkv_params_free(&params);
}
END_TEST

START_TEST(cross_attention_kv_reuse_and_widths) {
    qkv_params params = {0};
    qkv_rng rng = qkv_rng_make(2);
    qkv_mha mha;
    qkv_mha_init(&mha, &params, "cross", D, 2, 6, 6, 1, &rng);
    ck_assert_int_eq(mha.wk.weight->shape[1], 6);
    qkv_tape *tape = qkv_tape_create(1);
    qkv_tensor *memory = random_input(tape, B, 7, 6, 3);
    qkv_mha_kv kv = qkv_mha_project_kv(tape, &mha, memory, NULL, NULL);
    for (int step = 0; step < 3; step++) {
        qkv_tensor *x = random_input(tape, B, 1 + step, D, 10 + (uint64_t)step);
        qkv_tensor *reused = qkv_mha_attend(tape, &mha, x, &kv, NULL);
        qkv_tensor *fresh = qkv_mha_forward(tape, &mha, x, memory, NULL);
        ck_assert_int_eq(reused->shape[1], 1 + step);
        ck_assert_int_eq(memcmp(reused->data, fresh->data, fresh->size * sizeof(float)), 0);
    }
    qkv_tensor *wrong = random_input(tape, B, 7, 5, 4);
    EXPECT_FATAL(qkv_mha_forward(tape, &mha, random_input(tape, B, 2, D, 5), wrong, NULL), "key context [2,7,5]");
    qkv_tape_free(tape);
    qkv_params_free(&params);
}
END_TEST

/* Decoding one position at a time with the cache equals the full causal pass. */
static void check_cache_matches_full_pass(const qkv_rope_opts *rope) {
    qkv_params params = {0};
    qkv_rng rng = qkv_rng_make(3);
    qkv_mha mha;
    qkv_mha_init(&mha, &params, "self", D, 2, 0, 0, 1, &rng);
    qkv_tape *tape = qkv_tape_create(1);
    qkv_tensor *x = random_input(tape, B, T, D, 7);
    qkv_mha_call call = {.causal = 1, .rope = rope};
    qkv_tensor *full = qkv_mha_forward(tape, &mha, x, NULL, &call);
    qkv_kv_cache cache;
    qkv_kv_cache_init(&cache, &mha, B, T);
    qkv_mha_call decode_call = {.rope = rope};
    /* positions 0..1 as one chunk, then one at a time */
    int t = 0;
    while (t < T) {
        int n = t == 0 ? 2 : 1;
        qkv_tensor *chunk = qkv_slice(tape, x, 1, t, t + n);
        qkv_tensor *y = qkv_mha_decode(tape, &mha, chunk, &cache, &decode_call);
        for (int b = 0; b < B; b++)
            for (int i = 0; i < n; i++)
                for (int c = 0; c < D; c++)
                    ck_assert_float_eq_tol(y->data[((size_t)b * n + i) * D + c],
                                           full->data[((size_t)b * T + t + i) * D + c], 1e-5f);
        t += n;
    }
    ck_assert_int_eq(cache.len, T);
    EXPECT_FATAL(qkv_mha_decode(tape, &mha, qkv_slice(tape, x, 1, 0, 1), &cache, &decode_call),
                 "exceed the cache's 5");
    qkv_kv_cache_free(&cache);
    qkv_tape_free(tape);
    qkv_params_free(&params);
}

START_TEST(kv_cache_decoding_equals_full_causal_pass) {
    check_cache_matches_full_pass(NULL);
    qkv_rope_opts rope = {0};
    check_cache_matches_full_pass(&rope);
}
END_TEST

/* An encoder stack of 2 pre-LN layers with the given positions. */
static void make_encoder(qkv_encoder *enc, qkv_params *params, qkv_pos_kind pos, int causal) {
    qkv_rng rng = qkv_rng_make(11);
    qkv_stack_config cfg = {.block = {.d_model = D, .n_heads = 2, .d_ff = 16, .activation = QKV_ACT_GELU},
                            .n_layers = 2, .positions = pos, .max_len = 16};
    qkv_encoder_init(enc, params, "enc", &cfg, causal, &rng);
    if (pos == QKV_POS_LEARNED) /* a visible table, not the small init */
        qkv_fill_normal(qkv_params_find(params, "enc.pos.table")->data, 16 * D, &rng, 0, 1);
}

/* Equivariance error max |f(PX) - P f(X)| / max |f(X)| of an encoder. */
static double encoder_equivariance_error(qkv_pos_kind pos, int causal, double *invariance) {
    qkv_params params = {0};
    qkv_encoder enc;
    make_encoder(&enc, &params, pos, causal);
    qkv_tape *tape = qkv_tape_create(1);
    qkv_tape_set_grad(tape, 0);
    qkv_tensor *x = random_input(tape, B, T, D, 21);
    qkv_tensor *fx = qkv_encoder_forward(tape, &enc, x, NULL);
    qkv_tensor *fpx = qkv_encoder_forward(tape, &enc, permute_rows(tape, x, perm5), NULL);
    double err = relative_difference(fpx, permute_rows(tape, fx, perm5));
    if (invariance)
        *invariance = relative_difference(qkv_mean(tape, fpx, 1, 0), qkv_mean(tape, fx, 1, 0));
    qkv_tape_free(tape);
    qkv_encoder_free(&enc);
    qkv_params_free(&params);
    return err;
}

START_TEST(encoder_without_positions_is_permutation_equivariant) {
    double invariance;
    double equivariance = encoder_equivariance_error(QKV_POS_NONE, 0, &invariance);
    ck_assert_msg(equivariance < 1e-5, "equivariance error %g", equivariance);
    ck_assert_msg(invariance < 1e-5, "mean-pool invariance error %g", invariance);
    /* RoPE and ALiBi depend on the distance between positions: they break it too. */
    ck_assert_double_gt(encoder_equivariance_error(QKV_POS_ROPE, 0, NULL), 1e-2);
    ck_assert_double_gt(encoder_equivariance_error(QKV_POS_ALIBI, 0, NULL), 1e-2);
}
END_TEST

START_TEST(absolute_positions_break_equivariance) {
    ck_assert_double_gt(encoder_equivariance_error(QKV_POS_LEARNED, 0, NULL), 1e-2);
    ck_assert_double_gt(encoder_equivariance_error(QKV_POS_SINUSOIDAL, 0, NULL), 1e-2);
}
END_TEST

START_TEST(causal_mask_breaks_equivariance_without_positions) {
    ck_assert_double_gt(encoder_equivariance_error(QKV_POS_NONE, 1, NULL), 1e-2);
    /* With all scores equal (q = 0), output t is the mean of values 0..t. */
    qkv_tape *tape = qkv_tape_create(1);
    qkv_tensor *q = qkv_tape_zeros(tape, 4, (int[]){1, 1, T, 4});
    qkv_tensor *k = qkv_tape_tensor(tape, 4, (int[]){1, 1, T, 4});
    qkv_tensor *v = qkv_tape_tensor(tape, 4, (int[]){1, 1, T, 4});
    qkv_rng rng = qkv_rng_make(5);
    qkv_fill_normal(k->data, k->size, &rng, 0, 1);
    qkv_fill_normal(v->data, v->size, &rng, 0, 1);
    qkv_attention_opts opts = {.causal = 1};
    qkv_tensor *out = qkv_attention(tape, q, k, v, &opts, NULL);
    for (int t = 0; t < T; t++)
        for (int c = 0; c < 4; c++) {
            double mean = 0;
            for (int j = 0; j <= t; j++) mean += v->data[j * 4 + c];
            ck_assert_double_lt(fabs(out->data[t * 4 + c] - mean / (t + 1)), 1e-6);
        }
    qkv_tape_free(tape);
}
END_TEST

START_TEST(cross_attention_invariant_in_context_equivariant_in_queries) {
    qkv_params params = {0};
    qkv_rng rng = qkv_rng_make(4);
    qkv_mha mha;
    qkv_mha_init(&mha, &params, "cross", D, 2, 6, 6, 1, &rng);
    qkv_tape *tape = qkv_tape_create(1);
    qkv_tensor *x = random_input(tape, B, T, D, 31), *z = random_input(tape, B, T, 6, 32);
    qkv_tensor *out = qkv_mha_forward(tape, &mha, x, z, NULL);
    qkv_tensor *context_permuted = qkv_mha_forward(tape, &mha, x, permute_rows(tape, z, perm5), NULL);
    ck_assert_double_lt(relative_difference(context_permuted, out), 1e-5);
    qkv_tensor *queries_permuted = qkv_mha_forward(tape, &mha, permute_rows(tape, x, perm5), z, NULL);
    ck_assert_double_lt(relative_difference(queries_permuted, permute_rows(tape, out, perm5)), 1e-5);
    qkv_tape_free(tape);
    qkv_params_free(&params);
}
END_TEST

START_TEST(causal_stack_last_token_changes_only_last_output) {
    qkv_pos_kind kinds[] = {QKV_POS_NONE, QKV_POS_LEARNED, QKV_POS_ROPE, QKV_POS_ALIBI};
    for (int k = 0; k < 4; k++) {
        qkv_params params = {0};
        qkv_encoder dec;
        make_encoder(&dec, &params, kinds[k], 1);
        qkv_tape *tape = qkv_tape_create(1);
        qkv_tensor *x = random_input(tape, 1, T, D, 41);
        qkv_tensor *x2 = qkv_tape_tensor(tape, 3, x->shape);
        memcpy(x2->data, x->data, x->size * sizeof(float));
        for (int c = 0; c < D; c++) x2->data[(T - 1) * D + c] += 1.0f;
        qkv_tensor *y = qkv_encoder_forward(tape, &dec, x, NULL), *y2 = qkv_encoder_forward(tape, &dec, x2, NULL);
        ck_assert_int_eq(memcmp(y->data, y2->data, (size_t)(T - 1) * D * sizeof(float)), 0);
        ck_assert_int_ne(memcmp(y->data + (T - 1) * D, y2->data + (T - 1) * D, D * sizeof(float)), 0);
        qkv_tape_free(tape);
        qkv_encoder_free(&dec);
        qkv_params_free(&params);
    }
}
END_TEST

START_TEST(learned_positions_refuse_longer_sequences) {
    qkv_params params = {0};
    qkv_encoder enc;
    make_encoder(&enc, &params, QKV_POS_LEARNED, 0);
    qkv_tape *tape = qkv_tape_create(1);
    EXPECT_FATAL(qkv_encoder_forward(tape, &enc, random_input(tape, 1, 17, D, 1), NULL),
                 "sequence length 17 exceeds the table's 16 rows");
    qkv_tape_free(tape);
    qkv_encoder_free(&enc);
    qkv_params_free(&params);
    ck_assert_int_eq(qkv_pos_kind_parse("rope"), QKV_POS_ROPE);
    ck_assert_int_eq(qkv_pos_kind_parse("bogus"), -1);
}
END_TEST

START_TEST(padding_does_not_change_real_positions) {
    /* A padded batch row gives the same outputs at its real positions as the
     * unpadded sequence alone. */
    qkv_params params = {0};
    qkv_encoder enc;
    make_encoder(&enc, &params, QKV_POS_NONE, 0);
    qkv_tape *tape = qkv_tape_create(1);
    qkv_tensor *x = random_input(tape, 1, T, D, 51);
    qkv_tensor *pad = qkv_tape_tensor(tape, 2, (int[]){1, T});
    qkv_tensor_fill(pad, 1.0f);
    pad->data[T - 1] = pad->data[T - 2] = 0.0f;
    qkv_tensor *padded = qkv_encoder_forward(tape, &enc, x, pad);
    qkv_tensor *alone = qkv_encoder_forward(tape, &enc, qkv_slice(tape, x, 1, 0, T - 2), NULL);
    for (size_t i = 0; i < alone->size; i++) ck_assert_float_eq_tol(padded->data[i], alone->data[i], 1e-5f);
    qkv_tape_free(tape);
    qkv_encoder_free(&enc);
    qkv_params_free(&params);
}
END_TEST

START_TEST(graph_attention_follows_edges) {
    qkv_params params = {0};
    qkv_rng rng = qkv_rng_make(6);
    qkv_graph_attention gat;
    qkv_graph_attention_init(&gat, &params, "gat", D, 2, &rng);
    qkv_tape *tape = qkv_tape_create(1);
    /* Path 0-1-2-3-4: node 0 hears only 0 and 1. */
    qkv_tensor *adj = qkv_tape_zeros(tape, 2, (int[]){T, T});
    for (int i = 0; i + 1 < T; i++) adj->data[i * T + i + 1] = adj->data[(i + 1) * T + i] = 1;
    qkv_tensor *x = random_input(tape, 1, T, D, 61), *weights = NULL;
    qkv_tensor *y = qkv_graph_attention_forward(tape, &gat, x, adj, &weights);
    ck_assert_ptr_nonnull(weights);
    for (int h = 0; h < 2; h++)
        for (int i = 0; i < T; i++)
            for (int j = 0; j < T; j++) {
                float w = weights->data[((size_t)h * T + i) * T + j];
                if (abs(i - j) > 1) ck_assert_float_eq(w, 0.0f);
                else ck_assert_float_gt(w, 0.0f);
            }
    qkv_tensor *x2 = qkv_tape_tensor(tape, 3, x->shape);
    memcpy(x2->data, x->data, x->size * sizeof(float));
    for (int c = 0; c < D; c++) x2->data[4 * D + c] += 3.0f; /* node 4 is not a neighbour of 0..2 */
    qkv_tensor *y2 = qkv_graph_attention_forward(tape, &gat, x2, adj, NULL);
    ck_assert_int_eq(memcmp(y->data, y2->data, 3 * D * sizeof(float)), 0);
    EXPECT_FATAL(qkv_graph_attention_forward(tape, &gat, x, qkv_tape_zeros(tape, 2, (int[]){4, 4}), NULL),
                 "adjacency [4,4] must be [5,5]");
    qkv_tape_free(tape);
    qkv_params_free(&params);
}
END_TEST

Suite *suite_mha(void) {
    Suite *s = suite_create("mha");
    TCase *tc = tcase_create("mha");
    tcase_set_timeout(tc, 0);
    tcase_add_test(tc, heads_must_divide_width);
    tcase_add_test(tc, cross_attention_kv_reuse_and_widths);
    tcase_add_test(tc, kv_cache_decoding_equals_full_causal_pass);
    tcase_add_test(tc, encoder_without_positions_is_permutation_equivariant);
    tcase_add_test(tc, absolute_positions_break_equivariance);
    tcase_add_test(tc, causal_mask_breaks_equivariance_without_positions);
    tcase_add_test(tc, cross_attention_invariant_in_context_equivariant_in_queries);
    tcase_add_test(tc, causal_stack_last_token_changes_only_last_output);
    tcase_add_test(tc, learned_positions_refuse_longer_sequences);
    tcase_add_test(tc, padding_does_not_change_real_positions);
    tcase_add_test(tc, graph_attention_follows_edges);
    suite_add_tcase(s, tc);
    return s;
}
