/* sequence.c — the sequence tasks as trainer tasks. See sequence.h. */
#include "train/tasks/sequence.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "core/ops/ops.h"
#include "train/checkpoint.h"
#include "train/tasks/registry.h"
#include "train/tasks/stack_fields.h"
#include "train/interrupt.h"
#include "train/settings.h"

#define TEST_SEED_OFFSET 0x7e57ULL
#define RANDOMIZE_SALT 0x5a3b1e0c4d2f6a71ULL   /* the position draws' own stream */

/* ---- the field table (train/fields.h), one per task name: they differ only
 * in the default of --task. Its order is the checkpoint description's. ---------- */

typedef qkv_seq_task_config C;
#define SEQUENCE_FIELDS(TASK)                                                                                     \
    {                                                                                                             \
        QKV_CHOICE_FIELD("--task", "task", C, model.data.task, qkv_seq_task_names, TASK, "what to learn"),        \
        QKV_CHOICE_FIELD("--arch", "arch", C, model.data.arch, qkv_seq_arch_names, QKV_ARCH_ENCODER, "model"),    \
        QKV_INT_FIELD("--vocab", "vocab", C, model.data.vocab, 2, 100000, 10, "number of symbols"),              \
        QKV_INT_FIELD("--len", NULL, C, len, 1, 4096, 0, "sequence length (sets --min-len and --max-len)"),        \
        QKV_INT_FIELD("--min-len", "min_len", C, model.data.min_len, 1, 4096, 16, "shortest sequence"),         \
        QKV_INT_FIELD("--max-len", "max_len", C, model.data.max_len, 1, 4096, 16, "longest sequence"),          \
        QKV_STACK_SHAPE_FIELDS(C, model., 2, 4, 64, 256),                                                        \
        QKV_CHOICE_FIELD("--pos", "pos", C, model.pos, qkv_pos_kind_names, QKV_POS_LEARNED, "position scheme"),  \
        QKV_INT_FIELD("--max-pos", "max_pos", C, model.max_pos, 0, 1e6, 0,                                       \
                      "rows of a learned position table; 0: the longest stream"),                                \
        {"--pos-randomize", "pos_randomize", QKV_FIELD_INT, offsetof(C, model.pos_randomize), 0, 1e6, 0, NULL, NULL,  \
         "randomized positions: sorted samples from [0, M) (learned, sinusoidal, rope, p-rope); 0: off",                  \
         QKV_FIELD_OPTIONAL, 0, NULL},                                                                                     \
        {"--t5-buckets", "t5_buckets", QKV_FIELD_INT, offsetof(C, model.t5_buckets), 4, 1024,                      \
         QKV_T5_DEFAULT_BUCKETS, NULL, NULL, "--pos t5: relative-distance buckets", QKV_FIELD_OPTIONAL, 0, NULL},           \
        {"--t5-max-distance", "t5_max_distance", QKV_FIELD_INT, offsetof(C, model.t5_max_distance), 3, 1e6,        \
         QKV_T5_DEFAULT_MAX_DISTANCE, NULL, NULL, "--pos t5: distances from here on share the last bucket",         \
         QKV_FIELD_OPTIONAL, 0, NULL},                                                                                     \
        QKV_SETTING_FIELD(QKV_FIELD_FLOAT, QKV_SETTING_DROPOUT, C, model.dropout, 0),                            \
        QKV_STACK_OPTION_FIELDS(C, model.options),                                                               \
        QKV_INT_FIELD("--batch", "batch", C, model.batch, 1, 1e6, 64, "batch size"),                             \
        QKV_INT_FIELD("--test-size", "test_size", C, model.test_size, 1, 1e7, 1000, "held-out sequences"),       \
        QKV_INT_FIELD("--train-size", "train_size", C, model.train_size, 0, 1e9, 0,                              \
                      "fixed training set size; 0: fresh data every step"),                                      \
        QKV_INT_FIELD("--epochs", NULL, C, epochs, 0, 1e6, 0, "with --train-size: passes over it (sets --steps)"), \
        QKV_SEED_FIELD(C, model.seed, "seed for data, init and dropout"),                                        \
    }
static const qkv_field reverse_fields[] = SEQUENCE_FIELDS(QKV_TASK_REVERSE);
static const qkv_field copy_fields[] = SEQUENCE_FIELDS(QKV_TASK_COPY);
static const qkv_field sort_fields[] = SEQUENCE_FIELDS(QKV_TASK_SORT);
#define N_FIELDS ((int)(sizeof reverse_fields / sizeof reverse_fields[0]))

void qkv_seq_model_default_config(qkv_seq_model_config *c) {
    qkv_seq_task_config task;
    memset(&task, 0, sizeof task);
    qkv_fields_defaults(reverse_fields, N_FIELDS, &task);
    *c = task.model;
}

/* Longest stream the model reads: the source, or source SEP target. */
static int longest_stream(const qkv_seq_model_config *c) { return qkv_seq_src_len(&c->data, c->data.max_len); }
/* Entries of a position draw: the longest stream (seq2seq: or BOS + target). */
static int sample_len(const qkv_seq_model_config *c) {
    int n = longest_stream(c);
    return c->data.arch == QKV_ARCH_SEQ2SEQ && c->data.max_len + 1 > n ? c->data.max_len + 1 : n;
}
static int position_rows(const qkv_seq_model_config *c) {
    return c->max_pos > 0 ? c->max_pos : c->pos_randomize > 0 ? c->pos_randomize : longest_stream(c);
}

int qkv_seq_model_check(const qkv_seq_model_config *c) {
    const qkv_seq_config *d = &c->data;
    if (d->vocab < 2 || d->vocab > 100000) return qkv_set_error("--vocab %d: expected 2..100000", d->vocab), -1;
    if (d->min_len < 1 || d->max_len < d->min_len || d->max_len > 4096)
        return qkv_set_error("--min-len %d / --max-len %d: expected 1 <= min <= max <= 4096", d->min_len, d->max_len), -1;
    if (qkv_stack_fields_check(c->dim, c->heads, c->pos) != 0) return -1;
    if (qkv_stack_options_check(&c->options, c->dim, c->heads, c->pos) != 0) return -1;
    qkv_pos_opts pos_opts = {.t5_buckets = c->t5_buckets, .t5_max_distance = c->t5_max_distance,
                             .randomize = c->pos_randomize};
    if (qkv_stack_positions_check(&c->options, c->dim, c->heads, c->pos, position_rows(c), pos_opts) != 0) return -1;
    if (c->dim > 8192 || c->heads > 1024) return qkv_set_error("--dim %d / --heads %d: expected at most 8192 / 1024", c->dim, c->heads), -1;
    if (c->layers < 1 || c->layers > 64) return qkv_set_error("--layers %d: expected 1..64", c->layers), -1;
    if (c->ff < 1 || c->ff > 65536) return qkv_set_error("--ff %d: expected 1..65536", c->ff), -1;
    if (c->batch < 1 || c->batch > 1000000) return qkv_set_error("--batch %d: expected 1..1000000", c->batch), -1;
    if (c->test_size < 1 || c->test_size > 10000000)
        return qkv_set_error("--test-size %d: expected 1..10000000", c->test_size), -1;
    if (c->train_size < 0) return qkv_set_error("--train-size %d: expected >= 0", c->train_size), -1;
    if (c->max_pos < 0 || c->max_pos > 1000000) return qkv_set_error("--max-pos %d: expected 0..1000000", c->max_pos), -1;
    if (!(c->dropout >= 0 && c->dropout < 1)) return qkv_set_error("--dropout %g: expected [0, 1)", c->dropout), -1;
    if (c->pos_randomize && c->pos_randomize < sample_len(c))
        return qkv_set_error("--pos-randomize %d: smaller than the longest stream, %d positions (--max-len %d)",
                             c->pos_randomize, sample_len(c), d->max_len), -1;
    if (c->pos_randomize < 0 || c->pos_randomize > 1000000)
        return qkv_set_error("--pos-randomize %d: expected 0..1000000", c->pos_randomize), -1;
    if (qkv_pos_schemes[c->pos].table == QKV_POS_TABLE_ROWS && c->max_pos > 0 && longest_stream(c) > c->max_pos)
        return qkv_set_error("--max-len %d needs %d positions, beyond the learned table's --max-pos %d",
                             d->max_len, longest_stream(c), c->max_pos), -1;
    return 0;
}

/* ---- model ------------------------------------------------------------------------ */

static qkv_tensor *ids_tensor_embed(qkv_tape *tape, const qkv_seq_model *t, const int32_t *ids, int b, int len) {
    return qkv_embedding(tape, t->embed, ids, 2, (int[]){b, len});
}

/* The batch's mask as a tensor viewing its buffer (no copy: the batch outlives the step). */
static qkv_tensor *mask_tensor(qkv_tape *tape, float *mask, int b, int len) {
    return qkv_tape_view(tape, 2, (int[]){b, len}, mask);
}

/* Sets rows [0, n) of the current draws as the positions of a model's stacks
 * (the encoder's, and the seq2seq decoder's, which reads its first entries). */
static void set_draws(const qkv_seq_model *t, const int32_t *draws, int n, qkv_encoder *enc, qkv_decoder *dec) {
    qkv_positions_set_samples(&enc->pos, draws, n, t->pos_sample_len);
    if (t->config.data.arch == QKV_ARCH_SEQ2SEQ) qkv_positions_set_samples(&dec->pos, draws, n, t->pos_sample_len);
}

/* Randomized positions, one draw per sequence (Ruoss et al. 2023): entry r gets
 * a fresh sorted draw of n from [0, M) keyed by (key, first + (rows ? rows[r] : r)),
 * the global index of its example, so a row's draw does not depend on the batch
 * it sits in; set in the model's stacks for b rows. */
static void draw_positions(qkv_seq_model *t, uint64_t key, uint64_t first, const int32_t *rows, int b, int n) {
    if (!t->config.pos_randomize) return;
    size_t need = (size_t)b * (size_t)n;
    if (need > t->pos_sample_capacity) {
        t->pos_sample = qkv_realloc(t->pos_sample, need * sizeof(int32_t), "the position draws");
        t->pos_sample_capacity = need;
    }
    for (int r = 0; r < b; r++) {
        qkv_rng rng = qkv_rng_split_at(qkv_rng_make(key), first + (uint64_t)(rows ? rows[r] : r));
        qkv_positions_draw(t->pos_sample + (size_t)r * n, n, t->config.pos_randomize, &rng);
    }
    t->pos_sample_len = n;
    set_draws(t, t->pos_sample, b, &t->encoder, &t->decoder);
}

/* The stacks for rows [first, first + n) of a drawn batch: copies whose positions
 * read those rows' draws, so micro-batches that run at once on one model each
 * read their own rows (the copies share the blocks and parameters). */
static void row_stacks(const qkv_seq_model *t, int first, int n, qkv_encoder *enc, qkv_decoder *dec) {
    *enc = t->encoder;
    *dec = t->decoder;
    if (t->config.pos_randomize) set_draws(t, t->pos_sample + (size_t)first * t->pos_sample_len, n, enc, dec);
}

/* The draw a batch needs: its source stream, or its target with BOS if longer. */
static int batch_positions(const qkv_seq_batch *b) { return b->tgt_len > b->src_len ? b->tgt_len : b->src_len; }

/* Logits [B, T, tokens] for every position of a training batch (teacher forcing),
 * through the stacks enc and dec (the model's, or row_stacks' copies). */
static qkv_tensor *batch_logits(const qkv_seq_model *t, const qkv_encoder *enc, const qkv_decoder *dec,
                                qkv_tape *tape, const qkv_seq_batch *batch) {
    int b = batch->batch;
    qkv_tensor *src_mask = mask_tensor(tape, batch->src_mask, b, batch->src_len);
    qkv_tensor *h = qkv_encoder_forward(tape, enc, ids_tensor_embed(tape, t, batch->src, b, batch->src_len), src_mask);
    if (t->config.data.arch == QKV_ARCH_SEQ2SEQ) {
        qkv_tensor *tgt_mask = mask_tensor(tape, batch->tgt_mask, b, batch->tgt_len);
        qkv_tensor *y = ids_tensor_embed(tape, t, batch->tgt_in, b, batch->tgt_len);
        h = qkv_decoder_forward(tape, dec, y, h, src_mask, tgt_mask);
    }
    return qkv_linear_forward(tape, &t->head, h);
}

/* The next token of each of the b rows of logits [b, 1, tokens]. */
static void next_tokens(const qkv_tensor *logits, int32_t *out) {
    int tokens = logits->shape[2];
    for (int i = 0; i < logits->shape[0]; i++) out[i] = qkv_argmax(logits->data + (size_t)i * tokens, tokens);
}

static void predict_seq2seq(qkv_seq_model *t, qkv_tape *tape, const qkv_seq_batch *batch, int32_t *pred) {
    int b = batch->batch, steps = batch->tgt_len, layers = t->config.layers;
    qkv_tensor *src_mask = mask_tensor(tape, batch->src_mask, b, batch->src_len);
    qkv_tensor *memory = qkv_encoder_forward(tape, &t->encoder,
                                             ids_tensor_embed(tape, t, batch->src, b, batch->src_len), src_mask);
    qkv_mha_kv *memory_kv = qkv_tape_alloc(tape, (size_t)layers * sizeof *memory_kv);
    qkv_decoder_memory(tape, &t->decoder, memory, memory_kv);   /* once per source */
    qkv_kv_cache *caches = qkv_calloc((size_t)layers, sizeof *caches, "the KV caches");
    qkv_stack_caches_init(caches, layers, &t->decoder.blocks[0].self_attn, b, steps);
    int32_t *token = qkv_tape_alloc(tape, (size_t)b * sizeof(int32_t));
    for (int i = 0; i < b; i++) token[i] = QKV_SEQ_BOS;
    for (int s = 0; s < steps; s++) {
        qkv_tensor *y = qkv_decoder_decode(tape, &t->decoder, ids_tensor_embed(tape, t, token, b, 1), memory_kv,
                                           src_mask, caches);
        next_tokens(qkv_linear_forward(tape, &t->head, y), token);
        for (int i = 0; i < b; i++) pred[(size_t)i * steps + s] = token[i];
    }
    qkv_stack_caches_free(caches, layers);
    free(caches);
}

/* Decoder-only: examples of the same length share a prompt length, so each group
 * is decoded together: the prompt "x SEP" in one call, then one token per call. */
static void predict_decoder(qkv_seq_model *t, qkv_tape *tape, const qkv_seq_batch *batch, int32_t *pred) {
    int b = batch->batch, width = t->config.data.max_len, layers = t->config.layers;
    int32_t *rows = qkv_malloc((size_t)b * sizeof(int32_t), "the prompt rows");
    for (int len = 1; len <= t->config.data.max_len; len++) {
        int n = 0;
        for (int i = 0; i < b; i++) if (batch->lengths[i] == len) rows[n++] = i;
        if (n == 0) continue;
        int32_t *prompt = qkv_tape_alloc(tape, (size_t)n * (len + 1) * sizeof(int32_t));
        for (int r = 0; r < n; r++)
            memcpy(prompt + (size_t)r * (len + 1), batch->src + (size_t)rows[r] * batch->src_len,
                   (size_t)(len + 1) * sizeof(int32_t));
        draw_positions(t, t->config.seed ^ TEST_SEED_OFFSET ^ RANDOMIZE_SALT, batch->first, rows, n, 2 * len + 1);
        qkv_kv_cache *caches = qkv_calloc((size_t)layers, sizeof *caches, "the KV caches");
        qkv_stack_caches_init(caches, layers, &t->encoder.blocks[0].attn, n, 2 * len + 1);
        qkv_tensor *h = qkv_encoder_decode(tape, &t->encoder, ids_tensor_embed(tape, t, prompt, n, len + 1), caches);
        qkv_tensor *last = qkv_slice(tape, h, 1, len, len + 1);
        int32_t *token = qkv_tape_alloc(tape, (size_t)n * sizeof(int32_t));
        for (int s = 0; s < len; s++) {
            next_tokens(qkv_linear_forward(tape, &t->head, last), token);
            for (int r = 0; r < n; r++) pred[(size_t)rows[r] * width + s] = token[r];
            if (s + 1 < len) last = qkv_encoder_decode(tape, &t->encoder, ids_tensor_embed(tape, t, token, n, 1), caches);
        }
        qkv_stack_caches_free(caches, layers);
        free(caches);
    }
    free(rows);
}

void qkv_seq_model_predict(qkv_seq_model *t, qkv_tape *tape, const qkv_seq_batch *batch, int32_t *pred) {
    /* the same scheme as training, from the test seed (decoder: drawn per group of a length) */
    if (t->config.data.arch != QKV_ARCH_DECODER)
        draw_positions(t, t->config.seed ^ TEST_SEED_OFFSET ^ RANDOMIZE_SALT, batch->first, NULL, batch->batch,
                       batch_positions(batch));
    switch (t->config.data.arch) {
    case QKV_ARCH_SEQ2SEQ: predict_seq2seq(t, tape, batch, pred); return;
    case QKV_ARCH_DECODER: predict_decoder(t, tape, batch, pred); return;
    default: {
        qkv_tensor *logits = batch_logits(t, &t->encoder, &t->decoder, tape, batch);
        int tokens = logits->shape[2];
        for (int i = 0; i < batch->batch; i++)
            for (int s = 0; s < batch->src_len; s++)
                pred[(size_t)i * batch->src_len + s] =
                    qkv_argmax(logits->data + ((size_t)i * batch->src_len + s) * tokens, tokens);
    }
    }
}

qkv_tensor *qkv_seq_model_loss(qkv_seq_model *t, qkv_tape *tape, const qkv_seq_batch *batch) {
    draw_positions(t, t->config.seed ^ TEST_SEED_OFFSET ^ RANDOMIZE_SALT, batch->first, NULL, batch->batch,
                   batch_positions(batch));
    return qkv_cross_entropy(tape, batch_logits(t, &t->encoder, &t->decoder, tape, batch), batch->tgt_out,
                             QKV_SEQ_IGNORE, NULL);
}

/* ---- trainer callbacks --------------------------------------------------------------- */

/* Rows [first, first+n) of a batch, viewing its buffers: same padding as the whole. */
static qkv_seq_batch batch_rows(const qkv_seq_batch *b, int first, int n) {
    qkv_seq_batch rows = *b;
    int tgt_width = b->tgt_len ? b->tgt_len : b->src_len;  /* tgt_out's row width */
    rows.batch = n;
    rows.src += (size_t)first * b->src_len;
    rows.src_mask += (size_t)first * b->src_len;
    rows.tgt_out += (size_t)first * tgt_width;
    if (rows.tgt_in) rows.tgt_in += (size_t)first * b->tgt_len;
    if (rows.tgt_mask) rows.tgt_mask += (size_t)first * b->tgt_len;
    rows.lengths += first;
    rows.first += (uint64_t)first;
    return rows;
}

/* The whole batch is made (cheap) and padded as one process would, with its rows'
 * position draws; each micro-batch trains its rows (train/step.h), reading them. */
static void task_prepare(void *self, long step) {
    qkv_seq_model *t = self;
    uint64_t first = (uint64_t)step * (uint64_t)t->config.batch;
    qkv_seq_make_batch_wrapped(&t->config.data, t->config.seed, first, t->config.batch,
                               (uint64_t)t->config.train_size, &t->batch);
    draw_positions(t, t->config.seed ^ RANDOMIZE_SALT, first, NULL, t->config.batch, batch_positions(&t->batch));
}

/* The targets of rows [first, first+n) not ignored: the terms of their mean loss. */
static double task_weight(void *self, int first, int n) {
    const qkv_seq_model *t = self;
    const qkv_seq_batch *b = &t->batch;
    size_t width = (size_t)(b->tgt_len ? b->tgt_len : b->src_len), terms = 0;
    const int32_t *targets = b->tgt_out + (size_t)first * width;
    for (size_t i = 0; i < (size_t)n * width; i++) terms += targets[i] != QKV_SEQ_IGNORE;
    return (double)terms;
}

static qkv_tensor *task_loss(void *self, qkv_tape *tape, long step) {
    (void)step; /* task_prepare made step's batch */
    qkv_seq_model *t = self;
    int row, n;
    qkv_tape_batch_slice(tape, t->config.batch, &row, &n);
    qkv_seq_batch rows = batch_rows(&t->batch, row, n);
    qkv_encoder enc;
    qkv_decoder dec;
    row_stacks(t, row, n, &enc, &dec);
    return qkv_cross_entropy(tape, batch_logits(t, &enc, &dec, tape, &rows), rows.tgt_out, QKV_SEQ_IGNORE, NULL);
}

/* Where example i's target tokens sit in the prediction buffer and in tgt_out. */
static int pred_width(const qkv_seq_model *t, const qkv_seq_batch *b) {
    switch (t->config.data.arch) {
    case QKV_ARCH_SEQ2SEQ: return b->tgt_len;
    case QKV_ARCH_DECODER: return t->config.data.max_len;
    default: return b->src_len;
    }
}

static int32_t target_token(const qkv_seq_model *t, const qkv_seq_batch *b, int i, int s) {
    int width = t->config.data.arch == QKV_ARCH_SEQ2SEQ ? b->tgt_len : b->src_len;
    int offset = t->config.data.arch == QKV_ARCH_DECODER ? b->lengths[i] : 0; /* targets start at SEP */
    return b->tgt_out[(size_t)i * width + offset + s];
}

static void task_evaluate(void *self, qkv_tape *tape, qkv_metrics *metrics) {
    qkv_seq_model *t = self;
    uint64_t test_seed = t->config.seed ^ TEST_SEED_OFFSET;
    long tokens = 0, tokens_right = 0, seqs_right = 0;
    qkv_seq_batch batch = {0};
    int32_t *pred = NULL;
    for (int first = 0; first < t->config.test_size && !qkv_interrupt_poll(); first += t->config.batch) {
        int n = t->config.test_size - first < t->config.batch ? t->config.test_size - first : t->config.batch;
        qkv_seq_make_batch(&t->config.data, test_seed, (uint64_t)first, n, &batch);
        int width = pred_width(t, &batch);
        pred = qkv_realloc(pred, (size_t)n * width * sizeof(int32_t), "the predictions");
        qkv_seq_model_predict(t, tape, &batch, pred);
        for (int i = 0; i < n; i++) {
            int all = 1;
            for (int s = 0; s < batch.lengths[i]; s++) {
                int right = pred[(size_t)i * width + s] == target_token(t, &batch, i, s);
                tokens_right += right;
                all &= right;
            }
            tokens += batch.lengths[i];
            seqs_right += all;
        }
        qkv_tape_reset(tape);
    }
    free(pred);
    qkv_seq_batch_free(&batch);
    qkv_metrics_set(metrics, "token_acc", (double)tokens_right / (double)tokens);
    qkv_metrics_set(metrics, "seq_acc", (double)seqs_right / (double)t->config.test_size);
}

void qkv_seq_model_accuracy_at(qkv_seq_model *t, qkv_tape *tape, int len, int count, uint64_t seed, double *exact,
                               double *token) {
    qkv_seq_batch batch = {0};
    qkv_seq_config trained = t->config.data, at_len = trained;
    at_len.min_len = at_len.max_len = len;
    qkv_seq_make_batch(&at_len, seed, 0, count, &batch);
    t->config.data = at_len;   /* predict decodes up to config.data.max_len tokens */
    int width = pred_width(t, &batch);
    int32_t *pred = qkv_malloc((size_t)count * width * sizeof(int32_t), "the predictions");
    qkv_seq_model_predict(t, tape, &batch, pred);
    long right = 0, all_right = 0;
    for (int i = 0; i < count; i++) {
        int ok = 1;
        for (int s = 0; s < len; s++) {
            int r = pred[(size_t)i * width + s] == target_token(t, &batch, i, s);
            right += r;
            ok &= r;
        }
        all_right += ok;
    }
    t->config.data = trained;
    qkv_tape_reset(tape);
    *exact = (double)all_right / count;
    *token = (double)right / ((double)count * len);
    free(pred);
    qkv_seq_batch_free(&batch);
}

static const qkv_task_kind *const kind_of_task[] = {&qkv_task_kind_reverse, &qkv_task_kind_copy,
                                                     &qkv_task_kind_sort};   /* enum qkv_seq_task order */

static void task_describe(void *self, qkv_config_kv *out) {
    qkv_seq_task_config c = {.model = ((qkv_seq_model *)self)->config};
    qkv_task_kind_describe(kind_of_task[c.model.data.task], &c, out);
}

/* ---- life cycle ------------------------------------------------------------------------ */

void qkv_seq_model_init(qkv_seq_model *t, const qkv_seq_model_config *config) {
    memset(t, 0, sizeof *t);
    t->config = *config;
    QKV_CHECK(qkv_seq_model_check(config) == 0, "seq_model_init: %s", qkv_last_error());
    t->config.max_pos = position_rows(config);   /* the description names the table's rows */
    qkv_rng rng = qkv_rng_make(config->seed);
    int tokens = qkv_seq_token_count(&config->data);
    t->embed = qkv_params_new(&t->params, "embed.weight", 2, (int[]){tokens, config->dim});
    qkv_fill_normal(t->embed->data, t->embed->size, &rng, 0.0f, 1.0f);
    qkv_stack_config stack = {.block = {.d_model = config->dim, .n_heads = config->heads, .d_ff = config->ff,
                                        .dropout = config->dropout},
                              .n_layers = config->layers, .positions = config->pos, .max_len = position_rows(config),
                              .pos_opts = {.t5_buckets = config->t5_buckets, .t5_max_distance = config->t5_max_distance,
                                           .randomize = config->pos_randomize}};
    qkv_stack_options_apply(&config->options, &stack);
    qkv_encoder_init(&t->encoder, &t->params, "enc", &stack, config->data.arch == QKV_ARCH_DECODER, &rng);
    if (config->data.arch == QKV_ARCH_SEQ2SEQ) qkv_decoder_init(&t->decoder, &t->params, "dec", &stack, &rng);
    qkv_linear_init(&t->head, &t->params, "head", config->dim, tokens, 1, &rng);
    t->task = (qkv_task){.name = qkv_seq_task_name(config->data.task), .self = t, .params = &t->params,
                         .loss = task_loss, .evaluate = task_evaluate, .describe = task_describe,
                         .batch = config->batch, .prepare = task_prepare, .weight = task_weight, .micro_batch = 16};
}

void qkv_seq_model_free(qkv_seq_model *t) {
    qkv_encoder_free(&t->encoder);
    qkv_decoder_free(&t->decoder);
    qkv_seq_batch_free(&t->batch);
    free(t->pos_sample);
    qkv_params_free(&t->params);
}

int qkv_seq_model_config_from(const qkv_config_kv *d, qkv_seq_model_config *c) {
    qkv_seq_task_config task;
    memset(&task, 0, sizeof task);
    qkv_fields_defaults(reverse_fields, N_FIELDS, &task);
    if (qkv_fields_parse(reverse_fields, N_FIELDS, d, &task) != 0) return -1;
    *c = task.model;
    return qkv_seq_model_check(c);
}

int qkv_seq_model_load(qkv_seq_model *t, const char *path, long *step) {
    qkv_task_checkpoint ckpt;
    if (qkv_task_checkpoint_open(path, NULL, &ckpt) != 0) return -1;
    int rc = qkv_task_checkpoint_of(&ckpt, NULL, "the sequence tasks (reverse, copy, sort)");
    if (rc == 0) {
        qkv_seq_model_init(t, &((qkv_seq_task_config *)ckpt.config)->model);
        if ((rc = qkv_checkpoint_restore(&ckpt.file, &t->params, NULL, step, NULL)) != 0) qkv_seq_model_free(t);
    }
    qkv_task_checkpoint_close(&ckpt);
    return rc;
}

/* ---- the registry's entries ------------------------------------------------------------ */

/* --len and --epochs, then the model's checks. */
static int sequence_check(void *config, qkv_trainer_config *trainer) {
    qkv_seq_task_config *c = config;
    qkv_seq_model_config *m = &c->model;
    if (c->len) m->data.min_len = m->data.max_len = c->len;
    if (trainer && c->epochs) {
        if (!m->train_size) return qkv_set_error("--epochs needs --train-size"), -1;
        long long steps = ((long long)c->epochs * m->train_size + m->batch - 1) / m->batch;
        if (steps > 1000000000LL)
            return qkv_set_error("--epochs %d x --train-size %d / --batch %d is %lld steps (at most 1e9)", c->epochs,
                                 m->train_size, m->batch, steps), -1;
        trainer->steps = (int)steps;
    }
    return qkv_seq_model_check(m);
}

static qkv_task *sequence_create(const void *config, int for_eval) {
    (void)for_eval;   /* the data is made on the fly */
    qkv_seq_model *t = qkv_malloc(sizeof *t, "a sequence model");
    qkv_seq_model_init(t, &((const qkv_seq_task_config *)config)->model);
    return &t->task;
}

static void sequence_destroy(qkv_task *task) {
    qkv_seq_model_free(task->self);
    free(task->self);
}

static void sequence_banner(const qkv_task *task, const qkv_trainer_config *trainer, int threads) {
    const qkv_seq_model_config *c = &((const qkv_seq_model *)task->self)->config;
    printf("%s: %s, %s positions, %d layers x %d heads, dim %d, %zu parameters, %s lr %g, batch %d, "
           "%d steps, %d thread%s\n",
           qkv_seq_task_name(c->data.task), qkv_seq_arch_name(c->data.arch), qkv_pos_kind_name(c->pos), c->layers,
           c->heads, c->dim, qkv_params_count(task->params), qkv_opt_kind_name(trainer->optim.kind),
           trainer->optim.lr, c->batch, trainer->steps, threads, threads == 1 ? "" : "s");
}

/* The data is made batch by batch: the step's batch (task_prepare), whole, outside
 * the tapes: its token, target and mask rows of the longest stream. */
static size_t sequence_data_bytes(const void *config, int for_eval, char *what, size_t what_size) {
    (void)for_eval;
    const qkv_seq_model_config *c = &((const qkv_seq_task_config *)config)->model;
    int width = position_rows(c);
    snprintf(what, what_size, "a batch of %d sequences of up to %d tokens", c->batch, width);
    return qkv_size_mul((size_t)c->batch, (size_t)width * (3 * sizeof(int32_t) + 2 * sizeof(float)) + sizeof(int32_t));
}

/* lr 0.02 and an evaluation every 50 steps: the reversal demo reaches the target
 * in 350 steps for seeds 1..6 (at 3e-3: 800-950, stopping at 1000); see
 * docs/performance.md. An evaluation costs about what a few training steps do. */
#define SEQUENCE_TRAINER                                                                                    \
    {.steps = 3000, .eval_every = 50, .log_every = 100, .target_key = "seq_acc", .target = 0.998, .clip = 1.0f, \
     .optim = {.kind = QKV_OPT_ADAMW, .lr = 0.02f, .weight_decay = 0.01f},                                 \
     .schedule = {.kind = QKV_SCHED_COSINE, .warmup = 100}}
#define SEQUENCE_KIND(name_, fields_, summary_)                                                               \
    static void name_##_defaults(void *config) { qkv_fields_defaults(fields_, N_FIELDS, config); }         \
    const qkv_task_kind qkv_task_kind_##name_ = {#name_, summary_, sizeof(qkv_seq_task_config), name_##_defaults, fields_, \
                                                 N_FIELDS, SEQUENCE_TRAINER, sequence_check, sequence_create, \
                                                 sequence_destroy, sequence_banner, NULL, sequence_data_bytes}
SEQUENCE_KIND(reverse, reverse_fields, "a transformer learns to reverse sequences (encoder, seq2seq or decoder)");
SEQUENCE_KIND(copy, copy_fields, "the same models learn to copy");
SEQUENCE_KIND(sort, sort_fields, "the same models learn to sort");
