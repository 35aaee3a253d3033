/* test_shape.c — reshape, permute, transpose, slice, concat and embedding:
 * values, round trips, error paths and bitwise thread independence. */
#include <stdlib.h>

#include "tests/test_util.h"

/* ---- reshape ---- */

START_TEST(test_reshape) {
    qkv_tape *tape = qkv_tape_create(1);
    qkv_tensor *x = ramp_tensor(3, (int[]){2, 3, 4}, 0.0f, 1.0f, 1);
    qkv_tensor *y = qkv_reshape(tape, x, 2, (int[]){-1, 4});
    assert_shape(y, 2, (int[]){6, 4});
    ck_assert_uint_eq(y->size, 24);
    ck_assert_float_eq(qkv_at(y, 5, 3, 0, 0), 23.0f);
    ck_assert_ptr_eq(y->data, x->data); /* shares the data: nothing is copied */
    qkv_tensor *s = qkv_reshape(tape, qkv_reshape(tape, x, 4, (int[]){1, 24, 1, 1}), 1, (int[]){-1});
    assert_shape(s, 1, (int[]){24});
    /* Backward adds the output gradient, in order, into x's gradient. */
    float seed[24];
    for (int i = 0; i < 24; i++) seed[i] = (float)(100 + i);
    x->grad[3] = 1.0f;
    qkv_backward_seeded(tape, y, seed);
    ck_assert_float_eq(x->grad[3], 104.0f);
    ck_assert_float_eq(x->grad[23], 123.0f);
    qkv_tensor_free(x);
    qkv_tape_free(tape);
}
END_TEST

/* An activation's reshape shares its gradient buffer (no copy), made when backward
 * first writes it; a parameter's does not, so its gradient still accumulates
 * across two backward passes. */
START_TEST(test_reshape_gradient_buffers) {
    qkv_tape *tape = qkv_tape_create(1);
    qkv_tensor *p = random_tensor(2, (int[]){2, 3}, 1, 1);
    qkv_tensor *a = qkv_scale(tape, p, 2.0f);                     /* activation */
    qkv_tensor *ra = qkv_reshape(tape, a, 1, (int[]){6});
    qkv_tensor *rp = qkv_reshape(tape, p, 2, (int[]){3, 2});
    ck_assert_ptr_null(ra->grad); /* taken from a when backward first needs it */
    ck_assert_ptr_null(a->grad);
    ck_assert_ptr_ne(rp->grad, p->grad);
    /* L = sum(3 * ra) + sum(rp): dp = 2 * 3 + 1 = 7 per pass */
    qkv_tensor *loss = qkv_add(tape, qkv_sum_all(tape, qkv_scale(tape, ra, 3.0f)), qkv_sum_all(tape, rp));
    qkv_backward(tape, loss);
    ck_assert_ptr_nonnull(a->grad);
    ck_assert_ptr_eq(ra->grad, a->grad);
    for (int i = 0; i < 6; i++) ck_assert_float_eq(a->grad[i], 3.0f);
    for (int i = 0; i < 6; i++) ck_assert_float_eq(p->grad[i], 7.0f);
    qkv_backward(tape, loss);                                       /* activations restart at 0 */
    for (int i = 0; i < 6; i++) ck_assert_float_eq(a->grad[i], 3.0f);
    for (int i = 0; i < 6; i++) ck_assert_float_eq(p->grad[i], 14.0f);
    qkv_tensor_free(p);
    qkv_tape_free(tape);
}
END_TEST

START_TEST(test_reshape_errors) {
    qkv_tape *tape = qkv_tape_create(1);
    qkv_tensor *x = ramp_tensor(2, (int[]){2, 3}, 0.0f, 1.0f, 1);
    EXPECT_FATAL(qkv_reshape(tape, x, 2, (int[]){4, 2}), "reshape: [2,3] -> [4,2]: sizes differ (6 vs 8)");
    EXPECT_FATAL(qkv_reshape(tape, x, 2, (int[]){-1, -1}), "reshape: [2,3] -> [-1,-1]: more than one -1");
    EXPECT_FATAL(qkv_reshape(tape, x, 2, (int[]){-1, 4}), "reshape: [2,3] -> [-1,4]");
    EXPECT_FATAL(qkv_reshape(tape, x, 2, (int[]){6, 0}), "reshape: [2,3] -> [6,0]: dim 1 is 0");
    EXPECT_FATAL(qkv_reshape(tape, x, 5, (int[]){1, 1, 1, 2, 3}), "reshape: [2,3] -> ndim 5");
    EXPECT_FATAL(qkv_reshape(tape, x, 0, NULL), "reshape: [2,3] -> []: sizes differ");
    EXPECT_FATAL(qkv_reshape(tape, NULL, 1, (int[]){6}), "reshape");
    ck_assert_int_eq(tape->n_nodes, 0);
    qkv_tensor_free(x);
    qkv_tape_free(tape);
}
END_TEST

/* ---- permute and transpose ---- */

/* y[i,j,k,l] = x at the permuted index, element by element. */
START_TEST(test_permute_values) {
    qkv_tape *tape = qkv_tape_create(1);
    qkv_tensor *x = ramp_tensor(4, (int[]){2, 3, 4, 5}, 0.0f, 1.0f, 0);
    const int perm[4] = {3, 1, 0, 2};
    qkv_tensor *y = qkv_permute(tape, x, perm);
    assert_shape(y, 4, (int[]){5, 3, 2, 4});
    int idx[4];
    for (idx[0] = 0; idx[0] < 5; idx[0]++)
        for (idx[1] = 0; idx[1] < 3; idx[1]++)
            for (idx[2] = 0; idx[2] < 2; idx[2]++)
                for (idx[3] = 0; idx[3] < 4; idx[3]++) {
                    int src[4];
                    for (int k = 0; k < 4; k++) src[perm[k]] = idx[k];
                    ck_assert_float_eq(qkv_at(y, idx[0], idx[1], idx[2], idx[3]),
                                       qkv_at(x, src[0], src[1], src[2], src[3]));
                }
    /* transpose of [[0,1,2],[3,4,5]] is [[0,3],[1,4],[2,5]]. */
    qkv_tensor *m = ramp_tensor(2, (int[]){2, 3}, 0.0f, 1.0f, 0);
    qkv_tensor *t = qkv_transpose(tape, m, -1, 0);
    assert_shape(t, 2, (int[]){3, 2});
    const float expect[6] = {0, 3, 1, 4, 2, 5};
    ck_assert_mem_eq(t->data, expect, sizeof expect);
    qkv_tensor_free(x); qkv_tensor_free(m);
    qkv_tape_free(tape);
}
END_TEST

/* Every permutation of a 4-D tensor followed by its inverse gives x back, bitwise;
 * the backward of the pair passes the gradient straight through. */
START_TEST(test_permute_round_trip) {
    qkv_tape *tape = qkv_tape_create(1);
    qkv_tensor *x = random_tensor(4, (int[]){2, 3, 1, 4}, 5, 1);
    int perm[4], inverse[4], n_perms = 0;
    for (perm[0] = 0; perm[0] < 4; perm[0]++)
        for (perm[1] = 0; perm[1] < 4; perm[1]++)
            for (perm[2] = 0; perm[2] < 4; perm[2]++)
                for (perm[3] = 0; perm[3] < 4; perm[3]++) {
                    int used = (1 << perm[0]) | (1 << perm[1]) | (1 << perm[2]) | (1 << perm[3]);
                    if (used != 15) continue;
                    for (int k = 0; k < 4; k++) inverse[perm[k]] = k;
                    qkv_tensor *back = qkv_permute(tape, qkv_permute(tape, x, perm), inverse);
                    assert_shape(back, 4, x->shape);
                    ck_assert_mem_eq(back->data, x->data, x->size * sizeof(float));
                    qkv_tensor_zero_grad(x);
                    float seed[24];
                    for (int i = 0; i < 24; i++) seed[i] = (float)i;
                    qkv_backward_seeded(tape, back, seed);
                    ck_assert_mem_eq(x->grad, seed, sizeof seed);
                    qkv_tape_reset(tape);
                    n_perms++;
                }
    ck_assert_int_eq(n_perms, 24);
    qkv_tensor_free(x);
    qkv_tape_free(tape);
}
END_TEST

START_TEST(test_permute_errors) {
    qkv_tape *tape = qkv_tape_create(1);
    qkv_tensor *x = ramp_tensor(3, (int[]){2, 3, 4}, 0.0f, 1.0f, 1);
    EXPECT_FATAL(qkv_permute(tape, x, (int[]){0, 0, 1}), "permute: [0,0,1] is not a permutation of 0..2 for x [2,3,4]");
    EXPECT_FATAL(qkv_permute(tape, x, (int[]){0, 1, 3}), "permute: [0,1,3] is not a permutation");
    EXPECT_FATAL(qkv_permute(tape, x, (int[]){-1, 0, 1}), "[2,3,4]");
    EXPECT_FATAL(qkv_permute(tape, x, NULL), "permute: x [2,3,4]: perm is NULL");
    EXPECT_FATAL(qkv_transpose(tape, x, 0, 3), "transpose: axis 3 out of range for [2,3,4]");
    EXPECT_FATAL(qkv_transpose(tape, x, -4, 1), "transpose: axis -4 out of range for [2,3,4]");
    ck_assert_int_eq(tape->n_nodes, 0);
    qkv_tensor_free(x);
    qkv_tape_free(tape);
}
END_TEST

/* ---- slice and concat ---- */

START_TEST(test_slice_values) {
    qkv_tape *tape = qkv_tape_create(1);
    qkv_tensor *x = ramp_tensor(2, (int[]){3, 4}, 0.0f, 1.0f, 1);
    qkv_tensor *cols = qkv_slice(tape, x, -1, 1, 3);
    assert_shape(cols, 2, (int[]){3, 2});
    ck_assert_mem_eq(cols->data, ((float[]){1, 2, 5, 6, 9, 10}), 6 * sizeof(float));
    qkv_tensor *row = qkv_slice(tape, x, 0, 2, 3);
    ck_assert_mem_eq(row->data, ((float[]){8, 9, 10, 11}), 4 * sizeof(float));
    /* Backward puts the gradient in the window and adds nothing elsewhere. */
    qkv_backward_seeded(tape, cols, (float[]){1, 2, 3, 4, 5, 6});
    ck_assert_mem_eq(x->grad, ((float[]){0, 1, 2, 0, 0, 3, 4, 0, 0, 5, 6, 0}), 12 * sizeof(float));
    qkv_tensor_free(x);
    qkv_tape_free(tape);
}
END_TEST

START_TEST(test_concat_values) {
    qkv_tape *tape = qkv_tape_create(1);
    qkv_tensor *a = ramp_tensor(2, (int[]){2, 1}, 0.0f, 1.0f, 1), *b = ramp_tensor(2, (int[]){2, 2}, 0.0f, 1.0f, 0);
    for (size_t i = 0; i < b->size; i++) b->data[i] += 10.0f;
    qkv_tensor *ab = qkv_concat(tape, 2, (qkv_tensor *[]){a, b}, 1);
    assert_shape(ab, 2, (int[]){2, 3});
    ck_assert_mem_eq(ab->data, ((float[]){0, 10, 11, 1, 12, 13}), 6 * sizeof(float));
    qkv_tensor *rows = qkv_concat(tape, 3, (qkv_tensor *[]){b, a, b}, -1);
    assert_shape(rows, 2, (int[]){2, 5});
    /* a receives its own column of the output gradient; b (data) nothing. */
    qkv_backward_seeded(tape, ab, (float[]){1, 2, 3, 4, 5, 6});
    ck_assert_mem_eq(a->grad, ((float[]){1, 4}), 2 * sizeof(float));
    ck_assert_ptr_null(b->grad);
    qkv_tensor_free(a); qkv_tensor_free(b);
    qkv_tape_free(tape);
}
END_TEST

/* Cutting x into three slices along each axis and concatenating them gives x back;
 * the pair's backward passes the gradient straight through. */
START_TEST(test_slice_concat_round_trip) {
    qkv_tape *tape = qkv_tape_create(1);
    qkv_tensor *x = random_tensor(3, (int[]){4, 5, 6}, 9, 1);
    float *seed = malloc(x->size * sizeof(float));
    for (size_t i = 0; i < x->size; i++) seed[i] = (float)i * 0.5f;
    for (int axis = 0; axis < 3; axis++) {
        int n = x->shape[axis], cut1 = 1, cut2 = n - 2;
        qkv_tensor *parts[3] = {qkv_slice(tape, x, axis, 0, cut1), qkv_slice(tape, x, axis, cut1, cut2),
                                qkv_slice(tape, x, axis, cut2, n)};
        qkv_tensor *back = qkv_concat(tape, 3, parts, axis - 3); /* negative axis */
        assert_shape(back, 3, x->shape);
        ck_assert_mem_eq(back->data, x->data, x->size * sizeof(float));
        qkv_tensor_zero_grad(x);
        qkv_backward_seeded(tape, back, seed);
        ck_assert_mem_eq(x->grad, seed, x->size * sizeof(float));
        qkv_tape_reset(tape);
    }
    free(seed);
    qkv_tensor_free(x);
    qkv_tape_free(tape);
}
END_TEST

START_TEST(test_slice_concat_errors) {
    qkv_tape *tape = qkv_tape_create(1);
    qkv_tensor *x = ramp_tensor(2, (int[]){3, 4}, 0.0f, 1.0f, 1), *y = ramp_tensor(2, (int[]){3, 5}, 0.0f, 1.0f, 1);
    qkv_tensor *z = ramp_tensor(3, (int[]){3, 4, 1}, 0.0f, 1.0f, 1);
    EXPECT_FATAL(qkv_slice(tape, x, 1, 2, 2), "slice: [2,2) is not a non-empty range inside axis 1 (size 4) of [3,4]");
    EXPECT_FATAL(qkv_slice(tape, x, 1, 3, 5), "slice: [3,5) is not a non-empty range inside axis 1 (size 4) of [3,4]");
    EXPECT_FATAL(qkv_slice(tape, x, 0, -1, 2), "slice: [-1,2)");
    EXPECT_FATAL(qkv_slice(tape, x, 2, 0, 1), "slice: axis 2 out of range for [3,4]");
    EXPECT_FATAL(qkv_concat(tape, 2, (qkv_tensor *[]){x, y}, 0), "concat: input 1 [3,5] does not match input 0 [3,4] outside axis 0");
    EXPECT_FATAL(qkv_concat(tape, 2, (qkv_tensor *[]){x, z}, 1), "concat: input 1 [3,4,1] does not match input 0 [3,4]");
    EXPECT_FATAL(qkv_concat(tape, 2, (qkv_tensor *[]){x, y}, -3), "concat: axis -3 out of range for [3,4]");
    EXPECT_FATAL(qkv_concat(tape, 0, (qkv_tensor *[]){x}, 0), "concat: needs at least one input (n = 0)");
    EXPECT_FATAL(qkv_concat(tape, 2, (qkv_tensor *[]){x, NULL}, 0), "concat: input tensor is NULL");
    ck_assert_int_eq(tape->n_nodes, 0);
    qkv_tensor_free(x); qkv_tensor_free(y); qkv_tensor_free(z);
    qkv_tape_free(tape);
}
END_TEST

/* ---- embedding ---- */

START_TEST(test_embedding_values) {
    qkv_tape *tape = qkv_tape_create(1);
    qkv_tensor *table = ramp_tensor(2, (int[]){4, 3}, 0.0f, 1.0f, 1);
    const int32_t ids[6] = {3, 0, 3, 1, 1, 1};
    qkv_tensor *y = qkv_embedding(tape, table, ids, 2, (int[]){2, 3});
    assert_shape(y, 3, (int[]){2, 3, 3});
    for (int p = 0; p < 6; p++)
        for (int d = 0; d < 3; d++) ck_assert_float_eq(y->data[p * 3 + d], (float)(ids[p] * 3 + d));
    qkv_tensor *one = qkv_embedding(tape, table, (int32_t[]){2}, 0, NULL);
    assert_shape(one, 1, (int[]){3});
    ck_assert_mem_eq(one->data, ((float[]){6, 7, 8}), 3 * sizeof(float));
    /* Repeated ids accumulate: row 1 gets positions 3, 4, 5; row 3 positions 0, 2; row 2 none. */
    float seed[18];
    for (int i = 0; i < 18; i++) seed[i] = (float)(1 << (i / 3)); /* position p: 2^p */
    qkv_backward_seeded(tape, y, seed);
    const float expect[12] = {2, 2, 2, 56, 56, 56, 0, 0, 0, 5, 5, 5};
    ck_assert_mem_eq(table->grad, expect, sizeof expect);
    qkv_tensor_free(table);
    qkv_tape_free(tape);
}
END_TEST

/* The ids are copied at forward time: changing them before backward changes nothing. */
START_TEST(test_embedding_saves_ids) {
    qkv_tape *tape = qkv_tape_create(1);
    qkv_tensor *table = ramp_tensor(2, (int[]){3, 2}, 0.0f, 1.0f, 1);
    int32_t ids[2] = {0, 2};
    qkv_tensor *y = qkv_embedding(tape, table, ids, 1, (int[]){2});
    ids[0] = 1;
    qkv_backward_seeded(tape, y, (float[]){1, 2, 3, 4});
    ck_assert_mem_eq(table->grad, ((float[]){1, 2, 0, 0, 3, 4}), 6 * sizeof(float));
    qkv_tensor_free(table);
    qkv_tape_free(tape);
}
END_TEST

START_TEST(test_embedding_errors) {
    qkv_tape *tape = qkv_tape_create(1);
    qkv_tensor *table = ramp_tensor(2, (int[]){5, 4}, 0.0f, 1.0f, 1), *flat = ramp_tensor(1, (int[]){5}, 0.0f, 1.0f, 1);
    EXPECT_FATAL(qkv_embedding(tape, table, (int32_t[]){0, 1, 5}, 1, (int[]){3}),
                 "embedding: id 5 at position 2 of ids [3] is outside [0,5) for table [5,4]");
    EXPECT_FATAL(qkv_embedding(tape, table, (int32_t[]){0, -1, 2, 3}, 2, (int[]){2, 2}),
                 "embedding: id -1 at position 1 of ids [2,2] is outside [0,5) for table [5,4]");
    EXPECT_FATAL(qkv_embedding(tape, flat, (int32_t[]){0}, 1, (int[]){1}), "embedding: table [5] must be [V, D]");
    EXPECT_FATAL(qkv_embedding(tape, table, (int32_t[]){0}, 4, (int[]){1, 1, 1, 1}),
                 "embedding: ids ndim 4 outside 0..3 (table [5,4])");
    EXPECT_FATAL(qkv_embedding(tape, table, (int32_t[]){0}, 2, (int[]){1, 0}),
                 "embedding: ids shape [1,0]: dim 1 is 0 (table [5,4])");
    EXPECT_FATAL(qkv_embedding(tape, table, NULL, 1, (int[]){2}), "embedding: ids is NULL (ids [2], table [5,4])");
    ck_assert_int_eq(tape->n_nodes, 0);
    qkv_tensor_free(table); qkv_tensor_free(flat);
    qkv_tape_free(tape);
}
END_TEST

/* ---- threads ---- */

/* Embedding backward with many repeated ids into a [64, 300] table, and a large
 * permute + slice + concat backward: out gets the table gradient followed by x's
 * gradient (64 * 300 + 64 * 48 * 40 floats). */
enum { V = 64, D = 300, N_IDS = 4096, XA = 64, XB = 48, XC = 40 };
static void shape_ops_run(float *out, void *ctx) {
    (void)ctx;
    qkv_tape *tape = qkv_tape_create(1);
    qkv_rng rng = qkv_rng_make(21);
    qkv_tensor *table = random_tensor_from(&rng, 2, (int[]){V, D}, 1);
    qkv_tensor *x = random_tensor_from(&rng, 3, (int[]){XA, XB, XC}, 1);
    int32_t *ids = malloc(N_IDS * sizeof(int32_t));
    for (int p = 0; p < N_IDS; p++) ids[p] = (int32_t)qkv_rng_below(&rng, V);
    float *seed = malloc((size_t)N_IDS * D * sizeof(float));
    qkv_fill_normal(seed, (size_t)N_IDS * D, &rng, 0.0f, 1.0f);
    qkv_tensor *e = qkv_embedding(tape, table, ids, 2, (int[]){64, N_IDS / 64});
    qkv_backward_seeded(tape, e, seed);

    qkv_tensor *p = qkv_permute(tape, x, (int[]){2, 0, 1});
    qkv_tensor *parts[2] = {qkv_slice(tape, p, 1, 0, 20), qkv_slice(tape, p, 1, 20, XA)};
    qkv_tensor *joined = qkv_concat(tape, 3, (qkv_tensor *[]){parts[1], parts[0], parts[1]}, 1);
    qkv_backward_seeded(tape, joined, seed);
    out = append_floats(out, table->grad, table->size);
    append_floats(out, x->grad, x->size);
    free(ids); free(seed);
    qkv_tensor_free(table); qkv_tensor_free(x);
    qkv_tape_free(tape);
}

START_TEST(test_shape_threads) {
    expect_same_for_1_and_2_threads(shape_ops_run, NULL, (size_t)V * D + (size_t)XA * XB * XC,
                                    "embedding/permute/slice/concat gradients");
}
END_TEST

Suite *suite_shape(void) {
    Suite *s = suite_create("shape");
    TCase *tc = tcase_create("shape");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_reshape);
    tcase_add_test(tc, test_reshape_errors);
    tcase_add_test(tc, test_reshape_gradient_buffers);
    tcase_add_test(tc, test_permute_values);
    tcase_add_test(tc, test_permute_round_trip);
    tcase_add_test(tc, test_permute_errors);
    tcase_add_test(tc, test_slice_values);
    tcase_add_test(tc, test_concat_values);
    tcase_add_test(tc, test_slice_concat_round_trip);
    tcase_add_test(tc, test_slice_concat_errors);
    tcase_add_test(tc, test_embedding_values);
    tcase_add_test(tc, test_embedding_saves_ids);
    tcase_add_test(tc, test_embedding_errors);
    tcase_add_test(tc, test_shape_threads);
    suite_add_tcase(s, tc);
    return s;
}
