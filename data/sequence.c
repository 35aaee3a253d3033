/* sequence.c — reverse, copy and sort examples, batched and padded for the
 * encoder, seq2seq and decoder architectures. See sequence.h for the contract.
 *
 * Example i of the data set with seed s draws from its own stream: the data set's
 * stream is qkv_rng_make(s), and example i's stream is split off at counter i.
 * The first draw is the length, then one draw per source symbol, so an example
 * depends on (seed, index) only, never on the batch it lands in.
 *
 * A batch is built row by row: the example is drawn straight into the row (x into
 * src, y into tgt_out), then laid out for the architecture and padded. Its buffers
 * are packed [batch, src_len] arrays inside allocations of capacity_batch *
 * capacity_len elements, grown only when a batch needs more.
 */
#include "data/sequence.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "core/ops/params.h"
#include "core/rng.h"

/* Longest example for which the decoder stream 2L+1 still fits an int. */
#define MAX_EXAMPLE_LEN ((INT_MAX - 1) / 2)

const char *const qkv_seq_task_names[] = {"reverse", "copy", "sort", NULL};
const char *const qkv_seq_arch_names[] = {"encoder", "seq2seq", "decoder", NULL};
#define TASK_COUNT ((int)(sizeof qkv_seq_task_names / sizeof qkv_seq_task_names[0]) - 1)
#define ARCH_COUNT ((int)(sizeof qkv_seq_arch_names / sizeof qkv_seq_arch_names[0]) - 1)

/* ---- configuration ---------------------------------------------------------- */

/* Stops, naming the function and the field, unless the config is usable. */
static void check_config(const char *fn, const qkv_seq_config *config) {
    QKV_CHECK(config != NULL, "%s: config is NULL", fn);
    QKV_CHECK((int)config->task >= 0 && (int)config->task < TASK_COUNT,
              "%s: task %d: unknown task", fn, (int)config->task);
    QKV_CHECK((int)config->arch >= 0 && (int)config->arch < ARCH_COUNT,
              "%s: arch %d: unknown architecture", fn, (int)config->arch);
    QKV_CHECK(config->vocab >= 2, "%s: vocab %d: must be >= 2", fn, config->vocab);
    QKV_CHECK(config->vocab <= INT32_MAX - QKV_SEQ_FIRST_SYMBOL,
              "%s: vocab %d: too large for int32 token ids", fn, config->vocab);
    QKV_CHECK(config->min_len >= 1, "%s: min_len %d: must be >= 1", fn, config->min_len);
    QKV_CHECK(config->min_len <= config->max_len, "%s: min_len %d > max_len %d", fn,
              config->min_len, config->max_len);
    QKV_CHECK(config->max_len <= MAX_EXAMPLE_LEN, "%s: max_len %d: must be <= %d", fn,
              config->max_len, MAX_EXAMPLE_LEN);
}

int qkv_seq_token_count(const qkv_seq_config *config) {
    check_config("qkv_seq_token_count", config);
    return QKV_SEQ_FIRST_SYMBOL + config->vocab;
}

static int stream_len(qkv_seq_arch arch, int len) {
    return arch == QKV_ARCH_DECODER ? 2 * len + 1 : len;
}

int qkv_seq_src_len(const qkv_seq_config *config, int len) {
    check_config("qkv_seq_src_len", config);
    QKV_CHECK(len >= 1 && len <= MAX_EXAMPLE_LEN, "qkv_seq_src_len: len %d: must be in [1, %d]",
              len, MAX_EXAMPLE_LEN);
    return stream_len(config->arch, len);
}

/* ---- examples --------------------------------------------------------------- */

static int compare_tokens(const void *a, const void *b) {
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

/* Draws example index into x[0..L) and its target into y[0..L); returns L.
 * The config is already checked. */
static int draw_example(const qkv_seq_config *config, uint64_t seed, uint64_t index,
                        int32_t *x, int32_t *y) {
    qkv_rng rng = qkv_rng_split_at(qkv_rng_make(seed), index);
    uint32_t len_choices = (uint32_t)(config->max_len - config->min_len + 1);
    int len = config->min_len + (int)qkv_rng_below(&rng, len_choices);
    for (int i = 0; i < len; i++)
        x[i] = QKV_SEQ_FIRST_SYMBOL + (int32_t)qkv_rng_below(&rng, (uint32_t)config->vocab);
    qkv_seq_target(config, x, len, y);
    return len;
}

void qkv_seq_target(const qkv_seq_config *config, const int32_t *x, int len, int32_t *y) {
    switch (config->task) {
    case QKV_TASK_REVERSE:
        for (int i = 0; i < len; i++) y[i] = x[len - 1 - i];
        break;
    case QKV_TASK_COPY:
        memcpy(y, x, (size_t)len * sizeof *y);
        break;
    case QKV_TASK_SORT:
        memcpy(y, x, (size_t)len * sizeof *y);
        qsort(y, (size_t)len, sizeof *y, compare_tokens);
        break;
    }
}

int qkv_seq_example(const qkv_seq_config *config, uint64_t seed, uint64_t index, int32_t *x,
                    int32_t *y) {
    check_config("qkv_seq_example", config);
    QKV_CHECK(x != NULL && y != NULL, "qkv_seq_example: x or y is NULL");
    return draw_example(config, seed, index, x, y);
}

/* ---- batch buffers ---------------------------------------------------------- */

static void *grow_buffer(void *buffer, size_t count, size_t elem_size) {
    return qkv_realloc(buffer, qkv_size_mul(count, elem_size), "a batch buffer");
}

/* Makes room for n rows of width elements; tgt_in and tgt_mask exist only when
 * with_target_input (seq2seq), so the other architectures see them NULL. */
static void reserve_batch(qkv_seq_batch *batch, int n, int width, int with_target_input) {
    int grow = n > batch->capacity_batch || width > batch->capacity_len;
    if (grow) {
        if (n > batch->capacity_batch) batch->capacity_batch = n;
        if (width > batch->capacity_len) batch->capacity_len = width;
    }
    size_t rows = (size_t)batch->capacity_batch;
    size_t cells = rows * (size_t)batch->capacity_len;
    if (grow) {
        batch->src = grow_buffer(batch->src, cells, sizeof *batch->src);
        batch->tgt_out = grow_buffer(batch->tgt_out, cells, sizeof *batch->tgt_out);
        batch->src_mask = grow_buffer(batch->src_mask, cells, sizeof *batch->src_mask);
        batch->lengths = grow_buffer(batch->lengths, rows, sizeof *batch->lengths);
    }
    if (with_target_input && (grow || !batch->tgt_in)) {
        batch->tgt_in = grow_buffer(batch->tgt_in, cells, sizeof *batch->tgt_in);
        batch->tgt_mask = grow_buffer(batch->tgt_mask, cells, sizeof *batch->tgt_mask);
    } else if (!with_target_input && batch->tgt_in) {
        free(batch->tgt_in);
        free(batch->tgt_mask);
        batch->tgt_in = NULL;
        batch->tgt_mask = NULL;
    }
}

void qkv_seq_batch_free(qkv_seq_batch *batch) {
    if (!batch) return;
    free(batch->src);
    free(batch->tgt_in);
    free(batch->tgt_out);
    free(batch->src_mask);
    free(batch->tgt_mask);
    free(batch->lengths);
    memset(batch, 0, sizeof *batch);
}

/* ---- row layout ------------------------------------------------------------- */

static void fill_tokens(int32_t *row, int from, int to, int32_t value) {
    for (int t = from; t < to; t++) row[t] = value;
}

/* 1 at the first real positions, 0 at the padding. */
static void fill_mask(float *row, int real, int width) {
    for (int t = 0; t < width; t++) row[t] = t < real ? 1.0f : 0.0f;
}

/* Encoder and seq2seq: src holds x, tgt_out holds y (both length len);
 * pads both to width, and for seq2seq writes tgt_in = BOS y[0..len-2]. */
static void layout_aligned_row(qkv_seq_batch *batch, int b, int len, int width) {
    int32_t *src = batch->src + (size_t)b * width;
    int32_t *tgt_out = batch->tgt_out + (size_t)b * width;
    fill_tokens(src, len, width, QKV_SEQ_PAD);
    fill_tokens(tgt_out, len, width, QKV_SEQ_IGNORE);
    fill_mask(batch->src_mask + (size_t)b * width, len, width);
    if (batch->tgt_in) {
        int32_t *tgt_in = batch->tgt_in + (size_t)b * width;
        tgt_in[0] = QKV_SEQ_BOS;
        memcpy(tgt_in + 1, tgt_out, (size_t)(len - 1) * sizeof *tgt_in);
        fill_tokens(tgt_in, len, width, QKV_SEQ_PAD);
        fill_mask(batch->tgt_mask + (size_t)b * width, len, width);
    }
}

/* Decoder: src holds x and tgt_out holds y on entry; makes the stream
 * x SEP y PAD.. and tgt_out[t] = stream[t+1] for len <= t < 2 len, else IGNORE. */
static void layout_decoder_row(qkv_seq_batch *batch, int b, int len, int width) {
    int32_t *src = batch->src + (size_t)b * width;
    int32_t *tgt_out = batch->tgt_out + (size_t)b * width;
    int stream = 2 * len + 1;
    src[len] = QKV_SEQ_SEP;
    memcpy(src + len + 1, tgt_out, (size_t)len * sizeof *src);
    fill_tokens(src, stream, width, QKV_SEQ_PAD);
    fill_tokens(tgt_out, 0, width, QKV_SEQ_IGNORE);
    memcpy(tgt_out + len, src + len + 1, (size_t)len * sizeof *tgt_out);
    fill_mask(batch->src_mask + (size_t)b * width, stream, width);
}

void qkv_seq_make_batch_of(const qkv_seq_config *config, const int32_t *x, int len, qkv_seq_batch *batch) {
    check_config("qkv_seq_make_batch_of", config);
    QKV_CHECK(len >= 1 && len <= MAX_EXAMPLE_LEN && x != NULL, "qkv_seq_make_batch_of: len %d", len);
    int width = stream_len(config->arch, len);
    reserve_batch(batch, 1, width, config->arch == QKV_ARCH_SEQ2SEQ);
    memcpy(batch->src, x, (size_t)len * sizeof *batch->src);
    qkv_seq_target(config, x, len, batch->tgt_out);
    if (config->arch == QKV_ARCH_DECODER) layout_decoder_row(batch, 0, len, width);
    else layout_aligned_row(batch, 0, len, width);
    batch->lengths[0] = len;
    batch->first = 0;
    batch->batch = 1;
    batch->src_len = width;
    batch->tgt_len = config->arch == QKV_ARCH_SEQ2SEQ ? len : 0;
}

void qkv_seq_make_batch(const qkv_seq_config *config, uint64_t seed, uint64_t first, int n,
                        qkv_seq_batch *batch) {
    qkv_seq_make_batch_wrapped(config, seed, first, n, 0, batch);
}

void qkv_seq_make_batch_wrapped(const qkv_seq_config *config, uint64_t seed, uint64_t first, int n,
                                uint64_t modulo, qkv_seq_batch *batch) {
    check_config("qkv_seq_make_batch", config);
    QKV_CHECK(n >= 1, "qkv_seq_make_batch: n %d: must be >= 1", n);
    QKV_CHECK(batch != NULL, "qkv_seq_make_batch: batch is NULL");
    /* Room for the longest possible stream, so every example can be drawn
     * straight into its row before the padded length is known. */
    int width_max = stream_len(config->arch, config->max_len);
    reserve_batch(batch, n, width_max, config->arch == QKV_ARCH_SEQ2SEQ);
    batch->first = first;

    /* Draw each example at a stride of width_max, remembering the longest. */
    int longest = 0;
    for (int b = 0; b < n; b++) {
        size_t at = (size_t)b * width_max;
        uint64_t index = modulo ? (first + (uint64_t)b) % modulo : first + (uint64_t)b;
        int len = draw_example(config, seed, index, batch->src + at, batch->tgt_out + at);
        batch->lengths[b] = len;
        if (len > longest) longest = len;
    }
    /* Pack the rows to the batch's padded width, in ascending order: row b's packed
     * extent ends at (b+1)*width <= (b+1)*width_max, where row b+1's draw begins. */
    int width = stream_len(config->arch, longest);
    for (int b = 0; b < n; b++) {
        int len = batch->lengths[b];
        size_t from = (size_t)b * width_max, to = (size_t)b * width;
        memmove(batch->src + to, batch->src + from, (size_t)len * sizeof *batch->src);
        memmove(batch->tgt_out + to, batch->tgt_out + from, (size_t)len * sizeof *batch->tgt_out);
        if (config->arch == QKV_ARCH_DECODER) layout_decoder_row(batch, b, len, width);
        else layout_aligned_row(batch, b, len, width);
    }
    batch->batch = n;
    batch->src_len = width;
    batch->tgt_len = config->arch == QKV_ARCH_SEQ2SEQ ? longest : 0;
}

/* ---- names ------------------------------------------------------------------ */

int qkv_seq_task_parse(const char *name) { return qkv_name_lookup(name, qkv_seq_task_names, TASK_COUNT); }
int qkv_seq_arch_parse(const char *name) { return qkv_name_lookup(name, qkv_seq_arch_names, ARCH_COUNT); }

const char *qkv_seq_task_name(qkv_seq_task task) {
    QKV_CHECK((int)task >= 0 && (int)task < TASK_COUNT, "qkv_seq_task_name: task %d: unknown",
              (int)task);
    return qkv_seq_task_names[task];
}

const char *qkv_seq_arch_name(qkv_seq_arch arch) {
    QKV_CHECK((int)arch >= 0 && (int)arch < ARCH_COUNT, "qkv_seq_arch_name: arch %d: unknown",
              (int)arch);
    return qkv_seq_arch_names[arch];
}
