/* fuzz_targets.c — see fuzz_targets.h. */
#include "tests/fuzz_targets.h"

#include <stdlib.h>
#include <string.h>

#include "core/io/npy.h"
#include "core/io/safetensors.h"
#include "data/detect.h"
#include "data/image.h"
#include "data/off.h"
#include "data/tokenizer.h"
#include "cli/args.h"
#include "cli/train_flags.h"
#include "train/tasks/registry.h"

/* Reading every accepted value into here keeps the reads (and any overread) in. */
static volatile float sink;

/* The "config." metadata of a parsed file through the checks a checkpoint's
 * config meets when it is opened (registry.h): a hostile value is an error, never
 * a stop. */
static void check_as_checkpoint(const qkv_safetensors *st) {
    static qkv_config_kv description;
    description.n = 0;
    for (int i = 0; i < st->n_meta && description.n < QKV_MAX_CONFIG; i++)
        if (strncmp(st->meta[i].key, "config.", 7) == 0 && strlen(st->meta[i].key + 7) < sizeof description.key[0] &&
            strlen(st->meta[i].value) < sizeof description.value[0])
            qkv_config_add(&description, st->meta[i].key + 7, "%s", st->meta[i].value);
    const qkv_task_kind *kind;
    void *config;
    if (qkv_task_config_parse("fuzz.safetensors", &description, NULL, &kind, &config) == 0) free(config);
}

int qkv_fuzz_safetensors(const uint8_t *data, size_t size) {
    qkv_safetensors st;
    if (qkv_safetensors_parse(data, size, "fuzz.safetensors", &st) != 0) return 0;
    for (int i = 0; i < st.n_tensors; i++) {
        const qkv_st_tensor *t = qkv_safetensors_find(&st, st.tensors[i].name);
        size_t n = 1;
        for (int d = 0; d < t->ndim; d++) n *= (size_t)t->shape[d];
        for (size_t k = 0; k < n; k++) sink += t->data[k];
    }
    for (int i = 0; i < st.n_meta; i++) sink += (float)strlen(qkv_safetensors_meta(&st, st.meta[i].key));
    check_as_checkpoint(&st);
    qkv_safetensors_free(&st);
    return 0;
}

int qkv_fuzz_npy(const uint8_t *data, size_t size) {
    qkv_tensor *t = qkv_npy_parse(data, size, "fuzz.npy", 0);
    if (!t) return 0;
    for (size_t k = 0; k < t->size; k++) sink += t->data[k];
    qkv_tensor_free(t);
    return 0;
}

int qkv_fuzz_off(const uint8_t *data, size_t size) {
    qkv_off_mesh mesh;
    if (qkv_off_parse("fuzz.off", data, size, &mesh) != 0) return 0;
    float xyz[16 * 3];
    qkv_rng rng = qkv_rng_make(size);
    qkv_off_sample(&mesh, 16, &rng, xyz);
    qkv_off_mesh_free(&mesh);
    return 0;
}

/* The bytes are argv, one argument per line; the table is every shared train
 * flag (all five kinds of row) plus a command's own rows. */
int qkv_fuzz_args(const uint8_t *data, size_t size) {
    enum { MAX_ARGV = 64 };
    char *text = malloc(size + 1), *argv[MAX_ARGV];
    if (!text) return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    int argc = 0;
    for (char *line = text; argc < MAX_ARGV;) {
        argv[argc++] = line;
        char *newline = memchr(line, '\n', (size_t)(text + size - line));
        if (!newline) break;
        *newline = '\0';
        line = newline + 1;
    }
    static const char *const colors[] = {"red", "green", "blue", NULL};
    qkv_trainer_config f = {0};
    int width = 8, color = 0, flag = 0;
    float noise = 0.1f;
    const char *name = NULL;
    qkv_arg args[QKV_MAX_COMMAND_FLAGS];
    int n = qkv_common_args(args, &f);
    args[n++] = (qkv_arg)QKV_ARG_INT_ROW("--width", &width, 1, 8192, "an int");
    args[n++] = (qkv_arg)QKV_ARG_FLOAT_ROW("--noise", &noise, 0, 1, "a float");
    args[n++] = (qkv_arg)QKV_ARG_CHOICE_ROW("--color", &color, colors, "a choice");
    args[n++] = (qkv_arg)QKV_ARG_FLAG_ROW("--flag", &flag, "a flag");
    args[n++] = (qkv_arg)QKV_ARG_STRING_ROW("--name", &name, "a string");
    qkv_args_parse("fuzz", argc, argv, args, n);
    /* the same through a command's spec: one positional argument first */
    const qkv_command_spec spec = {"fuzz", "ARG", 1, "a command", NULL, 0, NULL, NULL, NULL};
    qkv_command_parse_args(&spec, "fuzz", argc, argv, args, n, NULL);
    free(text);
    return 0;
}

int qkv_fuzz_detect(const uint8_t *data, size_t size) {
    qkv_detect_set set;
    if (qkv_detect_annotations_parse("fuzz.txt", (const char *)data, size, &set) != 0) return 0;
    for (int i = 0; i < set.n; i++) {
        sink += (float)strlen(set.files[i]) + (float)set.lines[i];
        for (int o = 0; o < set.n_objects[i]; o++)
            sink += (float)set.classes[(size_t)i * QKV_DETECT_MAX_OBJECTS + (size_t)o] +
                    set.boxes[((size_t)i * QKV_DETECT_MAX_OBJECTS + (size_t)o) * 4];
    }
    qkv_detect_set_free(&set);
    return 0;
}

int qkv_fuzz_image(const uint8_t *data, size_t size) {
    for (int channels = 0; channels <= 3; channels += 3) {
        qkv_tensor *t = qkv_image_decode("fuzz.img", data, size, channels);
        if (!t) return 0;
        for (size_t k = 0; k < t->size; k++) sink += t->data[k];
        qkv_tensor_free(t);
    }
    return 0;
}

/* An accepted text must be the one to_text writes back, and every token must
 * encode and decode back to its bytes: anything else is a bug (abort). */
static void check_accepted(const qkv_tokenizer *t, const char *text) {
    char again[QKV_TOKENIZER_TEXT_MAX];
    qkv_tokenizer_to_text(t, again);
    if (strcmp(again, text) != 0) abort();
    for (int32_t id = 0; id < qkv_tokenizer_vocab(t); id++) {
        size_t len;
        const uint8_t *bytes = qkv_tokenizer_token_bytes(t, id, &len);
        int32_t ids[QKV_TOKENIZER_MAX_TOKEN_BYTES];
        uint8_t back[QKV_TOKENIZER_MAX_TOKEN_BYTES];
        long n = qkv_tokenizer_encode(t, bytes, len, 0, ids);
        if (n < 1 || qkv_tokenizer_decode(t, ids, (size_t)n, back, sizeof back) != len || memcmp(back, bytes, len))
            abort();
    }
}

/* The bytes are the text form (read up to a NUL). */
int qkv_fuzz_tokenizer(const uint8_t *data, size_t size) {
    char *text = malloc(size + 1);
    qkv_tokenizer *t = malloc(sizeof *t);
    if (text && t) {
        memcpy(text, data, size);
        text[size] = '\0';
        if (qkv_tokenizer_from_text(t, text) == 0) check_accepted(t, text);
    }
    free(text);
    free(t);
    return 0;
}

const qkv_fuzz_harness qkv_fuzz_harnesses[] = {
    {"safetensors", qkv_fuzz_safetensors},
    {"npy", qkv_fuzz_npy},
    {"off", qkv_fuzz_off},
    {"args", qkv_fuzz_args},
    {"detect", qkv_fuzz_detect},
    {"image", qkv_fuzz_image},
    {"tokenizer", qkv_fuzz_tokenizer},
};
const int qkv_fuzz_n_harnesses = (int)(sizeof qkv_fuzz_harnesses / sizeof qkv_fuzz_harnesses[0]);
