/* test_position.c — position encodings (core/ops/ops_position.h): RoPE's hand-computed
 * values and the properties the theory promises (relative scores,
 * norm preservation, identity at position 0, KV-cache positions); the sinusoidal
 * table's offset-only dot products; ALiBi slopes checked against the reference
 * get_slopes rule; 2-D tables; the learned-table length guard; error messages;
 * and bitwise independence of the thread count. */
#include "tests/test_util.h"

#include <stdlib.h>

#include "core/ops/ops_position.h"

static double dot(const float *a, const float *b, int n) {
    double s = 0.0;
    for (int i = 0; i < n; i++) s += (double)a[i] * b[i];
    return s;
}

/* out = v [d] rotated as a single row at position pos, with opts' layout. */
static void rope_vector(const float *v, int d, int32_t pos, qkv_rope_opts opts, float *out) {
    qkv_tape *tape = qkv_tape_create(1);
    qkv_tensor *x = tensor_of(2, (int[]){1, d}, v, 0);
    opts.offset = 0;
    opts.positions = &pos;
    memcpy(out, qkv_rope(tape, x, &opts)->data, (size_t)d * sizeof(float));
    qkv_tensor_free(x);
    qkv_tape_free(tape);
}

/* The layouts every property is checked under. */
static const qkv_rope_opts layouts[] = {
    {.split_halves = 0}, {.split_halves = 1}, {.rotary_fraction = 0.5f},
    {.split_halves = 1, .rotary_fraction = 0.3f}, /* 16 * 0.3 = 4.8 -> 4 dims */
};
#define N_LAYOUTS ((int)(sizeof layouts / sizeof layouts[0]))

START_TEST(sinusoidal_hand_values) {
    float p[3 * 4];
    qkv_sinusoidal_table(p, 3, 4, 0, 10000.0f);
    /* d = 4: w_0 = 1, w_1 = 10000^(-2/4) = 1/100. */
    const float row1[4] = {sinf(1.0f), cosf(1.0f), sinf(0.01f), cosf(0.01f)};
    for (int c = 0; c < 4; c++) ck_assert_float_eq_tol(p[4 + c], row1[c], 1e-6f);
    ck_assert_float_eq(p[0], 0.0f);
    ck_assert_float_eq(p[1], 1.0f);
    /* Odd d = 3 ends with a sin column: w_1 = 10000^(-2/3); offset 5 starts at t = 5. */
    float q[2 * 3];
    qkv_sinusoidal_table(q, 2, 3, 5, 0.0f);
    ck_assert_float_eq_tol(q[0], sinf(5.0f), 1e-6f);
    ck_assert_float_eq_tol(q[1], cosf(5.0f), 1e-6f);
    ck_assert_float_eq_tol(q[2], (float)sin(5.0 * pow(10000.0, -2.0 / 3.0)), 1e-6f);
    ck_assert_float_eq_tol(q[3], sinf(6.0f), 1e-6f);
    /* No table limit: position 100000 is computed, not clamped. */
    float far[2];
    qkv_sinusoidal_table(far, 1, 2, 100000, 0.0f);
    ck_assert_float_eq_tol(far[0], (float)sin(100000.0), 1e-6f);
    ck_assert_float_eq_tol(far[1], (float)cos(100000.0), 1e-6f);
    /* An offset table is a slice of the longer table, bit for bit; base 0 is 10000. */
    float *whole = malloc(60 * 16 * sizeof(float)), part[4 * 16];
    qkv_sinusoidal_table(whole, 60, 16, 0, 10000.0f);
    qkv_sinusoidal_table(part, 4, 16, 50, 0.0f);
    ck_assert_int_eq(memcmp(part, whole + 50 * 16, sizeof part), 0);
    free(whole);
}
END_TEST

/* p_t . p_{t+k} = sum_i cos(k w_i): the offset k decides it, not t. */
START_TEST(sinusoidal_dot_depends_only_on_offset) {
    enum { T = 300, D = 64 };
    float *p = malloc((size_t)T * D * sizeof(float));
    qkv_sinusoidal_table(p, T, D, 0, 0.0f);
    const int ks[] = {0, 1, 2, 5, 17, 40}, ts[] = {0, 3, 50, 123, 250};
    for (int a = 0; a < 6; a++) {
        int k = ks[a];
        double closed_form = 0.0;
        for (int i = 0; i < D / 2; i++) closed_form += cos(k * pow(10000.0, -2.0 * i / D));
        for (int b = 0; b < 5; b++) {
            int t = ts[b];
            double s = dot(p + t * D, p + (t + k) * D, D);
            ck_assert_close(s, dot(p, p + k * D, D), 1e-4);
            ck_assert_close(s, closed_form, 1e-4);
        }
    }
    ck_assert_close(dot(p + 7 * D, p + 7 * D, D), D / 2.0, 1e-5); /* sin^2 + cos^2 per pair */
    free(p);
}
END_TEST

START_TEST(rope_hand_values) {
    float y[8];
    /* Interleaved, position 1, d = 4: pairs (0,1) at angle 1 and (2,3) at 1/100. */
    rope_vector((float[]){1, 0, 1, 0}, 4, 1, (qkv_rope_opts){0}, y);
    const float interleaved[4] = {cosf(1.0f), sinf(1.0f), cosf(0.01f), sinf(0.01f)};
    for (int c = 0; c < 4; c++) ck_assert_float_eq_tol(y[c], interleaved[c], 1e-6f);
    /* (x_a, x_b) = (0, 1) turns to (-sin, cos). */
    rope_vector((float[]){0, 1, 0, 1}, 4, 1, (qkv_rope_opts){0}, y);
    ck_assert_float_eq_tol(y[0], -sinf(1.0f), 1e-6f);
    ck_assert_float_eq_tol(y[1], cosf(1.0f), 1e-6f);
    /* Split halves: pairs (0,2) and (1,3). */
    rope_vector((float[]){1, 1, 0, 0}, 4, 1, (qkv_rope_opts){.split_halves = 1}, y);
    const float split[4] = {cosf(1.0f), cosf(0.01f), sinf(1.0f), sinf(0.01f)};
    for (int c = 0; c < 4; c++) ck_assert_float_eq_tol(y[c], split[c], 1e-6f);
    /* Fraction 0.5 of d = 8: r = 4 (frequencies 1 and 10000^(-2/4)), dims 4..7 pass. */
    rope_vector((float[]){1, 0, 1, 0, 5, 6, 7, 8}, 8, 2, (qkv_rope_opts){.rotary_fraction = 0.5f}, y);
    const float partial[8] = {cosf(2.0f), sinf(2.0f), cosf(0.02f), sinf(0.02f), 5, 6, 7, 8};
    for (int c = 0; c < 8; c++) ck_assert_float_eq_tol(y[c], partial[c], 1e-6f);
    /* Same frequencies as the sinusoidal table: (1, 0) pairs give its (cos, sin), exactly. */
    enum { T = 10, D = 64 };
    qkv_tape *tape = qkv_tape_create(1);
    qkv_tensor *ones = qkv_tensor_create(NULL, 2, (int[]){T, D}, 0);
    for (int i = 0; i < T * D; i += 2) ones->data[i] = 1.0f;
    qkv_tensor *r = qkv_rope(tape, ones, NULL);
    float table[T * D];
    qkv_sinusoidal_table(table, T, D, 0, 0.0f);
    for (int i = 0; i < T * D; i += 2) {
        ck_assert_float_eq(r->data[i], table[i + 1]);
        ck_assert_float_eq(r->data[i + 1], table[i]);
    }
    qkv_tensor_free(ones);
    qkv_tape_free(tape);
}
END_TEST

START_TEST(rope_position_zero_is_identity) {
    qkv_tape *tape = qkv_tape_create(1);
    qkv_tensor *x = random_tensor(4, (int[]){2, 3, 4, 16}, 11, 0);
    const int32_t zeros[4] = {0, 0, 0, 0};
    for (int l = 0; l < N_LAYOUTS; l++) {
        qkv_rope_opts opts = layouts[l];
        opts.positions = zeros;
        qkv_tensor *y = qkv_rope(tape, x, &opts);
        for (size_t i = 0; i < x->size; i++) ck_assert_float_eq(y->data[i], x->data[i]);
    }
    qkv_tensor_free(x);
    qkv_tape_free(tape);
}
END_TEST

START_TEST(rope_preserves_norms) {
    qkv_tape *tape = qkv_tape_create(1);
    qkv_tensor *x = random_tensor(4, (int[]){2, 3, 5, 16}, 12, 0);
    for (int l = 0; l < N_LAYOUTS; l++) {
        qkv_rope_opts opts = layouts[l];
        opts.offset = 11;
        qkv_tensor *y = qkv_rope(tape, x, &opts);
        for (size_t row = 0; row < x->size / 16; row++) {
            const float *xr = x->data + row * 16, *yr = y->data + row * 16;
            ck_assert_close(dot(yr, yr, 16), dot(xr, xr, 16), 1e-5);
        }
    }
    qkv_tensor_free(x);
    qkv_tape_free(tape);
}
END_TEST

/* (R_m q) . (R_n k) = q . R_{n-m} k: equal at (3, 7) and (103, 107), not at (3, 8). */
START_TEST(rope_scores_depend_on_relative_position) {
    enum { D = 16 };
    qkv_tensor *qk = random_tensor(2, (int[]){2, D}, 13, 0);
    const float *q = qk->data, *k = qk->data + D;
    for (int l = 0; l < N_LAYOUTS; l++) {
        float qm[D], kn[D];
        rope_vector(q, D, 3, layouts[l], qm);
        rope_vector(k, D, 7, layouts[l], kn);
        double near = dot(qm, kn, D);
        rope_vector(q, D, 103, layouts[l], qm);
        rope_vector(k, D, 107, layouts[l], kn);
        double far = dot(qm, kn, D);
        ck_assert_msg(fabs(near - far) <= 1e-4 * fabs(near), "layout %d: score(3,7) %.9g != score(103,107) %.9g",
                      l, near, far);
        rope_vector(q, D, 3, layouts[l], qm);
        rope_vector(k, D, 8, layouts[l], kn);
        double offset5 = dot(qm, kn, D);
        ck_assert_msg(fabs(offset5 - near) > 1e-2 * fabs(near), "layout %d: score(3,8) %.9g == score(3,7) %.9g",
                      l, offset5, near);
    }
    qkv_tensor_free(qk);
}
END_TEST

/* Whole sequences: the score matrix Q K^T is the same at offsets 0 and 100. */
START_TEST(rope_score_matrix_is_shift_invariant) {
    enum { T = 6, D = 16 };
    qkv_tape *tape = qkv_tape_create(1);
    qkv_tensor *q = random_tensor(2, (int[]){T, D}, 14, 0), *k = random_tensor(2, (int[]){T, D}, 15, 0);
    for (int l = 0; l < N_LAYOUTS; l++) {
        qkv_rope_opts at0 = layouts[l], at100 = layouts[l];
        at100.offset = 100;
        qkv_tensor *q0 = qkv_rope(tape, q, &at0), *k0 = qkv_rope(tape, k, &at0);
        qkv_tensor *q1 = qkv_rope(tape, q, &at100), *k1 = qkv_rope(tape, k, &at100);
        for (int i = 0; i < T; i++)
            for (int j = 0; j < T; j++)
                ck_assert_close(dot(q1->data + i * D, k1->data + j * D, D),
                                dot(q0->data + i * D, k0->data + j * D, D), 1e-4);
    }
    qkv_tensor_free(q);
    qkv_tensor_free(k);
    qkv_tape_free(tape);
}
END_TEST

/* Explicit positions equal the same offset; decoding the last token alone at its
 * position reproduces the last row of the full sequence. Both bit for bit. */
START_TEST(rope_positions_match_offset_for_kv_cache) {
    qkv_tape *tape = qkv_tape_create(1);
    qkv_tensor *x = random_tensor(3, (int[]){2, 5, 8}, 16, 0);
    const int32_t slots[5] = {4, 5, 6, 7, 8};
    qkv_tensor *by_offset = qkv_rope(tape, x, &(qkv_rope_opts){.offset = 4, .split_halves = 1});
    qkv_tensor *by_slots = qkv_rope(tape, x, &(qkv_rope_opts){.positions = slots, .split_halves = 1});
    ck_assert_int_eq(memcmp(by_offset->data, by_slots->data, x->size * sizeof(float)), 0);

    qkv_tensor *full = random_tensor(3, (int[]){1, 6, 8}, 17, 0);
    qkv_tensor *last = tensor_of(3, (int[]){1, 1, 8}, full->data + 5 * 8, 0);
    qkv_tensor *full_y = qkv_rope(tape, full, NULL);
    qkv_tensor *last_y = qkv_rope(tape, last, &(qkv_rope_opts){.offset = 5});
    ck_assert_int_eq(memcmp(last_y->data, full_y->data + 5 * 8, 8 * sizeof(float)), 0);
    qkv_tensor_free(x);
    qkv_tensor_free(full);
    qkv_tensor_free(last);
    qkv_tape_free(tape);
}
END_TEST

/* Seeding backward with y itself gives R^T R x = x, added to what the gradient
 * held; nothing is recorded for data or in no-grad mode. */
START_TEST(rope_backward_adds_inverse_rotation) {
    qkv_tape *tape = qkv_tape_create(1);
    for (int l = 0; l < N_LAYOUTS; l++) {
        qkv_tensor *x = random_tensor(3, (int[]){2, 5, 16}, 18 + (uint64_t)l, 1);
        for (size_t i = 0; i < x->size; i++) x->grad[i] = 1.0f;
        qkv_rope_opts opts = layouts[l];
        opts.offset = 9;
        qkv_tensor *y = qkv_rope(tape, x, &opts);
        ck_assert_int_eq(tape->n_nodes, 1);
        qkv_backward_seeded(tape, y, y->data);
        for (size_t i = 0; i < x->size; i++) ck_assert_float_eq_tol(x->grad[i], 1.0f + x->data[i], 1e-5f);
        qkv_tape_reset(tape);
        qkv_tensor_free(x);
    }
    qkv_tensor *data = random_tensor(2, (int[]){3, 4}, 20, 0);
    qkv_rope(tape, data, NULL);
    ck_assert_int_eq(tape->n_nodes, 0);
    qkv_tensor *w = random_tensor(2, (int[]){3, 4}, 21, 1);
    qkv_tape_set_grad(tape, 0);
    ck_assert_int_eq(qkv_rope(tape, w, NULL)->requires_grad, 0);
    ck_assert_int_eq(tape->n_nodes, 0);
    qkv_tensor_free(data);
    qkv_tensor_free(w);
    qkv_tape_free(tape);
}
END_TEST

START_TEST(rope_errors_name_op_and_shape) {
    qkv_tape *tape = qkv_tape_create(1);
    qkv_tensor *vec = qkv_tensor_create(NULL, 1, (int[]){8}, 0);
    qkv_tensor *odd = qkv_tensor_create(NULL, 3, (int[]){2, 3, 7}, 0);
    qkv_tensor *one = qkv_tensor_create(NULL, 2, (int[]){3, 1}, 0);
    qkv_tensor *x = qkv_tensor_create(NULL, 3, (int[]){2, 3, 8}, 0);
    const int32_t slots[3] = {1, 2, 3};
    EXPECT_FATAL(qkv_rope(tape, vec, NULL), "rope: x [8]: needs [T,d]");
    EXPECT_FATAL(qkv_rope(tape, odd, NULL), "rope: x [2,3,7]: head dim 7 is odd");
    EXPECT_FATAL(qkv_rope(tape, one, NULL), "rope: x [3,1]: head dim 1 is odd");
    EXPECT_FATAL(qkv_rope(tape, x, &(qkv_rope_opts){.rotary_fraction = 0.2f}),
                 "rope: x [2,3,8]: rotary_fraction 0.2 rotates 0 of 8 dims");
    EXPECT_FATAL(qkv_rope(tape, x, &(qkv_rope_opts){.rotary_fraction = 1.5f}),
                 "rope: x [2,3,8]: rotary_fraction 1.5 outside [0, 1]");
    EXPECT_FATAL(qkv_rope(tape, x, &(qkv_rope_opts){.rotary_fraction = -0.5f}), "outside [0, 1]");
    EXPECT_FATAL(qkv_rope(tape, x, &(qkv_rope_opts){.base = -1.0f}), "rope: x [2,3,8]: base -1 must be > 0");
    EXPECT_FATAL(qkv_rope(tape, x, &(qkv_rope_opts){.offset = 2, .positions = slots}),
                 "rope: x [2,3,8]: give offset (2) or positions, not both");
    /* An odd width is fine when a fraction picks an even part: 0.5 * 7 -> 2 dims. */
    qkv_tensor *y = qkv_rope(tape, odd, &(qkv_rope_opts){.rotary_fraction = 0.5f, .offset = 1});
    for (int c = 2; c < 7; c++) ck_assert_float_eq(y->data[c], odd->data[c]);
    qkv_tape_reset(tape);
    EXPECT_FATAL(qkv_rope(tape, y, NULL), "used after its tape was reset");
    qkv_tensor_free(vec);
    qkv_tensor_free(odd);
    qkv_tensor_free(one);
    qkv_tensor_free(x);
    qkv_tape_free(tape);
}
END_TEST

START_TEST(table_errors_and_length_guard) {
    float buf[64];
    EXPECT_FATAL(qkv_sinusoidal_table(buf, 4, 0, 0, 0.0f), "sinusoidal: table [4,0]");
    EXPECT_FATAL(qkv_sinusoidal_table(buf, 4, 8, 0, -2.0f), "sinusoidal: table [4,8]: base -2 must be > 0");
    EXPECT_FATAL(qkv_positions_2d(buf, 2, 2, 6, 0.0f), "positions_2d: table [4,6]: d 6 must be a positive multiple of 4");
    EXPECT_FATAL(qkv_positions_2d(buf, 0, 2, 8, 0.0f), "positions_2d: grid 0x2");
    ck_assert_int_eq(qkv_position_check_length("learned positions", 16, 16), 16);
    ck_assert_int_eq(qkv_position_check_length("learned positions", 1, 16), 1);
    EXPECT_FATAL(qkv_position_check_length("learned positions", 20, 16),
                 "learned positions: sequence length 20 exceeds the table's 16 rows");
    EXPECT_FATAL(qkv_position_check_length("decoder.pos", 0, 16), "decoder.pos: sequence length 0 must be >= 1");
    EXPECT_FATAL(qkv_alibi_slopes(buf, 0), "alibi: n_heads 0 must be >= 1");
    EXPECT_FATAL(qkv_alibi_bias(buf, buf, 2, 0, 3, 0), "alibi: bias [2,0,3]");
}
END_TEST

/* Expected slopes as exact powers of two: slopes[h] == 2^(-exponent[h]). */
static void expect_slopes(int n, const double *exponents) {
    float s[16];
    qkv_alibi_slopes(s, n);
    for (int h = 0; h < n; h++)
        ck_assert_msg(s[h] == (float)exp2(-exponents[h]), "%d heads: slope %d is %.9g, expected 2^-%g", n, h,
                      (double)s[h], exponents[h]);
}

/* From the reference get_slopes (ofirpress/attention_with_linear_biases,
 * fairseq/models/transformer.py): powers of two give 2^(-8k/n); otherwise the
 * m = 2^floor(log2 n) slopes, then get_slopes(2m)[0::2][:n-m]. */
START_TEST(alibi_slopes_follow_reference_rule) {
    expect_slopes(8, (double[]){1, 2, 3, 4, 5, 6, 7, 8});      /* 1/2 ... 1/256 */
    expect_slopes(4, (double[]){2, 4, 6, 8});                  /* 1/4, 1/16, 1/64, 1/256 */
    expect_slopes(1, (double[]){8});
    expect_slopes(2, (double[]){4, 8});
    /* 3 heads: m = 2 -> 1/16, 1/256; then the first of 4-head slopes 1/4, 1/64. */
    expect_slopes(3, (double[]){4, 8, 2});
    /* 6 heads: m = 4 -> 1/4 .. 1/256; then 8-head slopes [0::2] = 1/2, 1/8, 1/32, 1/128, two of them. */
    expect_slopes(6, (double[]){2, 4, 6, 8, 1, 3});
    /* 12 heads: m = 8 -> 1/2 .. 1/256; then 16-head slopes 2^(-k/2) for k = 1, 3, 5, 7. */
    expect_slopes(12, (double[]){1, 2, 3, 4, 5, 6, 7, 8, 0.5, 1.5, 2.5, 3.5});
    expect_slopes(16, (double[]){0.5, 1, 1.5, 2, 2.5, 3, 3.5, 4, 4.5, 5, 5.5, 6, 6.5, 7, 7.5, 8});
}
END_TEST

START_TEST(alibi_bias_values) {
    /* H = 2, Tq = 2, Tk = 3: the queries sit at absolute positions 1 and 2. */
    const float slopes[2] = {0.5f, 0.25f};
    float bias[2 * 2 * 3];
    qkv_alibi_bias(bias, slopes, 2, 2, 3, 0);
    const float causal[12] = {-0.5f, 0.0f, 0.5f, -1.0f, -0.5f, 0.0f, -0.25f, 0.0f, 0.25f, -0.5f, -0.25f, 0.0f};
    for (int i = 0; i < 12; i++) ck_assert_float_eq(bias[i], causal[i]);
    qkv_alibi_bias(bias, slopes, 2, 2, 3, 1);
    const float symmetric[12] = {-0.5f, 0.0f, -0.5f, -1.0f, -0.5f, 0.0f,
                                 -0.25f, 0.0f, -0.25f, -0.5f, -0.25f, 0.0f};
    for (int i = 0; i < 12; i++) ck_assert_float_eq(bias[i], symmetric[i]);
}
END_TEST

START_TEST(positions_2d_layout) {
    enum { ROWS = 3, COLS = 4, D = 8, HALF = D / 2, N = ROWS * COLS * D };
    float table[N + 4];
    for (int i = 0; i < N + 4; i++) table[i] = 12345.0f;
    qkv_positions_2d(table, ROWS, COLS, D, 0.0f);
    for (int i = N; i < N + 4; i++) ck_assert_float_eq(table[i], 12345.0f); /* wrote [12,8] only */
    float row_code[ROWS * HALF], col_code[COLS * HALF];
    qkv_sinusoidal_table(row_code, ROWS, HALF, 0, 0.0f);
    qkv_sinusoidal_table(col_code, COLS, HALF, 0, 0.0f);
    for (int r = 0; r < ROWS; r++)
        for (int c = 0; c < COLS; c++) {
            const float *patch = table + (r * COLS + c) * D;
            ck_assert_int_eq(memcmp(patch, row_code + r * HALF, HALF * sizeof(float)), 0);
            ck_assert_int_eq(memcmp(patch + HALF, col_code + c * HALF, HALF * sizeof(float)), 0);
        }
    /* Same row: first halves equal, second halves differ; same column: the reverse. */
    const float *p10 = table + (1 * COLS + 0) * D, *p13 = table + (1 * COLS + 3) * D;
    const float *p02 = table + (0 * COLS + 2) * D, *p22 = table + (2 * COLS + 2) * D;
    ck_assert_int_eq(memcmp(p10, p13, HALF * sizeof(float)), 0);
    ck_assert_int_ne(memcmp(p10 + HALF, p13 + HALF, HALF * sizeof(float)), 0);
    ck_assert_int_eq(memcmp(p02 + HALF, p22 + HALF, HALF * sizeof(float)), 0);
    ck_assert_int_ne(memcmp(p02, p22, HALF * sizeof(float)), 0);
}
END_TEST

/* RoPE forward and backward (both layouts), a big sinusoidal table, a 2-D table and
 * an ALiBi bias, all above the parallel threshold. */
enum { TB = 4, TH = 8, TT = 128, TD = 64, ROPE_SIZE = TB * TH * TT * TD };
enum { SIN_T = 512, SIN_D = 64, AL_H = 8, AL_T = 128 };
enum { ALL_SIZE = 4 * ROPE_SIZE + SIN_T * SIN_D + SIN_T * SIN_D + AL_H * AL_T * AL_T };

static void position_work(float *out, void *ctx) {
    (void)ctx;
    qkv_tape *tape = qkv_tape_create(1);
    qkv_tensor *x = random_tensor(4, (int[]){TB, TH, TT, TD}, 22, 1);
    for (int split = 0; split <= 1; split++) {
        qkv_tensor_zero_grad(x);
        qkv_tensor *y = qkv_rope(tape, x, &(qkv_rope_opts){.split_halves = split, .offset = 3});
        backward_random(tape, y, 23);
        out = append_floats(out, y->data, ROPE_SIZE);
        out = append_floats(out, x->grad, ROPE_SIZE);
        qkv_tape_reset(tape);
    }
    qkv_sinusoidal_table(out, SIN_T, SIN_D, 7, 0.0f);
    out += SIN_T * SIN_D;
    qkv_positions_2d(out, 16, 32, SIN_D, 0.0f);
    out += SIN_T * SIN_D;
    float slopes[AL_H];
    qkv_alibi_slopes(slopes, AL_H);
    qkv_alibi_bias(out, slopes, AL_H, AL_T, AL_T, 1);
    qkv_tensor_free(x);
    qkv_tape_free(tape);
}

START_TEST(positions_are_thread_independent) {
    expect_same_for_1_and_2_threads(position_work, NULL, ALL_SIZE, "rope, sinusoidal, 2-D and alibi tables");
}
END_TEST

Suite *suite_position(void) {
    Suite *s = suite_create("position");
    TCase *rope = tcase_create("rope");
    tcase_add_test(rope, rope_hand_values);
    tcase_add_test(rope, rope_position_zero_is_identity);
    tcase_add_test(rope, rope_preserves_norms);
    tcase_add_test(rope, rope_scores_depend_on_relative_position);
    tcase_add_test(rope, rope_score_matrix_is_shift_invariant);
    tcase_add_test(rope, rope_positions_match_offset_for_kv_cache);
    tcase_add_test(rope, rope_backward_adds_inverse_rotation);
    tcase_add_test(rope, rope_errors_name_op_and_shape);
    suite_add_tcase(s, rope);
    TCase *tables = tcase_create("tables");
    tcase_add_test(tables, sinusoidal_hand_values);
    tcase_add_test(tables, sinusoidal_dot_depends_only_on_offset);
    tcase_add_test(tables, positions_2d_layout);
    tcase_add_test(tables, alibi_slopes_follow_reference_rule);
    tcase_add_test(tables, alibi_bias_values);
    tcase_add_test(tables, table_errors_and_length_guard);
    suite_add_tcase(s, tables);
    TCase *threads = tcase_create("threads");
    tcase_set_timeout(threads, 0);
    tcase_add_test(threads, positions_are_thread_independent);
    suite_add_tcase(s, threads);
    return s;
}
