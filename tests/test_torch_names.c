/* test_torch_names.c — PyTorch portability: the name map (train/torch_names.h)
 * loads a state_dict written by PyTorch's nn.TransformerEncoder / Decoder
 * (tests/make_torch_names_reference.py) into qkv's stacks, which then give
 * PyTorch's outputs and input gradients; a missing, mis-shaped or unexpected
 * tensor is a one-line error naming it and leaves the model unchanged; and the
 * portability options of the stack tasks are checkpoint keys that only appear
 * when set, so older checkpoints read back the defaults. */
#include "tests/test_util.h"

#include <stdlib.h>
#include <string.h>

#include "core/ops/ops.h"
#include "core/io/safetensors.h"
#include "layers/transformer.h"
#include "train/torch_names.h"

#define STATE "ref/torch_names.safetensors"
#define IO "ref/torch_names_io.safetensors"

START_TEST(names_map_to_pytorch) {
    static const struct { const char *qkv, *torch; int part, parts; } cases[] = {
        {"enc.0.attn.wq.weight", "enc.layers.0.self_attn.in_proj_weight", 0, 3},
        {"enc.12.attn.wv.bias", "enc.layers.12.self_attn.in_proj_bias", 2, 3},
        {"enc.1.attn.wo.weight", "enc.layers.1.self_attn.out_proj.weight", 0, 1},
        {"dec.0.cross_attn.wk.weight", "dec.layers.0.multihead_attn.in_proj_weight", 1, 3},
        {"dec.3.self_attn.wq.bias", "dec.layers.3.self_attn.in_proj_bias", 0, 3},
        {"dec.0.ln3.bias", "dec.layers.0.norm3.bias", 0, 1},
        {"enc.0.ffn.fc1.weight", "enc.layers.0.linear1.weight", 0, 1},
        {"enc.0.ffn.fc2.bias", "enc.layers.0.linear2.bias", 0, 1},
        {"enc.ln_final.weight", "enc.norm.weight", 0, 1},
        {"enc.pos.table", "enc.pos.table", 0, 1},
        {"embed.weight", "embed.weight", 0, 1},
        {"head.bias", "head.bias", 0, 1},
        {"set.enc.0.mab0.ln1.weight", "set.enc.0.mab0.ln1.weight", 0, 1},   /* a set model: the authors' names */
        {"set.pool.attn.wq.weight", "set.pool.attn.wq.weight", 0, 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        qkv_torch_name t = qkv_torch_name_of(cases[i].qkv);
        ck_assert_str_eq(t.name, cases[i].torch);
        ck_assert_int_eq(t.part, cases[i].part);
        ck_assert_int_eq(t.parts, cases[i].parts);
    }
}
END_TEST

/* The fixture's model in qkv: encoder (2 layers) + decoder (1), positions none, exact GELU. */
typedef struct { qkv_params params; qkv_encoder enc; qkv_decoder dec; } torch_model;

static void model_init(torch_model *m) {
    memset(m, 0, sizeof *m);
    qkv_stack_config s = {.block = {.d_model = 8, .n_heads = 2, .d_ff = 12, .activation = QKV_ACT_GELU_EXACT},
                          .n_layers = 2, .positions = QKV_POS_NONE};
    qkv_rng rng = qkv_rng_make(5);
    qkv_encoder_init(&m->enc, &m->params, "enc", &s, 0, &rng);
    s.n_layers = 1;
    qkv_decoder_init(&m->dec, &m->params, "dec", &s, &rng);
}

static void model_free(torch_model *m) {
    qkv_encoder_free(&m->enc);
    qkv_decoder_free(&m->dec);
    qkv_params_free(&m->params);
}

static qkv_tensor *io_tensor(qkv_tape *tape, const qkv_safetensors *io, const char *name) {
    const qkv_st_tensor *t = qkv_safetensors_find(io, name);
    ck_assert_msg(t != NULL, "%s: no %s", IO, name);
    qkv_tensor *x = qkv_tape_tensor(tape, t->ndim, t->shape);
    size_t n = x->size;
    memcpy(x->data, t->data, n * sizeof(float));
    return x;
}

START_TEST(pytorch_state_dict_gives_pytorchs_outputs_and_gradients) {
    torch_model m;
    model_init(&m);
    ck_assert_msg(qkv_params_load_torch(&m.params, STATE) == 0, "%s", qkv_last_error());
    qkv_safetensors io;
    ck_assert_int_eq(qkv_safetensors_load(IO, &io), 0);
    qkv_tape *tape = qkv_tape_create(1);
    qkv_tensor *x = io_tensor(tape, &io, "ref.x"), *y = io_tensor(tape, &io, "ref.y");
    x->requires_grad = y->requires_grad = 1;
    qkv_tensor *mask = io_tensor(tape, &io, "ref.src_mask");
    qkv_tensor *memory = qkv_encoder_forward(tape, &m.enc, x, mask);
    qkv_tensor *out = qkv_decoder_forward(tape, &m.dec, y, memory, mask, NULL);
    const qkv_st_tensor *want = qkv_safetensors_find(&io, "ref.out");
    ck_assert_int_eq((int)out->size, want->shape[0] * want->shape[1] * want->shape[2]);
    assert_floats_close(out->data, want->data, out->size, 1e-5, "decoder output vs PyTorch");
    qkv_backward(tape, qkv_sum_all(tape, qkv_mul(tape, out, io_tensor(tape, &io, "ref.r"))));
    assert_floats_close(qkv_tensor_grad(x), qkv_safetensors_find(&io, "ref.dx")->data, x->size, 1e-5, "dx vs PyTorch");
    assert_floats_close(qkv_tensor_grad(y), qkv_safetensors_find(&io, "ref.dy")->data, y->size, 1e-5, "dy vs PyTorch");
    qkv_tape_free(tape);
    qkv_safetensors_free(&io);
    model_free(&m);
}
END_TEST

/* Writes the fixture's state_dict to path with tensor `drop` left out, or with
 * `reshape` given one row fewer, or with an extra tensor `extra`. */
static void write_variant(const char *path, const char *drop, const char *reshape, const char *extra) {
    qkv_safetensors st;
    ck_assert_int_eq(qkv_safetensors_load(STATE, &st), 0);
    qkv_st_tensor *out = calloc((size_t)st.n_tensors + 1, sizeof *out);
    int n = 0;
    for (int i = 0; i < st.n_tensors; i++) {
        if (drop && !strcmp(st.tensors[i].name, drop)) continue;
        out[n] = st.tensors[i];
        if (reshape && !strcmp(st.tensors[i].name, reshape)) out[n].shape[0] -= 1;
        n++;
    }
    static const float one = 1.0f;
    if (extra) out[n++] = (qkv_st_tensor){extra, 1, {1}, &one};
    ck_assert_int_eq(qkv_safetensors_save(path, n, out, 0, NULL), 0);
    free(out);
    qkv_safetensors_free(&st);
}

START_TEST(bad_state_dicts_name_the_tensor_and_change_nothing) {
    static const struct { const char *drop, *reshape, *extra, *reason; } cases[] = {
        {"dec.layers.0.multihead_attn.in_proj_weight", NULL, NULL,
         "tensor \"dec.layers.0.multihead_attn.in_proj_weight\" (for qkv's \"dec.0.cross_attn.wq.weight\") is missing"},
        {"enc.norm.bias", NULL, NULL, "tensor \"enc.norm.bias\" (for qkv's \"enc.ln_final.bias\") is missing"},
        {NULL, "enc.layers.1.self_attn.in_proj_bias", NULL,
         "tensor \"enc.layers.1.self_attn.in_proj_bias\" (for qkv's \"enc.1.attn.wq.bias\") has shape [23], expected [24]"},
        {NULL, "enc.layers.0.linear1.weight", NULL, "has shape [11,8], expected [12,8]"},
        {NULL, NULL, "enc.layers.0.norm1.scale", "unexpected tensor \"enc.layers.0.norm1.scale\""},
    };
    scratch_dir_create();
    torch_model m;
    model_init(&m);
    size_t n = qkv_params_count(&m.params);
    float *before = malloc(n * sizeof(float)), *after = malloc(n * sizeof(float));
    qkv_params_copy_values(&m.params, before);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *path = scratch_file("variant.safetensors");
        write_variant(path, cases[i].drop, cases[i].reshape, cases[i].extra);
        ck_assert_int_eq(qkv_params_load_torch(&m.params, path), -1);
        expect_last_error(path, cases[i].reason);
        qkv_params_copy_values(&m.params, after);
        ck_assert_msg(memcmp(before, after, n * sizeof(float)) == 0, "case %zu changed the model", i);
    }
    ck_assert_int_eq(qkv_params_load_torch(&m.params, scratch_file("absent.safetensors")), -1);
    free(before);
    free(after);
    model_free(&m);
    scratch_dir_remove();
}
END_TEST

/* The options are keys only when set: a default run's checkpoint has none of them
 * (as those written before they existed), a run with them round-trips through eval. */
START_TEST(portable_options_are_optional_checkpoint_keys) {
    static const char *const keys[] = {"config.activation", "config.ln_eps", "config.rope_layout",
                                       "config.rope_base", "config.rope_fraction", "config.attn_scale"};
    scratch_dir_create();
    char args[1024], line[512];
    const char *small = "--steps 2 --min-len 3 --max-len 4 --dim 16 --heads 2 --ff 16 --layers 1 --test-size 4 "
                        "--batch 4 --quiet --threads 1";
    for (int with = 0; with < 2; with++) {
        const char *path = scratch_file(with ? "options.safetensors" : "defaults.safetensors");
        snprintf(args, sizeof args, "train reverse --arch decoder --pos rope %s --save %s%s", small, path,
                 with ? " --activation gelu-exact --ln-eps 1e-6 --rope-layout halves --rope-base 500 "
                        "--rope-fraction 0.5 --attn-scale 0.25" : "");
        ck_assert_msg(run_qkv(args, line, sizeof line) == 0, "%s: %s", args, line);
        qkv_safetensors st;
        ck_assert_int_eq(qkv_safetensors_load(path, &st), 0);
        for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++)
            ck_assert_msg((qkv_safetensors_meta(&st, keys[k]) != NULL) == with, "%s: %s", path, keys[k]);
        if (with) {
            ck_assert_str_eq(qkv_safetensors_meta(&st, "config.rope_layout"), "halves");
            ck_assert_str_eq(qkv_safetensors_meta(&st, "config.activation"), "gelu-exact");
        }
        qkv_safetensors_free(&st);
        snprintf(args, sizeof args, "eval %s --threads 1", path);
        ck_assert_msg(run_qkv(args, line, sizeof line) == 0, "%s: %s", args, line);
    }
    snprintf(args, sizeof args, "train reverse --pos rope --rope-fraction 0.05 %s", small);
    ck_assert_int_eq(run_qkv(args, line, sizeof line), 2);
    ck_assert_msg(strstr(line, "--rope-fraction") != NULL, "%s", line);
    scratch_dir_remove();
}
END_TEST

Suite *suite_torch_names(void) {
    Suite *s = suite_create("torch_names");
    TCase *tc = tcase_create("torch_names");
    tcase_set_timeout(tc, 0);
    tcase_add_test(tc, names_map_to_pytorch);
    tcase_add_test(tc, pytorch_state_dict_gives_pytorchs_outputs_and_gradients);
    tcase_add_test(tc, bad_state_dicts_name_the_tensor_and_change_nothing);
    tcase_add_test(tc, portable_options_are_optional_checkpoint_keys);
    suite_add_tcase(s, tc);
    return s;
}
