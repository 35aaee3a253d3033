/* cmd_sample.c — `qkv sample CKPT`: a `qkv train text` model writes. The prompt
 * is encoded with the checkpoint's tokenizer, then the text streams to stdout a
 * token at a time (train/tasks/text.h: the K/V cache, the sliding window). Same
 * checkpoint, prompt, settings and --seed: the same text, for any --threads. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "core/kernels/parallel.h"
#include "cli/args.h"
#include "cli/commands.h"
#include "train/tasks/text.h"
#include "train/settings.h"

static const char *const unknown_names[] = {"error", "skip", NULL};

typedef struct sample_options {
    const char *prompt;
    int tokens, seed, unknown, threads;
    qkv_sampling sampling;
} sample_options;

static void write_token(void *ctx, int32_t token) {
    size_t len;
    const uint8_t *bytes = qkv_tokenizer_token_bytes(ctx, token, &len);
    fwrite(bytes, 1, len, stdout);
    fflush(stdout);   /* streamed: each token as soon as it is chosen */
}

/* The prompt's tokens (the default prompt when there is none): their count, or
 * -1 with the error; *from_text of them come from --prompt (bytes --unknown skip
 * dropped are not among them). */
static long prompt_tokens(const qkv_text_model *m, const sample_options *o, int32_t **out, long *from_text) {
    size_t n = o->prompt ? strlen(o->prompt) : 0;
    *out = qkv_malloc((n ? n : 1) * sizeof **out, "the prompt's tokens");
    long count = n ? qkv_tokenizer_encode(m->tokenizer, (const uint8_t *)o->prompt, n, o->unknown, *out) : 0;
    if (count < 0) {
        char reason[256];
        snprintf(reason, sizeof reason, "%s", qkv_last_error());
        qkv_set_error("--prompt: %s (--unknown skip drops such bytes)", reason);
        return -1;
    }
    *from_text = count;
    if (count == 0) (*out)[count++] = qkv_text_default_prompt(m);
    return count;
}

static int sample(const char *path, const sample_options *o) {
    qkv_text_model m;
    long step = 0;
    if (qkv_text_model_load(&m, path, &step) != 0) return -1;
    int32_t *prompt = NULL;
    long from_text = 0, n_prompt = prompt_tokens(&m, o, &prompt, &from_text);
    if (n_prompt >= 0) {
        /* the prompt as the model reads it: its tokens' bytes (no byte --unknown skip dropped) */
        for (long i = 0; i < from_text; i++) write_token(m.tokenizer, prompt[i]);
        qkv_tape *tape = qkv_tape_create_inference((unsigned long long)o->seed);
        qkv_rng rng = qkv_rng_make((unsigned long long)o->seed);
        qkv_text_generate(&m, tape, prompt, (int)n_prompt, o->tokens, &o->sampling, &rng, write_token, m.tokenizer);
        putchar('\n');
        qkv_tape_free(tape);
    }
    free(prompt);
    qkv_text_model_free(&m);
    return n_prompt >= 0 ? 0 : -1;
}

#define T sample_options
static const qkv_field fields[] = {
    QKV_TEXT_FIELD("--prompt", NULL, T, prompt, NULL, "the text to continue (default: a newline)"),
    QKV_INT_FIELD("--tokens", NULL, T, tokens, 0, 1e7, 200, "tokens to generate"),
    QKV_FLOAT_FIELD("--temperature", NULL, T, sampling.temperature, 0, 100, 1, "softmax temperature; 0: greedy"),
    QKV_INT_FIELD("--top-k", NULL, T, sampling.top_k, 0, 1e6, 0, "draw among the k likeliest tokens only; 0: all"),
    QKV_FLOAT_FIELD("--top-p", NULL, T, sampling.top_p, 0, 1, 1, "draw among the likeliest tokens of total probability p; 1: all; 0: greedy"),
    QKV_SETTING_FIELD_SAYING(QKV_FIELD_INT, QKV_SETTING_SEED, T, seed, 1, "seed of the draws"),
    QKV_CHOICE_FIELD("--unknown", NULL, T, unknown, unknown_names, 0, "prompt bytes outside the vocabulary"),
    QKV_SETTING_FIELD(QKV_FIELD_INT, QKV_SETTING_THREADS, T, threads, 0),
};
#undef T

const qkv_command_spec qkv_command_sample = {
    "sample", "CKPT", 1, "a text model (qkv train text) continues a prompt, token by token", fields,
    sizeof fields / sizeof *fields, NULL, NULL, qkv_cmd_sample};

int qkv_cmd_sample(int argc, char **argv) {
    sample_options o;
    memset(&o, 0, sizeof o);
    qkv_fields_defaults(fields, qkv_command_sample.n_fields, &o);
    int parsed = qkv_command_parse(&qkv_command_sample, "sample", argc, argv, &o);
    if (parsed != 0) return parsed > 0 ? 0 : 2;
    if (qkv_sampling_check(&o.sampling) != 0) {
        fprintf(stderr, "qkv sample: %s\n", qkv_last_error());
        return 2;
    }
    qkv_set_threads(o.threads);
    if (sample(argv[0], &o) != 0) {
        fprintf(stderr, "qkv sample: %s\n", qkv_last_error());
        return 2;
    }
    return 0;
}
