/* text.h — your own text: a decoder-only transformer (a small GPT) learns to
 * predict the next token of a file, and writes.
 *
 * Data: the corpus (data/text.h: a file, or a directory's files) is split by
 * bytes: the first 1 - val_fraction train, the rest validate. Tokens are bytes
 * (the vocabulary: the distinct bytes of the whole corpus) or a byte-level BPE
 * trained on the training part (data/tokenizer.h); the tokenizer is written into
 * the checkpoint, so sampling needs no data. With BPE, validation bytes the
 * training part never had are dropped.
 *
 * Training: step s's batch is `batch` windows of context + 1 tokens of the
 * training part; window i starts at rng_at(seed', s * batch + i) mod (n - context):
 * a pure function of (seed, s). Input: its first context tokens; targets: the
 * next ones. Loss: the mean cross-entropy over every position.
 *
 * Model: token embedding [V, D] -> causal qkv_encoder (positions as --pos, a
 * learned table of context rows) -> linear head D -> V.
 *
 * Evaluation: val_windows windows of the validation part, evenly spaced from its
 * start to its end (the same every time): val_loss = mean cross-entropy in nats
 * per token over all their positions, val_bpb = the same total in bits divided by
 * the bytes of those target tokens (bits per byte: comparable across tokenizers).
 * During training, after each evaluation, a sample of sample_tokens tokens is
 * printed (temperature 0.8, seed fixed by --seed, prompt "\n" when the alphabet has
 * it).
 *
 * Generation (qkv_text_generate): the prompt is encoded once into a K/V cache per
 * layer, then each token costs one forward step of one position. When the window
 * is full (context positions), the last context / 2 tokens are encoded again as a
 * fresh window (positions restart at 0) and generation goes on: so every token
 * sees at least half a context. Same seed, same tokens, for any thread count.
 */
#ifndef QKV_TASKS_TEXT_H
#define QKV_TASKS_TEXT_H

#include <stdint.h>

#include "data/identity.h"
#include "data/text.h"
#include "data/tokenizer.h"
#include "layers/linear.h"
#include "layers/sampling.h"
#include "layers/transformer.h"
#include "train/task.h"
#include "train/tasks/stack_fields.h"

/* When --data is not given: the fortunes package's files (Debian: fortunes). */
#define QKV_TEXT_DEFAULT_CORPUS "/usr/share/games/fortunes"

typedef struct qkv_text_config {
    const char *data;            /* file or directory; NULL: QKV_TEXT_DEFAULT_CORPUS */
    int corpus_bytes;            /* the corpus's size, once read (eval checks it is the same file) */
    qkv_data_identity data_identity;   /* the file's or directory's, once read (data/identity.h) */
    int tokenizer;               /* qkv_tokenizer_kind */
    int vocab;                   /* BPE: tokens to train; bytes: 0. Once built: the vocabulary's size */
    const char *tokens;          /* the tokenizer as text (qkv_tokenizer_to_text), once built */
    float val_fraction;
    int context, layers, heads, dim, ff, pos;
    float dropout;
    qkv_stack_options options;   /* activation, LayerNorm eps, RoPE layout, attention scale */
    int batch, val_windows, sample_tokens;
    unsigned long long seed;
} qkv_text_config;

/* The model alone: what `qkv sample` needs. */
typedef struct qkv_text_model {
    qkv_text_config config;
    qkv_tokenizer *tokenizer;
    qkv_params params;
    qkv_tensor *embed;           /* [V, D] */
    qkv_encoder decoder;         /* causal */
    qkv_linear head;             /* D -> V */
    char tokens_text[QKV_TOKENIZER_TEXT_MAX];   /* config.tokens points here */
} qkv_text_model;

/* Builds the model of config with tokenizer (copied; config.vocab becomes its
 * size and config.tokens its text), parameters drawn from config.seed. */
void qkv_text_model_init(qkv_text_model *m, const qkv_text_config *config, const qkv_tokenizer *tokenizer);
void qkv_text_model_free(qkv_text_model *m);
/* Logits [B, T, V] of ids [B, T] (T <= context), the whole window at once. */
qkv_tensor *qkv_text_model_logits(qkv_tape *tape, const qkv_text_model *m, const int32_t *ids, int batch, int len);
/* The model of a `qkv train text` checkpoint (no data read): 0, or -1 with a
 * one-line qkv_last_error() naming path (another task's checkpoint, a bad
 * tokenizer). step, if not NULL, receives the checkpoint's step. */
int qkv_text_model_load(qkv_text_model *m, const char *path, long *step);

/* Generates n tokens after prompt[0..n_prompt) (n_prompt >= 1; only its last
 * context tokens are read), drawing with sampling and rng; emit(ctx, token) is
 * called for each as soon as it is chosen. tape is reset between steps. */
void qkv_text_generate(const qkv_text_model *m, qkv_tape *tape, const int32_t *prompt, int n_prompt, int n,
                       const qkv_sampling *sampling, qkv_rng *rng, void (*emit)(void *ctx, int32_t token),
                       void *ctx);

/* The task's self (qkv_task.self of `train text`) points to its qkv_text_model:
 * the model is the first member of the task's state. */

/* The default prompt: "\n" if the vocabulary has it, else token 0. */
int32_t qkv_text_default_prompt(const qkv_text_model *m);

#endif
