/* test_queries.c — learned queries: the DETR decoder (detr.h), the Perceiver
 * block and Perceiver IO decoder (perceiver.h); patches are in test_patch.c.
 * DETR against PyTorch's DETR layers; the BLIP-2 pattern (4 queries read 64, then 256 features); the symmetries the
 * theory promises (DETR invariant to the memory's order when its positions move
 * along, equivariant to the order of its queries; the Perceiver invariant to its
 * input's order); padding; parameter names; errors naming layer and shapes; 1 vs
 * 2 threads. Set QKV_VERBOSE=1 to print the measured symmetry errors. */
#include "tests/test_util.h"

#include <stdio.h>
#include <stdlib.h>

static void report(const char *what, double err) {
    if (getenv("QKV_VERBOSE")) printf("queries: %-44s %.3g\n", what, err);
}

static double max_abs_diff(const float *a, const float *b, size_t n) {
    double m = 0;
    for (size_t i = 0; i < n; i++) m = larger(m, fabs((double)a[i] - b[i]));
    return m;
}

/* A random permutation of 0..n-1 (Fisher-Yates with the qkv rng). */
static void random_permutation(int *perm, int n, uint64_t seed) {
    qkv_rng rng = qkv_rng_make(seed);
    for (int i = 0; i < n; i++) perm[i] = i;
    for (int i = n - 1; i > 0; i--) {
        int j = (int)(qkv_rng_u64(&rng) % (uint64_t)(i + 1));
        int t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
}

/* dst[b, i, :] = src[b, perm[i], :] for [B,N,D] data (B = 1 for a shared [N,D]). */
static void permute_rows(float *dst, const float *src, int b, int n, int d, const int *perm) {
    for (int k = 0; k < b; k++)
        for (int i = 0; i < n; i++)
            memcpy(dst + ((size_t)k * n + i) * d, src + ((size_t)k * n + perm[i]) * d, (size_t)d * sizeof(float));
}

/* ---- DETR ------------------------------------------------------------------------- */

#define D 16

static void detr_make(qkv_detr *dec, qkv_params *params, int post_ln, int n_layers, int n_queries, int n_classes,
                      uint64_t seed) {
    qkv_rng rng = qkv_rng_make(seed);
    qkv_detr_config c = {.block = {.d_model = D, .n_heads = 4, .d_ff = 32, .post_ln = post_ln},
                         .n_layers = n_layers, .n_queries = n_queries, .n_classes = n_classes};
    qkv_detr_init(dec, params, "dec", &c, &rng);
}

/* Every layer's logits and boxes, end to end in out (L * B*N*(C+5) floats). */
static size_t detr_collect(const qkv_detr_out *o, float *out) {
    float *p = out;
    for (int l = 0; l < o->n_layers; l++) {
        p = append_floats(p, o->logits[l]->data, o->logits[l]->size);
        p = append_floats(p, o->boxes[l]->data, o->boxes[l]->size);
    }
    return (size_t)(p - out);
}

START_TEST(detr_outputs_every_layer_with_named_parameters) {
    qkv_params params = {0};
    qkv_detr dec;
    detr_make(&dec, &params, 0, 3, 5, 3, 1);
    const char *names[] = {"dec.query_embed", "dec.0.self_attn.wq.weight", "dec.2.cross_attn.wk.weight",
                           "dec.1.ffn.fc1.weight", "dec.0.ln3.bias", "dec.norm.weight", "dec.class_head.weight",
                           "dec.class_head.bias", "dec.box_head.0.weight", "dec.box_head.2.weight"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        ck_assert_msg(qkv_params_find(&params, names[i]) != NULL, "missing parameter %s", names[i]);
    assert_shape(qkv_params_find(&params, "dec.query_embed"), 2, (int[]){5, D});
    assert_shape(qkv_params_find(&params, "dec.class_head.weight"), 2, (int[]){4, D});
    assert_shape(qkv_params_find(&params, "dec.box_head.2.weight"), 2, (int[]){4, D});
    ck_assert_ptr_null(qkv_params_find(&params, "dec.3.self_attn.wq.weight"));

    qkv_tape *tape = qkv_tape_create(1);
    qkv_tensor *memory = random_tape_tensor(tape, 3, (int[]){2, 7, D}, 2);
    qkv_detr_out o = qkv_detr_forward(tape, &dec, memory, NULL, NULL);
    ck_assert_int_eq(o.n_layers, 3);
    for (int l = 0; l < 3; l++) {
        assert_shape(o.logits[l], 3, (int[]){2, 5, 4});
        assert_shape(o.boxes[l], 3, (int[]){2, 5, 4});
        assert_all_finite(o.logits[l]->data, o.logits[l]->size, "logits");
        for (size_t i = 0; i < o.boxes[l]->size; i++)
            ck_assert(o.boxes[l]->data[i] > 0.0f && o.boxes[l]->data[i] < 1.0f);
        if (l > 0) ck_assert(max_abs_diff(o.logits[l]->data, o.logits[l - 1]->data, o.logits[l]->size) > 1e-3);
    }
    assert_shape(o.hidden, 3, (int[]){2, 5, D});
    /* Every layer's heads reach the parameters: a loss on layer 0 alone gives
     * layer 0 gradients and none to layer 2. */
    backward_ones(tape, qkv_sum_all(tape, o.boxes[0]));
    ck_assert(qkv_sum_squares_fixed(qkv_params_find(&params, "dec.0.ffn.fc2.weight")->grad, D * 32) > 0);
    ck_assert(qkv_sum_squares_fixed(qkv_params_find(&params, "dec.2.ffn.fc2.weight")->grad, D * 32) == 0);
    qkv_tape_free(tape);
    qkv_params_free(&params);
}
END_TEST

/* DETR with memory [B,S,D], per-batch positions [B,S,D] and a padding mask; the
 * memory, positions and mask permuted together (a different permutation per
 * batch item) give the same outputs; permuting the query embeddings permutes them. */
static void detr_symmetries(int post_ln) {
    enum { B = 2, S = 9, N = 6, C = 3, L = 2 };
    qkv_params params = {0};
    qkv_detr dec;
    detr_make(&dec, &params, post_ln, L, N, C, 7 + (uint64_t)post_ln);
    qkv_tape *tape = qkv_tape_create(1);
    qkv_tape_set_grad(tape, 0);
    qkv_tensor *mem = random_tape_tensor(tape, 3, (int[]){B, S, D}, 21);
    qkv_tensor *pos = random_tape_tensor(tape, 3, (int[]){B, S, D}, 22);
    qkv_tensor *pad = qkv_tape_tensor(tape, 2, (int[]){B, S});
    qkv_tensor_fill(pad, 1.0f);
    pad->data[S + 2] = pad->data[S + 5] = 0.0f;   /* item 1 has two padded tokens */
    size_t n = (size_t)L * B * N * (C + 5);
    float *base = malloc(n * sizeof(float)), *got = malloc(n * sizeof(float));
    qkv_detr_out o = qkv_detr_forward(tape, &dec, mem, pos, pad);
    ck_assert_uint_eq(detr_collect(&o, base), n);

    qkv_tensor *mem_p = qkv_tape_tensor(tape, 3, (int[]){B, S, D});
    qkv_tensor *pos_p = qkv_tape_tensor(tape, 3, (int[]){B, S, D});
    qkv_tensor *pad_p = qkv_tape_tensor(tape, 2, (int[]){B, S});
    for (int b = 0; b < B; b++) {
        int perm[S];
        random_permutation(perm, S, 30 + (uint64_t)b);
        permute_rows(mem_p->data + (size_t)b * S * D, mem->data + (size_t)b * S * D, 1, S, D, perm);
        permute_rows(pos_p->data + (size_t)b * S * D, pos->data + (size_t)b * S * D, 1, S, D, perm);
        permute_rows(pad_p->data + (size_t)b * S, pad->data + (size_t)b * S, 1, S, 1, perm);
    }
    o = qkv_detr_forward(tape, &dec, mem_p, pos_p, pad_p);
    detr_collect(&o, got);
    double err = max_abs_diff(got, base, n);
    report(post_ln ? "detr post-LN: memory order, pos along" : "detr pre-LN: memory order, pos along", err);
    ck_assert_msg(err < 2e-6, "DETR outputs depend on the memory's order: %.3g", err);

    /* The positions carry the order: permuting the memory alone changes the outputs. */
    o = qkv_detr_forward(tape, &dec, mem_p, pos, pad_p);
    detr_collect(&o, got);
    ck_assert(max_abs_diff(got, base, n) > 1e-3);

    /* Padded tokens' contents do not matter. */
    for (int k = 0; k < D; k++) mem->data[(size_t)(S + 2) * D + k] = 100.0f, pos->data[(size_t)(S + 5) * D + k] = -7.0f;
    o = qkv_detr_forward(tape, &dec, mem, pos, pad);
    detr_collect(&o, got);
    ck_assert_msg(max_abs_diff(got, base, n) < 1e-6, "padded memory tokens change the outputs");

    /* Equivariance: query rows permuted -> predictions permuted the same way. */
    int qperm[N];
    random_permutation(qperm, N, 40);
    float *saved = copy_floats(dec.query_embed->data, dec.query_embed->size);
    permute_rows(dec.query_embed->data, saved, 1, N, D, qperm);
    o = qkv_detr_forward(tape, &dec, mem, pos, pad);
    double qerr = 0;
    for (int l = 0; l < L; l++) {
        float *ref = base + (size_t)l * B * N * (C + 5);
        float want_logits[B * N * (C + 1)], want_boxes[B * N * 4];
        permute_rows(want_logits, ref, B, N, C + 1, qperm);
        permute_rows(want_boxes, ref + B * N * (C + 1), B, N, 4, qperm);
        qerr = fmax(qerr, max_abs_diff(o.logits[l]->data, want_logits, B * N * (C + 1)));
        qerr = fmax(qerr, max_abs_diff(o.boxes[l]->data, want_boxes, B * N * 4));
    }
    report(post_ln ? "detr post-LN: query order" : "detr pre-LN: query order", qerr);
    ck_assert_msg(qerr < 2e-6, "DETR is not equivariant to its queries' order: %.3g", qerr);
    memcpy(dec.query_embed->data, saved, dec.query_embed->size * sizeof(float));
    free(saved);
    free(base);
    free(got);
    qkv_tape_free(tape);
    qkv_params_free(&params);
}

START_TEST(detr_memory_order_invariance_and_query_equivariance) {
    detr_symmetries(0);
    detr_symmetries(1);
}
END_TEST

START_TEST(detr_shared_positions_and_single_token) {
    /* memory_pos [S,D] shared by the batch equals the same rows given per item. */
    qkv_params params = {0};
    qkv_detr dec;
    detr_make(&dec, &params, 0, 2, 1, 2, 5);
    qkv_tape *tape = qkv_tape_create(1);
    qkv_tensor *mem = random_tape_tensor(tape, 3, (int[]){2, 4, D}, 1);
    qkv_tensor *pos = random_tape_tensor(tape, 2, (int[]){4, D}, 2);
    qkv_tensor *pos_b = qkv_tape_tensor(tape, 3, (int[]){2, 4, D});
    memcpy(pos_b->data, pos->data, 4 * D * sizeof(float));
    memcpy(pos_b->data + 4 * D, pos->data, 4 * D * sizeof(float));
    float a[2 * 2 * 1 * 7], b[2 * 2 * 1 * 7];
    qkv_detr_out o = qkv_detr_forward(tape, &dec, mem, pos, NULL);
    detr_collect(&o, a);
    o = qkv_detr_forward(tape, &dec, mem, pos_b, NULL);
    detr_collect(&o, b);
    assert_floats_near(a, b, 28, 1e-6);
    /* B = 1, S = 1, N = 1. */
    qkv_tensor *one = random_tape_tensor(tape, 3, (int[]){1, 1, D}, 3);
    o = qkv_detr_forward(tape, &dec, one, NULL, NULL);
    assert_shape(o.logits[1], 3, (int[]){1, 1, 3});
    assert_shape(o.boxes[1], 3, (int[]){1, 1, 4});
    qkv_tape_free(tape);
    qkv_params_free(&params);
}
END_TEST

START_TEST(detr_shape_errors_name_layer_and_shapes) {
    qkv_params params = {0};
    qkv_detr dec;
    detr_make(&dec, &params, 0, 1, 3, 2, 1);
    qkv_tape *tape = qkv_tape_create(1);
    qkv_tensor *narrow = qkv_tape_zeros(tape, 3, (int[]){2, 5, 8});
    EXPECT_FATAL(qkv_detr_forward(tape, &dec, narrow, NULL, NULL), "detr: memory [2,5,8] must be [B,S,16]");
    qkv_tensor *mem = qkv_tape_zeros(tape, 3, (int[]){2, 5, D});
    qkv_tensor *pos = qkv_tape_zeros(tape, 2, (int[]){4, D});
    EXPECT_FATAL(qkv_detr_forward(tape, &dec, mem, pos, NULL), "detr: memory_pos [4,16] does not fit memory [2,5,16]");
    qkv_tensor *pad = qkv_tape_zeros(tape, 2, (int[]){2, 4});
    EXPECT_FATAL(qkv_detr_forward(tape, &dec, mem, NULL, pad), "detr: memory_padding [2,4] does not fit memory [2,5,16]");
    qkv_rng rng = qkv_rng_make(1);
    qkv_detr_config c = {.block = {.d_model = D, .n_heads = 4, .d_ff = 8}, .n_layers = 0, .n_queries = 2, .n_classes = 1};
    EXPECT_FATAL(qkv_detr_init(&dec, &params, "bad", &c, &rng), "detr bad: n_layers 0");
    c.n_layers = 1;
    c.block.n_heads = 3;
    EXPECT_FATAL(qkv_detr_init(&dec, &params, "bad", &c, &rng), "heads must divide d_model");
    qkv_tape_free(tape);
    qkv_params_free(&params);
}
END_TEST

/* Against PyTorch: DETR's own decoder code (tests/make_detr_reference.py) in
 * float64 with the same weights; every layer's logits and boxes, and the gradients
 * of L = sum_l sum(logits_l R) + sum(boxes_l R) for every parameter, the memory and
 * its positions, to 1e-5 relative as the ops' references (measured worst 5.4e-7,
 * printed with QKV_VERBOSE=1). */
static const float *st_data(const qkv_safetensors *st, const char *name, const qkv_tensor *like) {
    const qkv_st_tensor *t = qkv_safetensors_find(st, name);
    ck_assert_msg(t != NULL, "ref: %s missing (regenerate with make_detr_reference.py)", name);
    if (like) {
        ck_assert_int_eq(t->ndim, like->ndim);
        for (int k = 0; k < t->ndim; k++) ck_assert_int_eq(t->shape[k], like->shape[k]);
    }
    return t->data;
}

static double worst_relative(const float *got, const float *want, size_t n) {
    double worst = 0;
    for (size_t i = 0; i < n; i++) worst = larger(worst, fabs((double)got[i] - want[i]) / fmax(1.0, fabs(want[i])));
    return worst;
}

static void detr_against_torch(const char *kind, int post_ln) {
    enum { B = 2, S = 5, N = 4, DM = 8, C = 3, L = 2 };
    char path[64], name[QKV_NAME_MAX + 8];
    snprintf(path, sizeof path, "ref/detr_%s.safetensors", kind);
    qkv_safetensors st;
    ck_assert_msg(qkv_safetensors_load(path, &st) == 0, "%s", qkv_last_error());
    qkv_params params = {0};
    qkv_rng rng = qkv_rng_make(1);
    qkv_detr dec;
    qkv_detr_config c = {.block = {.d_model = DM, .n_heads = 2, .d_ff = 16, .activation = QKV_ACT_RELU,
                                   .post_ln = post_ln},
                         .n_layers = L, .n_queries = N, .n_classes = C};
    qkv_detr_init(&dec, &params, "dec", &c, &rng);
    for (int i = 0; i < params.n; i++) {
        qkv_tensor *p = params.items[i];
        snprintf(name, sizeof name, "param/%s", p->name);
        qkv_tensor_copy_from(p, st_data(&st, name, p));
    }
    qkv_tensor *memory = tensor_of(3, (int[]){B, S, DM}, st_data(&st, "memory", NULL), 1);
    qkv_tensor *pos = tensor_of(3, (int[]){B, S, DM}, st_data(&st, "memory_pos", NULL), 1);
    qkv_tensor *pad = tensor_of(2, (int[]){B, S}, st_data(&st, "padding", NULL), 0);
    qkv_tape *tape = qkv_tape_create(1);
    qkv_detr_out o = qkv_detr_forward(tape, &dec, memory, pos, pad);
    qkv_tensor *loss = NULL;
    double worst_out = 0, worst_grad = 0;
    for (int l = 0; l < L; l++) {
        qkv_tensor *outs[2] = {o.logits[l], o.boxes[l]};
        const char *what[2] = {"logits", "boxes"};
        for (int k = 0; k < 2; k++) {
            snprintf(name, sizeof name, "out/%s.%d", what[k], l);
            const float *want = st_data(&st, name, outs[k]);
            assert_floats_close(outs[k]->data, want, outs[k]->size, 1e-5, name);
            worst_out = fmax(worst_out, worst_relative(outs[k]->data, want, outs[k]->size));
            snprintf(name, sizeof name, "r/%s.%d", what[k], l);
            qkv_tensor *r = qkv_tape_tensor(tape, 3, outs[k]->shape);
            memcpy(r->data, st_data(&st, name, outs[k]), r->size * sizeof(float));
            qkv_tensor *term = qkv_sum_all(tape, qkv_mul(tape, outs[k], r));
            loss = loss ? qkv_add(tape, loss, term) : term;
        }
    }
    qkv_backward(tape, loss);
    for (int i = 0; i < params.n + 2; i++) {
        qkv_tensor *p = i < params.n ? params.items[i] : i == params.n ? memory : pos;
        snprintf(name, sizeof name, "grad/%s", i < params.n ? p->name : i == params.n ? "memory" : "memory_pos");
        const float *want = st_data(&st, name, p);
        assert_floats_close(p->grad, want, p->size, 1e-5, name);
        worst_grad = fmax(worst_grad, worst_relative(p->grad, want, p->size));
    }
    snprintf(name, sizeof name, "detr %s vs torch: outputs, gradients", kind);
    report(name, fmax(worst_out, worst_grad));
    qkv_tape_free(tape);
    qkv_tensor_free(memory);
    qkv_tensor_free(pos);
    qkv_tensor_free(pad);
    qkv_params_free(&params);
    qkv_safetensors_free(&st);
}

START_TEST(detr_matches_pytorch_detr) {
    detr_against_torch("pre", 0);
    detr_against_torch("post", 1);
}
END_TEST

/* ---- Perceiver ------------------------------------------------------------------- */

static void perceiver_make(qkv_perceiver *p, qkv_params *params, int d_input, int n_latents, int n_self,
                           uint64_t seed) {
    qkv_rng rng = qkv_rng_make(seed);
    qkv_perceiver_config c = {.block = {.d_model = D, .n_heads = 4, .d_ff = 32, .activation = QKV_ACT_GELU},
                              .d_input = d_input, .n_latents = n_latents, .n_self_layers = n_self};
    qkv_perceiver_init(p, params, "perc", &c, &rng);
}

START_TEST(blip2_four_queries_read_64_then_256_features) {
    qkv_params params = {0};
    qkv_perceiver q;
    perceiver_make(&q, &params, 24, 4, 1, 2);
    qkv_perceiver_decoder io;
    qkv_rng rng = qkv_rng_make(3);
    qkv_perceiver_decoder_config dc = {.block = {.d_model = 8, .n_heads = 2, .d_ff = 16}, .d_latent = D,
                                       .n_queries = 4, .d_out = 5};
    qkv_perceiver_decoder_init(&io, &params, "io", &dc, &rng);
    qkv_tape *tape = qkv_tape_create(1);
    const int lengths[2] = {64, 256};
    for (int i = 0; i < 2; i++) {
        qkv_params_zero_grad(&params); /* each pass must produce its own gradient */
        qkv_tensor *features = random_tape_tensor(tape, 3, (int[]){3, lengths[i], 24}, 10 + (uint64_t)i);
        qkv_tensor *z = qkv_perceiver_forward(tape, &q, features, NULL);
        assert_shape(z, 3, (int[]){3, 4, D});
        assert_all_finite(z->data, z->size, "latents");
        qkv_tensor *y = qkv_perceiver_decoder_forward(tape, &io, z);
        assert_shape(y, 3, (int[]){3, 4, 5});
        /* The queries read the features: different items give different outputs. */
        ck_assert(max_abs_diff(z->data, z->data + 4 * D, 4 * D) > 1e-3);
        backward_ones(tape, qkv_sum_all(tape, y));
        ck_assert(qkv_sum_squares_fixed(q.read.queries->grad, q.read.queries->size) > 0);
    }
    ck_assert_ptr_eq(qkv_params_find(&params, "perc.latents"), q.read.queries);
    ck_assert_ptr_nonnull(qkv_params_find(&params, "perc.self.0.attn.wq.weight"));
    ck_assert_ptr_nonnull(qkv_params_find(&params, "perc.cross_attn.wk.weight"));
    assert_shape(qkv_params_find(&params, "perc.cross_attn.wk.weight"), 2, (int[]){D, 24});
    ck_assert_ptr_eq(qkv_params_find(&params, "io.queries"), io.read.queries);
    assert_shape(io.read.queries, 2, (int[]){4, 8});
    qkv_tape_free(tape);
    qkv_params_free(&params);
}
END_TEST

START_TEST(perceiver_ignores_input_order_and_padding) {
    enum { B = 2, N = 11, DIN = 6, M = 3 };
    qkv_params params = {0};
    qkv_perceiver p;
    perceiver_make(&p, &params, DIN, M, 2, 4);
    qkv_tape *tape = qkv_tape_create(1);
    qkv_tape_set_grad(tape, 0);
    qkv_tensor *x = random_tape_tensor(tape, 3, (int[]){B, N, DIN}, 1);
    qkv_tensor *pad = qkv_tape_tensor(tape, 2, (int[]){B, N});
    qkv_tensor_fill(pad, 1.0f);
    pad->data[N + 0] = pad->data[N + 7] = 0.0f;
    float base[B * M * D];
    memcpy(base, qkv_perceiver_forward(tape, &p, x, pad)->data, sizeof base);
    qkv_tensor *xp = qkv_tape_tensor(tape, 3, (int[]){B, N, DIN});
    qkv_tensor *padp = qkv_tape_tensor(tape, 2, (int[]){B, N});
    for (int b = 0; b < B; b++) {
        int perm[N];
        random_permutation(perm, N, 50 + (uint64_t)b);
        permute_rows(xp->data + (size_t)b * N * DIN, x->data + (size_t)b * N * DIN, 1, N, DIN, perm);
        permute_rows(padp->data + (size_t)b * N, pad->data + (size_t)b * N, 1, N, 1, perm);
    }
    qkv_tensor *z = qkv_perceiver_forward(tape, &p, xp, padp);
    double err = max_abs_diff(z->data, base, sizeof base / sizeof base[0]);
    report("perceiver: input order", err);
    ck_assert_msg(err < 2e-6, "Perceiver output depends on input order: %.3g", err);
    /* Padded inputs' contents do not matter; unpadded they do. */
    for (int k = 0; k < DIN; k++) x->data[(size_t)(N + 7) * DIN + k] = 50.0f;
    z = qkv_perceiver_forward(tape, &p, x, pad);
    ck_assert(max_abs_diff(z->data, base, sizeof base / sizeof base[0]) < 1e-6);
    z = qkv_perceiver_forward(tape, &p, x, NULL);
    ck_assert(max_abs_diff(z->data + M * D, base + M * D, M * D) > 1e-3);
    qkv_tape_free(tape);
    qkv_params_free(&params);
}
END_TEST

START_TEST(perceiver_shape_errors_name_layer_and_shapes) {
    qkv_params params = {0};
    qkv_perceiver p;
    perceiver_make(&p, &params, 6, 2, 1, 1);
    qkv_perceiver_decoder io;
    qkv_rng rng = qkv_rng_make(1);
    qkv_perceiver_decoder_config dc = {.block = {.d_model = 8, .n_heads = 2, .d_ff = 16}, .d_latent = D,
                                       .n_queries = 2, .d_out = 3};
    qkv_perceiver_decoder_init(&io, &params, "io", &dc, &rng);
    qkv_tape *tape = qkv_tape_create(1);
    qkv_tensor *x = qkv_tape_zeros(tape, 3, (int[]){2, 5, 7});
    EXPECT_FATAL(qkv_perceiver_forward(tape, &p, x, NULL), "perceiver: input [2,5,7] must be [B,N,6]");
    qkv_tensor *ok = qkv_tape_zeros(tape, 3, (int[]){2, 5, 6});
    qkv_tensor *pad = qkv_tape_zeros(tape, 2, (int[]){2, 4});
    EXPECT_FATAL(qkv_perceiver_forward(tape, &p, ok, pad), "perceiver: key_padding [2,4] does not fit the input [2,5,6]");
    EXPECT_FATAL(qkv_perceiver_decoder_forward(tape, &io, ok), "perceiver_decoder: input [2,5,6] must be [B,N,16]");
    qkv_perceiver_config bad = {.block = {.d_model = D, .n_heads = 4, .d_ff = 8}, .d_input = 3, .n_latents = 0};
    EXPECT_FATAL(qkv_perceiver_init(&p, &params, "bad", &bad, &rng), "perceiver bad: n_latents 0");
    qkv_perceiver_decoder_config wet = {.block = {.d_model = D, .n_heads = 4, .d_ff = 8, .dropout = 1.5f},
                                        .d_latent = D, .n_queries = 2, .d_out = 3};
    EXPECT_FATAL(qkv_perceiver_decoder_init(&io, &params, "wet", &wet, &rng), "dropout 1.5 outside [0, 1)");
    qkv_tape_free(tape);
    qkv_params_free(&params);
}
END_TEST

/* ---- threads ---------------------------------------------------------------------- */

typedef struct thread_case {
    qkv_params params;
    qkv_patch_embed patch;
    qkv_detr detr;
    qkv_perceiver perceiver;
    qkv_perceiver_decoder io;
} thread_case;

/* images -> patch tokens -> DETR (positions on the keys) and Perceiver -> IO;
 * a loss on every output; out = the outputs then every parameter gradient. */
static void run_queries_step(float *out, void *ctx) {
    thread_case *t = ctx;
    qkv_params_zero_grad(&t->params);
    qkv_tape *tape = qkv_tape_create(3);
    qkv_tensor *img = random_tape_tensor(tape, 4, (int[]){2, 3, 32, 32}, 8);
    qkv_tensor *pos = NULL;
    qkv_tensor *tokens = qkv_patch_embed_forward(tape, &t->patch, img, &pos);   /* [2,64,32] */
    qkv_detr_out o = qkv_detr_forward(tape, &t->detr, tokens, pos, NULL);
    qkv_tensor *y = qkv_perceiver_decoder_forward(tape, &t->io, qkv_perceiver_forward(tape, &t->perceiver, tokens, NULL));
    qkv_tensor *loss = qkv_sum_all(tape, qkv_mul(tape, y, y));
    for (int l = 0; l < o.n_layers; l++) {
        loss = qkv_add(tape, loss, qkv_sum_all(tape, qkv_mul(tape, o.logits[l], o.logits[l])));
        loss = qkv_add(tape, loss, qkv_sum_all(tape, o.boxes[l]));
    }
    qkv_backward(tape, loss);
    out = append_floats(out, loss->data, 1);
    out = append_floats(out, y->data, y->size);
    for (int i = 0; i < t->params.n; i++) out = append_floats(out, t->params.items[i]->grad, t->params.items[i]->size);
    qkv_tape_free(tape);
}

START_TEST(forward_backward_is_thread_independent) {
    thread_case t = {0};
    qkv_rng rng = qkv_rng_make(12);
    qkv_block_config block = {.d_model = 32, .n_heads = 4, .d_ff = 64};
    qkv_patch_config pc = {.channels = 3, .patch = 4, .d_model = 32, .skip_add = 1};
    qkv_patch_embed_init(&t.patch, &t.params, "patch", &pc, &rng);
    qkv_detr_config dc = {.block = block, .n_layers = 2, .n_queries = 8, .n_classes = 3};
    qkv_detr_init(&t.detr, &t.params, "dec", &dc, &rng);
    qkv_perceiver_config perc = {.block = block, .d_input = 32, .n_latents = 8, .n_self_layers = 1};
    qkv_perceiver_init(&t.perceiver, &t.params, "perc", &perc, &rng);
    qkv_perceiver_decoder_config io = {.block = block, .d_latent = 32, .n_queries = 4, .d_out = 6};
    qkv_perceiver_decoder_init(&t.io, &t.params, "io", &io, &rng);
    size_t n = 1 + 2 * 4 * 6 + qkv_params_count(&t.params);
    expect_same_for_1_and_2_threads(run_queries_step, &t, n, "patch + detr + perceiver step");
    qkv_params_free(&t.params);
}
END_TEST

Suite *suite_queries(void) {
    Suite *s = suite_create("queries");
    TCase *tc = tcase_create("queries");
    tcase_set_timeout(tc, 0);
    tcase_add_test(tc, detr_outputs_every_layer_with_named_parameters);
    tcase_add_test(tc, detr_memory_order_invariance_and_query_equivariance);
    tcase_add_test(tc, detr_shared_positions_and_single_token);
    tcase_add_test(tc, detr_shape_errors_name_layer_and_shapes);
    tcase_add_test(tc, detr_matches_pytorch_detr);
    tcase_add_test(tc, blip2_four_queries_read_64_then_256_features);
    tcase_add_test(tc, perceiver_ignores_input_order_and_padding);
    tcase_add_test(tc, perceiver_shape_errors_name_layer_and_shapes);
    tcase_add_test(tc, forward_backward_is_thread_independent);
    suite_add_tcase(s, tc);
    return s;
}
