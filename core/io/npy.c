/* npy.c — single tensors in NumPy's .npy format. See npy.h.
 *
 * Contract: qkv_npy_save writes version 1.0, '<f4', C order, the header padded with
 * spaces and a final '\n' so that the data starts at a multiple of 64 bytes (what
 * numpy writes), through qkv_atomic_* (fileio.h: temporary file, fsync, rename,
 * directory fsync); on failure the temporary file is removed and the previous file
 * is untouched.
 *
 * qkv_npy_parse treats its bytes as hostile: every read is bounds-checked against
 * len, the header dict is parsed by a small hand-written parser (a subset of Python
 * literal syntax: the keys 'descr', 'fortran_order', 'shape' once each in any
 * order, single or double quotes, whitespace, trailing commas), the element count
 * is multiplied with overflow checks, and the data must be exactly the rest of the
 * buffer. qkv_npy_load (through fileio.h's reader: regular files only, a file
 * that changes size while being read is refused) validates the header against the
 * file size before it reads the data, so a small header in front of a huge file is
 * refused unread.
 * Errors: NULL or -1 with qkv_last_error() = "<path>: <what was wrong>".
 */
#include "core/io/npy.h"

#include <limits.h>
#include <stdint.h>
#include <string.h>

#include "core/error.h"
#include "core/fileio.h"
#include "core/ops/tape.h"

#define NPY_ALIGN 64
#define NPY_PREAMBLE_MAX 12            /* magic 6 + version 2 + header length 2 or 4 */
#define NPY_MAX_HEADER ((size_t)1 << 20) /* a real <=4-dim header is < 200 bytes */

static const unsigned char npy_magic[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};

/* What the header says about the data that follows it. */
typedef struct {
    size_t data_offset; /* preamble + header text */
    size_t itemsize;    /* 4 ('<f4') or 8 ('<f8') */
    int ndim;
    int shape[QKV_MAX_DIMS];
    size_t count;       /* product of the shape */
} npy_header;

/* ---- the header dict parser ----------------------------------------------- */

typedef struct {
    const unsigned char *p, *start, *end;
    const char *what;
} cursor;

static int peek(const cursor *c) { return c->p < c->end ? *c->p : -1; }

static void skip_space(cursor *c) {
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r'))
        c->p++;
}

/* "'x' at header offset 12", "byte 0x93 at ...", or "the end of the header". */
static const char *describe_here(const cursor *c, char *buf, size_t len) {
    int ch = peek(c);
    long offset = (long)(c->p - c->start);
    if (ch < 0)
        snprintf(buf, len, "the end of the header");
    else if (ch >= 0x20 && ch < 0x7f)
        snprintf(buf, len, "'%c' at header offset %ld", ch, offset);
    else
        snprintf(buf, len, "byte 0x%02x at header offset %ld", ch, offset);
    return buf;
}

static int fail_at(const cursor *c, const char *expected) {
    char here[64];
    return qkv_file_fail(c->what, "bad header: expected %s, found %s", expected,
                         describe_here(c, here, sizeof here));
}

static int expect_char(cursor *c, int ch, const char *expected) {
    skip_space(c);
    if (peek(c) != ch) return fail_at(c, expected);
    c->p++;
    return 0;
}

/* A quoted string of printable ASCII without escapes, at most cap-1 bytes. */
static int parse_string(cursor *c, char *out, size_t cap, const char *expected) {
    skip_space(c);
    int quote = peek(c);
    if (quote != '\'' && quote != '"') return fail_at(c, expected);
    c->p++;
    size_t n = 0;
    while (peek(c) != quote) {
        int ch = peek(c);
        if (ch < 0) return qkv_file_fail(c->what, "bad header: unterminated string");
        if (ch < 0x20 || ch >= 0x7f || ch == '\\') return fail_at(c, "a plain ASCII character in a string");
        if (n + 1 >= cap) return qkv_file_fail(c->what, "bad header: string '%.*s...' too long", (int)n, out);
        out[n++] = (char)ch;
        c->p++;
    }
    c->p++;
    out[n] = '\0';
    return 0;
}

static int is_word_char(int ch) {
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
           ch == '_' || ch == '.';
}

static int parse_bool(cursor *c, int *value) {
    skip_space(c);
    const unsigned char *word = c->p;
    while (is_word_char(peek(c))) c->p++;
    size_t n = (size_t)(c->p - word);
    if (n == 4 && memcmp(word, "True", 4) == 0) { *value = 1; return 0; }
    if (n == 5 && memcmp(word, "False", 5) == 0) { *value = 0; return 0; }
    c->p = word;
    return fail_at(c, "True or False for 'fortran_order'");
}

/* A decimal dim in 1..INT_MAX (qkv shapes are int). */
static int parse_dim(cursor *c, int index, int *dim) {
    skip_space(c);
    if (peek(c) == '-') return qkv_file_fail(c->what, "bad shape: dim %d is negative", index);
    if (peek(c) < '0' || peek(c) > '9') return fail_at(c, "a dim (a non-negative integer)");
    long long value = 0;
    while (peek(c) >= '0' && peek(c) <= '9') {
        value = value * 10 + (peek(c) - '0');
        if (value > INT_MAX)
            return qkv_file_fail(c->what, "bad shape: dim %d is too large (more than %d)", index, INT_MAX);
        c->p++;
    }
    if (is_word_char(peek(c))) return fail_at(c, "a plain decimal integer dim");
    if (value == 0)
        return qkv_file_fail(c->what, "bad shape: dim %d is 0 (empty tensors are not supported)", index);
    *dim = (int)value;
    return 0;
}

/* A Python tuple of 0..4 dims: "()", "(3,)", "(2, 3)", "(2, 3,)". */
static int parse_shape(cursor *c, npy_header *h) {
    if (expect_char(c, '(', "'(' starting the shape tuple")) return -1;
    h->ndim = 0;
    skip_space(c);
    if (peek(c) == ')') { c->p++; return 0; }
    for (;;) {
        if (h->ndim == QKV_MAX_DIMS)
            return qkv_file_fail(c->what, "bad shape: more than %d dims", QKV_MAX_DIMS);
        if (parse_dim(c, h->ndim, &h->shape[h->ndim])) return -1;
        h->ndim++;
        skip_space(c);
        if (peek(c) == ',') {
            c->p++;
            skip_space(c);
            if (peek(c) == ')') { c->p++; return 0; }
        } else if (peek(c) == ')') {
            if (h->ndim == 1)
                return qkv_file_fail(c->what, "bad shape: (%d) is not a tuple; write (%d,)", h->shape[0],
                                     h->shape[0]);
            c->p++;
            return 0;
        } else {
            return fail_at(c, "',' or ')' in the shape tuple");
        }
    }
}

static int parse_descr(cursor *c, npy_header *h) {
    char descr[16];
    if (parse_string(c, descr, sizeof descr, "a dtype string for 'descr'")) return -1;
    if (strcmp(descr, "<f4") == 0) { h->itemsize = 4; return 0; }
    if (strcmp(descr, "<f8") == 0) { h->itemsize = 8; return 0; }
    if (descr[0] == '>')
        return qkv_file_fail(c->what, "big-endian dtype '%s' is not supported (need '<f4' or '<f8')", descr);
    return qkv_file_fail(c->what, "dtype '%s' is not supported (need '<f4' or '<f8')", descr);
}

static int parse_fortran_order(cursor *c) {
    int fortran = 0;
    if (parse_bool(c, &fortran)) return -1;
    if (fortran) return qkv_file_fail(c->what, "fortran_order True is not supported (save in C order)");
    return 0;
}

enum { KEY_DESCR, KEY_FORTRAN, KEY_SHAPE, N_KEYS };
static const char *const key_names[N_KEYS] = {"descr", "fortran_order", "shape"};

static int parse_entry(cursor *c, npy_header *h, int seen[N_KEYS]) {
    char key[32];
    if (parse_string(c, key, sizeof key, "a quoted key or '}'")) return -1;
    int k = 0;
    while (k < N_KEYS && strcmp(key, key_names[k]) != 0) k++;
    if (k == N_KEYS) return qkv_file_fail(c->what, "bad header: unexpected key '%s'", key);
    if (seen[k]) return qkv_file_fail(c->what, "bad header: duplicate key '%s'", key);
    seen[k] = 1;
    if (expect_char(c, ':', "':' after a key")) return -1;
    switch (k) {
    case KEY_DESCR: return parse_descr(c, h);
    case KEY_FORTRAN: return parse_fortran_order(c);
    default: return parse_shape(c, h);
    }
}

/* The dict, then only whitespace to the end of the header. */
static int parse_dict(cursor *c, npy_header *h) {
    int seen[N_KEYS] = {0};
    if (expect_char(c, '{', "'{' starting the header dict")) return -1;
    for (;;) {
        skip_space(c);
        if (peek(c) == '}') break;
        if (parse_entry(c, h, seen)) return -1;
        skip_space(c);
        if (peek(c) == ',') { c->p++; continue; }
        if (peek(c) != '}') return fail_at(c, "',' or '}' after a dict entry");
    }
    c->p++;
    skip_space(c);
    if (c->p != c->end) return fail_at(c, "only whitespace after the header dict");
    for (int k = 0; k < N_KEYS; k++)
        if (!seen[k]) return qkv_file_fail(c->what, "bad header: missing key '%s'", key_names[k]);
    return 0;
}

/* ---- preamble, sizes -------------------------------------------------------- */

/* Magic, version and header length, checked against file_len (the whole file).
 * Reads only bytes [0, min(file_len, 12)) of b. */
static int parse_preamble(const unsigned char *b, size_t file_len, const char *what,
                          size_t *header_start, size_t *header_len) {
    if (file_len < 10) return qkv_file_fail(what, "too short to be a .npy file (%zu bytes)", file_len);
    if (memcmp(b, npy_magic, sizeof npy_magic) != 0) return qkv_file_fail(what, "not a .npy file (bad magic)");
    int major = b[6], minor = b[7];
    if (major < 1 || major > 3 || minor != 0)
        return qkv_file_fail(what, "unsupported .npy version %d.%d (need 1.0, 2.0 or 3.0)", major, minor);
    if (major == 1) {
        *header_start = 10;
        *header_len = (size_t)b[8] | (size_t)b[9] << 8;
    } else {
        if (file_len < 12) return qkv_file_fail(what, "truncated .npy header (%zu bytes)", file_len);
        *header_start = 12;
        *header_len = (size_t)b[8] | (size_t)b[9] << 8 | (size_t)b[10] << 16 | (size_t)b[11] << 24;
    }
    if (*header_len > file_len - *header_start)
        return qkv_file_fail(what, "header length %zu runs past the end of the file (%zu bytes)", *header_len,
                             file_len);
    if (*header_len > NPY_MAX_HEADER)
        return qkv_file_fail(what, "header length %zu exceeds the limit of %zu bytes", *header_len,
                             NPY_MAX_HEADER);
    return 0;
}

/* The whole header; b holds at least its first avail bytes, which must cover the
 * header (as parse_preamble reports it). The data must be exactly the rest of
 * file_len. */
static int parse_header(const unsigned char *b, size_t avail, size_t file_len, const char *what,
                        npy_header *h) {
    size_t start, len;
    if (parse_preamble(b, file_len, what, &start, &len)) return -1;
    if (start + len > avail) return qkv_file_fail(what, "internal: header not in memory");
    memset(h, 0, sizeof *h);
    cursor c = {b + start, b + start, b + start + len, what};
    if (parse_dict(&c, h)) return -1;
    h->data_offset = start + len;
    size_t count = 1;
    for (int i = 0; i < h->ndim; i++)
        if (__builtin_mul_overflow(count, (size_t)h->shape[i], &count))
            return qkv_file_fail(what, "bad shape: the element count overflows");
    size_t data_bytes;
    if (__builtin_mul_overflow(count, h->itemsize, &data_bytes))
        return qkv_file_fail(what, "bad shape: the data size overflows");
    h->count = count;
    size_t found = file_len - h->data_offset;
    if (found < data_bytes)
        return qkv_file_fail(what, "data truncated: the shape needs %zu bytes, the file has %zu", data_bytes,
                             found);
    if (found > data_bytes)
        return qkv_file_fail(what, "trailing bytes: the shape needs %zu bytes of data, the file has %zu",
                             data_bytes, found);
    return 0;
}

static float decode_f8(const unsigned char *p) {
    uint64_t u = 0;
    for (int i = 7; i >= 0; i--) u = u << 8 | p[i];
    double d;
    memcpy(&d, &u, sizeof d);
    return (float)d;
}

qkv_tensor *qkv_npy_parse(const unsigned char *bytes, size_t len, const char *what, int requires_grad) {
    npy_header h;
    if (!bytes && len) { qkv_file_fail(what, "no bytes"); return NULL; }
    if (parse_header(bytes, len, len, what, &h)) return NULL;
    qkv_tensor *t = qkv_tensor_try_create(what, NULL, h.ndim, h.shape, requires_grad);
    if (!t) return NULL;
    const unsigned char *data = bytes + h.data_offset;
    if (h.itemsize == 4)
        qkv_f32_from_le(t->data, data, h.count);
    else
        for (size_t i = 0; i < h.count; i++) t->data[i] = decode_f8(data + 8 * i);
    return t;
}

/* ---- load ---------------------------------------------------------------- */

/* The header is read and validated against the file size before the data is
 * read: a small header in front of a huge file is refused unread. */
qkv_tensor *qkv_npy_load(const char *path, int requires_grad) {
    QKV_CHECK(path != NULL, "npy_load: path is NULL");
    qkv_file_reader r;
    if (qkv_reader_open(&r, path, QKV_READ_ANY_SIZE)) return NULL;
    size_t have = r.size < NPY_PREAMBLE_MAX ? r.size : NPY_PREAMBLE_MAX;
    size_t start, header_len;
    npy_header h;
    qkv_tensor *t = NULL;
    const unsigned char *b = qkv_reader_head(&r, have);
    if (b && parse_preamble(b, r.size, path, &start, &header_len) == 0 &&
        (b = qkv_reader_head(&r, start + header_len)) != NULL &&
        parse_header(b, start + header_len, r.size, path, &h) == 0 &&
        (b = qkv_reader_head(&r, r.size)) != NULL && qkv_reader_end(&r) == 0)
        t = qkv_npy_parse(b, r.size, path, requires_grad);
    qkv_reader_close(&r);
    return t;
}

/* ---- save ---------------------------------------------------------------- */

/* Preamble + dict + padding, numpy's layout; returns the total header size. */
static size_t format_header(const qkv_tensor *t, char *out, size_t cap) {
    char dict[192];
    int n = snprintf(dict, sizeof dict, "{'descr': '<f4', 'fortran_order': False, 'shape': (");
    for (int i = 0; i < t->ndim; i++)
        n += snprintf(dict + n, sizeof dict - (size_t)n, i ? ", %d" : "%d", t->shape[i]);
    n += snprintf(dict + n, sizeof dict - (size_t)n, "%s), }", t->ndim == 1 ? "," : "");
    size_t total = 10 + (size_t)n + 1; /* the header ends with '\n' */
    total = (total + NPY_ALIGN - 1) / NPY_ALIGN * NPY_ALIGN;
    QKV_CHECK(total <= cap && total - 10 <= 0xffff, "npy_save: header of %zu bytes", total);
    size_t header_len = total - 10;
    memcpy(out, npy_magic, sizeof npy_magic);
    out[6] = 1;
    out[7] = 0;
    out[8] = (char)(header_len & 0xff);
    out[9] = (char)(header_len >> 8);
    memcpy(out + 10, dict, (size_t)n);
    memset(out + 10 + n, ' ', total - 10 - (size_t)n - 1);
    out[total - 1] = '\n';
    return total;
}

int qkv_npy_save(const char *path, const qkv_tensor *t) {
    QKV_CHECK(path != NULL, "npy_save: path is NULL");
    qkv_tensor_check_live(t, "npy_save");
    char header[256];
    size_t header_size = format_header(t, header, sizeof header);
    qkv_atomic_file f;
    if (qkv_atomic_open(&f, path) || qkv_atomic_write(&f, header, header_size) ||
        qkv_atomic_write_f32(&f, t->data, t->size))
        return -1;
    return qkv_atomic_commit(&f);
}
