/* cmd_attn.c — `qkv attn CKPT --input "3 1 4 1 5" --out attn.png`: the attention
 * maps of a trained sequence model (reverse, copy, sort) on one input.
 *
 * The input is a list of symbols 0 .. vocab-1 (separated by spaces or commas).
 * The model first predicts the output greedily, as `qkv eval` does; then one
 * forward pass over the whole sequence, with each attention module's capture
 * pointer set, collects every layer's per-head weights:
 *   encoder   the input's self-attention, L x L;
 *   decoder   the stream "input SEP output" (2L+1 tokens), causal;
 *   seq2seq   the encoder's self-attention, then per decoder layer its causal
 *             self-attention over "BOS output[0..L-2]" and its cross-attention
 *             from those queries to the input.
 * The PNG has one row per layer (seq2seq: encoder layers, then each decoder
 * layer's self and cross rows) and one column per head (train/attn_maps.h).
 * Errors (bad checkpoint, a symbol outside the vocabulary, an input longer than
 * the model's positions allow, an unwritable --out) are one line and exit 2.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/ops/ops.h"
#include "core/kernels/parallel.h"
#include "train/cli/args.h"
#include "train/viz/attn_maps.h"
#include "train/cli/commands.h"
#include "train/tasks/sequence.h"

/* Parses "3 1 4" into symbols[0..n); -1 with qkv_last_error() naming --input. */
static int parse_input(const char *text, int vocab, int max_len, int32_t *symbols, int *n) {
    *n = 0;
    const char *p = text;
    for (;;) {
        while (*p == ' ' || *p == ',' || *p == '\t') p++;
        if (!*p) break;
        char *end = NULL;
        errno = 0;
        long v = strtol(p, &end, 10);
        if (end == p || errno || (*end && *end != ' ' && *end != ',' && *end != '\t')) {
            qkv_set_error("--input: '%.20s' is not a list of integers", p);
            return -1;
        }
        if (v < 0 || v >= vocab) {
            qkv_set_error("--input: symbol %ld is outside the model's vocabulary 0..%d", v, vocab - 1);
            return -1;
        }
        if (*n == max_len) {
            qkv_set_error("--input: more than %d symbols; this model reads at most %d", max_len, max_len);
            return -1;
        }
        symbols[(*n)++] = (int32_t)v + QKV_SEQ_FIRST_SYMBOL;
        p = end;
    }
    if (*n == 0) {
        qkv_set_error("--input: no symbols (give e.g. --input \"3 1 4 1 5\")");
        return -1;
    }
    return 0;
}

/* The longest input the model can read: its learned position table, and a map
 * of at most QKV_ATTN_MAX_TOKENS tokens a side. */
static int longest_input(const qkv_seq_model_config *c) {
    int decoder = c->data.arch == QKV_ARCH_DECODER;
    int most = decoder ? (QKV_ATTN_MAX_TOKENS - 1) / 2 : QKV_ATTN_MAX_TOKENS;
    if (c->pos == QKV_POS_LEARNED) {
        int table = decoder ? (c->max_pos - 1) / 2 : c->max_pos;
        if (table < most) most = table;
    }
    return most;
}

static void token_label(int32_t id, char *out, size_t len) {
    if (id == QKV_SEQ_BOS) snprintf(out, len, "BOS");
    else if (id == QKV_SEQ_SEP) snprintf(out, len, "SEP");
    else if (id == QKV_SEQ_PAD) snprintf(out, len, "PAD");
    else snprintf(out, len, "%d", (int)(id - QKV_SEQ_FIRST_SYMBOL));
}

/* Labels for ids[0..n): pointers into text (n * 12 chars). */
static const char **labels_of(const int32_t *ids, int n, char *text, const char **out) {
    for (int i = 0; i < n; i++) {
        token_label(ids[i], text + 12 * i, 12);
        out[i] = text + 12 * i;
    }
    return out;
}

/* Cells of one row of the grid: head h of a captured [1,H,Tq,Tk] weight tensor. */
static void add_row(qkv_attn_map *maps, const char *what, int layer, const qkv_tensor *w,
                    const char *const *q_labels, const char *const *k_labels) {
    int heads = w->shape[1], tq = w->shape[2], tk = w->shape[3];
    for (int h = 0; h < heads; h++) {
        qkv_attn_map *m = &maps[h];
        snprintf(m->title, sizeof m->title, "%slayer %d head %d", what, layer, h);
        m->weights = w->data + (size_t)h * tq * tk;
        m->tq = tq;
        m->tk = tk;
        m->q_labels = q_labels;
        m->k_labels = k_labels;
    }
}

static qkv_tensor *embed(qkv_tape *tape, const qkv_seq_model *t, const int32_t *ids, int len) {
    return qkv_embedding(tape, t->embed, ids, 2, (int[]){1, len});
}

/* Predicts, then captures; fills maps (rows x heads) and pred[0..L). Returns rows. */
static int run_model(qkv_seq_model *t, qkv_tape *tape, const int32_t *x, int len, int32_t *pred,
                     qkv_attn_map *maps, qkv_tensor **captured, int32_t *stream, const char **q_lab,
                     const char **k_lab, char *q_text, char *k_text) {
    const qkv_seq_model_config *c = &t->config;
    int heads = c->heads, layers = c->layers, decoder = c->data.arch == QKV_ARCH_DECODER;
    qkv_seq_batch b = {0};
    int src_len = decoder ? 2 * len + 1 : len;
    b.batch = 1;
    b.src_len = src_len;
    b.tgt_len = c->data.arch == QKV_ARCH_SEQ2SEQ ? len : 0;
    b.src = calloc((size_t)src_len, sizeof(int32_t));
    b.src_mask = malloc((size_t)src_len * sizeof(float));
    b.lengths = malloc(sizeof(int32_t));
    int32_t *buffer = malloc((size_t)(len > c->data.max_len ? len : c->data.max_len) * sizeof(int32_t));
    if (!b.src || !b.src_mask || !b.lengths || !buffer) qkv_fatal("attn: out of memory");
    memcpy(b.src, x, (size_t)len * sizeof(int32_t));
    if (decoder) b.src[len] = QKV_SEQ_SEP;
    for (int i = 0; i < src_len; i++) b.src_mask[i] = 1;
    b.lengths[0] = len;
    if (len > t->config.data.max_len) t->config.data.max_len = len; /* the decoder predicts lengths up to max_len */
    qkv_seq_model_predict(t, tape, &b, buffer);
    memcpy(pred, buffer, (size_t)len * sizeof(int32_t));
    free(buffer);
    qkv_tape_reset(tape);

    int rows = 0;
    qkv_tensor *mask = qkv_tape_view(tape, 2, (int[]){1, len}, b.src_mask);
    for (int l = 0; l < layers; l++) t->encoder.blocks[l].attn.capture = &captured[l];
    if (decoder) { /* input SEP output */
        memcpy(stream, x, (size_t)len * sizeof(int32_t));
        stream[len] = QKV_SEQ_SEP;
        memcpy(stream + len + 1, pred, (size_t)len * sizeof(int32_t));
        qkv_encoder_forward(tape, &t->encoder, embed(tape, t, stream, src_len), NULL);
        labels_of(stream, src_len, q_text, q_lab);
        for (int l = 0; l < layers; l++, rows++) add_row(maps + rows * heads, "", l, captured[l], q_lab, q_lab);
    } else {
        qkv_tensor *memory = qkv_encoder_forward(tape, &t->encoder, embed(tape, t, x, len), mask);
        labels_of(x, len, k_text, k_lab);
        const char *prefix = c->data.arch == QKV_ARCH_SEQ2SEQ ? "enc " : "";
        for (int l = 0; l < layers; l++, rows++) add_row(maps + rows * heads, prefix, l, captured[l], k_lab, k_lab);
        if (c->data.arch == QKV_ARCH_SEQ2SEQ) { /* BOS output[0..L-2] against the input */
            stream[0] = QKV_SEQ_BOS;
            memcpy(stream + 1, pred, (size_t)(len - 1) * sizeof(int32_t));
            qkv_tensor **self = captured + layers, **cross = captured + 2 * layers;
            for (int l = 0; l < layers; l++) {
                t->decoder.blocks[l].self_attn.capture = &self[l];
                t->decoder.blocks[l].cross_attn.capture = &cross[l];
            }
            qkv_decoder_forward(tape, &t->decoder, embed(tape, t, stream, len), memory, mask, NULL);
            labels_of(stream, len, q_text, q_lab);
            for (int l = 0; l < layers; l++) {
                add_row(maps + rows++ * heads, "dec self ", l, self[l], q_lab, q_lab);
                add_row(maps + rows++ * heads, "dec cross ", l, cross[l], q_lab, k_lab);
            }
        }
    }
    qkv_seq_batch_free(&b);
    return rows;
}

/* "reverse (encoder, rope positions, step 400)\ninput 3 1 4 -> 4 1 3". */
static void write_caption(char *caption, size_t size, const qkv_seq_model *model, long step, const int32_t *x,
                          const int32_t *pred, int len) {
    char label[12];
    int at = snprintf(caption, size, "%s (%s, %s positions, step %ld)\n", model->task.name,
                      qkv_seq_arch_name(model->config.data.arch), qkv_pos_kind_name(model->config.pos), step);
    for (int pass = 0; pass < 2; pass++) {
        at += snprintf(caption + at, size - (size_t)at, pass ? " ->" : "input");
        for (int i = 0; i < len && at < (int)size - 16; i++) {
            token_label(pass ? pred[i] : x[i], label, sizeof label);
            at += snprintf(caption + at, size - (size_t)at, " %s", label);
        }
    }
}

static int usage_error(const char *message) {
    fprintf(stderr, "qkv attn: %s\n", message);
    return 2;
}

int qkv_cmd_attn(int argc, char **argv) {
    const char *input = NULL, *out = "attn.png";
    int threads = 0;
    const qkv_arg args[] = {
        QKV_ARG_STRING_ROW("--input", &input, "the input symbols, e.g. \"3 1 4 1 5\" (each 0..vocab-1)"),
        QKV_ARG_STRING_ROW("--out", &out, "the PNG to write"),
        QKV_ARG_INT_ROW("--threads", &threads, 0, 1024, QKV_THREADS_HELP),
    };
    if (argc < 1 || argv[0][0] == '-') {
        if (argc >= 1 && strcmp(argv[0], "--help") == 0) {
            puts("usage: qkv attn CHECKPOINT --input \"3 1 4 1 5\" [--out attn.png]: every layer's and head's\n"
                 "attention weights on one input of a sequence-task model, as a grid of heatmaps\n"
                 "(rows: layers, columns: heads; seq2seq adds the decoder's self and cross rows)");
            qkv_args_parse("attn", argc, argv, args, 3);
            return 0;
        }
        return usage_error("name a checkpoint: qkv attn CHECKPOINT --input \"3 1 4 1 5\" --out attn.png");
    }
    int parsed = qkv_args_parse("attn", argc - 1, argv + 1, args, 3);
    if (parsed != 0) return parsed > 0 ? 0 : 2;
    if (!input) return usage_error("--input is required, e.g. --input \"3 1 4 1 5\"");
    if (qkv_check_png_path(out) != 0) return usage_error(qkv_last_error());
    qkv_set_threads(threads);

    qkv_seq_model model;
    long step = 0;
    if (qkv_seq_model_load(&model, argv[0], &step) != 0) return usage_error(qkv_last_error());
    const qkv_seq_model_config *c = &model.config;
    int most = longest_input(c), len = 0;
    int32_t *x = malloc((size_t)most * sizeof(int32_t));
    if (!x) qkv_fatal("attn: out of memory");
    if (parse_input(input, c->data.vocab, most, x, &len) != 0) {
        free(x);
        qkv_seq_model_free(&model);
        return usage_error(qkv_last_error());
    }

    int rows_max = c->data.arch == QKV_ARCH_SEQ2SEQ ? 3 * c->layers : c->layers;
    size_t side = 2 * (size_t)len + 1;
    qkv_attn_map *maps = calloc((size_t)rows_max * c->heads, sizeof *maps);
    qkv_tensor **captured = calloc((size_t)rows_max, sizeof *captured);
    int32_t *pred = malloc(side * sizeof(int32_t)), *stream = malloc(side * sizeof(int32_t));
    const char **q_lab = malloc(side * sizeof *q_lab), **k_lab = malloc(side * sizeof *k_lab);
    char *q_text = malloc(side * 12), *k_text = malloc(side * 12);
    if (!maps || !captured || !pred || !stream || !q_lab || !k_lab || !q_text || !k_text)
        qkv_fatal("attn: out of memory");
    qkv_tape *tape = qkv_tape_create_inference(c->seed);
    int rows = run_model(&model, tape, x, len, pred, maps, captured, stream, q_lab, k_lab, q_text, k_text);

    char caption[256];
    write_caption(caption, sizeof caption, &model, step, x, pred, len);
    int rc = qkv_attn_grid_png(out, caption, maps, rows, c->heads);
    if (rc == 0) printf("%s\nwrote %s: %d rows x %d heads\n", caption, out, rows, c->heads);
    else fprintf(stderr, "qkv attn: %s\n", qkv_last_error());
    qkv_tape_free(tape);
    qkv_seq_model_free(&model);
    free(x);
    free(maps);
    free(captured);
    free(pred);
    free(stream);
    free(q_lab);
    free(k_lab);
    free(q_text);
    free(k_text);
    return rc == 0 ? 0 : 2;
}
