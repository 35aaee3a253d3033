/* tokenizer.c — alphabets, merges, BPE training, encoding and decoding. See
 * tokenizer.h for the contract; the text form is in tokenizer_text.c.
 *
 * One function applies a merge: merge_pass rewrites a token sequence in place,
 * left to right, replacing every (a, b) by ab. Encoding runs it once per merge
 * in merge order; training runs it once per merge it learns, with pair counts
 * attached, so the two agree by construction.
 *
 * Training keeps count[left][right], the number of adjacent positions holding
 * (left, right), up to date through each pass instead of recounting: a merge
 * destroys the old adjacencies that touch a merged position and creates the new
 * ones that touch an ab. The most frequent pair comes from a max-heap with lazy
 * entries: every pair that can still win (count >= 2) has an entry whose count is
 * at least its current count; a popped entry whose count is stale goes back with
 * the current one (or is dropped). Only pairs holding the newest token ever grow,
 * and they are pushed once per pass. Time: one pass over the shrinking sequence
 * per merge, plus heap work that does not depend on the text's length.
 */
#include "data/tokenizer.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"

const char *const qkv_tokenizer_kind_names[] = {"bytes", "bpe", NULL};

#define V QKV_TOKENIZER_MAX_VOCAB /* the side of the pair table */

int qkv_tokenizer_vocab(const qkv_tokenizer *t) { return t->n_bytes + t->n_merges; }

/* ---- the table ------------------------------------------------------------------------ */

int qkv_tokenizer_set_alphabet(qkv_tokenizer *t, qkv_tokenizer_kind kind, const uint8_t *bytes, int n) {
    QKV_CHECK(t != NULL && bytes != NULL, "tokenizer_set_alphabet: NULL argument");
    QKV_CHECK(kind == QKV_TOKENIZER_BYTES || kind == QKV_TOKENIZER_BPE, "tokenizer_set_alphabet: kind %d", (int)kind);
    if (n < 1 || n > 256) {
        qkv_set_error("tokenizer: an alphabet of %d bytes (need 1 to 256)", n);
        return -1;
    }
    for (int i = 1; i < n; i++)
        if (bytes[i] <= bytes[i - 1]) {
            qkv_set_error("tokenizer: alphabet byte %d (0x%02x) does not follow 0x%02x in increasing order", i,
                          bytes[i], bytes[i - 1]);
            return -1;
        }
    memset(t, 0, sizeof *t);
    t->kind = kind;
    t->n_bytes = n;
    for (int b = 0; b < 256; b++) t->byte_token[b] = -1;
    for (int i = 0; i < n; i++) { /* byte token i is pool byte i */
        t->alphabet[i] = bytes[i];
        t->byte_token[bytes[i]] = (int16_t)i;
        t->token_start[i] = (uint32_t)i;
        t->token_length[i] = 1;
        t->token_pool[i] = bytes[i];
    }
    return 0;
}

int qkv_tokenizer_add_merge(qkv_tokenizer *t, int32_t left, int32_t right) {
    int vocab = qkv_tokenizer_vocab(t), m = t->n_merges;
    if (vocab >= QKV_TOKENIZER_MAX_VOCAB) {
        qkv_set_error("tokenizer: merge %d: the vocabulary is full (%d tokens)", m, vocab);
        return -1;
    }
    if (left < 0 || left >= vocab || right < 0 || right >= vocab) {
        qkv_set_error("tokenizer: merge %d (%d, %d) refers to a token not defined yet (%d so far)", m, left, right,
                      vocab);
        return -1;
    }
    for (int k = 0; k < m; k++)
        if (t->merges[k][0] == left && t->merges[k][1] == right) {
            qkv_set_error("tokenizer: merge %d (%d, %d) repeats merge %d", m, left, right, k);
            return -1;
        }
    int length = t->token_length[left] + t->token_length[right];
    if (length > QKV_TOKENIZER_MAX_TOKEN_BYTES) {
        qkv_set_error("tokenizer: merge %d makes a token of %d bytes (the limit is %d)", m, length,
                      QKV_TOKENIZER_MAX_TOKEN_BYTES);
        return -1;
    }
    /* Tokens sit end to end in the pool, each at most MAX_TOKEN_BYTES: it cannot overflow. */
    uint32_t start = t->token_start[vocab - 1] + t->token_length[vocab - 1];
    memcpy(t->token_pool + start, t->token_pool + t->token_start[left], t->token_length[left]);
    memcpy(t->token_pool + start + t->token_length[left], t->token_pool + t->token_start[right],
           t->token_length[right]);
    t->token_start[vocab] = start;
    t->token_length[vocab] = (uint8_t)length;
    t->merges[m][0] = left;
    t->merges[m][1] = right;
    t->n_merges = m + 1;
    return 0;
}

void qkv_tokenizer_init_bytes(qkv_tokenizer *t, const uint8_t *text, size_t n) {
    QKV_CHECK(t != NULL && text != NULL && n >= 1, "tokenizer_init_bytes: a text of at least one byte needed");
    uint8_t seen[256] = {0}, alphabet[256];
    for (size_t i = 0; i < n; i++) seen[text[i]] = 1;
    int k = 0;
    for (int b = 0; b < 256; b++)
        if (seen[b]) alphabet[k++] = (uint8_t)b;
    qkv_tokenizer_set_alphabet(t, QKV_TOKENIZER_BYTES, alphabet, k); /* increasing by construction */
}

/* ---- decoding ------------------------------------------------------------------------- */

const uint8_t *qkv_tokenizer_token_bytes(const qkv_tokenizer *t, int32_t id, size_t *len) {
    QKV_CHECK(id >= 0 && id < qkv_tokenizer_vocab(t), "tokenizer: token %d outside the vocabulary of %d", (int)id,
              qkv_tokenizer_vocab(t));
    *len = t->token_length[id];
    return t->token_pool + t->token_start[id];
}

size_t qkv_tokenizer_decode(const qkv_tokenizer *t, const int32_t *ids, size_t n, uint8_t *out, size_t cap) {
    size_t needed = 0;
    for (size_t i = 0; i < n; i++) {
        size_t len;
        const uint8_t *bytes = qkv_tokenizer_token_bytes(t, ids[i], &len);
        if (needed < cap) memcpy(out + needed, bytes, len < cap - needed ? len : cap - needed);
        needed += len;
    }
    return needed;
}

/* ---- one merge ------------------------------------------------------------------------ */

/* Training's bookkeeping: count[left * V + right] adjacent positions hold (left,
 * right); grew_after[x] / grew_before[y] mark that (newest, x) / (y, newest)
 * gained occurrences in the current pass. */
typedef struct pair_stats {
    uint32_t *count;
    int32_t newest;
    uint8_t grew_after[V], grew_before[V];
} pair_stats;

static void pair_lost(pair_stats *s, int32_t left, int32_t right) { s->count[left * V + right]--; }

static void pair_gained(pair_stats *s, int32_t left, int32_t right) {
    s->count[left * V + right]++;
    if (left == s->newest) s->grew_after[right] = 1;
    else s->grew_before[left] = 1;
}

/* Rewrites seq[0..len) with every (a, b) replaced by ab, left to right (so "aaa"
 * with (a, a) becomes (aa, a)); returns the new length. present[t] counts token
 * t's occurrences. With stats, the adjacencies that go (those touching a merged
 * position, each once) and those that come (those touching an ab) are counted. */
static size_t merge_pass(int32_t *seq, size_t len, int32_t a, int32_t b, int32_t ab, size_t *present,
                         pair_stats *stats, qkv_data_stop stop, int *stopped) {
    size_t out = 0, next_poll = QKV_TOKENIZER_PIECE_TOKENS;
    int32_t old_before = -1, new_before = -1; /* the token before, in the old and the new sequence */
    int merged_before = 0;
    for (size_t i = 0; i < len;) {
        if (i >= next_poll) {   /* a long text's pass is pieces too; a stop leaves seq to be thrown away */
            next_poll += QKV_TOKENIZER_PIECE_TOKENS;
            if (stop && (*stopped = stop())) return out;
        }
        int32_t x = seq[i];
        int merge = x == a && i + 1 < len && seq[i + 1] == b;
        int32_t written = merge ? ab : x;
        if (stats && (merge || merged_before)) {
            if (i > 0) pair_lost(stats, old_before, x);
            if (merge) pair_lost(stats, a, b);
            if (out > 0) pair_gained(stats, new_before, written);
        }
        if (merge) present[a]--, present[b]--, present[ab]++;
        old_before = merge ? b : x;
        new_before = written;
        merged_before = merge;
        seq[out++] = written;
        i += merge ? 2 : 1;
    }
    return out;
}

/* ---- encoding ------------------------------------------------------------------------- */

int qkv_tokenizer_encode_pieces(const qkv_tokenizer *t, const uint8_t *text, size_t n, int skip_unknown, int32_t *out,
                                long *count, qkv_data_stop stop) {
    QKV_CHECK(t != NULL && (text != NULL || n == 0) && (out != NULL || n == 0) && n <= LONG_MAX,
              "tokenizer_encode: NULL argument or %zu bytes", n);
    size_t len = 0, present[V] = {0};
    for (size_t i = 0; i < n; i++) {
        int token = t->byte_token[text[i]];
        if (token < 0 && skip_unknown) continue;
        if (token < 0) {
            qkv_set_error("byte 0x%02x at offset %zu is not in the vocabulary", text[i], i);
            return -1;
        }
        out[len++] = token;
        present[token]++;
    }
    int passes = 0;
    for (int m = 0; m < t->n_merges; m++) {
        int32_t a = t->merges[m][0], b = t->merges[m][1];
        if (!present[a] || !present[b]) continue;
        int stopped = passes++ > 0 && stop ? stop() : 0;   /* between two passes (data/pieces.h) */
        if (!stopped) len = merge_pass(out, len, a, b, t->n_bytes + m, present, NULL, stop, &stopped);
        if (stopped) return stopped;
    }
    *count = (long)len;
    return 0;
}

long qkv_tokenizer_encode(const qkv_tokenizer *t, const uint8_t *text, size_t n, int skip_unknown, int32_t *out) {
    long count;
    return qkv_tokenizer_encode_pieces(t, text, n, skip_unknown, out, &count, NULL) == 0 ? count : -1;
}

/* ---- training ------------------------------------------------------------------------- */

/* Max-heap of (count, pair) packed as count << 32 | ~pair: the larger key is the
 * larger count, then the smaller pair id left * V + right, the tie rule. */
typedef struct pair_heap {
    uint64_t *keys;
    size_t len, capacity;
} pair_heap;

static void heap_push(pair_heap *h, uint32_t count, int32_t pair) {
    if (h->len == h->capacity) {
        h->capacity = h->capacity ? 2 * h->capacity : 4096;
        h->keys = qkv_realloc(h->keys, h->capacity * sizeof *h->keys, "the BPE pair heap");
    }
    uint64_t key = (uint64_t)count << 32 | (uint32_t)~(uint32_t)pair;
    size_t i = h->len++;
    for (; i > 0 && h->keys[(i - 1) / 2] < key; i = (i - 1) / 2) h->keys[i] = h->keys[(i - 1) / 2];
    h->keys[i] = key;
}

static uint64_t heap_pop(pair_heap *h) {
    uint64_t top = h->keys[0], last = h->keys[--h->len];
    size_t i = 0;
    for (;;) {
        size_t child = 2 * i + 1;
        if (child >= h->len) break;
        if (child + 1 < h->len && h->keys[child + 1] > h->keys[child]) child++;
        if (h->keys[child] <= last) break;
        h->keys[i] = h->keys[child];
        i = child;
    }
    if (h->len > 0) h->keys[i] = last;
    return top;
}

/* The most frequent pair (ties: the smallest), or -1 when none occurs twice. */
static int32_t best_pair(pair_heap *h, const uint32_t *count) {
    while (h->len > 0) {
        uint64_t key = heap_pop(h);
        uint32_t was = (uint32_t)(key >> 32);
        int32_t pair = (int32_t)~(uint32_t)key;
        uint32_t now = count[pair];
        if (now == was) return pair;
        if (now < was && now >= 2) heap_push(h, now, pair); /* it lost occurrences: back, lower */
        /* now > was: a later entry holds its count */
    }
    return -1;
}

/* Pushes the pairs with the newest token that grew in the last pass. */
static void push_grown(pair_heap *h, pair_stats *s, int vocab) {
    for (int x = 0; x < vocab; x++) {
        int32_t after = s->newest * V + x, before = x * V + s->newest;
        if (s->grew_after[x] && s->count[after] >= 2) heap_push(h, s->count[after], after);
        if (s->grew_before[x] && s->count[before] >= 2 && x != s->newest) heap_push(h, s->count[before], before);
        s->grew_after[x] = s->grew_before[x] = 0;
    }
}

size_t qkv_tokenizer_train_bytes(size_t n) {
    return qkv_size_mul(n, sizeof(int32_t)) + (size_t)V * V * sizeof(uint32_t) + sizeof(pair_stats);
}

int qkv_tokenizer_train_bpe_pieces(qkv_tokenizer *t, const uint8_t *text, size_t n, int vocab, qkv_data_stop stop) {
    QKV_CHECK(n <= UINT32_MAX, "tokenizer_train_bpe: %zu bytes (at most %u)", n, UINT32_MAX);
    qkv_tokenizer_init_bytes(t, text, n);
    t->kind = QKV_TOKENIZER_BPE;
    if (vocab < t->n_bytes || vocab > QKV_TOKENIZER_MAX_VOCAB) {
        qkv_set_error("BPE vocab %d: need %d (the text's distinct bytes) to %d", vocab, t->n_bytes,
                      QKV_TOKENIZER_MAX_VOCAB);
        return -1;
    }
    int32_t *seq = qkv_try_malloc(qkv_size_mul(n, sizeof *seq), NULL, "the BPE training text");
    pair_stats *stats = seq ? qkv_try_malloc(sizeof *stats, NULL, "the BPE pair counts") : NULL;
    uint32_t *count = stats ? qkv_try_malloc((size_t)V * V * sizeof *count, NULL, "the BPE pair counts") : NULL;
    if (!count) {
        free(stats);
        free(seq);
        return -1;
    }
    memset(stats, 0, sizeof *stats);
    memset(count, 0, (size_t)V * V * sizeof *count);
    stats->count = count;
    size_t len = (size_t)qkv_tokenizer_encode(t, text, n, 0, seq), present[V] = {0};
    for (size_t i = 0; i < len; i++) present[seq[i]]++;
    for (size_t i = 0; i + 1 < len; i++) stats->count[seq[i] * V + seq[i + 1]]++;
    pair_heap heap = {NULL, 0, 0};
    for (int32_t left = 0; left < t->n_bytes; left++)
        for (int32_t right = 0; right < t->n_bytes; right++)
            if (stats->count[left * V + right] >= 2) heap_push(&heap, stats->count[left * V + right], left * V + right);
    int stopped = 0;
    while (qkv_tokenizer_vocab(t) < vocab) {
        int32_t pair = best_pair(&heap, stats->count);
        if (pair < 0) break;
        int32_t a = pair / V, b = pair % V;
        if (t->token_length[a] + t->token_length[b] > QKV_TOKENIZER_MAX_TOKEN_BYTES) continue; /* never again */
        if (t->n_merges > 0 && stop && (stopped = stop())) break;   /* between two passes (data/pieces.h) */
        stats->newest = (int32_t)qkv_tokenizer_vocab(t);
        qkv_tokenizer_add_merge(t, a, b); /* new, defined, short enough: cannot fail */
        len = merge_pass(seq, len, a, b, stats->newest, present, stats, stop, &stopped);
        if (stopped) break;
        push_grown(&heap, stats, stats->newest + 1);
    }
    free(heap.keys);
    free(stats->count);
    free(stats);
    free(seq);
    return stopped;
}

int qkv_tokenizer_train_bpe(qkv_tokenizer *t, const uint8_t *text, size_t n, int vocab) {
    return qkv_tokenizer_train_bpe_pieces(t, text, n, vocab, NULL);
}
