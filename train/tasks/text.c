/* text.c — the text task: corpus and tokens, training windows, validation, the
 * sample printed after each evaluation, and the registry's entry. See text.h. */
#include "train/tasks/text.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/mathfn.h"
#include "core/alloc.h"
#include "core/error.h"
#include "core/ops/ops.h"
#include "train/tasks/registry.h"
#include "train/tasks/stack_fields.h"
#include "train/interrupt.h"
#include "train/settings.h"

#define WINDOW_STREAM 0x7e47ULL   /* seed offsets of the training windows and of the samples */
#define SAMPLE_STREAM 0x5a3bULL
#define SAMPLE_TEMPERATURE 0.8f

typedef struct qkv_text_task {
    qkv_text_model model;
    int32_t *train, *val;          /* the two parts' tokens */
    long n_train, n_val;
    double mb;                     /* the corpus, for the banner */
    int n_files;
    char data_path[PATH_MAX];
    qkv_task task;
} qkv_text_task;

/* ---- the field table: the checkpoint description's order ------------------------------ */

typedef qkv_text_config C;
static const qkv_field fields[] = {
    QKV_TEXT_FIELD("--data", "data", C, data, "default",
                   "the text: a file, or a directory of files (default: " QKV_TEXT_DEFAULT_CORPUS ")"),
    {NULL, "corpus_bytes", QKV_FIELD_INT, offsetof(C, corpus_bytes), 1, INT_MAX, 0, NULL, NULL, NULL,
     QKV_FIELD_OF_DATA, 0, NULL},
    QKV_DATA_IDENTITY_FIELDS(C, data_identity),
    QKV_CHOICE_FIELD("--tokenizer", "tokenizer", C, tokenizer, qkv_tokenizer_kind_names, QKV_TOKENIZER_BYTES,
                     "tokens: the corpus's bytes, or a byte-level BPE trained on its training part"),
    QKV_INT_FIELD("--vocab", "vocab", C, vocab, 0, QKV_TOKENIZER_MAX_VOCAB, 0,
                  "bpe: the vocabulary to train (bytes: the corpus's distinct bytes)"),
    QKV_TEXT_FIELD(NULL, "tokens", C, tokens, "none", NULL),
    QKV_FLOAT_FIELD("--val-fraction", "val_fraction", C, val_fraction, 0.001, 0.5, 0.1,
                    "the last part of the corpus held out for validation"),
    QKV_INT_FIELD("--context", "context", C, context, 2, 4096, 64, "tokens the model reads at once"),
    QKV_STACK_SHAPE_FIELDS(C, , 4, 4, 128, 512),
    QKV_CHOICE_FIELD("--pos", "pos", C, pos, qkv_pos_kind_names, QKV_POS_LEARNED, "position scheme"),
    QKV_SETTING_FIELD(QKV_FIELD_FLOAT, QKV_SETTING_DROPOUT, C, dropout, 0),
    QKV_STACK_OPTION_FIELDS(C, options),
    QKV_INT_FIELD("--batch", "batch", C, batch, 1, 65536, 12, "windows per batch"),
    QKV_INT_FIELD("--val-windows", "val_windows", C, val_windows, 1, 1000000, 100,
                  "validation windows, evenly spaced over the held-out part"),
    QKV_INT_FIELD("--sample-tokens", NULL, C, sample_tokens, 0, 100000, 80,
                  "tokens of the sample printed after each evaluation; 0: none"),
    QKV_SEED_FIELD(C, seed, "seed for init, windows, dropout and samples"),
};
#define N_FIELDS ((int)(sizeof fields / sizeof fields[0]))

/* ---- training and evaluation ------------------------------------------------------------ */

/* n windows' ids and targets [n, context], in a tape's arena (a micro-batch's own). */
typedef struct windows { int32_t *ids, *targets; } windows;

/* The windows starting at starts[0..n) of tokens. */
static windows fill_windows(const qkv_text_task *t, qkv_tape *tape, const int32_t *tokens, const long *starts, int n) {
    size_t context = (size_t)t->model.config.context;
    windows w = {qkv_tape_alloc(tape, (size_t)n * context * sizeof(int32_t)),
                 qkv_tape_alloc(tape, (size_t)n * context * sizeof(int32_t))};
    for (int i = 0; i < n; i++) {
        memcpy(w.ids + (size_t)i * context, tokens + starts[i], context * sizeof(int32_t));
        memcpy(w.targets + (size_t)i * context, tokens + starts[i] + 1, context * sizeof(int32_t));
    }
    return w;
}

static qkv_tensor *window_loss(const qkv_text_task *t, qkv_tape *tape, windows w, int n) {
    qkv_tensor *logits = qkv_text_model_logits(tape, &t->model, w.ids, n, t->model.config.context);
    return qkv_cross_entropy(tape, logits, w.targets, -1, NULL);
}

/* The tape's micro-batch of step s's windows (train/step.h). */
static qkv_tensor *text_loss(void *self, qkv_tape *tape, long step) {
    qkv_text_task *t = self;
    const qkv_text_config *c = &t->model.config;
    int first, n;
    qkv_tape_batch_slice(tape, c->batch, &first, &n);
    uint64_t stream = qkv_rng_make(c->seed ^ WINDOW_STREAM).seed;
    long *starts = qkv_tape_alloc(tape, (size_t)n * sizeof *starts);
    for (int i = 0; i < n; i++) {
        uint64_t example = (uint64_t)step * (uint64_t)c->batch + (uint64_t)(first + i);
        starts[i] = (long)(qkv_rng_at(stream, example) % (uint64_t)(t->n_train - c->context));
    }
    return window_loss(t, tape, fill_windows(t, tape, t->train, starts, n), n);
}

/* Validation window j of w: evenly spaced over the part, the first at its start
 * and the last ending at its end. */
static long val_start(const qkv_text_task *t, int j, int w) {
    long span = t->n_val - t->model.config.context - 1;
    return w > 1 ? (long)((double)span * j / (w - 1)) : 0;
}

static void text_evaluate(void *self, qkv_tape *tape, qkv_metrics *metrics) {
    qkv_text_task *t = self;
    const qkv_text_config *c = &t->model.config;
    double nats = 0, bytes = 0;
    long *starts = qkv_malloc((size_t)c->batch * sizeof *starts, "the validation windows");
    for (int first = 0; first < c->val_windows && !qkv_interrupt_poll(); first += c->batch) {
        int n = c->val_windows - first < c->batch ? c->val_windows - first : c->batch;
        for (int i = 0; i < n; i++) starts[i] = val_start(t, first + i, c->val_windows);
        windows w = fill_windows(t, tape, t->val, starts, n);
        nats += (double)window_loss(t, tape, w, n)->data[0] * n * c->context;
        for (size_t k = 0; k < (size_t)n * c->context; k++) {
            size_t len;
            qkv_tokenizer_token_bytes(t->model.tokenizer, w.targets[k], &len);
            bytes += (double)len;
        }
        qkv_tape_reset(tape);
    }
    free(starts);
    qkv_metrics_set(metrics, "val_loss", nats / ((double)c->val_windows * c->context));
    qkv_metrics_set(metrics, "val_bpb", nats / qkv_math_log(2.0) / bytes);
}

/* ---- the sample after each evaluation ------------------------------------------------------ */

typedef struct sample_out {
    const qkv_tokenizer *tokenizer;
    FILE *out;
} sample_out;

/* Writes a token's bytes, control characters but newline and tab as '?'. */
static void print_token(void *ctx, int32_t token) {
    const sample_out *s = ctx;
    size_t len;
    const uint8_t *bytes = qkv_tokenizer_token_bytes(s->tokenizer, token, &len);
    for (size_t i = 0; i < len; i++)
        fputc(bytes[i] < 0x20 && bytes[i] != '\n' && bytes[i] != '\t' ? '?' : bytes[i], s->out);
}

static void text_report(void *self, qkv_tape *tape, FILE *out) {
    qkv_text_task *t = self;
    const qkv_text_config *c = &t->model.config;
    if (c->sample_tokens == 0) return;
    qkv_sampling sampling = {.temperature = SAMPLE_TEMPERATURE, .top_k = 0, .top_p = 1.0f};
    qkv_rng rng = qkv_rng_make(c->seed ^ SAMPLE_STREAM);   /* the same draws each time: the model is what changes */
    int32_t prompt = qkv_text_default_prompt(&t->model);
    sample_out s = {t->model.tokenizer, out};
    fputs("sample: ", out);
    qkv_text_generate(&t->model, tape, &prompt, 1, c->sample_tokens, &sampling, &rng, print_token, &s);
    fputs("\n", out);
    fflush(out);
}

static void text_describe(void *self, qkv_config_kv *out) {
    qkv_task_kind_describe(&qkv_task_kind_text, &((qkv_text_task *)self)->model.config, out);
}

/* ---- data ------------------------------------------------------------------------------- */

/* The tokenizer of config: from its description (a checkpoint) or built from the corpus. */
static int make_tokenizer(const qkv_text_config *c, const qkv_text_corpus *corpus, size_t n_train,
                          qkv_tokenizer *tokenizer) {
    if (c->tokens) return qkv_tokenizer_from_text(tokenizer, c->tokens);
    if (c->tokenizer == QKV_TOKENIZER_BPE)   /* a merge at a time, a signal stops between (data/pieces.h) */
        return qkv_tokenizer_train_bpe_pieces(tokenizer, corpus->bytes, n_train, c->vocab, qkv_interrupt_poll) ? -1 : 0;
    qkv_tokenizer_init_bytes(tokenizer, corpus->bytes, corpus->n);
    return 0;
}

/* A part's tokens into *out (bytes the tokenizer lacks are dropped: BPE's alphabet is
 * the training part's); -1 with an error if fewer than context + 1. */
static int encode_part(const qkv_tokenizer *tokenizer, const uint8_t *bytes, size_t n, int context, const char *part,
                       int32_t **out, long *count) {
    *out = qkv_try_malloc(qkv_size_mul(n ? n : 1, sizeof **out), NULL, "the corpus's tokens");
    if (!*out || qkv_tokenizer_encode_pieces(tokenizer, bytes, n, 1, *out, count, qkv_interrupt_poll) != 0) return -1;
    if (*count < context + 1)
        return qkv_set_error("the %s part has %ld tokens; --context %d needs at least %d (a longer text, or a "
                             "smaller --context or other --val-fraction)", part, *count, context, context + 1), -1;
    return 0;
}

/* Loads the corpus, builds or reads the tokenizer and encodes both parts. */
static int load_text(qkv_text_task *t, qkv_text_config *c, qkv_tokenizer *tokenizer) {
    const char *path = c->data ? c->data : QKV_TEXT_DEFAULT_CORPUS;
    qkv_text_corpus corpus;
    if (qkv_text_load(path, &corpus) != 0) {
        if (!c->data) {
            char reason[512];
            snprintf(reason, sizeof reason, "%s", qkv_last_error());
            qkv_set_error("%s (the default text: install Debian's fortunes package, or give --data FILE)", reason);
        }
        return -1;
    }
    int rc = 0;
    if (c->corpus_bytes && (size_t)c->corpus_bytes != corpus.n) {
        qkv_set_error("%s: %zu bytes, but the model was trained on a text of %d", path, corpus.n, c->corpus_bytes);
        rc = -1;
    }
    size_t n_train = qkv_text_split(corpus.n, c->val_fraction);
    if (rc == 0) rc = make_tokenizer(c, &corpus, n_train, tokenizer);
    if (rc == 0) rc = encode_part(tokenizer, corpus.bytes, n_train, c->context, "training", &t->train, &t->n_train);
    if (rc == 0)
        rc = encode_part(tokenizer, corpus.bytes + n_train, corpus.n - n_train, c->context, "validation", &t->val,
                         &t->n_val);
    if (rc == 0) {
        snprintf(t->data_path, sizeof t->data_path, "%s", path);   /* as given: eval reads it from there */
        c->corpus_bytes = (int)corpus.n;
        t->mb = (double)corpus.n / 1e6;
        t->n_files = corpus.n_files;
    }
    qkv_text_corpus_free(&corpus);
    return rc;
}

/* ---- the registry's entry ------------------------------------------------------------------- */

static void text_defaults(void *config) { qkv_fields_defaults(fields, N_FIELDS, config); }

/* A checkpoint's tokenizer parses and has the config's vocab: 0, or -1 naming it. */
static int check_tokens(const qkv_text_config *c) {
    qkv_tokenizer *tokenizer = qkv_malloc(sizeof *tokenizer, "the tokenizer");
    int rc = qkv_tokenizer_from_text(tokenizer, c->tokens);
    if (rc != 0) {
        char reason[256];
        snprintf(reason, sizeof reason, "%s", qkv_last_error());
        qkv_set_error("its tokenizer: %s", reason);
    } else if (qkv_tokenizer_vocab(tokenizer) != c->vocab) {
        qkv_set_error("its tokenizer has %d tokens, its config says vocab %d", qkv_tokenizer_vocab(tokenizer), c->vocab);
        rc = -1;
    }
    free(tokenizer);
    return rc;
}

static int text_check(void *config, qkv_trainer_config *trainer) {
    qkv_text_config *c = config;
    if (qkv_stack_fields_check(c->dim, c->heads, (qkv_pos_kind)c->pos) != 0) return -1;
    if (qkv_stack_options_check(&c->options, c->dim, c->heads, (qkv_pos_kind)c->pos) != 0) return -1;
    if (qkv_stack_positions_check(&c->options, c->dim, c->heads, (qkv_pos_kind)c->pos, c->context,
                                  (qkv_pos_opts){0}) != 0)
        return -1;
    if (!trainer && !c->tokens) return qkv_set_error("config \"tokens\" is missing"), -1;
    if (!trainer && check_tokens(c) != 0) return -1;
    if (trainer && c->tokenizer == QKV_TOKENIZER_BPE && c->vocab == 0)
        return qkv_set_error("--tokenizer bpe needs --vocab N (up to %d)", QKV_TOKENIZER_MAX_VOCAB), -1;
    if (trainer && c->tokenizer == QKV_TOKENIZER_BYTES && c->vocab != 0)
        return qkv_set_error("--vocab is for --tokenizer bpe (bytes: the text's distinct bytes)"), -1;
    return 0;
}

static void free_task(qkv_text_task *t) {
    qkv_text_model_free(&t->model);
    free(t->train);
    free(t->val);
    free(t);
}

/* Training reads the whole set (for_eval too: the training part is what the
 * tokenizer is made of); only training works out its identity (evaluation has
 * the checkpoint's, which the registry checked). */
static qkv_task *text_create(const void *config, int for_eval) {
    qkv_text_task *t = qkv_calloc(1, sizeof *t, "the text task");
    qkv_text_config c = *(const qkv_text_config *)config;
    qkv_tokenizer *tokenizer = qkv_malloc(sizeof *tokenizer, "the tokenizer");
    int rc = load_text(t, &c, tokenizer);
    if (rc == 0 && !for_eval) rc = qkv_data_identity_of(t->data_path, &c.data_identity);
    if (rc == 0) {
        c.data = t->data_path;
        qkv_text_model_init(&t->model, &c, tokenizer);
    }
    free(tokenizer);
    if (rc != 0) {
        free(t->train);
        free(t->val);
        free(t);
        return NULL;
    }
    t->task = (qkv_task){.name = "text", .self = t, .params = &t->model.params, .loss = text_loss,
                         .evaluate = text_evaluate, .describe = text_describe, .batch = c.batch,
                         .report = text_report, .micro_batch = 3, .tokens_per_example = c.context};
    return &t->task;
}

static void text_destroy(qkv_task *task) { free_task(task->self); }

static void text_banner(const qkv_task *task, const qkv_trainer_config *trainer, int threads) {
    const qkv_text_task *t = task->self;
    const qkv_text_config *c = &t->model.config;
    printf("text: %s (%d file%s, %.2f MB), %s vocabulary of %d tokens, %ld train / %ld validation tokens, "
           "%d layers x %d heads, dim %d, context %d, %s positions, %zu parameters, %s lr %g, batch %d, %d steps, "
           "%d thread%s\n",
           c->data, t->n_files, t->n_files == 1 ? "" : "s", t->mb, qkv_tokenizer_kind_names[c->tokenizer], c->vocab,
           t->n_train, t->n_val, c->layers, c->heads, c->dim, c->context, qkv_pos_kind_name((qkv_pos_kind)c->pos),
           qkv_params_count(task->params), qkv_opt_kind_name(trainer->optim.kind), trainer->optim.lr, c->batch,
           trainer->steps, threads, threads == 1 ? "" : "s");
}

/* AdamW 1e-3, betas (0.9, 0.99), weight decay 0.1, 100 warmup steps then cosine to
 * 1e-4, clipping 1: nanoGPT's character-level settings, scaled to a laptop. */
/* At its peak, while the validation part is encoded: the corpus and both parts'
 * tokens (4 bytes a byte at most); BPE's training, before, takes less (its
 * training text and pair table, tokenizer.h). A missing file is create's to say. */
static size_t text_data_bytes(const void *config, int for_eval, char *what, size_t what_size) {
    (void)for_eval;   /* evaluation reads the whole corpus too */
    const qkv_text_config *c = config;
    const char *path = c->data ? c->data : QKV_TEXT_DEFAULT_CORPUS;
    size_t n;
    if (qkv_text_bytes(path, &n) != 0) return 0;
    snprintf(what, what_size, "%s: %zu bytes and their tokens", path, n);
    size_t peak = qkv_size_mul(n, 1 + sizeof(int32_t));
    if (c->tokenizer == QKV_TOKENIZER_BPE && !c->tokens) {
        size_t bpe = n + qkv_tokenizer_train_bytes(n);
        peak = bpe > peak ? bpe : peak;
    }
    return peak;
}

const qkv_task_kind qkv_task_kind_text = {
    "text", "a small GPT learns a text of yours (--data FILE; default: the fortunes package) and writes",
    sizeof(qkv_text_config), text_defaults, fields, N_FIELDS,
    {.steps = 2000, .eval_every = 200, .log_every = 100, .target_key = "val_loss", .lower_is_better = 1,
     .clip = 1.0f, .optim = {.kind = QKV_OPT_ADAMW, .lr = 1e-3f, .beta2 = 0.99f, .weight_decay = 0.1f},
     .schedule = {.kind = QKV_SCHED_COSINE, .warmup = 100, .min_factor = 0.1f}},
    text_check, text_create, text_destroy, text_banner, NULL, text_data_bytes};
