/* sequence_attention.c — the attention weights of a sequence model (reverse, copy,
 * sort) on one input, for `qkv attn` (cli/cmd_attn.c draws them).
 *
 * The model first predicts the output greedily, as evaluation does; then one
 * forward pass over the whole sequence, with each attention module's capture
 * pointer set, collects every layer's per-head weights:
 *   encoder   the input's self-attention, L x L;
 *   decoder   the stream "input SEP output" (2L+1 tokens), causal;
 *   seq2seq   the encoder's self-attention, then per decoder layer its causal
 *             self-attention over "BOS output[0..L-2]" and its cross-attention
 *             from those queries to the input.
 * With gradients (qkv_seq_model_attention_grads) the pass is the training one
 * instead: the input and the task's target, teacher-forced (the decoder's stream
 * "input SEP target", seq2seq's "BOS target[..L-2]"), through qkv_seq_model_loss;
 * after its backward, the k-th attention node of the tape is the k-th row (one
 * fused op per captured module, in call order), and core/ops/attention_grads.h
 * gives its P, dP, dS, dQ, dK and dV on the caller's second tape.
 */
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/ops/attention_grads.h"
#include "core/ops/ops.h"
#include "train/tasks/sequence.h"

int qkv_seq_model_longest_input(const qkv_seq_model_config *c, int max_tokens) {
    int decoder = c->data.arch == QKV_ARCH_DECODER;
    int most = decoder ? (max_tokens - 1) / 2 : max_tokens;
    if (qkv_pos_schemes[c->pos].table == QKV_POS_TABLE_ROWS) {   /* a table of max_pos rows */
        int table = decoder ? (c->max_pos - 1) / 2 : c->max_pos;
        if (table < most) most = table;
    }
    return most;
}

/* Greedy predictions of one input x[0..len) into pred[0..len). */
static void predict_one(qkv_seq_model *t, qkv_tape *tape, const int32_t *x, int len, int32_t *pred) {
    int decoder = t->config.data.arch == QKV_ARCH_DECODER;
    qkv_seq_batch b = {0};
    int src_len = decoder ? 2 * len + 1 : len;
    b.batch = 1;
    b.src_len = src_len;
    b.tgt_len = t->config.data.arch == QKV_ARCH_SEQ2SEQ ? len : 0;
    b.src = calloc((size_t)src_len, sizeof(int32_t));
    b.src_mask = malloc((size_t)src_len * sizeof(float));
    b.lengths = malloc(sizeof(int32_t));
    int32_t *buffer = malloc((size_t)(len > t->config.data.max_len ? len : t->config.data.max_len) * sizeof(int32_t));
    if (!b.src || !b.src_mask || !b.lengths || !buffer) qkv_fatal("attn: out of memory");
    memcpy(b.src, x, (size_t)len * sizeof(int32_t));
    if (decoder) b.src[len] = QKV_SEQ_SEP;
    for (int i = 0; i < src_len; i++) b.src_mask[i] = 1;
    b.lengths[0] = len;
    if (len > t->config.data.max_len) t->config.data.max_len = len; /* the decoder predicts lengths up to max_len */
    qkv_seq_model_predict(t, tape, &b, buffer);
    memcpy(pred, buffer, (size_t)len * sizeof(int32_t));
    free(buffer);
    qkv_seq_batch_free(&b);
}

static qkv_tensor *embed(qkv_tape *tape, const qkv_seq_model *t, const int32_t *ids, int len) {
    return qkv_embedding(tape, t->embed, ids, 2, (int[]){1, len});
}

static void add_row(qkv_seq_attention *a, const char *what, int layer, const qkv_tensor *w, const int32_t *q_ids,
                    const int32_t *k_ids) {
    a->rows[a->n_rows++] = (qkv_seq_attention_row){what, layer, w, q_ids, k_ids, NULL, NULL, NULL, NULL, NULL};
}

/* Points every attention module's capture at captured[] (encoder layers, then for
 * seq2seq the decoder's self and cross rows), or back at nothing. */
static void set_capture(qkv_seq_model *t, qkv_tensor **captured) {
    int layers = t->config.layers, seq2seq = t->config.data.arch == QKV_ARCH_SEQ2SEQ;
    for (int l = 0; l < layers; l++) {
        t->encoder.blocks[l].attn.capture = captured ? &captured[l] : NULL;
        if (!seq2seq) continue;
        t->decoder.blocks[l].self_attn.capture = captured ? &captured[layers + l] : NULL;
        t->decoder.blocks[l].cross_attn.capture = captured ? &captured[2 * layers + l] : NULL;
    }
}

/* decoder: one causal pass over "input SEP output". */
static void capture_decoder(qkv_seq_model *t, qkv_tape *tape, qkv_seq_attention *a, qkv_tensor **captured) {
    int len = a->len, side = 2 * len + 1;
    memcpy(a->stream, a->input, (size_t)len * sizeof(int32_t));
    a->stream[len] = QKV_SEQ_SEP;
    memcpy(a->stream + len + 1, a->pred, (size_t)len * sizeof(int32_t));
    qkv_encoder_forward(tape, &t->encoder, embed(tape, t, a->stream, side), NULL);
    for (int l = 0; l < t->config.layers; l++) add_row(a, "", l, captured[l], a->stream, a->stream);
}

/* encoder: the input's self-attention; seq2seq: then "BOS output[0..L-2]" through
 * the decoder, against the encoded input. */
static void capture_encoder(qkv_seq_model *t, qkv_tape *tape, qkv_seq_attention *a, qkv_tensor **captured) {
    int len = a->len, layers = t->config.layers, seq2seq = t->config.data.arch == QKV_ARCH_SEQ2SEQ;
    float *ones = qkv_tape_alloc(tape, (size_t)len * sizeof(float));
    for (int i = 0; i < len; i++) ones[i] = 1;
    qkv_tensor *mask = qkv_tape_view(tape, 2, (int[]){1, len}, ones);
    qkv_tensor *memory = qkv_encoder_forward(tape, &t->encoder, embed(tape, t, a->input, len), mask);
    for (int l = 0; l < layers; l++) add_row(a, seq2seq ? "enc " : "", l, captured[l], a->input, a->input);
    if (!seq2seq) return;
    a->stream[0] = QKV_SEQ_BOS;
    memcpy(a->stream + 1, a->pred, (size_t)(len - 1) * sizeof(int32_t));
    qkv_decoder_forward(tape, &t->decoder, embed(tape, t, a->stream, len), memory, mask, NULL);
    for (int l = 0; l < layers; l++) {
        add_row(a, "dec self ", l, captured[layers + l], a->stream, a->stream);
        add_row(a, "dec cross ", l, captured[2 * layers + l], a->stream, a->input);
    }
}

/* a's buffers for an input of len and a model of rows_max rows; x copied, and
 * predicted greedily into a->pred. */
static qkv_tensor **start(qkv_seq_model *t, qkv_tape *tape, const int32_t *x, int len, qkv_seq_attention *a) {
    int arch = t->config.data.arch, rows_max = arch == QKV_ARCH_SEQ2SEQ ? 3 * t->config.layers : t->config.layers;
    size_t side = 2 * (size_t)len + 1;
    memset(a, 0, sizeof *a);
    a->len = len;
    a->input = malloc((size_t)len * sizeof(int32_t));
    a->pred = malloc(side * sizeof(int32_t));
    a->stream = malloc(side * sizeof(int32_t));
    a->rows = calloc((size_t)rows_max, sizeof *a->rows);
    qkv_tensor **captured = calloc((size_t)rows_max, sizeof *captured);
    if (!a->input || !a->pred || !a->stream || !a->rows || !captured) qkv_fatal("attn: out of memory");
    memcpy(a->input, x, (size_t)len * sizeof(int32_t));
    predict_one(t, tape, x, len, a->pred);
    qkv_tape_reset(tape);
    return captured;
}

void qkv_seq_model_attention_maps(qkv_seq_model *t, qkv_tape *tape, const int32_t *x, int len, qkv_seq_attention *a) {
    qkv_tensor **captured = start(t, tape, x, len, a);
    set_capture(t, captured);
    if (t->config.data.arch == QKV_ARCH_DECODER) capture_decoder(t, tape, a, captured);
    else capture_encoder(t, tape, a, captured);
    set_capture(t, NULL);
    free(captured);
}

/* The rows of the training pass over batch b: the ids its queries and keys read. */
static void training_rows(qkv_seq_model *t, qkv_seq_attention *a, const qkv_seq_batch *b, qkv_tensor **captured) {
    int len = a->len, layers = t->config.layers, arch = t->config.data.arch;
    if (arch == QKV_ARCH_DECODER) {   /* the stream "input SEP target" */
        memcpy(a->stream, b->src, (size_t)(2 * len + 1) * sizeof(int32_t));
        for (int l = 0; l < layers; l++) add_row(a, "", l, captured[l], a->stream, a->stream);
        return;
    }
    for (int l = 0; l < layers; l++)
        add_row(a, arch == QKV_ARCH_SEQ2SEQ ? "enc " : "", l, captured[l], a->input, a->input);
    if (arch != QKV_ARCH_SEQ2SEQ) return;
    memcpy(a->stream, b->tgt_in, (size_t)len * sizeof(int32_t));   /* "BOS target[0..L-2]" */
    for (int l = 0; l < layers; l++) {
        add_row(a, "dec self ", l, captured[layers + l], a->stream, a->stream);
        add_row(a, "dec cross ", l, captured[2 * layers + l], a->stream, a->input);
    }
}

void qkv_seq_model_attention_grads(qkv_seq_model *t, qkv_tape *tape, qkv_tape *ops, const int32_t *x, int len,
                                   qkv_seq_attention *a) {
    qkv_tensor **captured = start(t, tape, x, len, a);
    a->target = malloc((size_t)len * sizeof(int32_t));
    if (!a->target) qkv_fatal("attn: out of memory");
    qkv_seq_target(&t->config.data, x, len, a->target);
    qkv_seq_batch batch = {0};
    qkv_seq_make_batch_of(&t->config.data, x, len, &batch);
    int grad = qkv_tape_set_grad(tape, 1), training = qkv_tape_set_training(tape, 0);
    set_capture(t, captured);
    qkv_tensor *loss = qkv_seq_model_loss(t, tape, &batch);
    set_capture(t, NULL);
    qkv_backward(tape, loss);
    a->loss = loss->data[0];
    training_rows(t, a, &batch, captured);
    /* the k-th attention node is the k-th row: one fused op per captured module, in call order */
    int row = 0;
    for (int i = 0; i < tape->n_nodes; i++) {
        if (strcmp(tape->nodes[i].op, "attention") != 0) continue;
        QKV_CHECK(row < a->n_rows, "attn: more attention nodes than the %d captured rows", a->n_rows);
        qkv_attention_grads g;
        qkv_attention_node_grads(ops, &tape->nodes[i], &g);
        qkv_seq_attention_row *r = &a->rows[row++];
        r->weights = g.p;
        r->dp = g.dp, r->ds = g.ds, r->dq = g.dq, r->dk = g.dk, r->dv = g.dv;
    }
    QKV_CHECK(row == a->n_rows, "attn: %d attention nodes for %d captured rows", row, a->n_rows);
    qkv_tape_set_grad(tape, grad);
    qkv_tape_set_training(tape, training);
    qkv_seq_batch_free(&batch);
    free(captured);
}

void qkv_seq_attention_free(qkv_seq_attention *a) {
    free(a->input);
    free(a->pred);
    free(a->stream);
    free(a->target);
    free(a->rows);
    memset(a, 0, sizeof *a);
}
