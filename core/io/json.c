/* json.c — strict JSON tokenizer and string writer. See json.h.
 *
 * The tokenizer is a loop over three states (want a value, want a key, after a
 * value) with an explicit stack of open containers, so hostile nesting costs a
 * bounded stack and is refused past the caller's depth. Every string character
 * goes through one function, string_unit(), which both validates (at parse time)
 * and decodes (later, on demand): the rules live in one place.
 */
#include "core/io/json.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"

/* ---- UTF-8 and string characters ------------------------------------------------- */

/* Length of the valid UTF-8 sequence at p (p < end), or 0. Second-byte ranges
 * exclude overlong forms, UTF-16 surrogates and code points above U+10FFFF. */
static size_t utf8_length(const unsigned char *p, const unsigned char *end) {
    unsigned c = p[0], lo = 0x80, hi = 0xbf;
    size_t n;
    if (c < 0x80) return 1;
    if (c >= 0xc2 && c <= 0xdf) n = 2;
    else if (c >= 0xe0 && c <= 0xef) n = 3, lo = c == 0xe0 ? 0xa0 : 0x80, hi = c == 0xed ? 0x9f : 0xbf;
    else if (c >= 0xf0 && c <= 0xf4) n = 4, lo = c == 0xf0 ? 0x90 : 0x80, hi = c == 0xf4 ? 0x8f : 0xbf;
    else return 0;
    if ((size_t)(end - p) < n || p[1] < lo || p[1] > hi) return 0;
    for (size_t k = 2; k < n; k++)
        if (p[k] < 0x80 || p[k] > 0xbf) return 0;
    return n;
}

int qkv_utf8_valid(const char *s, size_t n) {
    const unsigned char *p = (const unsigned char *)s, *end = p + n;
    while (p < end) {
        size_t k = utf8_length(p, end);
        if (!k) return 0;
        p += k;
    }
    return 1;
}

static size_t utf8_encode(uint32_t cp, unsigned char out[4]) {
    if (cp < 0x80) { out[0] = (unsigned char)cp; return 1; }
    if (cp < 0x800) {
        out[0] = (unsigned char)(0xc0 | cp >> 6);
        out[1] = (unsigned char)(0x80 | (cp & 0x3f));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (unsigned char)(0xe0 | cp >> 12);
        out[1] = (unsigned char)(0x80 | (cp >> 6 & 0x3f));
        out[2] = (unsigned char)(0x80 | (cp & 0x3f));
        return 3;
    }
    out[0] = (unsigned char)(0xf0 | cp >> 18);
    out[1] = (unsigned char)(0x80 | (cp >> 12 & 0x3f));
    out[2] = (unsigned char)(0x80 | (cp >> 6 & 0x3f));
    out[3] = (unsigned char)(0x80 | (cp & 0x3f));
    return 4;
}

/* The 4 hex digits at p (if they are all there), as a code unit. */
static int hex4(const unsigned char *p, const unsigned char *end, uint32_t *unit) {
    if (end - p < 4) return 0;
    uint32_t v = 0;
    for (int k = 0; k < 4; k++) {
        int c = p[k], d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
                        : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
        if (d < 0) return 0;
        v = v << 4 | (uint32_t)d;
    }
    *unit = v;
    return 1;
}

/* One character of a string body at p (p < end, *p != '"'): a raw UTF-8 sequence
 * or an escape. Its UTF-8 bytes go to out (*out_len of them); returns the number
 * of text bytes it took, or 0 with *error saying what is wrong. */
static size_t string_unit(const unsigned char *p, const unsigned char *end, unsigned char out[4], size_t *out_len,
                          const char **error) {
    if (*p < 0x20) { *error = "a raw control character in a string"; return 0; }
    if (*p != '\\') {
        size_t n = utf8_length(p, end);
        if (!n) { *error = "invalid UTF-8 in a string"; return 0; }
        memcpy(out, p, n);
        *out_len = n;
        return n;
    }
    static const char simple_from[] = "\"\\/bfnrt", simple_to[] = "\"\\/\b\f\n\r\t";
    if (end - p < 2) { *error = "an unterminated string"; return 0; }
    const char *simple = p[1] ? strchr(simple_from, p[1]) : NULL;
    if (simple) {
        out[0] = (unsigned char)simple_to[simple - simple_from];
        *out_len = 1;
        return 2;
    }
    if (p[1] != 'u') { *error = "an invalid escape in a string"; return 0; }
    uint32_t cp, low;
    if (!hex4(p + 2, end, &cp)) { *error = "\\u without 4 hex digits"; return 0; }
    size_t taken = 6;
    if (cp >= 0xdc00 && cp <= 0xdfff) { *error = "an unpaired low surrogate \\uDC00-\\uDFFF"; return 0; }
    if (cp >= 0xd800 && cp <= 0xdbff) {
        if (end - p < 12 || p[6] != '\\' || p[7] != 'u' || !hex4(p + 8, end, &low) || low < 0xdc00 || low > 0xdfff) {
            *error = "a high surrogate \\uD800-\\uDBFF without its low half";
            return 0;
        }
        cp = 0x10000 + ((cp - 0xd800) << 10) + (low - 0xdc00);
        taken = 12;
    }
    if (cp == 0) { *error = "\\u0000 (NUL) in a string"; return 0; }
    *out_len = utf8_encode(cp, out);
    return taken;
}

/* ---- the tokenizer ---------------------------------------------------------------- */

typedef struct {
    qkv_json *doc;
    const unsigned char *p, *end;
    uint32_t cap; /* allocated tokens */
} parser;

static int fail(parser *ps, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(parser *ps, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ps->doc->error, sizeof ps->doc->error, fmt, ap);
    va_end(ap);
    return -1;
}

static size_t offset(const parser *ps) { return (size_t)(ps->p - ps->doc->text); }

/* "expected <what>, found 'x' at offset 12" (or a byte value, or the end). */
static int fail_expected(parser *ps, const char *what) {
    if (ps->p >= ps->end) return fail(ps, "expected %s, found the end of the text", what);
    int c = *ps->p;
    if (c >= 0x20 && c < 0x7f) return fail(ps, "expected %s, found '%c' at offset %zu", what, c, offset(ps));
    return fail(ps, "expected %s, found byte 0x%02x at offset %zu", what, c, offset(ps));
}

static int peek(const parser *ps) { return ps->p < ps->end ? *ps->p : -1; }
static int is_digit(int c) { return c >= '0' && c <= '9'; }

static void skip_space(parser *ps) {
    while (ps->p < ps->end && (*ps->p == ' ' || *ps->p == '\n' || *ps->p == '\r' || *ps->p == '\t')) ps->p++;
}

/* Appends a token starting at start; its next is the token after it (containers
 * fix theirs when they close). */
static qkv_json_token *add_token(parser *ps, int type, const unsigned char *start) {
    qkv_json *doc = ps->doc;
    if (doc->n_tokens == ps->cap) {
        uint32_t cap = ps->cap ? (ps->cap > UINT32_MAX / 2 ? UINT32_MAX : ps->cap * 2) : 64;
        qkv_json_token *grown = cap == ps->cap ? NULL : qkv_try_realloc(doc->tokens, (size_t)cap * sizeof *grown, NULL, "JSON tokens");
        if (!grown) {
            fail(ps, "%s", cap == ps->cap ? "too many tokens" : qkv_last_error());
            return NULL;
        }
        doc->tokens = grown;
        ps->cap = cap;
    }
    qkv_json_token *t = &doc->tokens[doc->n_tokens++];
    memset(t, 0, sizeof *t);
    t->type = (unsigned char)type;
    t->start = (uint32_t)(start - doc->text);
    t->next = doc->n_tokens;
    return t;
}

static int scan_string(parser *ps) {
    const unsigned char *body = ++ps->p;
    int escaped = 0;
    for (;;) {
        if (ps->p >= ps->end) return fail(ps, "unterminated string starting at offset %zu", offset(ps) - 1);
        int c = *ps->p;
        if (c == '"') break;
        if (c >= 0x20 && c < 0x80 && c != '\\') { ps->p++; continue; }
        escaped |= c == '\\';
        unsigned char out[4];
        size_t out_len;
        const char *error = NULL;
        size_t n = string_unit(ps->p, ps->end, out, &out_len, &error);
        if (!n) return fail(ps, "%s at offset %zu", error, offset(ps));
        ps->p += n;
    }
    qkv_json_token *t = add_token(ps, QKV_JSON_STRING, body);
    if (!t) return -1;
    t->len = (uint32_t)(ps->p - body);
    t->escaped = (unsigned char)escaped;
    ps->p++;
    return 0;
}

/* -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)? */
static int scan_number(parser *ps) {
    const unsigned char *start = ps->p;
    if (peek(ps) == '-') ps->p++;
    if (!is_digit(peek(ps))) return fail_expected(ps, "a digit in a number");
    if (peek(ps) == '0') {
        ps->p++;
        if (is_digit(peek(ps))) return fail(ps, "a number with a leading zero at offset %zu", offset(ps) - 1);
    }
    while (is_digit(peek(ps))) ps->p++;
    if (peek(ps) == '.') {
        ps->p++;
        if (!is_digit(peek(ps))) return fail_expected(ps, "a digit after '.'");
        while (is_digit(peek(ps))) ps->p++;
    }
    if (peek(ps) == 'e' || peek(ps) == 'E') {
        ps->p++;
        if (peek(ps) == '+' || peek(ps) == '-') ps->p++;
        if (!is_digit(peek(ps))) return fail_expected(ps, "a digit in an exponent");
        while (is_digit(peek(ps))) ps->p++;
    }
    qkv_json_token *t = add_token(ps, QKV_JSON_NUMBER, start);
    if (!t) return -1;
    t->len = (uint32_t)(ps->p - start);
    return 0;
}

static int scan_scalar(parser *ps) {
    static const struct { const char *word; int type; } literals[] = {
        {"true", QKV_JSON_TRUE}, {"false", QKV_JSON_FALSE}, {"null", QKV_JSON_NULL}};
    int c = peek(ps);
    if (c == '"') return scan_string(ps);
    if (c == '-' || is_digit(c)) return scan_number(ps);
    for (size_t k = 0; k < sizeof literals / sizeof literals[0]; k++) {
        size_t n = strlen(literals[k].word);
        if ((size_t)(ps->end - ps->p) >= n && memcmp(ps->p, literals[k].word, n) == 0) {
            qkv_json_token *t = add_token(ps, literals[k].type, ps->p);
            if (!t) return -1;
            t->len = (uint32_t)n;
            ps->p += n;
            return 0;
        }
    }
    return fail_expected(ps, "a value");
}

/* Closes the container on top of the stack. */
static void close_container(parser *ps, const uint32_t *stack, int *depth) {
    qkv_json_token *t = &ps->doc->tokens[stack[--*depth]];
    t->next = ps->doc->n_tokens;
    t->len = (uint32_t)(ps->p - ps->doc->text) - t->start;
}

static int tokenize(parser *ps, int max_depth) {
    uint32_t stack[QKV_JSON_MAX_DEPTH];
    int depth = 0;
    enum { WANT_VALUE, WANT_KEY, AFTER_VALUE } state = WANT_VALUE;
    for (;;) {
        skip_space(ps);
        int c = peek(ps);
        if (state == WANT_VALUE && (c == '{' || c == '[')) {
            if (depth == max_depth) return fail(ps, "nesting deeper than %d at offset %zu", max_depth, offset(ps));
            if (!add_token(ps, c == '{' ? QKV_JSON_OBJECT : QKV_JSON_ARRAY, ps->p)) return -1;
            stack[depth++] = ps->doc->n_tokens - 1;
            ps->p++;
            skip_space(ps);
            if (peek(ps) == (c == '{' ? '}' : ']')) {
                ps->p++;
                close_container(ps, stack, &depth);
                state = AFTER_VALUE;
            } else {
                state = c == '{' ? WANT_KEY : WANT_VALUE;
            }
        } else if (state == WANT_VALUE) {
            if (scan_scalar(ps)) return -1;
            state = AFTER_VALUE;
        } else if (state == WANT_KEY) {
            if (c != '"') return fail_expected(ps, "a string key");
            if (scan_string(ps)) return -1;
            skip_space(ps);
            if (peek(ps) != ':') return fail_expected(ps, "':' after an object key");
            ps->p++;
            state = WANT_VALUE;
        } else if (depth == 0) { /* AFTER_VALUE: the top-level value is complete */
            if (ps->p != ps->end) return fail_expected(ps, "the end of the text after the value");
            return 0;
        } else {                 /* AFTER_VALUE inside a container */
            qkv_json_token *top = &ps->doc->tokens[stack[depth - 1]];
            int is_object = top->type == QKV_JSON_OBJECT;
            top->count++;
            if (c == ',') {
                ps->p++;
                state = is_object ? WANT_KEY : WANT_VALUE;
            } else if (c == (is_object ? '}' : ']')) {
                ps->p++;
                close_container(ps, stack, &depth);
            } else {
                return fail_expected(ps, is_object ? "',' or '}' after an object member"
                                                   : "',' or ']' after an array element");
            }
        }
    }
}

int qkv_json_parse(qkv_json *doc, const unsigned char *text, size_t len, int max_depth) {
    QKV_CHECK(doc != NULL && (text != NULL || len == 0), "json_parse: NULL argument");
    QKV_CHECK(max_depth >= 1 && max_depth <= QKV_JSON_MAX_DEPTH, "json_parse: max_depth %d outside 1..%d",
              max_depth, QKV_JSON_MAX_DEPTH);
    memset(doc, 0, sizeof *doc);
    doc->text = text;
    doc->len = len;
    parser ps = {doc, text, text + len, 0};
    if (len >= UINT32_MAX) return fail(&ps, "text of %zu bytes is too long (4 GiB at most)", len);
    if (tokenize(&ps, max_depth) == 0) return 0;
    free(doc->tokens);
    doc->tokens = NULL;
    doc->n_tokens = 0;
    return -1;
}

void qkv_json_free(qkv_json *doc) {
    free(doc->tokens);
    doc->tokens = NULL;
    doc->n_tokens = 0;
}

const char *qkv_json_type_name(int type) {
    static const char *const names[] = {"object", "array", "string", "number", "true", "false", "null"};
    return type >= 0 && type <= QKV_JSON_NULL ? names[type] : "invalid token";
}

/* ---- reading values ---------------------------------------------------------------- */

int qkv_json_equals(const qkv_json *doc, uint32_t i, const char *s) {
    const qkv_json_token *t = &doc->tokens[i];
    if (t->type != QKV_JSON_STRING) return 0;
    const unsigned char *p = doc->text + t->start, *end = p + t->len;
    size_t s_len = strlen(s), k = 0;
    if (!t->escaped) return t->len == s_len && memcmp(p, s, s_len) == 0;
    while (p < end) {
        unsigned char out[4];
        size_t out_len = 0;
        const char *error;
        size_t taken = string_unit(p, end, out, &out_len, &error); /* validated by the parse */
        if (!taken || out_len > s_len - k || memcmp(out, s + k, out_len) != 0) return 0;
        p += taken;
        k += out_len;
    }
    return k == s_len;
}

size_t qkv_json_decode(const qkv_json *doc, uint32_t i, char *out, size_t cap) {
    const qkv_json_token *t = &doc->tokens[i];
    QKV_CHECK(t->type == QKV_JSON_STRING && cap >= 1, "json_decode: token %" PRIu32 " is a %s", i,
              qkv_json_type_name(t->type));
    const unsigned char *p = doc->text + t->start, *end = p + t->len;
    if (!t->escaped && t->len < cap) {
        memcpy(out, p, t->len);
        out[t->len] = '\0';
        return t->len;
    }
    size_t total = 0, written = 0;
    int cut = 0;
    while (p < end) {
        unsigned char bytes[4];
        size_t n = 0;
        const char *error;
        size_t taken = string_unit(p, end, bytes, &n, &error); /* validated by the parse */
        if (!taken) break;
        p += taken;
        if (!cut && written + n < cap) {
            memcpy(out + written, bytes, n);
            written += n;
        } else {
            cut = 1;
        }
        total += n;
    }
    out[written] = '\0';
    return total;
}

int qkv_json_uint(const qkv_json *doc, uint32_t i, uint64_t *value) {
    const qkv_json_token *t = &doc->tokens[i];
    if (t->type != QKV_JSON_NUMBER) return QKV_JSON_NOT_UINT;
    const unsigned char *p = doc->text + t->start;
    uint64_t v = 0;
    for (uint32_t k = 0; k < t->len; k++) {
        if (!is_digit(p[k])) return QKV_JSON_NOT_UINT;
        uint64_t digit = (uint64_t)(p[k] - '0');
        if (v > (UINT64_MAX - digit) / 10) return QKV_JSON_UINT_TOO_LARGE;
        v = v * 10 + digit;
    }
    *value = v;
    return QKV_JSON_UINT_OK;
}

/* ---- writing ------------------------------------------------------------------------ */

static int reserve(qkv_json_out *out, size_t n) {
    if (out->failed) return -1;
    if (n < out->cap - out->len) return 0; /* keeps room for the '\0' */
    size_t cap = out->cap ? out->cap : 256;
    while (cap - out->len <= n) {
        if (cap > SIZE_MAX / 2) { out->failed = 1; return -1; }
        cap *= 2;
    }
    char *grown = qkv_try_realloc(out->data, cap, NULL, "JSON text");
    if (!grown) { out->failed = 1; return -1; }
    out->data = grown;
    out->cap = cap;
    return 0;
}

void qkv_json_out_bytes(qkv_json_out *out, const char *bytes, size_t n) {
    if (reserve(out, n)) return;
    memcpy(out->data + out->len, bytes, n);
    out->len += n;
    out->data[out->len] = '\0';
}

void qkv_json_out_text(qkv_json_out *out, const char *s) { qkv_json_out_bytes(out, s, strlen(s)); }

void qkv_json_out_uint(qkv_json_out *out, uint64_t value) {
    char digits[24];
    int n = snprintf(digits, sizeof digits, "%" PRIu64, value);
    qkv_json_out_bytes(out, digits, (size_t)n);
}

/* '"', '\\' and the control characters escaped; everything else as it is. */
void qkv_json_out_string(qkv_json_out *out, const char *s) {
    qkv_json_out_bytes(out, "\"", 1);
    const char *run = s;
    for (;; s++) {
        unsigned char c = (unsigned char)*s;
        if (c >= 0x20 && c != '"' && c != '\\') continue;
        qkv_json_out_bytes(out, run, (size_t)(s - run));
        if (c == '\0') break;
        char escape[8];
        const char *named = c == '"' ? "\\\"" : c == '\\' ? "\\\\" : c == '\b' ? "\\b" : c == '\f' ? "\\f"
                          : c == '\n' ? "\\n" : c == '\r' ? "\\r" : c == '\t' ? "\\t" : NULL;
        if (!named) snprintf(escape, sizeof escape, "\\u%04x", c);
        qkv_json_out_text(out, named ? named : escape);
        run = s + 1;
    }
    qkv_json_out_bytes(out, "\"", 1);
}

void qkv_json_out_free(qkv_json_out *out) {
    free(out->data);
    memset(out, 0, sizeof *out);
}
