/* sequence.h — the sequence tasks: reverse, copy and sort over a vocabulary of
 * symbols, batched and padded for the three architectures.
 *
 * Token ids: 0 = PAD, 1 = BOS (start of a target), 2 = SEP (between input and
 * output in a decoder stream), 3 .. 3+vocab-1 = the symbols. QKV_SEQ_IGNORE marks
 * targets that the loss skips (qkv_cross_entropy's ignore_index).
 *
 * An example is a source x of length L (symbols drawn uniformly, L fixed or drawn
 * uniformly from [min_len, max_len]) and its target y of the same length:
 * reverse: y = x backwards; copy: y = x; sort: y = x sorted ascending.
 *
 * A batch is padded to its longest example. For each architecture it holds:
 *   encoder:  src [B,T] tokens, tgt_out [B,T] targets (IGNORE at padding), one
 *             prediction per source position;
 *   seq2seq:  src [B,T]; tgt_in [B,T] = BOS y[0..L-2] (teacher forcing);
 *             tgt_out [B,T] = y (IGNORE at padding);
 *   decoder:  one stream src [B,2T+1] = x SEP y (PAD after), tgt_out [B,2T+1] with
 *             tgt_out[t] = stream[t+1] on the output part (the positions from SEP
 *             to the last output symbol but one) and IGNORE elsewhere.
 * src_mask [B,src_len] and tgt_mask [B,tgt_len] are 1 at real tokens, 0 at padding
 * (the attention mask convention, 1 = may attend). lengths[b] is L of example b.
 *
 * Examples are a pure function of (seed, index): example i of a data set with
 * seed s is the same whatever batch it lands in, so train and test sets built
 * from different seeds are disjoint streams, and a resumed run sees the same data.
 */
#ifndef QKV_SEQUENCE_H
#define QKV_SEQUENCE_H

#include <stdint.h>

#define QKV_SEQ_PAD 0
#define QKV_SEQ_BOS 1
#define QKV_SEQ_SEP 2
#define QKV_SEQ_FIRST_SYMBOL 3
#define QKV_SEQ_IGNORE (-100)

typedef enum qkv_seq_task { QKV_TASK_REVERSE, QKV_TASK_COPY, QKV_TASK_SORT } qkv_seq_task;
typedef enum qkv_seq_arch { QKV_ARCH_ENCODER, QKV_ARCH_SEQ2SEQ, QKV_ARCH_DECODER } qkv_seq_arch;

typedef struct qkv_seq_config {
    qkv_seq_task task;
    qkv_seq_arch arch;
    int vocab;               /* number of symbols, >= 2 */
    int min_len, max_len;    /* equal for fixed length; 1 <= min_len <= max_len */
} qkv_seq_config;

typedef struct qkv_seq_batch {
    int batch, src_len, tgt_len;       /* padded lengths; tgt_len 0 for encoder and decoder */
    int32_t *src, *tgt_in, *tgt_out;   /* tgt_in NULL unless seq2seq */
    float *src_mask, *tgt_mask;        /* tgt_mask NULL unless seq2seq */
    int32_t *lengths;
    uint64_t first;                    /* the global index of row 0 (row b is first + b) */
    int capacity_batch, capacity_len;  /* allocation, reused across batches */
} qkv_seq_batch;

/* Vocabulary size the model needs: symbols + 3 special tokens. */
int qkv_seq_token_count(const qkv_seq_config *config);
/* Padded stream length for a given example length (the decoder's is 2L+1). */
int qkv_seq_src_len(const qkv_seq_config *config, int len);

/* Example index of a data set: writes L symbols into x and the target into y,
 * returns L. x and y have room for max_len. */
int qkv_seq_example(const qkv_seq_config *config, uint64_t seed, uint64_t index, int32_t *x, int32_t *y);

/* The task's target of x[0..len) (symbol ids) into y[0..len): x backwards, x, or x sorted. */
void qkv_seq_target(const qkv_seq_config *config, const int32_t *x, int len, int32_t *y);
/* A batch of one example: x[0..len) (symbol ids) and its target, laid out as the
 * architecture's batches are (len may pass config->max_len). */
void qkv_seq_make_batch_of(const qkv_seq_config *config, const int32_t *x, int len, qkv_seq_batch *batch);

/* Fills batch with examples first .. first+n-1 of the data set (seed), padded.
 * The batch's buffers grow as needed and are reused. */
void qkv_seq_make_batch(const qkv_seq_config *config, uint64_t seed, uint64_t first, int n,
                        qkv_seq_batch *batch);
/* Same, with example indices taken modulo `modulo` (0: no wrap): a fixed data
 * set of `modulo` examples cycled through in order. */
void qkv_seq_make_batch_wrapped(const qkv_seq_config *config, uint64_t seed, uint64_t first, int n,
                                uint64_t modulo, qkv_seq_batch *batch);
void qkv_seq_batch_free(qkv_seq_batch *batch);

/* Names <-> enums, -1 for unknown names. */
int qkv_seq_task_parse(const char *name);   /* "reverse", "copy", "sort" */
extern const char *const qkv_seq_task_names[];  /* in enum order, NULL-terminated */
extern const char *const qkv_seq_arch_names[];
int qkv_seq_arch_parse(const char *name);   /* "encoder", "seq2seq", "decoder" */
const char *qkv_seq_task_name(qkv_seq_task task);
const char *qkv_seq_arch_name(qkv_seq_arch arch);

#endif
