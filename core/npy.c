/* npy.c — single tensors in NumPy's .npy format. See npy.h.
 *
 * Contract: qkv_npy_save writes version 1.0, '<f4', C order, the header padded with
 * spaces and a final '\n' so that the data starts at a multiple of 64 bytes (what
 * numpy writes), to "<path>.tmp.<pid>", then fflush, fsync, fclose and rename; on
 * failure the temporary file is removed and the previous file is untouched.
 *
 * qkv_npy_parse treats its bytes as hostile: every read is bounds-checked against
 * len, the header dict is parsed by a small hand-written parser (a subset of Python
 * literal syntax: the keys 'descr', 'fortran_order', 'shape' once each in any
 * order, single or double quotes, whitespace, trailing commas), the element count
 * is multiplied with overflow checks, and the data must be exactly the rest of the
 * buffer. qkv_npy_load validates the header against the file size before it reads
 * the data, so a small header in front of a huge file is refused unread.
 * Errors: NULL or -1 with qkv_last_error() = "<path>: <what was wrong>".
 */
#include "npy.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "error.h"

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

/* Records "<what>: <reason>" and returns -1. */
static int fail(const char *what, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(const char *what, const char *fmt, ...) {
    char reason[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(reason, sizeof reason, fmt, ap);
    va_end(ap);
    qkv_set_error("%s: %s", what ? what : "(npy)", reason);
    return -1;
}

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
    return fail(c->what, "bad header: expected %s, found %s", expected, describe_here(c, here, sizeof here));
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
        if (ch < 0) return fail(c->what, "bad header: unterminated string");
        if (ch < 0x20 || ch >= 0x7f || ch == '\\') return fail_at(c, "a plain ASCII character in a string");
        if (n + 1 >= cap) return fail(c->what, "bad header: string '%.*s...' too long", (int)n, out);
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
    if (peek(c) == '-') return fail(c->what, "bad shape: dim %d is negative", index);
    if (peek(c) < '0' || peek(c) > '9') return fail_at(c, "a dim (a non-negative integer)");
    long long value = 0;
    while (peek(c) >= '0' && peek(c) <= '9') {
        value = value * 10 + (peek(c) - '0');
        if (value > INT_MAX) return fail(c->what, "bad shape: dim %d is too large (more than %d)", index, INT_MAX);
        c->p++;
    }
    if (is_word_char(peek(c))) return fail_at(c, "a plain decimal integer dim");
    if (value == 0) return fail(c->what, "bad shape: dim %d is 0 (empty tensors are not supported)", index);
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
        if (h->ndim == QKV_MAX_DIMS) return fail(c->what, "bad shape: more than %d dims", QKV_MAX_DIMS);
        if (parse_dim(c, h->ndim, &h->shape[h->ndim])) return -1;
        h->ndim++;
        skip_space(c);
        if (peek(c) == ',') {
            c->p++;
            skip_space(c);
            if (peek(c) == ')') { c->p++; return 0; }
        } else if (peek(c) == ')') {
            if (h->ndim == 1) return fail(c->what, "bad shape: (%d) is not a tuple; write (%d,)", h->shape[0], h->shape[0]);
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
        return fail(c->what, "big-endian dtype '%s' is not supported (need '<f4' or '<f8')", descr);
    return fail(c->what, "dtype '%s' is not supported (need '<f4' or '<f8')", descr);
}

static int parse_fortran_order(cursor *c) {
    int fortran = 0;
    if (parse_bool(c, &fortran)) return -1;
    if (fortran) return fail(c->what, "fortran_order True is not supported (save in C order)");
    return 0;
}

enum { KEY_DESCR, KEY_FORTRAN, KEY_SHAPE, N_KEYS };
static const char *const key_names[N_KEYS] = {"descr", "fortran_order", "shape"};

static int parse_entry(cursor *c, npy_header *h, int seen[N_KEYS]) {
    char key[32];
    if (parse_string(c, key, sizeof key, "a quoted key or '}'")) return -1;
    int k = 0;
    while (k < N_KEYS && strcmp(key, key_names[k]) != 0) k++;
    if (k == N_KEYS) return fail(c->what, "bad header: unexpected key '%s'", key);
    if (seen[k]) return fail(c->what, "bad header: duplicate key '%s'", key);
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
        if (!seen[k]) return fail(c->what, "bad header: missing key '%s'", key_names[k]);
    return 0;
}

/* ---- preamble, sizes -------------------------------------------------------- */

/* Magic, version and header length, checked against file_len (the whole file).
 * Reads only bytes [0, min(file_len, 12)) of b. */
static int parse_preamble(const unsigned char *b, size_t file_len, const char *what,
                          size_t *header_start, size_t *header_len) {
    if (file_len < 10) return fail(what, "too short to be a .npy file (%zu bytes)", file_len);
    if (memcmp(b, npy_magic, sizeof npy_magic) != 0) return fail(what, "not a .npy file (bad magic)");
    int major = b[6], minor = b[7];
    if (major < 1 || major > 3 || minor != 0)
        return fail(what, "unsupported .npy version %d.%d (need 1.0, 2.0 or 3.0)", major, minor);
    if (major == 1) {
        *header_start = 10;
        *header_len = (size_t)b[8] | (size_t)b[9] << 8;
    } else {
        if (file_len < 12) return fail(what, "truncated .npy header (%zu bytes)", file_len);
        *header_start = 12;
        *header_len = (size_t)b[8] | (size_t)b[9] << 8 | (size_t)b[10] << 16 | (size_t)b[11] << 24;
    }
    if (*header_len > file_len - *header_start)
        return fail(what, "header length %zu runs past the end of the file (%zu bytes)", *header_len, file_len);
    if (*header_len > NPY_MAX_HEADER)
        return fail(what, "header length %zu exceeds the limit of %zu bytes", *header_len, NPY_MAX_HEADER);
    return 0;
}

/* The whole header; b holds at least its first avail bytes, which must cover the
 * header (as parse_preamble reports it). The data must be exactly the rest of
 * file_len. */
static int parse_header(const unsigned char *b, size_t avail, size_t file_len, const char *what,
                        npy_header *h) {
    size_t start, len;
    if (parse_preamble(b, file_len, what, &start, &len)) return -1;
    if (start + len > avail) return fail(what, "internal: header not in memory");
    memset(h, 0, sizeof *h);
    cursor c = {b + start, b + start, b + start + len, what};
    if (parse_dict(&c, h)) return -1;
    h->data_offset = start + len;
    size_t count = 1;
    for (int i = 0; i < h->ndim; i++)
        if (__builtin_mul_overflow(count, (size_t)h->shape[i], &count))
            return fail(what, "bad shape: the element count overflows");
    size_t data_bytes;
    if (__builtin_mul_overflow(count, h->itemsize, &data_bytes))
        return fail(what, "bad shape: the data size overflows");
    h->count = count;
    size_t found = file_len - h->data_offset;
    if (found < data_bytes)
        return fail(what, "data truncated: the shape needs %zu bytes, the file has %zu", data_bytes, found);
    if (found > data_bytes)
        return fail(what, "trailing bytes: the shape needs %zu bytes of data, the file has %zu", data_bytes, found);
    return 0;
}

static float decode_f4(const unsigned char *p) {
    uint32_t u = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
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
    if (!bytes && len) { fail(what, "no bytes"); return NULL; }
    if (parse_header(bytes, len, len, what, &h)) return NULL;
    qkv_tensor *t = qkv_tensor_create(NULL, h.ndim, h.shape, requires_grad);
    const unsigned char *data = bytes + h.data_offset;
    for (size_t i = 0; i < h.count; i++)
        t->data[i] = h.itemsize == 4 ? decode_f4(data + 4 * i) : decode_f8(data + 8 * i);
    return t;
}

/* ---- load ---------------------------------------------------------------- */

/* Reads exactly n bytes; -1 with errno on a read error, or the count read at EOF. */
static ssize_t read_full(int fd, unsigned char *buf, size_t n) {
    size_t got = 0;
    while (got < n) {
        ssize_t r = read(fd, buf + got, n - got);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) return -1;
        if (r == 0) break;
        got += (size_t)r;
    }
    return (ssize_t)got;
}

static int read_exactly(int fd, unsigned char *buf, size_t n, const char *path) {
    ssize_t got = read_full(fd, buf, n);
    if (got < 0) return fail(path, "read failed: %s", strerror(errno));
    if ((size_t)got != n) return fail(path, "file shrank while being read");
    return 0;
}

/* The whole file, read only after its header has been validated against its size. */
static unsigned char *read_validated(int fd, const char *path, size_t *len) {
    struct stat st;
    if (fstat(fd, &st) != 0) { fail(path, "cannot stat: %s", strerror(errno)); return NULL; }
    if (!S_ISREG(st.st_mode)) { fail(path, "not a regular file"); return NULL; }
    if (st.st_size < 0 || (uintmax_t)st.st_size > SIZE_MAX / 2) { fail(path, "file too large"); return NULL; }
    size_t size = (size_t)st.st_size;

    unsigned char preamble[NPY_PREAMBLE_MAX];
    size_t start, header_len;
    size_t have = size < sizeof preamble ? size : sizeof preamble;
    if (read_exactly(fd, preamble, have, path)) return NULL;
    if (parse_preamble(preamble, size, path, &start, &header_len)) return NULL;

    size_t header_end = start + header_len;
    unsigned char *buf = malloc(header_end > have ? header_end : have);
    if (!buf) { fail(path, "out of memory"); return NULL; }
    memcpy(buf, preamble, have);
    npy_header h;
    if ((header_end > have && read_exactly(fd, buf + have, header_end - have, path)) ||
        parse_header(buf, header_end, size, path, &h)) {
        free(buf);
        return NULL;
    }
    unsigned char *whole = realloc(buf, size ? size : 1);
    if (!whole) { free(buf); fail(path, "out of memory for %zu bytes", size); return NULL; }
    unsigned char extra;
    size_t done = header_end > have ? header_end : have;
    if (read_exactly(fd, whole + done, size - done, path)) { free(whole); return NULL; }
    if (read_full(fd, &extra, 1) != 0) { free(whole); fail(path, "file grew while being read"); return NULL; }
    *len = size;
    return whole;
}

qkv_tensor *qkv_npy_load(const char *path, int requires_grad) {
    QKV_CHECK(path != NULL, "npy_load: path is NULL");
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK); /* a FIFO must not block the open */
    if (fd < 0) { fail(path, "cannot open: %s", strerror(errno)); return NULL; }
    size_t len = 0;
    unsigned char *bytes = read_validated(fd, path, &len);
    close(fd);
    if (!bytes) return NULL;
    qkv_tensor *t = qkv_npy_parse(bytes, len, path, requires_grad);
    free(bytes);
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

/* Header then the data as little-endian float32; 0 or -1 with errno. */
static int write_npy(FILE *f, const qkv_tensor *t) {
    char header[256];
    size_t header_size = format_header(t, header, sizeof header);
    if (fwrite(header, 1, header_size, f) != header_size) return -1;
    unsigned char chunk[4096];
    for (size_t i = 0; i < t->size;) {
        size_t n = 0;
        for (; n + 4 <= sizeof chunk && i < t->size; i++, n += 4) {
            uint32_t u;
            memcpy(&u, &t->data[i], sizeof u);
            for (int b = 0; b < 4; b++) chunk[n + (size_t)b] = (unsigned char)(u >> (8 * b));
        }
        if (fwrite(chunk, 1, n, f) != n) return -1;
    }
    return 0;
}

int qkv_npy_save(const char *path, const qkv_tensor *t) {
    QKV_CHECK(path != NULL, "npy_save: path is NULL");
    qkv_tensor_check_live(t, "npy_save");
    size_t tmp_len = strlen(path) + 32;
    char *tmp = malloc(tmp_len);
    if (!tmp) return fail(path, "out of memory");
    snprintf(tmp, tmp_len, "%s.tmp.%ld", path, (long)getpid());

    const char *step = "cannot create temporary file";
    FILE *f = fopen(tmp, "wb");
    int ok = f != NULL;
    if (ok) {
        step = "write failed";
        ok = write_npy(f, t) == 0 && fflush(f) == 0;
        if (ok) { step = "fsync failed"; ok = fsync(fileno(f)) == 0; }
        int err = errno;
        if (fclose(f) != 0 && ok) { step = "close failed"; ok = 0; err = errno; }
        if (ok) { step = "cannot rename the temporary file into place"; ok = rename(tmp, path) == 0; err = errno; }
        if (!ok) remove(tmp);
        errno = err;
    }
    if (!ok) fail(path, "%s: %s", step, strerror(errno));
    free(tmp);
    return ok ? 0 : -1;
}
