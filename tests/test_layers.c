/* test_layers.c — Linear and MLP: values, shapes, errors. */
#include "tests/test_util.h"

START_TEST(linear_computes_x_wt_plus_b) {
    qkv_params params = {0};
    qkv_rng rng = qkv_rng_make(1);
    qkv_linear layer;
    qkv_linear_init(&layer, &params, "fc", 3, 2, 1, &rng);
    ck_assert_str_eq(layer.weight->name, "fc.weight");
    ck_assert_str_eq(layer.bias->name, "fc.bias");
    /* Default init is uniform in [-1/sqrt(3), 1/sqrt(3)]. */
    for (size_t i = 0; i < layer.weight->size; i++) ck_assert(fabsf(layer.weight->data[i]) <= 0.57736f);
    qkv_tensor_copy_from(layer.weight, (float[]){1, 2, 3, -1, 0, 1});
    qkv_tensor_copy_from(layer.bias, (float[]){0.5f, -0.5f});
    qkv_tape *tape = qkv_tape_create(1);
    qkv_tensor *x = qkv_tape_tensor(tape, 2, (int[]){2, 3});
    qkv_tensor_copy_from(x, (float[]){1, 1, 1, 1, 0, -1});
    qkv_tensor *y = qkv_linear_forward(tape, &layer, x);
    assert_shape(y, 2, (int[]){2, 2});
    const float expected[] = {6.5f, -0.5f, -1.5f, -2.5f};
    for (int i = 0; i < 4; i++) ck_assert_float_eq_tol(y->data[i], expected[i], 1e-6f);
    qkv_tensor *bad = qkv_tape_tensor(tape, 2, (int[]){2, 4});
    EXPECT_FATAL(qkv_linear_forward(tape, &layer, bad), "does not end in in=3");
    qkv_tape_free(tape);
    qkv_params_free(&params);
}
END_TEST

START_TEST(mlp_shapes_and_names) {
    qkv_params params = {0};
    qkv_rng rng = qkv_rng_make(1);
    qkv_mlp mlp;
    qkv_mlp_init(&mlp, &params, "head", 3, (int[]){5, 8, 8, 3}, QKV_ACT_GELU, &rng);
    ck_assert_int_eq(params.n, 6);
    ck_assert_ptr_nonnull(qkv_params_find(&params, "head.2.bias"));
    ck_assert_int_eq(qkv_params_count(&params), 5 * 8 + 8 + 8 * 8 + 8 + 8 * 3 + 3);
    qkv_tape *tape = qkv_tape_create(1);
    qkv_tensor *x = qkv_tape_zeros(tape, 3, (int[]){2, 7, 5});
    qkv_tensor *y = qkv_mlp_forward(tape, &mlp, x);
    assert_shape(y, 3, (int[]){2, 7, 3});
    qkv_tape_free(tape);
    qkv_params_free(&params);
}
END_TEST

Suite *suite_layers(void) {
    Suite *s = suite_create("layers");
    TCase *tc = tcase_create("linear");
    tcase_add_test(tc, linear_computes_x_wt_plus_b);
    tcase_add_test(tc, mlp_shapes_and_names);
    suite_add_tcase(s, tc);
    return s;
}
