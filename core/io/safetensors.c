/* safetensors.c — named float32 tensors in the safetensors format. See safetensors.h.
 *
 * Reading has three steps, each refusing with a one-line "<what>: <problem>":
 *  1. the 8-byte header length, against the file size and the 100 MB limit of the
 *     reference implementation (huggingface/safetensors);
 *  2. the header (parse_header): strict JSON (json.h, nesting depth 3, which is all
 *     the format needs), then every entry (keys, dtype, shape, offsets against the
 *     data section's size), then the offsets sorted must tile [0, data_len)
 *     exactly: no gap, no overlap, no trailing bytes;
 *  3. build(): one block holds the result (tensor and metadata arrays, a by-name
 *     index for find, the decoded strings, and the data, 64-byte aligned);
 *     decoded names must be unique ("w" and "\u0077" are the same name).
 * qkv_safetensors_open runs steps 1-3 on the file's first bytes only, so a bad
 * header is refused before the data is read, and keeps the file open;
 * qkv_safetensors_read_data then reads the data straight into the block
 * (qkv_safetensors_load is both). The order of tensors and metadata is the
 * header's.
 *
 * Writing: the header is compact JSON in the reference implementation's layout
 * ("__metadata__" first when there is any, then each tensor as
 * {"dtype":"F32","shape":[...],"data_offsets":[begin,end]} in the order given),
 * padded with spaces to a multiple of 8 bytes; then the data, little-endian, in the
 * same order; all through fileio.h's atomic writer.
 */
#include "core/io/safetensors.h"

#include <inttypes.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "core/fileio.h"
#include "core/io/json.h"

#define ST_MAX_HEADER 100000000u /* bytes; the reference implementation's limit */
#define ST_JSON_DEPTH 3          /* root object, tensor entry, shape array */
#define ST_DATA_ALIGN 64
#define ST_SHOWN 64              /* bytes of a name quoted in an error message */
#define ST_SHOWN_CAP (ST_SHOWN + 4)

/* Valid safetensors dtypes that qkv does not load (F32 is the one it does). */
static const char *const other_dtypes[] = {
    "BOOL", "U8", "I8", "I16", "U16", "I32", "U32", "I64", "U64", "F16", "BF16", "F64",
    "F8_E5M2", "F8_E4M3", "F8_E8M0", "F6_E2M3", "F6_E3M2", "F4",
};

/* One validated tensor entry of the header. */
typedef struct {
    uint32_t name; /* the token of its key */
    int ndim, shape[QKV_MAX_DIMS];
    uint64_t begin, end; /* byte offsets in the data section */
} st_entry;

/* A validated header: everything about the file but its data. */
typedef struct {
    const char *what;
    qkv_json json;
    st_entry *entries;
    uint32_t n_entries;
    uint32_t meta;       /* the token of the __metadata__ object; 0 if none */
    size_t header_len, data_len;
    size_t string_bytes; /* room for every decoded name, key and value */
} st_header;

/* The start of qkv_safetensors.memory. */
typedef struct {
    const qkv_st_tensor **by_name; /* the tensors sorted by name, for find */
    float *data;                   /* the data area */
    size_t data_len;
    int pending;                   /* opened, the data not read yet: reader is open */
    qkv_file_reader reader;        /* its path is a copy in the block */
} st_block;

/* ---- small helpers ----------------------------------------------------------------- */

/* Control characters as '?', and "..." if the text was cut: safe in a one-line message. */
static char *sanitize(char *buf, int cut) {
    for (char *c = buf; *c; c++)
        if ((unsigned char)*c < 0x20 || *c == 0x7f) *c = '?';
    if (cut) strcat(buf, "...");
    return buf;
}

/* String token i, decoded, for a message. */
static const char *shown(const st_header *h, uint32_t i, char buf[ST_SHOWN_CAP]) {
    return sanitize(buf, qkv_json_decode(&h->json, i, buf, ST_SHOWN + 1) > ST_SHOWN);
}

static const char *shown_cstr(const char *s, char buf[ST_SHOWN_CAP]) {
    snprintf(buf, ST_SHOWN + 1, "%s", s);
    return sanitize(buf, strlen(s) > ST_SHOWN);
}

/* A number token's text ("-3", "2.5"), or "a JSON string" for other tokens. */
static const char *describe_value(const st_header *h, uint32_t i, char buf[48]) {
    const qkv_json_token *t = &h->json.tokens[i];
    if (t->type == QKV_JSON_NUMBER)
        snprintf(buf, 48, "%.*s%s", (int)(t->len < 24 ? t->len : 24), (const char *)h->json.text + t->start,
                 t->len > 24 ? "..." : "");
    else
        snprintf(buf, 48, "a JSON %s", qkv_json_type_name(t->type));
    return buf;
}

/* The element count, or 0 if it (or its byte size) overflows. */
static uint64_t element_count(int ndim, const int *shape) {
    uint64_t count = 1;
    for (int d = 0; d < ndim; d++)
        if (__builtin_mul_overflow(count, (uint64_t)shape[d], &count)) return 0;
    return count <= SIZE_MAX / sizeof(float) ? count : 0;
}

static int cmp_strings(const void *a, const void *b) {
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static int cmp_tensor_names(const void *a, const void *b) {
    return strcmp((*(const qkv_st_tensor *const *)a)->name, (*(const qkv_st_tensor *const *)b)->name);
}

/* The first string that occurs twice among n, or NULL (sorts strings). */
static const char *sorted_duplicate(const char **strings, size_t n) {
    qsort(strings, n, sizeof *strings, cmp_strings);
    for (size_t i = 1; i < n; i++)
        if (strcmp(strings[i - 1], strings[i]) == 0) return strings[i];
    return NULL;
}

/* ---- step 1: the header length --------------------------------------------------------- */

static int check_header_length(const unsigned char *b, size_t file_len, const char *what, size_t *header_len) {
    if (file_len < 8)
        return qkv_file_fail(what, "too short to be a safetensors file (%zu bytes; the header length takes 8)",
                             file_len);
    uint64_t n = 0;
    for (int i = 7; i >= 0; i--) n = n << 8 | b[i];
    if (n == 0) return qkv_file_fail(what, "header length is 0 (the header is a JSON object, at least \"{}\")");
    if (n > file_len - 8)
        return qkv_file_fail(what, "header length %" PRIu64 " runs past the end of the file (%zu bytes)", n,
                             file_len);
    if (n > ST_MAX_HEADER)
        return qkv_file_fail(what, "header length %" PRIu64 " exceeds the limit of %u bytes", n, ST_MAX_HEADER);
    *header_len = (size_t)n;
    return 0;
}

/* ---- step 2: the header's entries -------------------------------------------------------- */

static int check_dtype(const st_header *h, const char *name, uint32_t i) {
    char dtype[ST_SHOWN_CAP];
    if (h->json.tokens[i].type != QKV_JSON_STRING)
        return qkv_file_fail(h->what, "tensor '%s': dtype is a JSON %s, not a string", name,
                             qkv_json_type_name(h->json.tokens[i].type));
    if (qkv_json_equals(&h->json, i, "F32")) return 0;
    for (size_t k = 0; k < sizeof other_dtypes / sizeof other_dtypes[0]; k++)
        if (qkv_json_equals(&h->json, i, other_dtypes[k]))
            return qkv_file_fail(h->what, "tensor '%s': dtype %s not supported (F32 only)", name, other_dtypes[k]);
    return qkv_file_fail(h->what, "tensor '%s': unknown dtype '%s'", name, shown(h, i, dtype));
}

static int read_shape(const st_header *h, const char *name, uint32_t arr, st_entry *e) {
    const qkv_json_token *tok = h->json.tokens;
    char value[48];
    if (tok[arr].type != QKV_JSON_ARRAY)
        return qkv_file_fail(h->what, "tensor '%s': shape is a JSON %s, not an array", name,
                             qkv_json_type_name(tok[arr].type));
    if (tok[arr].count > QKV_MAX_DIMS)
        return qkv_file_fail(h->what, "tensor '%s': shape has %" PRIu32 " dims (at most %d)", name, tok[arr].count,
                             QKV_MAX_DIMS);
    e->ndim = (int)tok[arr].count;
    uint32_t j = arr + 1;
    for (int d = 0; d < e->ndim; d++, j = tok[j].next) {
        uint64_t dim = 0;
        int rc = qkv_json_uint(&h->json, j, &dim);
        if (rc == QKV_JSON_NOT_UINT)
            return qkv_file_fail(h->what, "tensor '%s': shape[%d] is %s, not a positive integer", name, d,
                                 describe_value(h, j, value));
        if (rc == QKV_JSON_UINT_TOO_LARGE || dim > INT_MAX)
            return qkv_file_fail(h->what, "tensor '%s': shape[%d] = %s is too large (at most %d)", name, d,
                                 describe_value(h, j, value), INT_MAX);
        if (dim == 0)
            return qkv_file_fail(h->what, "tensor '%s': shape[%d] is 0 (every dim must be >= 1)", name, d);
        e->shape[d] = (int)dim;
    }
    return 0;
}

static int read_offsets(const st_header *h, const char *name, uint32_t arr, st_entry *e) {
    const qkv_json_token *tok = h->json.tokens;
    char value[48];
    if (tok[arr].type != QKV_JSON_ARRAY || tok[arr].count != 2)
        return qkv_file_fail(h->what, "tensor '%s': data_offsets must be an array [begin, end]", name);
    uint64_t offsets[2];
    for (uint32_t k = 0, j = arr + 1; k < 2; k++, j = tok[j].next) {
        int rc = qkv_json_uint(&h->json, j, &offsets[k]);
        if (rc)
            return qkv_file_fail(h->what, "tensor '%s': data_offsets[%" PRIu32 "] is %s, %s", name, k,
                                 describe_value(h, j, value),
                                 rc == QKV_JSON_NOT_UINT ? "not a non-negative integer" : "too large");
    }
    e->begin = offsets[0];
    e->end = offsets[1];
    if (e->begin > e->end)
        return qkv_file_fail(h->what, "tensor '%s': data_offsets [%" PRIu64 ", %" PRIu64 "] end before they begin",
                             name, e->begin, e->end);
    if (e->end > h->data_len)
        return qkv_file_fail(h->what,
                             "tensor '%s': data_offsets [%" PRIu64 ", %" PRIu64 "] run past the end of the data "
                             "section (%zu bytes; truncated file?)",
                             name, e->begin, e->end, h->data_len);
    return 0;
}

/* A tensor entry: exactly the keys dtype, shape and data_offsets, consistent. */
static int read_entry(const st_header *h, uint32_t key, st_entry *e) {
    static const char *const fields[3] = {"dtype", "shape", "data_offsets"};
    const qkv_json_token *tok = h->json.tokens;
    char name[ST_SHOWN_CAP], other[ST_SHOWN_CAP], shape[QKV_SHAPE_STR_LEN];
    uint32_t obj = key + 1, found[3] = {0, 0, 0};
    shown(h, key, name);
    memset(e, 0, sizeof *e);
    e->name = key;
    if (tok[obj].type != QKV_JSON_OBJECT)
        return qkv_file_fail(h->what, "tensor '%s': the entry is a JSON %s, not an object", name,
                             qkv_json_type_name(tok[obj].type));
    for (uint32_t k = 0, f = obj + 1; k < tok[obj].count; k++, f = tok[f + 1].next) {
        int which = 0;
        while (which < 3 && !qkv_json_equals(&h->json, f, fields[which])) which++;
        if (which == 3) return qkv_file_fail(h->what, "tensor '%s': unexpected key '%s'", name, shown(h, f, other));
        if (found[which]) return qkv_file_fail(h->what, "tensor '%s': duplicate key '%s'", name, fields[which]);
        found[which] = f + 1;
    }
    for (int which = 0; which < 3; which++)
        if (!found[which]) return qkv_file_fail(h->what, "tensor '%s': missing key '%s'", name, fields[which]);
    if (check_dtype(h, name, found[0]) || read_shape(h, name, found[1], e) || read_offsets(h, name, found[2], e))
        return -1;
    uint64_t count = element_count(e->ndim, e->shape);
    if (count == 0)
        return qkv_file_fail(h->what, "tensor '%s': shape %s has too many elements", name,
                             qkv_dims_str(e->ndim, e->shape, shape, QKV_SHAPE_STR_LEN));
    if (e->end - e->begin != count * sizeof(float))
        return qkv_file_fail(h->what,
                             "tensor '%s': data_offsets [%" PRIu64 ", %" PRIu64 "] hold %" PRIu64
                             " bytes, but shape %s of F32 needs %" PRIu64,
                             name, e->begin, e->end, e->end - e->begin, qkv_dims_str(e->ndim, e->shape, shape, QKV_SHAPE_STR_LEN),
                             count * sizeof(float));
    return 0;
}

/* __metadata__: an object whose values are strings. */
static int read_metadata(st_header *h, uint32_t obj) {
    const qkv_json_token *tok = h->json.tokens;
    char key[ST_SHOWN_CAP];
    if (tok[obj].type != QKV_JSON_OBJECT)
        return qkv_file_fail(h->what, "__metadata__ is a JSON %s, not an object of strings",
                             qkv_json_type_name(tok[obj].type));
    for (uint32_t k = 0, j = obj + 1; k < tok[obj].count; k++, j = tok[j + 1].next) {
        if (tok[j + 1].type != QKV_JSON_STRING)
            return qkv_file_fail(h->what, "__metadata__ '%s': the value is a JSON %s, not a string",
                                 shown(h, j, key), qkv_json_type_name(tok[j + 1].type));
        h->string_bytes += (size_t)tok[j].len + 1 + tok[j + 1].len + 1;
    }
    return 0;
}

static int read_entries(st_header *h) {
    const qkv_json_token *tok = h->json.tokens;
    if (tok[0].type != QKV_JSON_OBJECT)
        return qkv_file_fail(h->what, "the header is a JSON %s, not an object", qkv_json_type_name(tok[0].type));
    h->entries = qkv_try_malloc(((size_t)tok[0].count + 1) * sizeof *h->entries, h->what, "the header's entries");
    if (!h->entries) return -1;
    for (uint32_t k = 0, key = 1; k < tok[0].count; k++, key = tok[key + 1].next) {
        if (qkv_json_equals(&h->json, key, "__metadata__")) {
            if (h->meta) return qkv_file_fail(h->what, "duplicate key '__metadata__'");
            h->meta = key + 1;
            if (read_metadata(h, key + 1)) return -1;
        } else {
            if (read_entry(h, key, &h->entries[h->n_entries])) return -1;
            h->n_entries++;
            h->string_bytes += (size_t)tok[key].len + 1;
        }
    }
    return 0;
}

static int cmp_entry_begin(const void *a, const void *b) {
    const st_entry *x = *(const st_entry *const *)a, *y = *(const st_entry *const *)b;
    return x->begin < y->begin ? -1 : x->begin > y->begin;
}

/* Sorted by begin, the entries must tile [0, data_len) (each is non-empty). */
static int check_tiling(const st_header *h) {
    const st_entry **order = qkv_try_malloc(((size_t)h->n_entries + 1) * sizeof *order, h->what, "the data ranges");
    if (!order) return -1;
    for (uint32_t i = 0; i < h->n_entries; i++) order[i] = &h->entries[i];
    qsort(order, h->n_entries, sizeof *order, cmp_entry_begin);
    char name[ST_SHOWN_CAP], other[ST_SHOWN_CAP];
    uint64_t covered = 0;
    int rc = 0;
    for (uint32_t i = 0; i < h->n_entries && rc == 0; i++) {
        const st_entry *e = order[i];
        if (e->begin > covered)
            rc = qkv_file_fail(h->what, "gap in the data section: bytes [%" PRIu64 ", %" PRIu64
                               ") belong to no tensor (the next is '%s')", covered, e->begin, shown(h, e->name, name));
        else if (e->begin < covered)
            rc = qkv_file_fail(h->what, "tensor '%s': data_offsets [%" PRIu64 ", %" PRIu64 "] overlap tensor '%s' [%"
                               PRIu64 ", %" PRIu64 "]", shown(h, e->name, name), e->begin, e->end,
                               shown(h, order[i - 1]->name, other), order[i - 1]->begin, order[i - 1]->end);
        covered = e->end;
    }
    if (rc == 0 && covered != h->data_len)
        rc = qkv_file_fail(h->what, "trailing bytes: the tensors cover %" PRIu64 " bytes of the %zu-byte data section",
                           covered, h->data_len);
    free(order);
    return rc;
}

static void header_free(st_header *h) {
    qkv_json_free(&h->json);
    free(h->entries);
    h->entries = NULL;
}

/* b holds at least the file's first 8 + header length bytes; file_len is the
 * whole file's size. */
static int parse_header(const unsigned char *b, size_t file_len, const char *what, st_header *h) {
    memset(h, 0, sizeof *h);
    h->what = what;
    if (check_header_length(b, file_len, what, &h->header_len)) return -1;
    h->data_len = file_len - 8 - h->header_len;
    if (qkv_json_parse(&h->json, b + 8, h->header_len, ST_JSON_DEPTH))
        return qkv_file_fail(what, "bad JSON in the header: %s", h->json.error);
    if (read_entries(h) || check_tiling(h)) {
        header_free(h);
        return -1;
    }
    return 0;
}

/* ---- step 3: the result ------------------------------------------------------------------ */

/* Reserves bytes at the next multiple of align; returns their offset. */
static size_t place(size_t *cursor, size_t bytes, size_t align) {
    size_t at = (*cursor + align - 1) / align * align;
    *cursor = at + bytes;
    return at;
}

/* Decodes string token i at *strings and advances it. */
static const char *take_string(const st_header *h, uint32_t i, char **strings) {
    char *s = *strings;
    *strings += qkv_json_decode(&h->json, i, s, (size_t)h->json.tokens[i].len + 1) + 1;
    return s;
}

/* Decoded tensor names must be unique, and so must metadata keys. Sorts by_name
 * (the index find searches). */
static int check_unique(const char *what, const qkv_safetensors *st, const qkv_st_tensor **by_name) {
    char name[ST_SHOWN_CAP];
    qsort(by_name, (size_t)st->n_tensors, sizeof *by_name, cmp_tensor_names);
    for (int i = 1; i < st->n_tensors; i++)
        if (strcmp(by_name[i - 1]->name, by_name[i]->name) == 0)
            return qkv_file_fail(what, "duplicate tensor name '%s'", shown_cstr(by_name[i]->name, name));
    const char **keys = qkv_try_malloc(((size_t)st->n_meta + 1) * sizeof *keys, what, "the metadata keys");
    if (!keys) return -1;
    for (int k = 0; k < st->n_meta; k++) keys[k] = st->meta[k].key;
    const char *duplicate = sorted_duplicate(keys, (size_t)st->n_meta);
    int rc = duplicate ? qkv_file_fail(what, "duplicate __metadata__ key '%s'", shown_cstr(duplicate, name)) : 0;
    free(keys);
    return rc;
}

/* Everything but the data: returns the data area of out->memory, or NULL. */
static float *build(const st_header *h, qkv_safetensors *out) {
    const qkv_json_token *tok = h->json.tokens;
    size_t n = h->n_entries, m = h->meta ? tok[h->meta].count : 0, cursor = 0;
    place(&cursor, sizeof(st_block), 16);
    size_t at_path = place(&cursor, strlen(h->what) + 1, 1);
    size_t at_tensors = place(&cursor, n * sizeof(qkv_st_tensor), 16);
    size_t at_meta = place(&cursor, m * sizeof(qkv_st_meta), 16);
    size_t at_index = place(&cursor, n * sizeof(qkv_st_tensor *), 16);
    size_t at_strings = place(&cursor, h->string_bytes, 1);
    size_t at_data = place(&cursor, h->data_len, ST_DATA_ALIGN);
    void *memory = qkv_try_malloc_aligned(cursor, h->what, "the tensors"); /* ST_DATA_ALIGN == its 64 */
    if (!memory) return NULL;
    char *base = memory, *strings = base + at_strings;
    qkv_st_tensor *tensors = (qkv_st_tensor *)(base + at_tensors);
    qkv_st_meta *meta = (qkv_st_meta *)(base + at_meta);
    const qkv_st_tensor **by_name = (const qkv_st_tensor **)(base + at_index);
    float *data = (float *)(base + at_data);
    for (size_t i = 0; i < n; i++) {
        const st_entry *e = &h->entries[i];
        tensors[i].name = take_string(h, e->name, &strings);
        tensors[i].ndim = e->ndim;
        memcpy(tensors[i].shape, e->shape, sizeof e->shape);
        tensors[i].data = data + e->begin / sizeof(float);
        by_name[i] = &tensors[i];
    }
    for (uint32_t k = 0, j = h->meta + 1; k < m; k++, j = tok[j + 1].next) {
        meta[k].key = take_string(h, j, &strings);
        meta[k].value = take_string(h, j + 1, &strings);
    }
    memcpy(base + at_path, h->what, strlen(h->what) + 1);
    *(st_block *)memory = (st_block){.by_name = by_name, .data = data, .data_len = h->data_len,
                                     .reader = {.path = base + at_path, .fd = -1}};
    *out = (qkv_safetensors){(int)n, tensors, (int)m, meta, memory};
    if (check_unique(h->what, out, by_name) == 0) return data;
    qkv_safetensors_free(out);
    return NULL;
}

/* ---- reading ------------------------------------------------------------------------------ */

int qkv_safetensors_parse(const unsigned char *bytes, size_t len, const char *what, qkv_safetensors *out) {
    QKV_CHECK(out != NULL && (bytes != NULL || len == 0), "safetensors_parse: NULL argument");
    memset(out, 0, sizeof *out);
    st_header h;
    if (parse_header(bytes, len, what, &h)) return -1;
    float *data = build(&h, out);
    if (data) qkv_f32_from_le(data, bytes + 8 + h.header_len, h.data_len / sizeof(float));
    header_free(&h);
    return data ? 0 : -1;
}

int qkv_safetensors_open(const char *path, qkv_safetensors *out) {
    QKV_CHECK(path != NULL && out != NULL, "safetensors_open: NULL argument");
    memset(out, 0, sizeof *out);
    qkv_file_reader r;
    if (qkv_reader_open(&r, path, QKV_READ_ANY_SIZE)) return -1;
    st_header h;
    size_t header_len;
    float *data = NULL;
    const unsigned char *b = qkv_reader_head(&r, r.size < 8 ? r.size : 8);
    if (b && check_header_length(b, r.size, path, &header_len) == 0 &&
        (b = qkv_reader_head(&r, 8 + header_len)) != NULL && parse_header(b, r.size, path, &h) == 0) {
        data = build(&h, out);
        header_free(&h);
    }
    if (!data) {
        qkv_reader_close(&r);
        return -1;
    }
    st_block *block = out->memory;
    const char *own_path = block->reader.path;
    block->reader = r;   /* the file stays open, its position after the header */
    block->reader.path = own_path;
    block->pending = 1;
    return 0;
}

int qkv_safetensors_read_data(qkv_safetensors *st) {
    QKV_CHECK(st != NULL && st->memory != NULL, "safetensors_read_data: not an opened file");
    st_block *block = st->memory;
    if (!block->pending) return 0;
    int rc = qkv_reader_read(&block->reader, block->data, block->data_len) || qkv_reader_end(&block->reader) ? -1 : 0;
    qkv_reader_close(&block->reader);
    block->pending = 0;
    if (rc == 0) qkv_f32_from_le(block->data, (const unsigned char *)block->data, block->data_len / sizeof(float));
    return rc;
}

int qkv_safetensors_load(const char *path, qkv_safetensors *out) {
    QKV_CHECK(path != NULL && out != NULL, "safetensors_load: NULL argument");
    if (qkv_safetensors_open(path, out) != 0) return -1;
    if (qkv_safetensors_read_data(out) == 0) return 0;
    qkv_safetensors_free(out);
    return -1;
}

void qkv_safetensors_free(qkv_safetensors *st) {
    if (!st) return;
    if (st->memory && ((st_block *)st->memory)->pending) qkv_reader_close(&((st_block *)st->memory)->reader);
    free(st->memory);
    memset(st, 0, sizeof *st);
}

const qkv_st_tensor *qkv_safetensors_find(const qkv_safetensors *st, const char *name) {
    QKV_CHECK(st != NULL && name != NULL, "safetensors_find: NULL argument");
    if (!st->memory) { /* not made by load or parse */
        for (int i = 0; i < st->n_tensors; i++)
            if (strcmp(st->tensors[i].name, name) == 0) return &st->tensors[i];
        return NULL;
    }
    const qkv_st_tensor **by_name = ((const st_block *)st->memory)->by_name;
    size_t lo = 0, hi = (size_t)st->n_tensors;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(name, by_name[mid]->name);
        if (c == 0) return by_name[mid];
        if (c < 0) hi = mid;
        else lo = mid + 1;
    }
    return NULL;
}

const char *qkv_safetensors_meta(const qkv_safetensors *st, const char *key) {
    QKV_CHECK(st != NULL && key != NULL, "safetensors_meta: NULL argument");
    for (int i = 0; i < st->n_meta; i++)
        if (strcmp(st->meta[i].key, key) == 0) return st->meta[i].value;
    return NULL;
}

/* ---- writing ------------------------------------------------------------------------------ */

/* Programmer errors: stop naming the tensor. Checks everything before allocating
 * anything but the duplicate check's scratch, freed before it stops. */
static void check_save_arguments(int n_tensors, const qkv_st_tensor *tensors, int n_meta, const qkv_st_meta *meta) {
    char name[ST_SHOWN_CAP];
    QKV_CHECK(n_tensors >= 0 && (n_tensors == 0 || tensors), "safetensors_save: %d tensors, array %s", n_tensors,
              tensors ? "given" : "NULL");
    QKV_CHECK(n_meta >= 0 && (n_meta == 0 || meta), "safetensors_save: %d metadata entries, array %s", n_meta,
              meta ? "given" : "NULL");
    for (int i = 0; i < n_tensors; i++) {
        const qkv_st_tensor *t = &tensors[i];
        QKV_CHECK(t->name && qkv_utf8_valid(t->name, strlen(t->name)),
                  "safetensors_save: tensor %d: the name is NULL or not valid UTF-8", i);
        QKV_CHECK(strcmp(t->name, "__metadata__") != 0, "safetensors_save: tensor %d: '__metadata__' is reserved", i);
        QKV_CHECK(t->ndim >= 0 && t->ndim <= QKV_MAX_DIMS, "safetensors_save: tensor '%s': ndim %d outside 0..%d",
                  shown_cstr(t->name, name), t->ndim, QKV_MAX_DIMS);
        for (int d = 0; d < t->ndim; d++)
            QKV_CHECK(t->shape[d] >= 1, "safetensors_save: tensor '%s': dim %d is %d (must be >= 1)",
                      shown_cstr(t->name, name), d, t->shape[d]);
        QKV_CHECK(t->data && element_count(t->ndim, t->shape) != 0,
                  "safetensors_save: tensor '%s': no data, or too many elements", shown_cstr(t->name, name));
    }
    for (int i = 0; i < n_meta; i++)
        QKV_CHECK(meta[i].key && meta[i].value && qkv_utf8_valid(meta[i].key, strlen(meta[i].key)) &&
                      qkv_utf8_valid(meta[i].value, strlen(meta[i].value)),
                  "safetensors_save: metadata %d: key or value NULL or not valid UTF-8", i);
    int most = n_tensors > n_meta ? n_tensors : n_meta;
    const char **strings = qkv_malloc(((size_t)most + 1) * sizeof *strings, "safetensors_save's name check");
    for (int i = 0; i < n_tensors; i++) strings[i] = tensors[i].name;
    const char *dup_name = sorted_duplicate(strings, (size_t)n_tensors);
    for (int i = 0; i < n_meta; i++) strings[i] = meta[i].key;
    const char *dup_key = sorted_duplicate(strings, (size_t)n_meta);
    free(strings);
    QKV_CHECK(!dup_name, "safetensors_save: duplicate tensor name '%s'", dup_name ? shown_cstr(dup_name, name) : "");
    QKV_CHECK(!dup_key, "safetensors_save: duplicate metadata key '%s'", dup_key ? shown_cstr(dup_key, name) : "");
}

/* The JSON header, padded with spaces to a multiple of 8 bytes. */
static void format_header(qkv_json_out *out, int n_tensors, const qkv_st_tensor *tensors, int n_meta,
                          const qkv_st_meta *meta) {
    qkv_json_out_text(out, "{");
    if (n_meta > 0) {
        qkv_json_out_text(out, "\"__metadata__\":{");
        for (int i = 0; i < n_meta; i++) {
            if (i) qkv_json_out_text(out, ",");
            qkv_json_out_string(out, meta[i].key);
            qkv_json_out_text(out, ":");
            qkv_json_out_string(out, meta[i].value);
        }
        qkv_json_out_text(out, "}");
    }
    uint64_t offset = 0;
    for (int i = 0; i < n_tensors; i++) {
        const qkv_st_tensor *t = &tensors[i];
        if (i || n_meta > 0) qkv_json_out_text(out, ",");
        qkv_json_out_string(out, t->name);
        qkv_json_out_text(out, ":{\"dtype\":\"F32\",\"shape\":[");
        for (int d = 0; d < t->ndim; d++) {
            if (d) qkv_json_out_text(out, ",");
            qkv_json_out_uint(out, (uint64_t)t->shape[d]);
        }
        qkv_json_out_text(out, "],\"data_offsets\":[");
        qkv_json_out_uint(out, offset);
        qkv_json_out_text(out, ",");
        offset += element_count(t->ndim, t->shape) * sizeof(float);
        qkv_json_out_uint(out, offset);
        qkv_json_out_text(out, "]}");
    }
    qkv_json_out_text(out, "}");
    while (out->len % 8) qkv_json_out_text(out, " ");
}

int qkv_safetensors_save(const char *path, int n_tensors, const qkv_st_tensor *tensors, int n_meta,
                         const qkv_st_meta *meta) {
    QKV_CHECK(path != NULL, "safetensors_save: path is NULL");
    check_save_arguments(n_tensors, tensors, n_meta, meta);
    qkv_json_out header = {0};
    format_header(&header, n_tensors, tensors, n_meta, meta);
    if (header.failed) {
        qkv_json_out_free(&header);
        return qkv_file_fail(path, "out of memory for the header");
    }
    unsigned char length[8];
    for (int i = 0; i < 8; i++) length[i] = (unsigned char)((uint64_t)header.len >> (8 * i));
    qkv_atomic_file f;
    int rc = (qkv_atomic_open(&f, path) || qkv_atomic_write(&f, length, 8) ||
              qkv_atomic_write(&f, header.data, header.len)) ? -1 : 0;
    for (int i = 0; i < n_tensors && rc == 0; i++)
        rc = qkv_atomic_write_f32(&f, tensors[i].data, element_count(tensors[i].ndim, tensors[i].shape));
    if (rc == 0) rc = qkv_atomic_commit(&f);
    qkv_json_out_free(&header);
    return rc;
}
