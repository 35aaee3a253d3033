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
 * --grads: the maps are those of the training pass on the input and its target
 * (teacher forcing), and five more grids are written beside --out, OUT_dP.png,
 * OUT_dS.png, OUT_dQ.png, OUT_dK.png and OUT_dV.png: the gradients inside every
 * attention op under the model's training loss (qkv_seq_model_attention_grads,
 * core/ops/attention_grads.h), signed, blue-white-red on one scale per grid; dQ's
 * rows are queries, dK's and dV's keys, their columns the head's dims.
 * Errors (bad checkpoint, a symbol outside the vocabulary, an input longer than
 * the model's positions allow, an untrained length without --force, an
 * unwritable --out) are one line and exit 2.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/ops/ops.h"
#include "core/kernels/parallel.h"
#include "cli/args.h"
#include "train/viz/attn_maps.h"
#include "cli/commands.h"
#include "train/tasks/sequence.h"
#include "train/settings.h"

/* Labels "position:token" for ids[0..n): pointers into text (n * 24 chars). */
static const char **labels_of(const int32_t *ids, int n, char *text, const char **out) {
    char token[12];
    for (int i = 0; i < n; i++) {
        qkv_seq_token_label(ids[i], token, sizeof token);
        snprintf(text + 24 * i, 24, "%d:%s", i, token);
        out[i] = text + 24 * i;
    }
    return out;
}

/* What a grid shows: the weights P, or one of the gradients of --grads. */
enum { SHOW_P, SHOW_DP, SHOW_DS, SHOW_DQ, SHOW_DK, SHOW_DV, SHOW_COUNT };
static const char *const show_names[SHOW_COUNT] = {"P", "dP", "dS", "dQ", "dK", "dV"};

static const qkv_tensor *shown(const qkv_seq_attention_row *row, int show) {
    const qkv_tensor *all[SHOW_COUNT] = {row->weights, row->dp, row->ds, row->dq, row->dk, row->dv};
    return all[show];
}

/* The grid's cells: one row of heads per captured row; labels for every distinct
 * id buffer the rows point at (input, stream), n_labels * side of them, and the
 * dims' labels 0.. of the gradients of Q, K and V. */
typedef struct grid {
    qkv_attn_map *maps;
    const char **labels[3];
    char *text[3];
} grid;

static void grid_fill(grid *g, const qkv_seq_attention *a, int heads, int show) {
    size_t side = 2 * (size_t)a->len + 1;
    const int32_t *buffers[2] = {a->input, a->stream};
    int lengths[2] = {a->len, (int)side};
    g->maps = calloc((size_t)a->n_rows * heads, sizeof *g->maps);
    for (int b = 0; b < 3; b++) {
        g->labels[b] = malloc((side + QKV_ATTN_MAX_TOKENS) * sizeof *g->labels[b]);
        g->text[b] = malloc((side + QKV_ATTN_MAX_TOKENS) * 24);
        if (!g->labels[b] || !g->text[b]) qkv_fatal("attn: out of memory");
        if (b < 2) labels_of(buffers[b], lengths[b], g->text[b], g->labels[b]);
    }
    for (int i = 0; i < QKV_ATTN_MAX_TOKENS; i++) {   /* dims */
        snprintf(g->text[2] + 24 * i, 24, "%d", i);
        g->labels[2][i] = g->text[2] + 24 * i;
    }
    if (!g->maps) qkv_fatal("attn: out of memory");
    float range = 0;   /* signed maps share one scale: the largest |value| */
    for (int r = 0; r < a->n_rows && show != SHOW_P; r++)
        for (size_t i = 0; i < shown(&a->rows[r], show)->size; i++) {
            float x = fabsf(shown(&a->rows[r], show)->data[i]);
            if (x > range) range = x;
        }
    for (int r = 0; r < a->n_rows; r++) {
        const qkv_seq_attention_row *row = &a->rows[r];
        const qkv_tensor *t = shown(row, show);
        int tq = t->shape[2], tk = t->shape[3];
        const char *const *q_labels = g->labels[row->q_ids == a->input ? 0 : 1];
        const char *const *k_labels = g->labels[row->k_ids == a->input ? 0 : 1];
        for (int h = 0; h < heads; h++) {
            qkv_attn_map *m = &g->maps[r * heads + h];
            snprintf(m->title, sizeof m->title, "%s%s%slayer %d head %d", show ? show_names[show] : "",
                     show ? " " : "", row->what, row->layer, h);
            m->weights = t->data + (size_t)h * tq * tk;
            m->tq = tq;
            m->tk = tk;
            m->q_labels = show == SHOW_DK || show == SHOW_DV ? k_labels : q_labels;
            m->k_labels = show >= SHOW_DQ ? (const char *const *)g->labels[2] : k_labels;
            m->range = show == SHOW_P ? 0 : range > 0 ? range : 1;
            if (show >= SHOW_DQ) m->k_axis = "dim";
            if (show == SHOW_DK || show == SHOW_DV) m->q_axis = "key position:token";
        }
    }
}

static void grid_free(grid *g) {
    free(g->maps);
    for (int b = 0; b < 3; b++) {
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
            qkv_seq_token_label(pass ? pred[i] : x[i], label, sizeof label);
            at += snprintf(caption + at, size - (size_t)at, " %s", label);
        }
    }
}

/* An input of a length the model never trained on: refused (1), or with force
 * drawn (0) with warning filled in, said on stderr and drawn in the picture;
 * warning is "" for a trained length. */
static int untrained_length(const qkv_seq_model_config *c, int len, int force, char *warning, size_t size) {
    if (!qkv_seq_untrained_length(c, len, warning, size)) return 0;   /* train/tasks/sequence.h */
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
    int force, threads, grads;
} attn_options;

#define T attn_options
static const qkv_field fields[] = {
    QKV_TEXT_FIELD("--input", NULL, T, input, NULL, "the input symbols, e.g. \"3 1 4 1 5\" (each 0..vocab-1)"),
    QKV_TEXT_DEFAULT_FIELD("--out", NULL, T, out, "attn.png", "the PNG to write"),
    QKV_FLAG_FIELD("--force", T, force, "draw an input of a length the model was not trained on (marked)"),
    QKV_FLAG_FIELD("--grads", T, grads, "also draw dP, dS, dQ, dK, dV under the training loss on the input and its "
                   "target, to OUT_dP.png .. OUT_dV.png"),
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
    char paths[SHOW_COUNT][1024];
    for (int show = 0; show < (o.grads ? SHOW_COUNT : 1); show++) {
        size_t stem = strlen(out) >= 4 && strcmp(out + strlen(out) - 4, ".png") == 0 ? strlen(out) - 4 : strlen(out);
        if (show == 0) snprintf(paths[0], sizeof paths[0], "%s", out);
        else snprintf(paths[show], sizeof paths[show], "%.*s_%s.png", (int)stem, out, show_names[show]);
        if (strlen(out) + 8 >= sizeof paths[0]) return usage_error("--out: the path is too long");
        if (qkv_check_png_path(paths[show]) != 0) return usage_error(qkv_last_error());
    }
    qkv_set_threads(threads);

    qkv_seq_model model;
    long step = 0;
    if (qkv_seq_model_load(&model, argv[0], &step) != 0) return usage_error(qkv_last_error());
    const qkv_seq_model_config *c = &model.config;
    int most = qkv_seq_model_longest_input(c, QKV_ATTN_MAX_TOKENS), len = 0;
    int32_t *x = malloc((size_t)most * sizeof(int32_t));
    if (!x) qkv_fatal("attn: out of memory");
    if (qkv_seq_parse_input(input, c->data.vocab, most, x, &len) != 0) {
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

    qkv_tape *tape = o.grads ? qkv_tape_create(c->seed) : qkv_tape_create_inference(c->seed);
    qkv_tape *ops = qkv_tape_create(c->seed);
    qkv_tape_set_grad(ops, 0);
    qkv_seq_attention maps;
    if (o.grads) qkv_seq_model_attention_grads(&model, tape, ops, x, len, &maps);
    else qkv_seq_model_attention_maps(&model, tape, x, len, &maps);
    char caption[256];
    write_caption(caption, sizeof caption, &model, step, x, maps.pred, len);
    char banner[220];
    snprintf(banner, sizeof banner, "WARNING: %s", warning);
    int rc = 0;
    for (int show = 0; show < (o.grads ? SHOW_COUNT : 1) && rc == 0; show++) {
        grid g;
        grid_fill(&g, &maps, c->heads, show);
        char grads_caption[640];
        if (o.grads)
            snprintf(grads_caption, sizeof grads_caption, "%s; %s, training loss %.4f (target %s)", caption,
                     show ? show_names[show] : "P of the training pass", maps.loss,
                     c->data.task == QKV_TASK_REVERSE ? "reversed" : c->data.task == QKV_TASK_SORT ? "sorted" : "copied");
        rc = qkv_attn_grid_png(paths[show], o.grads ? grads_caption : caption, warning[0] ? banner : NULL, g.maps,
                               maps.n_rows, c->heads);
        if (rc == 0 && show == 0) printf("%s\n", caption);
        if (rc == 0) printf("wrote %s: %d rows x %d heads%s%s\n", paths[show], maps.n_rows, c->heads,
                            show ? ", " : "", show ? show_names[show] : "");
        else fprintf(stderr, "qkv attn: %s\n", qkv_last_error());
        grid_free(&g);
    }
    qkv_seq_attention_free(&maps);
    qkv_tape_free(ops);
    qkv_tape_free(tape);
    qkv_seq_model_free(&model);
    free(x);
    return rc == 0 ? 0 : 2;
}
