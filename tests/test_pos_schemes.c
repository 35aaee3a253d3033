/* test_pos_schemes.c — the position schemes of layers/positions.h beyond the
 * core helpers: T5's bucket function against torch's (ref/t5_buckets_*.npy from
 * make_t5_reference.py, every relative position -1000..1000, bidirectional and
 * causal), the T5 bias read from its table with its gradient; randomized
 * positions (draws sorted, distinct, in range, reproducible; a causal stack fed a
 * sample decodes incrementally exactly as its full pass; a sequence model with
 * --pos-randomize is bitwise reproducible, checkpoints M, refuses a bad M; per-row
 * samples: each row reads its own, decoding equals the full pass, a model's rows
 * draw sorted, distinct, reproducible and different samples); fire's bias and
 * gradients and p-rope's rotation against torch (ref/fire_*.npy, ref/prope_*.npy
 * from make_pos_reference.py); each scheme's rules as its row's one check (the
 * task's message and the layer's stop), the rows' functions against their
 * columns; the mean reciprocal rank of the lengthgen experiment. */
#include "tests/test_util.h"

#include <stdlib.h>

#include "core/io/npy.h"
#include "core/ops/ops.h"
#include "layers/positions.h"
#include "layers/transformer.h"
#include "optim/optimizer.h"
#include "train/fields.h"
#include "train/experiments/experiments.h"
#include "train/tasks/sequence.h"

START_TEST(t5_buckets_match_reference) {
    static const int configs[][2] = {{32, 128}, {16, 64}, {8, 20}};
    for (int c = 0; c < 3; c++)
        for (int bidirectional = 0; bidirectional <= 1; bidirectional++) {
            char path[96];
            snprintf(path, sizeof path, "ref/t5_buckets_%s_%d_%d.npy", bidirectional ? "b" : "c", configs[c][0],
                     configs[c][1]);
            qkv_tensor *ref = qkv_npy_load(path, 0);
            ck_assert_msg(ref && ref->size == 2001, "%s: missing or not 2001 values", path);
            for (int rel = -1000; rel <= 1000; rel++) {
                int got = qkv_t5_bucket(rel, bidirectional, configs[c][0], configs[c][1]);
                ck_assert_msg(got == (int)ref->data[rel + 1000], "%s: rel %d gives %d, torch %g", path, rel, got,
                              ref->data[rel + 1000]);
            }
            qkv_tensor_free(ref);
        }
}
END_TEST

/* Hand values of the default rule: exact below 8 (bidirectional) / 16 (causal). */
START_TEST(t5_bucket_hand_values) {
    ck_assert_int_eq(qkv_t5_bucket(0, 1, 32, 128), 0);
    ck_assert_int_eq(qkv_t5_bucket(-3, 1, 32, 128), 3);
    ck_assert_int_eq(qkv_t5_bucket(3, 1, 32, 128), 19);    /* the second half */
    ck_assert_int_eq(qkv_t5_bucket(-1000, 1, 32, 128), 15); /* capped */
    ck_assert_int_eq(qkv_t5_bucket(5, 0, 32, 128), 0);      /* causal: the future shares bucket 0 */
    ck_assert_int_eq(qkv_t5_bucket(-15, 0, 32, 128), 15);
    ck_assert_int_eq(qkv_t5_bucket(-16, 0, 32, 128), 16);   /* first log bucket */
    ck_assert_int_eq(qkv_t5_bucket(-127, 0, 32, 128), 31);
}
END_TEST

/* bias[0][h][i][j] = table[bucket(j - qi)][h], qi = i + Tk - Tq; and the gradient
 * of sum(bias * R) reaches exactly those table entries. */
START_TEST(t5_bias_reads_its_table_with_gradient) {
    qkv_params params = {0};
    qkv_rng rng = qkv_rng_make(3);
    qkv_positions pos;
    qkv_pos_opts opts = {.t5_buckets = 8, .t5_max_distance = 20};
    qkv_positions_init_opts(&pos, &params, "pos", QKV_POS_T5, 8, 0, 2, &opts, &rng);
    ck_assert_ptr_nonnull(pos.t5);
    ck_assert_int_eq(pos.t5->shape[0], 8);
    ck_assert_int_eq(pos.t5->shape[1], 2);
    for (int symmetric = 0; symmetric <= 1; symmetric++) {
        qkv_tape *tape = qkv_tape_create(1);
        qkv_tensor_zero_grad(pos.t5);
        qkv_tensor *bias = qkv_positions_bias(tape, &pos, 3, 7, symmetric);
        ck_assert_int_eq(bias->ndim, 4);
        ck_assert_int_eq(bias->shape[1], 2);
        float expect_grad[16] = {0};
        for (int h = 0; h < 2; h++)
            for (int i = 0; i < 3; i++)
                for (int j = 0; j < 7; j++) {
                    int b = qkv_t5_bucket(j - (i + 4), symmetric, 8, 20);
                    ck_assert_float_eq(bias->data[(h * 3 + i) * 7 + j], pos.t5->data[b * 2 + h]);
                    expect_grad[b * 2 + h] += (float)(1 + h + i + j);
                }
        qkv_tensor *r = qkv_tape_tensor(tape, 4, (int[]){1, 2, 3, 7});
        for (int h = 0; h < 2; h++)
            for (int i = 0; i < 3; i++)
                for (int j = 0; j < 7; j++) r->data[(h * 3 + i) * 7 + j] = (float)(1 + h + i + j);
        qkv_backward(tape, qkv_sum_all(tape, qkv_mul(tape, bias, r)));
        for (int k = 0; k < 16; k++) ck_assert_float_eq(pos.t5->grad[k], expect_grad[k]);
        qkv_tape_free(tape);
    }
    qkv_params_free(&params);
}
END_TEST

/* A reference file ref/<prefix>_<name>.npy (stops the test when missing). */
static qkv_tensor *load_ref_grad(const char *prefix, const char *name, int requires_grad) {
    char path[128];
    snprintf(path, sizeof path, "ref/%s_%s.npy", prefix, name);
    qkv_tensor *t = qkv_npy_load(path, requires_grad);
    ck_assert_msg(t != NULL, "%s: missing", path);
    return t;
}
static qkv_tensor *load_ref(const char *prefix, const char *name) { return load_ref_grad(prefix, name, 0); }

/* |a - b| <= tol * max(1, |b|) for every element (measured: at most 7.2e-7). */
static void compare_ref(const char *what, const float *got, const qkv_tensor *want, double tol) {
    for (size_t i = 0; i < want->size; i++) {
        double d = fabs((double)got[i] - want->data[i]), scale = fabs(want->data[i]) > 1 ? fabs(want->data[i]) : 1;
        ck_assert_msg(d <= tol * scale, "%s[%zu]: %g, torch %g", what, i, (double)got[i], (double)want->data[i]);
    }
}

/* FIRE's bias and the gradients of sum(bias * r) to W1, b1, W2, b2, c and
 * l_scale against torch (make_pos_reference.py): a square case with L within
 * reach of the queries (both branches of the max) and cached queries with L 512. */
START_TEST(fire_matches_reference) {
    static const struct { const char *name; int tq, tk, heads, width; float l_init; } cases[] = {
        {"fire_square", 6, 6, 3, 5, 4.0f}, {"fire_cached", 2, 7, 2, 4, 512.0f}};
    for (int k = 0; k < 2; k++) {
        qkv_params params = {0};
        qkv_rng rng = qkv_rng_make(5);
        qkv_positions pos;
        qkv_pos_opts opts = {.fire_width = cases[k].width, .fire_l = cases[k].l_init};
        qkv_positions_init_opts(&pos, &params, "pos", QKV_POS_FIRE, 8, 0, cases[k].heads, &opts, &rng);
        ck_assert_ptr_nonnull(qkv_params_find(&params, "pos.fire.fc1.weight"));
        ck_assert_ptr_nonnull(qkv_params_find(&params, "pos.fire.l_scale"));
        qkv_tensor *mine[6] = {pos.fire_fc1.weight, pos.fire_fc1.bias, pos.fire_fc2.weight, pos.fire_fc2.bias,
                               pos.fire_c, pos.fire_l_scale};
        static const char *const names[6] = {"w1", "b1", "w2", "b2", "c", "l_scale"};
        for (int i = 0; i < 6; i++) {
            qkv_tensor *ref = load_ref(cases[k].name, names[i]);
            ck_assert_uint_eq(ref->size, mine[i]->size);
            memcpy(mine[i]->data, ref->data, ref->size * sizeof(float));
            qkv_tensor_zero_grad(mine[i]);
            qkv_tensor_free(ref);
        }
        qkv_tape *tape = qkv_tape_create(1);
        qkv_tensor *bias = qkv_positions_bias(tape, &pos, cases[k].tq, cases[k].tk, 0);
        qkv_tensor *r = load_ref(cases[k].name, "r"), *out = load_ref(cases[k].name, "out");
        ck_assert_uint_eq(bias->size, out->size);
        compare_ref("fire bias", bias->data, out, 1e-5);
        qkv_backward(tape, qkv_sum_all(tape, qkv_mul(tape, bias, qkv_reshape(tape, r, 4, bias->shape))));
        for (int i = 0; i < 6; i++) {
            char name[16];
            snprintf(name, sizeof name, "d%s", names[i]);
            qkv_tensor *d = load_ref(cases[k].name, name);
            compare_ref(name, mine[i]->grad, d, 1e-4);
            qkv_tensor_free(d);
        }
        qkv_tensor_free(r);
        qkv_tensor_free(out);
        qkv_tape_free(tape);
        qkv_params_free(&params);
    }
}
END_TEST

/* p-RoPE's rotated x and its gradient against torch (frequencies of the whole
 * head, the lowest (1 - p) of them set to zero), both pair layouts. */
START_TEST(prope_matches_reference) {
    static const struct { const char *name; float p; int halves, offset; float base; } cases[] = {
        {"prope_interleaved", 0.75f, 0, 0, 10000.0f}, {"prope_halves", 0.5f, 1, 3, 100.0f}};
    for (int k = 0; k < 2; k++) {
        qkv_tensor *x = load_ref_grad(cases[k].name, "x", 1);
        qkv_tensor *r = load_ref(cases[k].name, "r");
        qkv_tensor *out = load_ref(cases[k].name, "out"), *dx = load_ref(cases[k].name, "dx");
        qkv_tape *tape = qkv_tape_create(1);
        qkv_rope_opts opts = {.keep_fraction = cases[k].p, .split_halves = cases[k].halves,
                              .offset = cases[k].offset, .base = cases[k].base};
        qkv_tensor *y = qkv_rope(tape, x, &opts);
        compare_ref("p-rope y", y->data, out, 1e-5);
        qkv_backward(tape, qkv_sum_all(tape, qkv_mul(tape, y, r)));
        compare_ref("p-rope dx", x->grad, dx, 1e-5);
        qkv_tape_free(tape);
        qkv_tensor_free(x);
        qkv_tensor_free(r);
        qkv_tensor_free(out);
        qkv_tensor_free(dx);
    }
}
END_TEST

START_TEST(randomized_draws_are_sorted_distinct_in_range_reproducible) {
    int32_t a[64], b[64];
    int seen[100] = {0};
    for (int trial = 0; trial < 200; trial++) {
        qkv_rng r1 = qkv_rng_make(1000 + trial), r2 = qkv_rng_make(1000 + trial);
        int n = 1 + trial % 64;
        qkv_positions_draw(a, n, 100, &r1);
        qkv_positions_draw(b, n, 100, &r2);
        ck_assert_mem_eq(a, b, (size_t)n * sizeof(int32_t));
        for (int i = 0; i < n; i++) {
            ck_assert(a[i] >= 0 && a[i] < 100);
            if (i) ck_assert_msg(a[i] > a[i - 1], "draw not strictly increasing at %d", i);
            seen[a[i]]++;
        }
    }
    for (int v = 0; v < 100; v++) ck_assert_msg(seen[v] > 0, "value %d never drawn", v);
    qkv_rng r = qkv_rng_make(5);
    qkv_positions_draw(a, 10, 10, &r);   /* n == M: every position */
    for (int i = 0; i < 10; i++) ck_assert_int_eq(a[i], i);
    qkv_rng r3 = qkv_rng_make(6), r4 = qkv_rng_make(7);
    qkv_positions_draw(a, 20, 1000, &r3);
    qkv_positions_draw(b, 20, 1000, &r4);
    ck_assert_msg(memcmp(a, b, sizeof(int32_t) * 20) != 0, "two seeds gave the same draw");
    EXPECT_FATAL(qkv_positions_draw(a, 11, 10, &r), "positions_draw");
}
END_TEST

/* A causal stack reading a sample: the full pass equals prompt + one-by-one
 * decoding through the KV caches (the cache's RoPE slots follow the sample). */
START_TEST(randomized_stack_decodes_like_its_full_pass) {
    static const qkv_pos_kind kinds[] = {QKV_POS_LEARNED, QKV_POS_SINUSOIDAL, QKV_POS_ROPE};
    for (int k = 0; k < 3; k++) {
        qkv_params params = {0};
        qkv_rng rng = qkv_rng_make(11);
        qkv_stack_config cfg = {.block = {.d_model = 8, .n_heads = 2, .d_ff = 16, .activation = QKV_ACT_GELU},
                                .n_layers = 2, .positions = kinds[k], .max_len = 50, .pos_opts = {.randomize = 50}};
        qkv_encoder enc;
        qkv_encoder_init(&enc, &params, "enc", &cfg, 1, &rng);
        int32_t sample[6];
        qkv_rng draw = qkv_rng_make(12);
        qkv_positions_draw(sample, 6, 50, &draw);
        qkv_positions_set_sample(&enc.pos, sample, 6);
        qkv_tape *tape = qkv_tape_create_inference(1);
        qkv_tensor *x = random_tensor_from(&rng, 3, (int[]){1, 6, 8}, 0);
        qkv_tensor *full = qkv_encoder_forward(tape, &enc, x, NULL);
        qkv_kv_cache caches[2];
        qkv_stack_caches_init(caches, 2, &enc.blocks[0].attn, 1, 6);
        qkv_tensor *first = qkv_encoder_decode(tape, &enc, qkv_slice(tape, x, 1, 0, 3), caches);
        for (int t = 0; t < 3; t++)
            for (int c = 0; c < 8; c++) ck_assert_close(first->data[t * 8 + c], full->data[t * 8 + c], 1e-5);
        for (int t = 3; t < 6; t++) {
            qkv_tensor *y = qkv_encoder_decode(tape, &enc, qkv_slice(tape, x, 1, t, t + 1), caches);
            for (int c = 0; c < 8; c++) ck_assert_close(y->data[c], full->data[t * 8 + c], 1e-5);
        }
        /* and the sample matters: positions 0..5 give another output */
        qkv_positions_set_sample(&enc.pos, NULL, 0);
        qkv_tensor *plain = qkv_encoder_forward(tape, &enc, x, NULL);
        double diff = 0;
        for (size_t i = 0; i < full->size; i++) diff += fabs(plain->data[i] - full->data[i]);
        ck_assert_msg(diff > 1e-3, "%s: the sample changed nothing", qkv_pos_kind_name(kinds[k]));
        EXPECT_FATAL(qkv_positions_set_sample(&enc.pos, (int32_t[]){3, 50}, 2), "outside [0, 50)");
        qkv_stack_caches_free(caches, 2);
        qkv_tensor_free(x);
        qkv_tape_free(tape);
        qkv_encoder_free(&enc);
        qkv_params_free(&params);
    }
}
END_TEST

static qkv_seq_model_config randomized_config(qkv_pos_kind pos) {
    qkv_seq_model_config c;
    qkv_seq_model_default_config(&c);
    c.data = (qkv_seq_config){QKV_TASK_COPY, QKV_ARCH_DECODER, 6, 1, 4};
    c.layers = 1;
    c.heads = 2;
    c.dim = 8;
    c.ff = 16;
    c.batch = 8;
    c.test_size = 16;
    c.pos = pos;
    c.pos_randomize = 30;
    c.seed = 9;
    return c;
}

/* Same seed, same bits; M reaches the checkpoint's description and back. */
START_TEST(randomized_model_is_reproducible_and_described) {
    qkv_optimizer_config adam = {.kind = QKV_OPT_ADAM, .lr = 1e-2f};
    for (int k = 0; k < 2; k++) {
        qkv_seq_model_config c = randomized_config(k ? QKV_POS_ROPE : QKV_POS_LEARNED);
        qkv_seq_model m1, m2;
        qkv_seq_model_init(&m1, &c);
        qkv_seq_model_init(&m2, &c);
        ck_assert_int_eq(m1.config.max_pos, 30);   /* learned: a row per position of [0, M) */
        float *a = malloc(100000 * sizeof(float)), *b = malloc(100000 * sizeof(float));
        size_t na = train_and_dump(&m1.task, 6, adam, a), nb = train_and_dump(&m2.task, 6, adam, b);
        ck_assert_uint_eq(na, nb);
        ck_assert_mem_eq(a, b, na * sizeof(float));
        qkv_config_kv *desc = calloc(1, sizeof *desc);
        m1.task.describe(m1.task.self, desc);
        ck_assert_str_eq(qkv_config_get(desc, "pos_randomize"), "30");
        qkv_seq_model_config back;
        ck_assert_int_eq(qkv_seq_model_config_from(desc, &back), 0);
        free(desc);
        ck_assert_int_eq(back.pos_randomize, 30);
        qkv_seq_model_free(&m1);
        qkv_seq_model_free(&m2);
        free(a);
        free(b);
    }
    /* without randomization the key is left out: old checkpoints stay as they were */
    qkv_seq_model_config c = randomized_config(QKV_POS_ROPE);
    c.pos_randomize = 0;
    qkv_seq_model m;
    qkv_seq_model_init(&m, &c);
    qkv_config_kv *desc = calloc(1, sizeof *desc);
    m.task.describe(m.task.self, desc);
    ck_assert_ptr_null(qkv_config_get(desc, "pos_randomize"));
    ck_assert_ptr_null(qkv_config_get(desc, "t5_buckets"));
    free(desc);
    qkv_seq_model_free(&m);
}
END_TEST

/* Rows [0, B) of a causal stack's output: the full pass, then prompt + one-by-one
 * decoding through KV caches; the two must agree (1e-5). */
static void check_decoding_matches(qkv_tape *tape, qkv_encoder *enc, qkv_tensor *x, const qkv_tensor *full) {
    int b = x->shape[0], t_len = x->shape[1], d = x->shape[2], prompt = 3;
    qkv_kv_cache caches[2];
    qkv_stack_caches_init(caches, 2, &enc->blocks[0].attn, b, t_len);
    qkv_tensor *first = qkv_encoder_decode(tape, enc, qkv_slice(tape, x, 1, 0, prompt), caches);
    for (int r = 0; r < b; r++)
        for (int t = 0; t < prompt; t++)
            for (int c = 0; c < d; c++)
                ck_assert_close(first->data[((size_t)r * prompt + t) * d + c],
                                full->data[((size_t)r * t_len + t) * d + c], 1e-5);
    for (int t = prompt; t < t_len; t++) {
        qkv_tensor *y = qkv_encoder_decode(tape, enc, qkv_slice(tape, x, 1, t, t + 1), caches);
        for (int r = 0; r < b; r++)
            for (int c = 0; c < d; c++)
                ck_assert_close(y->data[(size_t)r * d + c], full->data[((size_t)r * t_len + t) * d + c], 1e-5);
    }
    qkv_stack_caches_free(caches, 2);
}

/* Per-row samples (one draw per sequence): every row of a batched causal pass
 * equals that row run alone with its own sample, the rows' draws differ, and
 * cached decoding equals the full pass; fire and p-rope (no sample) decode like
 * their full pass too. */
START_TEST(per_row_samples_read_their_own_row_and_decode_like_the_full_pass) {
    static const qkv_pos_kind kinds[] = {QKV_POS_LEARNED, QKV_POS_SINUSOIDAL, QKV_POS_ROPE, QKV_POS_PROPE,
                                         QKV_POS_FIRE};
    enum { B = 3, T = 6, D = 8, M = 50 };
    for (int k = 0; k < 5; k++) {
        int randomized = qkv_pos_randomizable(kinds[k]);
        qkv_params params = {0};
        qkv_rng rng = qkv_rng_make(21);
        qkv_stack_config cfg = {.block = {.d_model = D, .n_heads = 2, .d_ff = 16, .activation = QKV_ACT_GELU},
                                .n_layers = 2, .positions = kinds[k], .max_len = M,
                                .pos_opts = {.randomize = randomized ? M : 0, .fire_l = 4.0f}};
        qkv_encoder enc;
        qkv_encoder_init(&enc, &params, "enc", &cfg, 1, &rng);
        int32_t samples[B * T];
        for (int r = 0; r < B; r++) {
            qkv_rng draw = qkv_rng_split_at(qkv_rng_make(22), (uint64_t)r);
            qkv_positions_draw(samples + r * T, T, M, &draw);
        }
        ck_assert_msg(memcmp(samples, samples + T, T * sizeof(int32_t)) != 0, "rows 0 and 1 drew the same");
        if (randomized) qkv_positions_set_samples(&enc.pos, samples, B, T);
        qkv_tape *tape = qkv_tape_create_inference(1);
        qkv_tensor *x = random_tensor_from(&rng, 3, (int[]){B, T, D}, 0);
        qkv_tensor *full = qkv_encoder_forward(tape, &enc, x, NULL);
        check_decoding_matches(tape, &enc, x, full);
        for (int r = 0; randomized && r < B; r++) {   /* row r alone, with its own sample */
            qkv_positions_set_sample(&enc.pos, samples + r * T, T);
            qkv_tensor *alone = qkv_encoder_forward(tape, &enc, qkv_slice(tape, x, 0, r, r + 1), NULL);
            for (int i = 0; i < T * D; i++) ck_assert_close(alone->data[i], full->data[(size_t)r * T * D + i], 1e-5);
        }
        if (randomized) {   /* the wrong number of rows is a programmer error */
            qkv_positions_set_samples(&enc.pos, samples, B, T);
            EXPECT_FATAL(qkv_encoder_forward(tape, &enc, qkv_slice(tape, x, 0, 0, 2), NULL), "samples of 3 rows");
        }
        qkv_tensor_free(x);
        qkv_tape_free(tape);
        qkv_encoder_free(&enc);
        qkv_params_free(&params);
    }
}
END_TEST

/* A sequence model's training batch: each row its own draw, sorted, distinct, in
 * [0, M); the same step of another model of the same seed draws the same bits;
 * the next step draws others. */
START_TEST(per_row_draws_of_a_model_are_sorted_distinct_reproducible) {
    qkv_seq_model_config c = randomized_config(QKV_POS_ROPE);
    qkv_seq_model m1, m2;
    qkv_seq_model_init(&m1, &c);
    qkv_seq_model_init(&m2, &c);
    m1.task.prepare(m1.task.self, 3);
    m2.task.prepare(m2.task.self, 3);
    int n = m1.pos_sample_len, rows = c.batch;
    ck_assert_int_ge(n, 3);
    ck_assert_int_eq(m2.pos_sample_len, n);
    ck_assert_mem_eq(m1.pos_sample, m2.pos_sample, (size_t)rows * n * sizeof(int32_t));
    int differing = 0;
    for (int r = 0; r < rows; r++) {
        const int32_t *row = m1.pos_sample + (size_t)r * n;
        ck_assert_int_ge(row[0], 0);
        ck_assert_int_lt(row[n - 1], c.pos_randomize);
        for (int i = 1; i < n; i++) ck_assert_int_lt(row[i - 1], row[i]);   /* sorted and distinct */
        if (r && memcmp(row, m1.pos_sample, (size_t)n * sizeof(int32_t)) != 0) differing++;
    }
    ck_assert_int_ge(differing, rows - 2);   /* rows draw apart (a chance tie aside) */
    int32_t *step3 = malloc((size_t)rows * n * sizeof(int32_t));
    memcpy(step3, m1.pos_sample, (size_t)rows * n * sizeof(int32_t));
    m1.task.prepare(m1.task.self, 4);
    ck_assert_int_ne(memcmp(step3, m1.pos_sample, (size_t)n * sizeof(int32_t)), 0);
    free(step3);
    qkv_seq_model_free(&m1);
    qkv_seq_model_free(&m2);
}
END_TEST

START_TEST(randomized_bad_m_is_refused_in_one_line) {
    char line[512];
    ck_assert_int_eq(run_qkv("train copy --arch decoder --min-len 1 --max-len 8 --pos rope --pos-randomize 10 "
                             "--steps 1", line, sizeof line), 2);
    ck_assert_msg(strstr(line, "--pos-randomize 10") && strstr(line, "17 positions"), "message: %s", line);
    ck_assert_int_eq(run_qkv("train copy --arch decoder --len 4 --pos alibi --pos-randomize 100 --steps 1", line,
                             sizeof line), 2);
    ck_assert_msg(strstr(line, "--pos-randomize") && strstr(line, "alibi"), "message: %s", line);
    ck_assert_int_eq(run_qkv("train copy --arch decoder --len 4 --pos t5 --t5-buckets 8 --t5-max-distance 4 "
                             "--steps 1", line, sizeof line), 2);
    ck_assert_msg(strstr(line, "--t5-max-distance 4"), "message: %s", line);
    qkv_seq_model_config c = randomized_config(QKV_POS_SINUSOIDAL);
    c.pos_randomize = 8;   /* the stream "x SEP y" has 9 positions */
    ck_assert_int_eq(qkv_seq_model_check(&c), -1);
    ck_assert_ptr_nonnull(strstr(qkv_last_error(), "--pos-randomize 8"));
}
END_TEST

/* Each rule of a scheme is its row's check, written once: the task shows its
 * message (the command's one line, exit 2) and the layer stops with the same
 * message, prefixed by the module's name. */
static void expect_rule(const char *command, qkv_pos_kind kind, int d_model, int max_len, int n_heads,
                        const qkv_pos_opts *opts, const char *message) {
    char line[512], stop[512];
    ck_assert_int_eq(qkv_pos_check(kind, d_model, max_len, n_heads, opts), -1);
    ck_assert_str_eq(qkv_last_error(), message);
    ck_assert_int_eq(run_qkv(command, line, sizeof line), 2);
    ck_assert_msg(strstr(line, message), "%s: %s", command, line);
    qkv_params params = {0};
    qkv_rng rng = qkv_rng_make(1);
    qkv_positions pos;
    snprintf(stop, sizeof stop, "positions pos: %s", message);
    EXPECT_FATAL(qkv_positions_init_opts(&pos, &params, "pos", kind, d_model, max_len, n_heads, opts, &rng), stop);
    qkv_params_free(&params);
}

START_TEST(scheme_rules_are_one_check_for_task_and_layer) {
    expect_rule("train copy --arch decoder --len 4 --pos alibi --dim 130 --heads 65 --steps 1", QKV_POS_ALIBI, 130,
                16, 65, NULL, "--pos alibi supports at most 64 heads");
    expect_rule("train copy --arch decoder --len 4 --pos t5 --t5-buckets 8 --t5-max-distance 4 --steps 1", QKV_POS_T5,
                64, 16, 4, &(qkv_pos_opts){.t5_buckets = 8, .t5_max_distance = 4},
                "--t5-buckets 8 / --t5-max-distance 4: expected 4..1024 buckets and a distance above half of them");
    /* head width 8, 4 pairs: 0.2 of them floors to none */
    expect_rule("train copy --arch decoder --len 4 --pos p-rope --dim 16 --heads 2 --p-rope 0.2 --steps 1",
                QKV_POS_PROPE, 16, 16, 2, &(qkv_pos_opts){.prope = 0.2f},
                "--p-rope 0.2 of 4 pairs keeps none turning (head width 8)");
    char names[96], applies[160];
    snprintf(applies, sizeof applies, "--pos-randomize applies to --pos %s, not alibi",
             qkv_pos_scheme_list(names, sizeof names, ", ", "", qkv_pos_keep_randomizable));
    expect_rule("train copy --arch decoder --len 4 --pos alibi --pos-randomize 100 --steps 1", QKV_POS_ALIBI, 64, 16,
                4, &(qkv_pos_opts){.randomize = 100}, applies);
    expect_rule("train copy --arch decoder --len 4 --pos learned --pos-randomize 40 --max-pos 20 --steps 1",
                QKV_POS_LEARNED, 64, 20, 4, &(qkv_pos_opts){.randomize = 40},
                "--pos-randomize 40 needs that many learned rows, beyond --max-pos 20");
    /* text builds its stack from the same check */
    char line[512];
    ck_assert_int_eq(run_qkv("train text --pos alibi --dim 130 --heads 65 --steps 1", line, sizeof line), 2);
    ck_assert_msg(strstr(line, "--pos alibi supports at most 64 heads"), "%s", line);
    /* the rules hold at the limits: 64 heads, a distance just above half the buckets */
    ck_assert_int_eq(qkv_pos_check(QKV_POS_ALIBI, 128, 0, 64, NULL), 0);
    ck_assert_int_eq(qkv_pos_check(QKV_POS_T5, 8, 0, 2, &(qkv_pos_opts){.t5_buckets = 8, .t5_max_distance = 5}), 0);
    ck_assert_int_eq(qkv_pos_check(QKV_POS_PROPE, 16, 0, 2, &(qkv_pos_opts){.prope = 0.25f}), 0);
}
END_TEST

/* The rows' behaviour agrees with their columns: a scheme with a trained table
 * makes it (init), randomizable ones read positions by index (an add or a
 * rotation, never a bias), and none does nothing. */
START_TEST(scheme_rows_carry_their_behaviour) {
    for (int k = 0; k < QKV_POS_COUNT; k++) {
        const qkv_pos_scheme *s = &qkv_pos_schemes[k];
        ck_assert_int_eq(s->kind, k);
        ck_assert_msg(s->table == QKV_POS_TABLE_NONE || s->init, "%s has a table but no init", s->name);
        ck_assert_msg(!s->randomizable || ((s->add || s->rotate) && !s->bias), "%s: randomizable without indices",
                      s->name);
        ck_assert_msg(!!s->add + !!s->rotate + !!s->bias == (k != QKV_POS_NONE), "%s: one of add, rotate, bias",
                      s->name);
    }
}
END_TEST

/* The papers' names (nope, ape) are aliases in the table: they parse to their
 * row wherever a name does (qkv_pos_kind_parse, every --pos flag, lengthgen's
 * list, where they become the row's name), are no row's name, and are never
 * written: a run with --pos nope writes the bytes --pos none writes. */
START_TEST(paper_names_are_aliases_of_their_rows) {
    int aliases = 0;
    for (int k = 0; k < QKV_POS_COUNT; k++) {
        const char *alias = qkv_pos_schemes[k].alias;
        if (!alias[0]) continue;
        aliases++;
        ck_assert_int_eq(qkv_pos_kind_parse(alias), k);
        ck_assert_int_eq(qkv_choice_parse(qkv_pos_kind_names, alias), k);
        for (int j = 0; j < QKV_POS_COUNT; j++) ck_assert_str_ne(alias, qkv_pos_schemes[j].name);
    }
    ck_assert_int_eq(aliases, 2);
    ck_assert_int_eq(qkv_pos_kind_parse("nope"), QKV_POS_NONE);
    ck_assert_int_eq(qkv_pos_kind_parse("ape"), QKV_POS_SINUSOIDAL);
    ck_assert_int_eq(qkv_choice_parse(qkv_opt_kind_names, "ape"), -1);   /* another list has no aliases */
    char line[512];
    ck_assert_int_eq(run_qkv("experiment lengthgen --pos nope,none", line, sizeof line), 2);
    ck_assert_msg(strstr(line, "--pos: 'none' given twice"), "%s", line);
    scratch_dir_create();
    char args[768];
    const char *names[2] = {"none", "nope"}, *files[2] = {"none.st", "nope.st"};
    char paths[2][256];
    for (int i = 0; i < 2; i++) {
        snprintf(paths[i], sizeof paths[i], "%s", scratch_file(files[i]));
        snprintf(args, sizeof args, "train reverse --pos %s --steps 1 --eval-every 0 --threads 1 --quiet --save %s",
                 names[i], paths[i]);
        ck_assert_msg(run_qkv(args, line, sizeof line) == 0, "qkv %s: %s", args, line);
    }
    size_t len[2];
    unsigned char *bytes[2] = {read_file_bytes(paths[0], &len[0]), read_file_bytes(paths[1], &len[1])};
    ck_assert_msg(len[0] == len[1] && memcmp(bytes[0], bytes[1], len[0]) == 0, "--pos nope and --pos none differ");
    free(bytes[0]);
    free(bytes[1]);
    scratch_dir_remove();
}
END_TEST

/* Ranks by score, ties sharing the mean rank; the MRR averages 1/rank over tasks. */
START_TEST(lengthgen_mrr_hand_values) {
    /* task 0: a > b > c; task 1: c > a = b (a, b share rank 2.5) */
    const double score[6] = {0.9, 0.5, 0.1, 0.2, 0.2, 0.7};
    double mrr[3];
    qkv_lengthgen_mrr(score, 2, 3, mrr);
    ck_assert_close(mrr[0], (1.0 + 1 / 2.5) / 2, 1e-12);
    ck_assert_close(mrr[1], (1 / 2.0 + 1 / 2.5) / 2, 1e-12);
    ck_assert_close(mrr[2], (1 / 3.0 + 1.0) / 2, 1e-12);
}
END_TEST

Suite *suite_pos_schemes(void) {
    Suite *s = suite_create("pos_schemes");
    TCase *t5 = tcase_create("t5");
    tcase_add_test(t5, t5_buckets_match_reference);
    tcase_add_test(t5, t5_bucket_hand_values);
    tcase_add_test(t5, t5_bias_reads_its_table_with_gradient);
    tcase_add_test(t5, fire_matches_reference);
    tcase_add_test(t5, prope_matches_reference);
    suite_add_tcase(s, t5);
    TCase *rnd = tcase_create("randomized");
    tcase_add_test(rnd, randomized_draws_are_sorted_distinct_in_range_reproducible);
    tcase_add_test(rnd, randomized_stack_decodes_like_its_full_pass);
    tcase_add_test(rnd, randomized_model_is_reproducible_and_described);
    tcase_add_test(rnd, randomized_bad_m_is_refused_in_one_line);
    tcase_add_test(rnd, per_row_samples_read_their_own_row_and_decode_like_the_full_pass);
    tcase_add_test(rnd, per_row_draws_of_a_model_are_sorted_distinct_reproducible);
    tcase_add_test(rnd, lengthgen_mrr_hand_values);
    suite_add_tcase(s, rnd);
    TCase *rows = tcase_create("rows");
    tcase_add_test(rows, scheme_rules_are_one_check_for_task_and_layer);
    tcase_add_test(rows, scheme_rows_carry_their_behaviour);
    tcase_add_test(rows, paper_names_are_aliases_of_their_rows);
    suite_add_tcase(s, rows);
    return s;
}
