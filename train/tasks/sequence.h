/* sequence.h — reverse, copy and sort as trainable tasks, with three models:
 *
 *   encoder  tokens -> embedding -> encoder stack -> linear head: one prediction
 *            per source position (non-causal, sees the whole input).
 *   seq2seq  encoder over the source; a causal decoder over BOS + target, with
 *            cross-attention to the encoder's output, trained by teacher forcing.
 *            Evaluation decodes greedily with the decoder's K/V cache and the
 *            cross-attention K/V computed once per source.
 *   decoder  one causal stack over "source SEP target"; the loss is on the target
 *            part. Evaluation generates the target greedily after SEP with a K/V
 *            cache per layer.
 *
 * Training step s uses examples [s*batch, (s+1)*batch) of the training stream
 * (seed), or, with train_size > 0, those indices modulo train_size (a fixed
 * training set, so that epochs mean something). The test set is test_size
 * examples of a stream with a different seed.
 *
 * Metrics: token_acc (share of target tokens right) and seq_acc (share of
 * sequences entirely right), on the test set, with greedy decoding.
 */
#ifndef QKV_TASKS_SEQUENCE_H
#define QKV_TASKS_SEQUENCE_H

#include "data/sequence.h"
#include "layers/transformer.h"
#include "train/tasks/stack_fields.h"
#include "train/trainer.h"

typedef struct qkv_seq_model_config {
    qkv_seq_config data;
    int layers, heads, dim, ff;
    qkv_pos_kind pos;
    int max_pos;               /* rows of a learned position table: 0 = longest training stream
                                * (with pos_randomize: M) */
    int pos_randomize;         /* M > 0: every pass reads its positions from a sorted sample of
                                * distinct integers from [0, M) (layers/positions.h), one draw
                                * per sequence (Ruoss et al.): in training from (seed, the
                                * example's index in the training stream), at test from (test
                                * seed, the test example's index); 0: off */
    int t5_buckets, t5_max_distance;   /* --pos t5 (32 and 128) */
    float dropout;
    qkv_stack_options options; /* activation, LayerNorm eps, RoPE layout, attention scale */
    int batch, test_size, train_size;
    unsigned long long seed;   /* model init and the training stream */
} qkv_seq_model_config;

typedef struct qkv_seq_model {
    qkv_seq_model_config config;
    qkv_params params;
    qkv_tensor *embed;         /* [tokens, dim] */
    qkv_encoder encoder;       /* causal for the decoder arch */
    qkv_decoder decoder;       /* seq2seq only */
    qkv_linear head;           /* dim -> tokens */
    qkv_seq_batch batch;
    int32_t *pos_sample;       /* pos_randomize: the current draws [rows, pos_sample_len] */
    int pos_sample_len;        /* entries per row of the current draws */
    size_t pos_sample_capacity;   /* int32s allocated */
    qkv_task task;             /* the trainer's view of this */
} qkv_seq_model;

void qkv_seq_model_default_config(qkv_seq_model_config *config);
/* Checks a config; returns 0 or -1 with a one-line qkv_last_error() naming the
 * flag (--heads, --len, --max-pos, ...). */
int qkv_seq_model_check(const qkv_seq_model_config *config);
void qkv_seq_model_init(qkv_seq_model *t, const qkv_seq_model_config *config);
void qkv_seq_model_free(qkv_seq_model *t);
/* Rebuilds a config from a checkpoint's description (the registry's field
 * table); -1 with an error if a value is missing or out of range. */
int qkv_seq_model_config_from(const qkv_config_kv *description, qkv_seq_model_config *config);

/* The registry's config of reverse, copy and sort (train/tasks/registry.h): the
 * model's, and two conveniences of the command line. */
typedef struct qkv_seq_task_config {
    qkv_seq_model_config model;
    int len;       /* --len: min_len = max_len = len */
    int epochs;    /* --epochs: passes over --train-size (sets --steps) */
} qkv_seq_task_config;

/* Builds the model a checkpoint describes and loads its parameters (the
 * optimizer state is ignored); step, if not NULL, receives the checkpoint's step.
 * 0, or -1 with a one-line qkv_last_error() naming path (also for a checkpoint of
 * another task); t is then not initialized. */
int qkv_seq_model_load(qkv_seq_model *t, const char *path, long *step);

/* Greedy predictions for the examples of a batch: pred [batch, max target len]. */
void qkv_seq_model_predict(qkv_seq_model *t, qkv_tape *tape, const qkv_seq_batch *batch, int32_t *pred);

/* The training loss (mean cross-entropy over the target tokens, teacher forcing) of
 * a batch, through the model's own stacks; randomized positions drawn from the test
 * seed, as qkv_seq_model_predict draws them. */
qkv_tensor *qkv_seq_model_loss(qkv_seq_model *t, qkv_tape *tape, const qkv_seq_batch *batch);

/* Greedy exact match and token accuracy of count examples of length len, the
 * first of the stream seed (one batch), whatever lengths the model trained on:
 * how `qkv experiment lengthgen` tests a model at each length. The tape is reset. */
void qkv_seq_model_accuracy_at(qkv_seq_model *t, qkv_tape *tape, int len, int count, uint64_t seed, double *exact,
                               double *token);

/* ---- typed inputs (sequence_input.c): `qkv attn --input` and the page ---------- */

/* Parses "3 1 4" (symbols 0..vocab-1 separated by spaces or commas) into
 * symbols[0..n) as token ids (QKV_SEQ_FIRST_SYMBOL + s), at most max_len: 0, or
 * -1 with a one-line qkv_last_error() naming --input. */
int qkv_seq_parse_input(const char *text, int vocab, int max_len, int32_t *symbols, int *n);
/* A token id as a label: its symbol, or BOS, SEP, PAD. */
void qkv_seq_token_label(int32_t id, char *out, size_t len);
/* 1 when len lies outside the lengths c trained on, with warning (size bytes)
 * saying so ("12 symbols, but this model was trained on lengths 1..8 only: ...");
 * 0 and "" otherwise. */
int qkv_seq_untrained_length(const qkv_seq_model_config *c, int len, char *warning, size_t size);

/* ---- attention maps (sequence_attention.c), for `qkv attn` --------------------- */

/* One row of maps: a layer's weights [1,H,Tq,Tk] (on the tape) and the token ids
 * of its queries and keys; with gradients (qkv_seq_model_attention_grads) also the
 * gradients inside its attention op under the model's training loss
 * (core/ops/attention_grads.h: dQ, dK of the rotated queries and keys with RoPE),
 * NULL otherwise. Every tensor is [1,H,rows,cols], head h's matrix at h*rows*cols. */
typedef struct qkv_seq_attention_row {
    const char *what;                 /* "", "enc ", "dec self " or "dec cross " */
    int layer;
    const qkv_tensor *weights;        /* P [1,H,Tq,Tk] */
    const int32_t *q_ids, *k_ids;     /* Tq and Tk ids, into the owner's buffers */
    const qkv_tensor *dp, *ds;        /* [1,H,Tq,Tk]: dL/dP = dO V^T, dL/dS = P * (dP - D) */
    const qkv_tensor *dq, *dk, *dv;   /* [1,H,Tq,dk], [1,H,Tk,dk], [1,H,Tk,dv] */
} qkv_seq_attention_row;

typedef struct qkv_seq_attention {
    int len;                          /* of the input */
    int32_t *input, *pred;            /* the input and the greedy output, len ids each */
    int32_t *stream;                  /* the decoder's stream, or seq2seq's "BOS output[..L-2]"
                                       * (with gradients: the target's, as training reads it) */
    int32_t *target;                  /* with gradients: the task's target of the input (len ids) */
    qkv_seq_attention_row *rows;      /* one per layer; seq2seq: encoder layers, then each
                                       * decoder layer's self and cross rows */
    int n_rows;
    double loss;                      /* with gradients: the training loss on (input, target) */
} qkv_seq_attention;

/* The longest input (in symbols) whose maps have at most max_tokens a side and
 * whose positions the model has (a learned table's rows). */
int qkv_seq_model_longest_input(const qkv_seq_model_config *config, int max_tokens);
/* Predicts x[0..len) greedily, then runs the model over the whole sequence with
 * every attention module's weights captured on tape (see the file's contract);
 * the rows live until the tape's reset, a's buffers until qkv_seq_attention_free. */
void qkv_seq_model_attention_maps(qkv_seq_model *t, qkv_tape *tape, const int32_t *x, int len, qkv_seq_attention *a);
/* The same rows with gradients: predicts x greedily (a->pred), then runs the
 * training pass on x and the task's target of x (teacher forcing, dropout off) on
 * tape (which must record: qkv_tape_create), takes the loss's backward, and
 * computes every attention op's P, dP, dS, dQ, dK and dV with ops on ops (a
 * second tape, gradients off; the rows' tensors live until its reset; tape may be
 * reset once this returns). x holds symbol ids (QKV_SEQ_FIRST_SYMBOL + s). */
void qkv_seq_model_attention_grads(qkv_seq_model *t, qkv_tape *tape, qkv_tape *ops, const int32_t *x, int len,
                                   qkv_seq_attention *a);
void qkv_seq_attention_free(qkv_seq_attention *a);

#endif
