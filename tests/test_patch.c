/* test_patch.c — images as tokens: patchify (core/ops/ops.h) and the patch embedding
 * (layers/patch.h). Patchify's layout by hand and its round trip; the
 * embedding equals a stride-P convolution; 2-D positions; errors naming the
 * shapes; 1 vs 2 threads. */
#include "tests/test_util.h"

#include <stdio.h>
#include <stdlib.h>

/* ---- patchify ---------------------------------------------------------------------- */

START_TEST(patchify_layout_by_hand) {
    qkv_tape *tape = qkv_tape_create(1);
    /* x[c, y, x] = 8c + 4y + x on a 2x4 image with 2 channels; P = 2: two patches. */
    qkv_tensor *x = ramp_tensor(4, (int[]){1, 2, 2, 4}, 0.0f, 1.0f, 0);
    qkv_tensor *t = qkv_patchify(tape, x, 2);
    assert_shape(t, 3, (int[]){1, 2, 8});
    const float two_channels[16] = {0, 1, 4, 5, 8, 9, 12, 13,     /* patch (0,0): c0 rows, then c1 rows */
                                    2, 3, 6, 7, 10, 11, 14, 15};  /* patch (0,1) */
    assert_values_near(t, two_channels, 16, 0);
    /* A 2x2 grid, one channel, two images: row-major patches. */
    qkv_tensor *y = ramp_tensor(4, (int[]){2, 1, 4, 4}, 0.0f, 1.0f, 0);
    qkv_tensor *u = qkv_patchify(tape, y, 2);
    assert_shape(u, 3, (int[]){2, 4, 4});
    const float grid[32] = {0, 1, 4, 5, 2, 3, 6, 7, 8, 9, 12, 13, 10, 11, 14, 15,
                            16, 17, 20, 21, 18, 19, 22, 23, 24, 25, 28, 29, 26, 27, 30, 31};
    assert_values_near(u, grid, 32, 0);
    /* P = 1: every pixel is a token of C values. */
    qkv_tensor *v = qkv_patchify(tape, x, 1);
    assert_shape(v, 3, (int[]){1, 8, 2});
    ck_assert_float_eq(qkv_at(v, 0, 5, 0, 0), 5.0f);
    ck_assert_float_eq(qkv_at(v, 0, 5, 1, 0), 13.0f);
    qkv_tensor_free(x);
    qkv_tensor_free(y);
    qkv_tape_free(tape);
}
END_TEST

START_TEST(patchify_round_trip) {
    qkv_tape *tape = qkv_tape_create(1);
    int shape[4] = {2, 3, 6, 4};
    /* Backward of patchify from all-ones gives ones: every pixel is in exactly one patch. */
    qkv_tensor *x = random_tensor(4, shape, 5, 1);
    backward_ones(tape, qkv_patchify(tape, x, 2));
    for (size_t i = 0; i < x->size; i++) ck_assert_float_eq(x->grad[i], 1.0f);
    /* Backward seeded with the tokens themselves gives back the image: a pure move. */
    qkv_tensor_zero_grad(x);
    qkv_tensor *t = qkv_patchify(tape, x, 2);
    qkv_backward_seeded(tape, t, t->data);
    assert_floats_near(x->grad, x->data, x->size, 0);
    qkv_tensor_free(x);
    qkv_tape_free(tape);
}
END_TEST

/* The patch embedding's linear layer is a stride-P convolution whose weight
 * [D, C, P, P] is proj.weight read C-major, then rows, then columns. */
START_TEST(patch_embedding_is_a_strided_convolution) {
    enum { B = 2, CH = 3, HH = 4, WW = 6, P = 2, DM = 5 };
    qkv_params params = {0};
    qkv_rng rng = qkv_rng_make(9);
    qkv_patch_embed pe;
    qkv_patch_config c = {.channels = CH, .patch = P, .d_model = DM, .positions = QKV_PATCH_POS_NONE};
    qkv_patch_embed_init(&pe, &params, "pe", &c, &rng);
    qkv_tape *tape = qkv_tape_create(1);
    qkv_tensor *img = random_tape_tensor(tape, 4, (int[]){B, CH, HH, WW}, 4);
    qkv_tensor *tokens = qkv_patch_embed_forward(tape, &pe, img, NULL);
    const float *w = pe.proj.weight->data, *bias = pe.proj.bias->data, *x = img->data;
    for (int b = 0; b < B; b++)
        for (int oy = 0; oy < HH / P; oy++)
            for (int ox = 0; ox < WW / P; ox++)
                for (int o = 0; o < DM; o++) {
                    double conv = bias[o];
                    for (int ch = 0; ch < CH; ch++)
                        for (int i = 0; i < P; i++)
                            for (int j = 0; j < P; j++)
                                conv += (double)w[((o * CH + ch) * P + i) * P + j] *
                                        x[((b * CH + ch) * HH + oy * P + i) * WW + ox * P + j];
                    ck_assert_float_eq_tol(qkv_at(tokens, b, oy * (WW / P) + ox, o, 0), (float)conv, 1e-5f);
                }
    qkv_tape_free(tape);
    qkv_params_free(&params);
}
END_TEST

/* Patchify forward and backward at a size where its loop runs on two threads. */
static void run_patchify(float *out, void *ctx) {
    (void)ctx;
    qkv_tape *tape = qkv_tape_create(1);
    qkv_tensor *x = random_tensor(4, (int[]){4, 3, 128, 96}, 6, 1);
    qkv_tensor *t = qkv_patchify(tape, x, 8);
    backward_random(tape, t, 7);
    out = append_floats(out, t->data, t->size);
    append_floats(out, x->grad, x->size);
    qkv_tensor_free(x);
    qkv_tape_free(tape);
}

START_TEST(patchify_is_thread_independent) {
    expect_same_for_1_and_2_threads(run_patchify, NULL, 2 * 4 * 3 * 128 * 96, "patchify forward + backward");
}
END_TEST

START_TEST(patchify_errors_name_the_shapes) {
    qkv_tape *tape = qkv_tape_create(1);
    qkv_tensor *odd = qkv_tape_zeros(tape, 4, (int[]){1, 1, 5, 4});
    EXPECT_FATAL(qkv_patchify(tape, odd, 2), "patchify: images [1,1,5,4]: H 5 and W 4 must be multiples of the patch size 2");
    qkv_tensor *flat = qkv_tape_zeros(tape, 3, (int[]){1, 4, 4});
    EXPECT_FATAL(qkv_patchify(tape, flat, 2), "patchify: images [1,4,4] must be [B,C,H,W]");
    qkv_tensor *img = qkv_tape_zeros(tape, 4, (int[]){1, 1, 4, 4});
    EXPECT_FATAL(qkv_patchify(tape, img, 0), "patch size 0");
    qkv_tape_free(tape);
}
END_TEST

/* ---- patch embedding --------------------------------------------------------------- */

START_TEST(patch_embedding_adds_2d_positions) {
    qkv_params params = {0};
    qkv_rng rng = qkv_rng_make(3);
    qkv_patch_embed with, without;
    qkv_patch_config c = {.channels = 3, .patch = 2, .d_model = 8};
    qkv_patch_embed_init(&with, &params, "a", &c, &rng);
    c.skip_add = 1;
    qkv_patch_embed_init(&without, &params, "b", &c, &rng);
    memcpy(without.proj.weight->data, with.proj.weight->data, with.proj.weight->size * sizeof(float));
    memcpy(without.proj.bias->data, with.proj.bias->data, with.proj.bias->size * sizeof(float));
    ck_assert_ptr_nonnull(qkv_params_find(&params, "a.proj.weight"));
    ck_assert_int_eq(qkv_params_find(&params, "a.proj.weight")->shape[1], 12);

    qkv_tape *tape = qkv_tape_create(1);
    qkv_tensor *img = random_tape_tensor(tape, 4, (int[]){2, 3, 4, 6}, 11);
    qkv_tensor *pos = NULL, *pos_b = NULL;
    qkv_tensor *tokens = qkv_patch_embed_forward(tape, &with, img, &pos);
    qkv_tensor *plain = qkv_patch_embed_forward(tape, &without, img, &pos_b);
    assert_shape(tokens, 3, (int[]){2, 6, 8});
    assert_shape(pos, 2, (int[]){6, 8});
    float table[6 * 8];
    qkv_positions_2d(table, 2, 3, 8, 0.0f);
    assert_values_near(pos, table, 48, 0);
    assert_values_near(pos_b, table, 48, 0);
    for (int b = 0; b < 2; b++)
        for (int i = 0; i < 48; i++)
            ck_assert_float_eq_tol(tokens->data[b * 48 + i], plain->data[b * 48 + i] + table[i], 1e-6f);

    /* Learned: a table of max_tokens rows; a bigger grid stops naming the layer. */
    qkv_patch_embed learned;
    qkv_patch_config lc = {.channels = 3, .patch = 2, .d_model = 6, .positions = QKV_PATCH_POS_LEARNED,
                           .max_tokens = 4};
    qkv_patch_embed_init(&learned, &params, "l", &lc, &rng);
    ck_assert_ptr_eq(qkv_params_find(&params, "l.pos"), learned.pos);
    qkv_tensor *small = random_tape_tensor(tape, 4, (int[]){1, 3, 2, 4}, 12);
    assert_shape(qkv_patch_embed_forward(tape, &learned, small, &pos), 3, (int[]){1, 2, 6});
    assert_values_near(pos, learned.pos->data, 12, 0);
    EXPECT_FATAL(qkv_patch_embed_forward(tape, &learned, img, NULL), "patch_embed: learned positions: sequence length 6");
    qkv_tensor *odd = qkv_tape_zeros(tape, 4, (int[]){1, 3, 3, 4});
    EXPECT_FATAL(qkv_patch_embed_forward(tape, &with, odd, NULL),
                 "patch_embed: images [1,3,3,4]: H and W must be multiples of the patch size 2");
    qkv_tensor *gray = qkv_tape_zeros(tape, 4, (int[]){1, 1, 4, 4});
    EXPECT_FATAL(qkv_patch_embed_forward(tape, &with, gray, NULL), "patch_embed: images [1,1,4,4] must be [B,3,H,W]");
    qkv_patch_config bad = {.channels = 3, .patch = 2, .d_model = 6};
    EXPECT_FATAL(qkv_patch_embed_init(&learned, &params, "s", &bad, &rng), "patch_embed s: 2-D sinusoidal");
    qkv_tape_free(tape);
    qkv_params_free(&params);
}
END_TEST

Suite *suite_patch(void) {
    Suite *s = suite_create("patch");
    TCase *tc = tcase_create("patch");
    tcase_set_timeout(tc, 0);
    tcase_add_test(tc, patchify_layout_by_hand);
    tcase_add_test(tc, patchify_round_trip);
    tcase_add_test(tc, patchify_errors_name_the_shapes);
    tcase_add_test(tc, patch_embedding_is_a_strided_convolution);
    tcase_add_test(tc, patchify_is_thread_independent);
    tcase_add_test(tc, patch_embedding_adds_2d_positions);
    suite_add_tcase(s, tc);
    return s;
}
