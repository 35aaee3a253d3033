/* json.h — a small strict JSON reader and writer (RFC 8259) over byte buffers.
 *
 * Reading: qkv_json_parse tokenizes a whole text into a flat array of tokens
 * without recursion (an explicit stack, nesting depth limited by the caller), and
 * accepts exactly one JSON value surrounded by optional whitespace. Strict: no
 * trailing commas, no comments, no single quotes, no leading zeros, no NaN or
 * Infinity, no raw control characters in strings, only valid escapes (\uXXXX with
 * surrogates properly paired), only valid UTF-8 (no overlong forms, no encoded
 * surrogates, nothing above U+10FFFF). \u0000 is refused: every string decodes to
 * a C string. Texts of 4 GiB or more are refused. Duplicate keys are not checked
 * here (the caller decides where they matter). Every read is bounds-checked.
 * Memory: one 20-byte token per value, so at most about 10 bytes per byte of text
 * (a hostile "[0,0,0,...]"); callers bound the text's length.
 *
 * Tokens: a value is one token followed by its children. Arrays: the elements, in
 * order. Objects: key (a string token), value, key, value, ... tokens[i].next is
 * the index just past value i and all its children, so siblings are walked as
 *
 *     for (uint32_t k = 0, j = i + 1; k < tokens[i].count; k++, j = tokens[j].next) ...
 *
 * (for objects, j steps over the key token: the value is j + 1 and the next key is
 * tokens[j + 1].next). Strings are kept raw (without quotes); decode them with
 * qkv_json_decode or compare with qkv_json_equals. Numbers are kept as text;
 * qkv_json_uint reads a non-negative integer from one.
 *
 * Errors: qkv_json_parse returns -1 and leaves a one-line reason in doc->error,
 * e.g. "expected ':' after an object key, found '}' at offset 17".
 *
 * Writing: qkv_json_out is a growable byte buffer; qkv_json_out_string writes a
 * quoted, escaped string ('"', '\\' and control characters escaped, other UTF-8
 * bytes kept as they are). An allocation failure sets out->failed; check it once
 * at the end.
 */
#ifndef QKV_JSON_H
#define QKV_JSON_H

#include <stddef.h>
#include <stdint.h>

#define QKV_JSON_MAX_DEPTH 64

typedef enum {
    QKV_JSON_OBJECT,
    QKV_JSON_ARRAY,
    QKV_JSON_STRING,
    QKV_JSON_NUMBER,
    QKV_JSON_TRUE,
    QKV_JSON_FALSE,
    QKV_JSON_NULL
} qkv_json_type;

typedef struct qkv_json_token {
    unsigned char type;    /* qkv_json_type */
    unsigned char escaped; /* strings: contains backslash escapes */
    uint32_t start, len;   /* bytes in the text (a string's without its quotes) */
    uint32_t count;        /* arrays: elements; objects: key/value pairs */
    uint32_t next;         /* index of the first token after this value */
} qkv_json_token;

typedef struct qkv_json {
    const unsigned char *text;
    size_t len;
    qkv_json_token *tokens;
    uint32_t n_tokens;
    char error[160];
} qkv_json;

/* 0, or -1 with doc->error. max_depth: 1..QKV_JSON_MAX_DEPTH (1 allows a flat
 * array or object). doc->text points into text, which must outlive doc. */
int qkv_json_parse(qkv_json *doc, const unsigned char *text, size_t len, int max_depth);
void qkv_json_free(qkv_json *doc);

/* "object", "array", "string", "number", "true", "false", "null". */
const char *qkv_json_type_name(int type);

/* Whether string token i decodes to exactly s. */
int qkv_json_equals(const qkv_json *doc, uint32_t i, const char *s);
/* Decodes string token i into out (cap >= 1 bytes; cap = tokens[i].len + 1 always
 * suffices), never splitting a character, and '\0'-terminates it. Returns the
 * full decoded length, which exceeds cap - 1 if it was cut (like snprintf). */
size_t qkv_json_decode(const qkv_json *doc, uint32_t i, char *out, size_t cap);

enum { QKV_JSON_UINT_OK = 0, QKV_JSON_NOT_UINT = -1, QKV_JSON_UINT_TOO_LARGE = -2 };
/* Number token i as a uint64: QKV_JSON_NOT_UINT for anything but digits (a sign,
 * fraction or exponent; or a token that is not a number). */
int qkv_json_uint(const qkv_json *doc, uint32_t i, uint64_t *value);

/* Whether s[0..n) is valid UTF-8 (the rules above). */
int qkv_utf8_valid(const char *s, size_t n);

/* ---- writing ------------------------------------------------------------------- */

typedef struct qkv_json_out {
    char *data; /* '\0'-terminated while not failed */
    size_t len, cap;
    int failed;
} qkv_json_out;

void qkv_json_out_bytes(qkv_json_out *out, const char *bytes, size_t n);
void qkv_json_out_text(qkv_json_out *out, const char *s);
void qkv_json_out_uint(qkv_json_out *out, uint64_t value);
void qkv_json_out_string(qkv_json_out *out, const char *s);
void qkv_json_out_free(qkv_json_out *out);

#endif
