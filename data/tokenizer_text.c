/* tokenizer_text.c — a tokenizer as one line of text and back. See tokenizer.h
 * for the format.
 *
 * The parser is strict: the fields come in one order, separated by one space,
 * counts are decimal without sign or leading zeros, hex is lowercase, and the
 * padding bits of the last base-64 digit are zero. So every tokenizer has one
 * text, and an accepted text is exactly to_text of what it parsed into. The
 * alphabet and the merges go through qkv_tokenizer_set_alphabet and
 * qkv_tokenizer_add_merge, which refuse an alphabet out of order and a merge of
 * tokens not defined yet, repeated, or too long.
 */
#include "data/tokenizer.h"

#include <stdio.h>
#include <string.h>

#include "core/error.h"

#define ID_BITS 10 /* every id < QKV_TOKENIZER_MAX_VOCAB */
#define DIGIT_BITS 6
#define MAX_COUNT_DIGITS 4

_Static_assert((1 << ID_BITS) >= QKV_TOKENIZER_MAX_VOCAB, "ids need more bits");
/* Longest text: the longest header, then (fewer alphabet bytes cost less than the
 * merges they leave room for) a 1-byte alphabet and QKV_TOKENIZER_MAX_VOCAB - 1 merges. */
#define MERGE_DIGITS(n_merges) ((2 * ID_BITS * (n_merges) + DIGIT_BITS - 1) / DIGIT_BITS)
_Static_assert(sizeof "kind=bytes n_bytes=256 n_merges=1023 alphabet= merges=" - 1 + 2 +
                       MERGE_DIGITS(QKV_TOKENIZER_MAX_VOCAB - 1) < QKV_TOKENIZER_TEXT_MAX,
               "the text form must fit QKV_TOKENIZER_TEXT_MAX");

static const char hex_digits[] = "0123456789abcdef";
static const char base64_digits[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/* ---- writing -------------------------------------------------------------------------- */

void qkv_tokenizer_to_text(const qkv_tokenizer *t, char out[QKV_TOKENIZER_TEXT_MAX]) {
    char *p = out;
    p += sprintf(p, "kind=%s n_bytes=%d n_merges=%d alphabet=", qkv_tokenizer_kind_names[t->kind], t->n_bytes,
                 t->n_merges);
    for (int i = 0; i < t->n_bytes; i++) {
        *p++ = hex_digits[t->alphabet[i] >> 4];
        *p++ = hex_digits[t->alphabet[i] & 15];
    }
    p += sprintf(p, " merges=");
    uint32_t bits = 0; /* the bit string's next, not yet written, bits */
    int n_bits = 0;
    for (int k = 0; k < 2 * t->n_merges; k++) {
        bits = bits << ID_BITS | (uint32_t)t->merges[k / 2][k % 2];
        for (n_bits += ID_BITS; n_bits >= DIGIT_BITS; n_bits -= DIGIT_BITS)
            *p++ = base64_digits[(bits >> (n_bits - DIGIT_BITS)) & 63];
    }
    if (n_bits > 0) *p++ = base64_digits[(bits << (DIGIT_BITS - n_bits)) & 63];
    *p = '\0';
}

/* ---- parsing -------------------------------------------------------------------------- */

static int fail(const char *text, const char *p, const char *what) {
    qkv_set_error("tokenizer: %s at offset %d of its text", what, (int)(p - text));
    return -1;
}

/* Skips the literal at *p, or fails naming it. */
static int expect(const char *text, const char **p, const char *literal) {
    size_t n = strlen(literal);
    if (strncmp(*p, literal, n) != 0) {
        qkv_set_error("tokenizer: expected \"%s\" at offset %d of its text", literal, (int)(*p - text));
        return -1;
    }
    *p += n;
    return 0;
}

/* The length of the field at p: up to the next space or the end. */
static size_t field_length(const char *p) { return strcspn(p, " "); }

/* A decimal count in [lo, hi] at *p, as written by to_text. */
static int parse_count(const char *text, const char **p, const char *name, int lo, int hi, int *out) {
    size_t n = field_length(*p);
    if (n == 0 || n > MAX_COUNT_DIGITS || strspn(*p, "0123456789") != n || ((*p)[0] == '0' && n > 1))
        return fail(text, *p, "a count that is not a plain decimal number");
    int value = 0;
    for (size_t i = 0; i < n; i++) value = 10 * value + ((*p)[i] - '0');
    if (value < lo || value > hi) {
        qkv_set_error("tokenizer: %s=%d is outside [%d, %d]", name, value, lo, hi);
        return -1;
    }
    *p += n;
    *out = value;
    return 0;
}

static int kind_of(const char *p, size_t n) {
    for (int k = 0; qkv_tokenizer_kind_names[k]; k++)
        if (strlen(qkv_tokenizer_kind_names[k]) == n && strncmp(p, qkv_tokenizer_kind_names[k], n) == 0) return k;
    return -1;
}

static int hex_value(char c) {
    const char *d = c ? strchr(hex_digits, c) : NULL;
    return d ? (int)(d - hex_digits) : -1;
}

static int base64_value(char c) {
    const char *d = c ? strchr(base64_digits, c) : NULL;
    return d ? (int)(d - base64_digits) : -1;
}

/* The header up to the alphabet: kind, n_bytes, n_merges. */
static int parse_header(const char *text, const char **p, int *kind, int *n_bytes, int *n_merges) {
    if (expect(text, p, "kind=")) return -1;
    size_t n = field_length(*p);
    if ((*kind = kind_of(*p, n)) < 0) return fail(text, *p, "an unknown kind (bytes or bpe)");
    *p += n;
    if (expect(text, p, " n_bytes=") || parse_count(text, p, "n_bytes", 1, 256, n_bytes) ||
        expect(text, p, " n_merges=") ||
        parse_count(text, p, "n_merges", 0, QKV_TOKENIZER_MAX_VOCAB - *n_bytes, n_merges))
        return -1;
    if (*kind == QKV_TOKENIZER_BYTES && *n_merges != 0) {
        qkv_set_error("tokenizer: kind=bytes with n_merges=%d (a bytes tokenizer has none)", *n_merges);
        return -1;
    }
    return 0;
}

static int parse_alphabet(qkv_tokenizer *t, const char *text, const char **p, int kind, int n_bytes) {
    if (expect(text, p, " alphabet=")) return -1;
    if (field_length(*p) != 2 * (size_t)n_bytes) {
        qkv_set_error("tokenizer: the alphabet has %zu hex digits; n_bytes=%d needs %d", field_length(*p), n_bytes,
                      2 * n_bytes);
        return -1;
    }
    uint8_t bytes[256];
    for (int i = 0; i < n_bytes; i++) {
        int high = hex_value((*p)[2 * i]), low = hex_value((*p)[2 * i + 1]);
        if (high < 0 || low < 0) return fail(text, *p + 2 * i, "a character that is not a lowercase hex digit");
        bytes[i] = (uint8_t)(high << 4 | low);
    }
    *p += 2 * (size_t)n_bytes;
    return qkv_tokenizer_set_alphabet(t, (qkv_tokenizer_kind)kind, bytes, n_bytes);
}

static int parse_merges(qkv_tokenizer *t, const char *text, const char **p, int n_merges) {
    if (expect(text, p, " merges=")) return -1;
    size_t digits = MERGE_DIGITS((size_t)n_merges);
    if (strlen(*p) != digits) {
        qkv_set_error("tokenizer: the merges have %zu base-64 digits; n_merges=%d needs %zu", strlen(*p), n_merges,
                      digits);
        return -1;
    }
    uint32_t bits = 0; /* read, not yet used: the low n_bits */
    int n_bits = 0, n_ids = 0;
    int32_t ids[2];
    for (size_t i = 0; i < digits; i++) {
        int value = base64_value((*p)[i]);
        if (value < 0) return fail(text, *p + i, "a character that is not a base-64 digit");
        bits = bits << DIGIT_BITS | (uint32_t)value;
        n_bits += DIGIT_BITS;
        if (n_bits < ID_BITS) continue;
        n_bits -= ID_BITS;
        ids[n_ids++] = (int32_t)(bits >> n_bits);
        bits &= (1u << n_bits) - 1;
        if (n_ids == 2 && qkv_tokenizer_add_merge(t, ids[0], ids[1])) return -1;
        n_ids %= 2;
    }
    /* digits * 6 bits hold the 2 n_merges ids and fewer than 6 bits more */
    if (bits != 0) return fail(text, *p + digits - 1, "padding bits that are not zero");
    return 0;
}

/* The offset of the first character that is not printable ASCII, or -1. */
static long first_unprintable(const char *text, size_t len) {
    for (size_t i = 0; i < len; i++)
        if (text[i] < ' ' || text[i] > '~') return (long)i;
    return -1;
}

int qkv_tokenizer_from_text(qkv_tokenizer *t, const char *text) {
    QKV_CHECK(t != NULL && text != NULL, "tokenizer_from_text: NULL argument");
    const char *p = text;
    int kind, n_bytes, n_merges, rc = -1;
    long bad;
    size_t len = strnlen(text, QKV_TOKENIZER_TEXT_MAX);
    if (len >= QKV_TOKENIZER_TEXT_MAX) {
        qkv_set_error("tokenizer: its text is longer than %d characters", QKV_TOKENIZER_TEXT_MAX - 1);
    } else if ((bad = first_unprintable(text, len)) >= 0) {
        qkv_set_error("tokenizer: character 0x%02x at offset %ld of its text is not printable ASCII",
                      (unsigned char)text[bad], bad);
    } else {
        rc = parse_header(text, &p, &kind, &n_bytes, &n_merges) || parse_alphabet(t, text, &p, kind, n_bytes) ||
             parse_merges(t, text, &p, n_merges) ? -1 : 0;
    }
    if (rc) memset(t, 0, sizeof *t);
    return rc;
}
