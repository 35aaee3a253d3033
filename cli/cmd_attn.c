/* cmd_attn.c — `qkv attn CKPT --input "3 1 4 1 5" --out attn.png`: the attention
 * maps of a trained sequence model (reverse, copy, sort) on one input.
 *
 * The input is a list of symbols 0 .. vocab-1 (separated by spaces or commas).
 * qkv_seq_model_attention_maps (train/tasks/sequence_attention.c) predicts the
 * output greedily and captures every layer's per-head weights; this file parses,
 * labels the tokens and draws the grid. The PNG has one row per layer (seq2seq:
 * encoder layers, then each decoder layer's self and cross rows) and one column
 * per head (train/viz/attn_maps.h).
 * The maps are honest only for inputs like the ones the model learned from: an
 * input whose length lies outside the checkpoint's training lengths is refused
 * (the maps of an untrained length are noise a reader would take for a finding);
 * --force draws it anyway, with a red warning in the picture and on stderr.
 * Tick labels are "position:token", so a repeated token is still one place.
 * Errors (bad checkpoint, a symbol outside the vocabulary, an input longer than
 * the model's positions allow, an untrained length without --force, an
 * unwritable --out) are one line and exit 2.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/number.h"
#include "core/ops/ops.h"
#include "core/kernels/parallel.h"
#include "cli/args.h"
#include "train/viz/attn_maps.h"
#include "cli/commands.h"
#include "train/tasks/sequence.h"
#include "train/settings.h"

/* Parses "3 1 4" into symbols[0..n); -1 with qkv_last_error() naming --input. */
static int parse_input(const char *text, int vocab, int max_len, int32_t *symbols, int *n) {
    *n = 0;
    const char *p = text;
    for (;;) {
        while (*p == ' ' || *p == ',' || *p == '\t') p++;
        if (!*p) break;
        size_t len = strcspn(p, " ,\t");
        char token[24];
        long long v = 0;
        snprintf(token, sizeof token, "%.*s", (int)(len < sizeof token ? len : sizeof token - 1), p);
        if (len >= sizeof token || qkv_parse_int(token, LLONG_MIN, LLONG_MAX, &v) != 0) {   /* core/number.h */
            qkv_set_error("--input: '%.20s' is not a list of integers", p);
            return -1;
        }
        const char *end = p + len;
        if (v < 0 || v >= vocab) {
            qkv_set_error("--input: symbol %lld is outside the model's vocabulary 0..%d", v, vocab - 1);
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

static void token_label(int32_t id, char *out, size_t len) {
    if (id == QKV_SEQ_BOS) snprintf(out, len, "BOS");
    else if (id == QKV_SEQ_SEP) snprintf(out, len, "SEP");
    else if (id == QKV_SEQ_PAD) snprintf(out, len, "PAD");
    else snprintf(out, len, "%d", (int)(id - QKV_SEQ_FIRST_SYMBOL));
}

/* Labels "position:token" for ids[0..n): pointers into text (n * 24 chars). */
static const char **labels_of(const int32_t *ids, int n, char *text, const char **out) {
    char token[12];
    for (int i = 0; i < n; i++) {
        token_label(ids[i], token, sizeof token);
        snprintf(text + 24 * i, 24, "%d:%s", i, token);
        out[i] = text + 24 * i;
    }
    return out;
}

/* The grid's cells: one row of heads per captured row; labels for every distinct
 * id buffer the rows point at (input, stream), n_labels * side of them. */
typedef struct grid {
    qkv_attn_map *maps;
    const char **labels[2];
    char *text[2];
} grid;

static void grid_fill(grid *g, const qkv_seq_attention *a, int heads) {
    size_t side = 2 * (size_t)a->len + 1;
    const int32_t *buffers[2] = {a->input, a->stream};
    int lengths[2] = {a->len, (int)side};
    g->maps = calloc((size_t)a->n_rows * heads, sizeof *g->maps);
    for (int b = 0; b < 2; b++) {
        g->labels[b] = malloc(side * sizeof *g->labels[b]);
        g->text[b] = malloc(side * 24);
        if (!g->labels[b] || !g->text[b]) qkv_fatal("attn: out of memory");
        labels_of(buffers[b], lengths[b], g->text[b], g->labels[b]);
    }
    if (!g->maps) qkv_fatal("attn: out of memory");
    for (int r = 0; r < a->n_rows; r++) {
        const qkv_seq_attention_row *row = &a->rows[r];
        int tq = row->weights->shape[2], tk = row->weights->shape[3];
        for (int h = 0; h < heads; h++) {
            qkv_attn_map *m = &g->maps[r * heads + h];
            snprintf(m->title, sizeof m->title, "%slayer %d head %d", row->what, row->layer, h);
            m->weights = row->weights->data + (size_t)h * tq * tk;
            m->tq = tq;
            m->tk = tk;
            m->q_labels = g->labels[row->q_ids == a->input ? 0 : 1];
            m->k_labels = g->labels[row->k_ids == a->input ? 0 : 1];
        }
    }
}

static void grid_free(grid *g) {
    free(g->maps);
    for (int b = 0; b < 2; b++) {
        free(g->labels[b]);
        free(g->text[b]);
    }
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

/* An input of a length the model never trained on: refused (1), or with force
 * drawn (0) with warning filled in, said on stderr and drawn in the picture;
 * warning is "" for a trained length. */
static int untrained_length(const qkv_seq_model_config *c, int len, int force, char *warning, size_t size) {
    warning[0] = '\0';
    if (len >= c->data.min_len && len <= c->data.max_len) return 0;
    snprintf(warning, size, "%d symbols, but this model was trained on lengths %d..%d only: "
             "these maps show an input it never learned", len, c->data.min_len, c->data.max_len);
    if (!force) {
        fprintf(stderr, "qkv attn: --input: %s (--force draws them anyway, marked)\n", warning);
        return 1;
    }
    fprintf(stderr, "qkv attn: warning: --input: %s\n", warning);
    return 0;
}

static int usage_error(const char *message) {
    fprintf(stderr, "qkv attn: %s\n", message);
    return 2;
}

typedef struct attn_options {
    const char *input, *out;
    int force, threads;
} attn_options;

#define T attn_options
static const qkv_field fields[] = {
    QKV_TEXT_FIELD("--input", NULL, T, input, NULL, "the input symbols, e.g. \"3 1 4 1 5\" (each 0..vocab-1)"),
    QKV_TEXT_DEFAULT_FIELD("--out", NULL, T, out, "attn.png", "the PNG to write"),
    QKV_FLAG_FIELD("--force", T, force, "draw an input of a length the model was not trained on (marked)"),
    QKV_SETTING_FIELD(QKV_FIELD_INT, QKV_SETTING_THREADS, T, threads, 0),
};
#undef T

/* (rows of the grid: layers, columns: heads; seq2seq adds the decoder's self and cross rows) */
const qkv_command_spec qkv_command_attn = {
    "attn", "CKPT", 1, "attention maps of a sequence model on one --input, as a PNG grid", fields,
    sizeof fields / sizeof *fields, NULL, NULL, qkv_cmd_attn};

int qkv_cmd_attn(int argc, char **argv) {
    attn_options o;
    qkv_fields_defaults(fields, qkv_command_attn.n_fields, &o);
    int parsed = qkv_command_parse(&qkv_command_attn, "attn", argc, argv, &o);
    if (parsed != 0) return parsed > 0 ? 0 : 2;
    const char *input = o.input, *out = o.out;
    int threads = o.threads, force = o.force;
    if (!input) return usage_error("--input is required, e.g. --input \"3 1 4 1 5\"");
    if (qkv_check_png_path(out) != 0) return usage_error(qkv_last_error());
    qkv_set_threads(threads);

    qkv_seq_model model;
    long step = 0;
    if (qkv_seq_model_load(&model, argv[0], &step) != 0) return usage_error(qkv_last_error());
    const qkv_seq_model_config *c = &model.config;
    int most = qkv_seq_model_longest_input(c, QKV_ATTN_MAX_TOKENS), len = 0;
    int32_t *x = malloc((size_t)most * sizeof(int32_t));
    if (!x) qkv_fatal("attn: out of memory");
    if (parse_input(input, c->data.vocab, most, x, &len) != 0) {
        free(x);
        qkv_seq_model_free(&model);
        return usage_error(qkv_last_error());
    }

    char warning[200];
    if (untrained_length(c, len, force, warning, sizeof warning) != 0) {
        free(x);
        qkv_seq_model_free(&model);
        return 2;
    }

    qkv_tape *tape = qkv_tape_create_inference(c->seed);
    qkv_seq_attention maps;
    qkv_seq_model_attention_maps(&model, tape, x, len, &maps);
    grid g;
    grid_fill(&g, &maps, c->heads);
    char caption[256];
    write_caption(caption, sizeof caption, &model, step, x, maps.pred, len);
    char banner[220];
    snprintf(banner, sizeof banner, "WARNING: %s", warning);
    int rc = qkv_attn_grid_png(out, caption, warning[0] ? banner : NULL, g.maps, maps.n_rows, c->heads);
    if (rc == 0) printf("%s\nwrote %s: %d rows x %d heads\n", caption, out, maps.n_rows, c->heads);
    else fprintf(stderr, "qkv attn: %s\n", qkv_last_error());
    grid_free(&g);
    qkv_seq_attention_free(&maps);
    qkv_tape_free(tape);
    qkv_seq_model_free(&model);
    free(x);
    return rc == 0 ? 0 : 2;
}
