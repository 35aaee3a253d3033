/* tokenizer.h — tokens of a text: its bytes, or byte-level BPE merges over them.
 *
 * The alphabet is the set of distinct bytes of the text the tokenizer was made
 * from, in increasing byte order: token t < n_bytes is the byte alphabet[t]. A
 * BPE tokenizer adds merges: token n_bytes + m is the concatenation of tokens
 * merges[m][0] and merges[m][1], both defined before it. A token is at most
 * QKV_TOKENIZER_MAX_TOKEN_BYTES bytes long (training never merges a pair whose
 * token would be longer; the text form refuses one), so the whole decoding table
 * sits inside the struct: no pointers, nothing to free, copyable with memcpy.
 *
 * Training (qkv_tokenizer_train_bpe) merges, again and again, the most frequent
 * adjacent pair of tokens in the text (every adjacent position counts, so "aaa"
 * holds the pair (a, a) twice; ties go to the smallest (left, right)), replacing
 * its occurrences left to right, until the vocabulary is full or no pair occurs
 * twice. Encoding applies the merges in the order they were learned, each one to
 * every occurrence left to right, as GPT-2's byte-level BPE applies its ranks
 * (but on the whole text: there is no splitting into words first). Encoding the
 * training text therefore gives exactly the tokens training ended with.
 *
 * The text form (qkv_tokenizer_to_text) is one line of printable ASCII, for a
 * checkpoint's metadata:
 *     kind=bpe n_bytes=3 n_merges=2 alphabet=616263 merges=AAAQDAI
 * alphabet: n_bytes bytes as two lowercase hex digits each, strictly increasing;
 * merges: the 2 n_merges ids (left, right, left, ...) as 10-bit numbers, most
 * significant bit first, in one bit string cut into base-64 digits (A-Z a-z 0-9
 * + /, 6 bits each; the last digit padded with zero bits). The bytes kind has
 * n_merges=0 and an empty merges field. Packing the ids, rather than giving each
 * two digits, is what makes any alphabet fit: vocab 1024 takes at most 3462
 * characters (with a 1-byte alphabet; 3123 with all 256 bytes).
 *
 * Errors: qkv_tokenizer_train_bpe, qkv_tokenizer_encode and
 * qkv_tokenizer_from_text return -1 with a one-line qkv_last_error(); everything
 * else that can go wrong (NULL, an empty text to build from, a token id out of
 * range) is a programmer error and stops through qkv_fatal().
 */
#ifndef QKV_TOKENIZER_H
#define QKV_TOKENIZER_H

#include <stddef.h>
#include <stdint.h>

#include "data/pieces.h"

#define QKV_TOKENIZER_MAX_VOCAB 1024
/* Longest token, in bytes: far more than text needs, and it bounds the table. */
#define QKV_TOKENIZER_MAX_TOKEN_BYTES 128
/* The text form's buffer: every tokenizer fits in QKV_TOKENIZER_TEXT_MAX - 1 chars. */
#define QKV_TOKENIZER_TEXT_MAX 4096

typedef enum { QKV_TOKENIZER_BYTES, QKV_TOKENIZER_BPE } qkv_tokenizer_kind;
extern const char *const qkv_tokenizer_kind_names[]; /* {"bytes", "bpe", NULL}, enum order */

typedef struct qkv_tokenizer {
    qkv_tokenizer_kind kind;
    int n_bytes;               /* the alphabet: token t < n_bytes is the byte alphabet[t] */
    uint8_t alphabet[256];     /* strictly increasing */
    int16_t byte_token[256];   /* the token of byte b, or -1 when b is not in the alphabet */
    int n_merges;              /* token n_bytes + m is merges[m][0] followed by merges[m][1] */
    int32_t merges[QKV_TOKENIZER_MAX_VOCAB][2];
    /* decoding: token t's bytes are token_pool[token_start[t] .. token_start[t] + token_length[t]) */
    uint32_t token_start[QKV_TOKENIZER_MAX_VOCAB];
    uint8_t token_length[QKV_TOKENIZER_MAX_VOCAB];
    uint8_t token_pool[QKV_TOKENIZER_MAX_VOCAB * QKV_TOKENIZER_MAX_TOKEN_BYTES];
} qkv_tokenizer;

/* The bytes tokenizer of text (n >= 1): its distinct bytes. */
void qkv_tokenizer_init_bytes(qkv_tokenizer *t, const uint8_t *text, size_t n);

/* Byte-level BPE trained on text[0..n) (1 <= n <= UINT32_MAX), as above, up to
 * vocab tokens. Deterministic. 0, or -1 with an error when vocab is below the
 * alphabet's size or above QKV_TOKENIZER_MAX_VOCAB (t is then the bytes
 * tokenizer of text, of kind BPE). */
int qkv_tokenizer_train_bpe(qkv_tokenizer *t, const uint8_t *text, size_t n, int vocab);

/* A piece of training and encoding (data/pieces.h): one merge's pass over the
 * text, and within a pass this many tokens (tens of milliseconds). */
#define QKV_TOKENIZER_PIECE_TOKENS ((size_t)1 << 23)

/* The same, a merge at a time (a piece: its pass, cut every
 * QKV_TOKENIZER_PIECE_TOKENS tokens) with stop asked between two pieces: 0; -1 with an error (the vocab as above, or "out
 * of memory allocating N bytes for the BPE training text"); or stop's nonzero
 * answer (t then holds the merges learned so far). */
int qkv_tokenizer_train_bpe_pieces(qkv_tokenizer *t, const uint8_t *text, size_t n, int vocab, qkv_data_stop stop);
/* The memory qkv_tokenizer_train_bpe takes besides the text, for n bytes. */
size_t qkv_tokenizer_train_bytes(size_t n);

/* n_bytes + n_merges. */
int qkv_tokenizer_vocab(const qkv_tokenizer *t);

/* The building blocks of both constructors (and of the text form): t becomes the
 * bytes tokenizer of the alphabet bytes[0..n) (1 <= n <= 256), which must be
 * strictly increasing: 0, or -1 with an error. */
int qkv_tokenizer_set_alphabet(qkv_tokenizer *t, qkv_tokenizer_kind kind, const uint8_t *bytes, int n);
/* Appends the merge (left, right): 0, or -1 with an error when the vocabulary is
 * full, left or right is not a token yet, or the new token would be longer than
 * QKV_TOKENIZER_MAX_TOKEN_BYTES. */
int qkv_tokenizer_add_merge(qkv_tokenizer *t, int32_t left, int32_t right);

/* The tokens of text[0..n) into out (room for n: a token covers at least one
 * byte); returns how many. A byte outside the alphabet is dropped when
 * skip_unknown, else the call returns -1 with "byte 0x%02x at offset %zu is not
 * in the vocabulary". Time: one pass over the tokens per merge that can apply. */
long qkv_tokenizer_encode(const qkv_tokenizer *t, const uint8_t *text, size_t n, int skip_unknown, int32_t *out);

/* The same, a merge at a time with stop asked between two (as training): 0 and
 * *count, -1 with the error, or stop's nonzero answer. */
int qkv_tokenizer_encode_pieces(const qkv_tokenizer *t, const uint8_t *text, size_t n, int skip_unknown, int32_t *out,
                                long *count, qkv_data_stop stop);

/* The bytes of token id (at least one); *len receives how many. */
const uint8_t *qkv_tokenizer_token_bytes(const qkv_tokenizer *t, int32_t id, size_t *len);

/* The bytes of ids[0..n) into out (cap bytes); returns how many bytes they take,
 * which may exceed cap: out then holds the first cap. out may be NULL if cap is 0. */
size_t qkv_tokenizer_decode(const qkv_tokenizer *t, const int32_t *ids, size_t n, uint8_t *out, size_t cap);

/* The text form of t, '\0'-terminated, into out. */
void qkv_tokenizer_to_text(const qkv_tokenizer *t, char out[QKV_TOKENIZER_TEXT_MAX]);

/* Parses a text form back: every field, length, digit and id is checked (the text
 * comes from a file). 0, or -1 with a one-line error and *t zeroed. */
int qkv_tokenizer_from_text(qkv_tokenizer *t, const char *text);

#endif
