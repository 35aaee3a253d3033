/* text_model.c — the text task's model: init, logits, loading from a checkpoint,
 * and generation with the K/V cache. See text.h. */
#include "train/tasks/text.h"

#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "core/ops/ops.h"
#include "train/checkpoint.h"
#include "train/tasks/registry.h"

void qkv_text_model_init(qkv_text_model *m, const qkv_text_config *config, const qkv_tokenizer *tokenizer) {
    memset(m, 0, sizeof *m);
    m->config = *config;
    m->tokenizer = qkv_malloc(sizeof *m->tokenizer, "the tokenizer");
    *m->tokenizer = *tokenizer;
    qkv_tokenizer_to_text(tokenizer, m->tokens_text);
    m->config.tokens = m->tokens_text;
    m->config.vocab = qkv_tokenizer_vocab(tokenizer);
    const qkv_text_config *c = &m->config;
    qkv_rng rng = qkv_rng_make(c->seed);
    m->embed = qkv_params_new(&m->params, "embed.weight", 2, (int[]){c->vocab, c->dim});
    qkv_fill_normal(m->embed->data, m->embed->size, &rng, 0.0f, 1.0f);
    qkv_stack_config stack = {.block = {.d_model = c->dim, .n_heads = c->heads, .d_ff = c->ff, .dropout = c->dropout},
                              .n_layers = c->layers, .positions = (qkv_pos_kind)c->pos, .max_len = c->context};
    qkv_stack_options_apply(&c->options, &stack);
    qkv_encoder_init(&m->decoder, &m->params, "dec", &stack, 1, &rng);
    qkv_linear_init(&m->head, &m->params, "head", c->dim, c->vocab, 1, &rng);
}

void qkv_text_model_free(qkv_text_model *m) {
    qkv_encoder_free(&m->decoder);
    qkv_params_free(&m->params);
    free(m->tokenizer);
    m->tokenizer = NULL;
}

static qkv_tensor *embed_ids(qkv_tape *tape, const qkv_text_model *m, const int32_t *ids, int batch, int len) {
    return qkv_embedding(tape, m->embed, ids, 2, (int[]){batch, len});
}

qkv_tensor *qkv_text_model_logits(qkv_tape *tape, const qkv_text_model *m, const int32_t *ids, int batch, int len) {
    QKV_CHECK(len >= 1 && len <= m->config.context, "text model: %d tokens, the context is %d", len, m->config.context);
    qkv_tensor *h = qkv_encoder_forward(tape, &m->decoder, embed_ids(tape, m, ids, batch, len), NULL);
    return qkv_linear_forward(tape, &m->head, h);
}

int qkv_text_model_load(qkv_text_model *m, const char *path, long *step) {
    qkv_task_checkpoint ckpt;
    if (qkv_task_checkpoint_open(path, NULL, &ckpt) != 0) return -1;
    qkv_tokenizer *tokenizer = qkv_malloc(sizeof *tokenizer, "the tokenizer");
    int rc = qkv_task_checkpoint_of(&ckpt, &qkv_task_kind_text, "text");
    const qkv_text_config *c = ckpt.config;
    if (rc == 0) rc = qkv_tokenizer_from_text(tokenizer, c->tokens);   /* its vocab checked by the task's check */
    if (rc == 0) {
        qkv_text_model_init(m, c, tokenizer);
        if ((rc = qkv_checkpoint_restore(&ckpt.file, &m->params, NULL, step, NULL)) != 0) qkv_text_model_free(m);
    }
    qkv_task_checkpoint_close(&ckpt);
    free(tokenizer);
    return rc;
}

int32_t qkv_text_default_prompt(const qkv_text_model *m) {
    int16_t newline = m->tokenizer->byte_token['\n'];
    return newline >= 0 ? newline : 0;
}

/* ---- generation ------------------------------------------------------------------- */

/* Encodes ids[0..len) into empty caches; the logits of the last position, [1, 1, V]. */
static qkv_tensor *prefill(qkv_tape *tape, const qkv_text_model *m, qkv_kv_cache *caches, const int32_t *ids, int len) {
    for (int l = 0; l < m->config.layers; l++) caches[l].len = 0;
    int32_t *copy = qkv_tape_alloc(tape, (size_t)len * sizeof *copy);   /* the embedding reads ids later */
    memcpy(copy, ids, (size_t)len * sizeof *copy);
    qkv_tensor *h = qkv_encoder_decode(tape, &m->decoder, embed_ids(tape, m, copy, 1, len), caches);
    return qkv_linear_forward(tape, &m->head, qkv_slice(tape, h, 1, len - 1, len));
}

void qkv_text_generate(const qkv_text_model *m, qkv_tape *tape, const int32_t *prompt, int n_prompt, int n,
                       const qkv_sampling *sampling, qkv_rng *rng, void (*emit)(void *ctx, int32_t token),
                       void *ctx) {
    int context = m->config.context, layers = m->config.layers, vocab = m->config.vocab;
    QKV_CHECK(n_prompt >= 1 && n >= 0, "text generate: a prompt of %d tokens, %d to generate", n_prompt, n);
    qkv_kv_cache *caches = qkv_calloc((size_t)layers, sizeof *caches, "the KV caches");
    qkv_stack_caches_init(caches, layers, &m->decoder.blocks[0].attn, 1, context);
    int32_t *window = qkv_malloc((size_t)context * sizeof *window, "the generation window");
    int *scratch = qkv_malloc((size_t)vocab * sizeof *scratch, "the sampler's scratch");
    int len = n_prompt < context ? n_prompt : context;
    memcpy(window, prompt + n_prompt - len, (size_t)len * sizeof *window);
    qkv_tensor *logits = prefill(tape, m, caches, window, len);
    for (int i = 0; i < n; i++) {
        int32_t token = qkv_sample_token(sampling, logits->data, vocab, rng, scratch);
        emit(ctx, token);
        qkv_tape_reset(tape);
        if (i + 1 == n) break;
        if (len == context) {   /* slide: the last context/2 - 1 tokens and this one, as a fresh window */
            int keep = context / 2 > 1 ? context / 2 - 1 : 0;
            memmove(window, window + len - keep, (size_t)keep * sizeof *window);
            len = keep;
            window[len++] = token;
            logits = prefill(tape, m, caches, window, len);
        } else {
            window[len++] = token;
            int32_t *one = qkv_tape_alloc(tape, sizeof *one);
            *one = token;
            qkv_tensor *h = qkv_encoder_decode(tape, &m->decoder, embed_ids(tape, m, one, 1, 1), caches);
            logits = qkv_linear_forward(tape, &m->head, h);
        }
    }
    qkv_tape_reset(tape);
    qkv_stack_caches_free(caches, layers);
    free(caches);
    free(window);
    free(scratch);
}
