/* test_safetensors.c — safetensors files (core/io/safetensors.c) and the shared file
 * helpers (core/fileio.c): round trips, the format's exact bytes, a file written by
 * an independent Python writer (tests/make_safetensors_reference.py), hostile bytes
 * of every kind, saves that fail without damage, and a mutation fuzz loop. The JSON
 * reader's own tests live in tests/test_json.c and run in this suite.
 *
 * Scratch files live in a fresh mkdtemp directory per test (removed afterwards);
 * paths to fixtures are relative to tests/, where `make test` runs. */
#include <float.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/fileio.h"
#include "core/io/safetensors.h"
#include "tests/test_util.h"

#define WHAT "hostile.safetensors"

TCase *tcase_json(void); /* tests/test_json.c: the JSON reader and writer */

/* ---- small helpers (scratch files come from test_util.h) ----------------------------- */

static uint32_t bits_of(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static float float_of(uint32_t u) {
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* The value pattern of make_safetensors_reference.py: tensor k, element i. */
static float pattern(int k, size_t i) { return ((float)i - 3.0f) * 0.25f + (float)k; }

/* An exact-size heap copy of: 8-byte length, the header text, then data_bytes of
 * data (float32 i + 0.5 for float i, the last one cut if data_bytes % 4). Exact
 * size, so that a sanitizer sees any overread. */
static unsigned char *build_file(const char *header, size_t data_bytes, size_t *len) {
    size_t header_len = strlen(header);
    *len = 8 + header_len + data_bytes;
    unsigned char *b = malloc(*len ? *len : 1);
    for (int i = 0; i < 8; i++) b[i] = (unsigned char)((uint64_t)header_len >> (8 * i));
    memcpy(b + 8, header, header_len);
    for (size_t i = 0; i < data_bytes; i++)
        b[8 + header_len + i] = (unsigned char)(bits_of((float)(i / 4) + 0.5f) >> (8 * (i % 4)));
    return b;
}

static int parse_text(const char *header, size_t data_bytes, qkv_safetensors *st) {
    size_t len;
    unsigned char *b = build_file(header, data_bytes, &len);
    qkv_set_error("%s", "");
    int rc = qkv_safetensors_parse(b, len, WHAT, st);
    free(b);
    return rc;
}

/* A tensor entry of a header, as JSON text. */
#define ENTRY(name, shape, offsets) \
    "\"" name "\":{\"dtype\":\"F32\",\"shape\":" shape ",\"data_offsets\":" offsets "}"

/* ---- files ------------------------------------------------------------------------------ */

/* Names and metadata with quotes, backslashes, control characters and non-ASCII
 * UTF-8; 0-D to 4-D; float bit patterns a text format would lose. */
START_TEST(test_round_trip) {
    static const char *names[] = {"scalar",
                                  "say \"hi\"",
                                  "back\\slash",
                                  "\xc3\xbcn\xc3\xaf \xe6\xb3\xa8\xe6\x84\x8f \xf0\x9f\x99\x82",
                                  "ctrl\x01\n\t\x1f\x7f",
                                  "enc.0.attn.wq"};
    static const int ndims[] = {0, 1, 2, 3, 4, 2};
    static const int shapes[][4] = {{0}, {5}, {2, 3}, {2, 1, 3}, {1, 2, 3, 2}, {3, 1}};
    static const uint32_t special[] = {0x80000000, 0x00000001, 0x7f7fffff, 0x7f800000,
                                       0xff800000, 0x7fc00123, 0xffffffff};
    static const qkv_st_meta meta[] = {{"step", "1200"},
                                       {"config", "{\"width\": 64,\n\"heads\": 4}"},
                                       {"quote\"back\\slash", "\xe2\x9c\x93 ok"},
                                       {"ctrl", "\x01\x02\x7f\x1f"},
                                       {"empty", ""}};
    enum { N = 6, M = 5 };
    float data[N][24];
    qkv_st_tensor tensors[N];
    for (int k = 0; k < N; k++) {
        tensors[k] = (qkv_st_tensor){names[k], ndims[k], {0}, data[k]};
        memcpy(tensors[k].shape, shapes[k], sizeof shapes[k]);
        for (int i = 0; i < 24; i++) data[k][i] = pattern(k, (size_t)i);
    }
    for (int i = 0; i < 7; i++) data[4][i] = float_of(special[i]);

    const char *path = scratch_file("model.safetensors");
    ck_assert_msg(qkv_safetensors_save(path, N, tensors, M, meta) == 0, "%s", qkv_last_error());
    ck_assert_int_eq(count_dir_entries(scratch_dir), 1); /* no temporary file left */
    qkv_safetensors st;
    ck_assert_msg(qkv_safetensors_load(path, &st) == 0, "%s", qkv_last_error());
    ck_assert_int_eq(st.n_tensors, N);
    ck_assert_int_eq(st.n_meta, M);
    for (int k = 0; k < N; k++) {
        const qkv_st_tensor *t = &st.tensors[k];
        ck_assert_str_eq(t->name, names[k]); /* the order given */
        ck_assert_int_eq(t->ndim, ndims[k]);
        ck_assert(memcmp(t->shape, shapes[k], (size_t)ndims[k] * sizeof(int)) == 0);
        ck_assert_msg((uintptr_t)t->data % 4 == 0, "tensor %d data not 4-byte aligned", k);
        size_t size = qkv_shape_size(ndims[k], shapes[k]);
        ck_assert_msg(memcmp(t->data, data[k], size * sizeof(float)) == 0, "tensor %d data differs", k);
        ck_assert(qkv_safetensors_find(&st, names[k]) == t);
    }
    ck_assert(qkv_safetensors_find(&st, "missing") == NULL);
    ck_assert(qkv_safetensors_find(&st, "say \"hi") == NULL);
    for (int i = 0; i < M; i++) {
        ck_assert_str_eq(st.meta[i].key, meta[i].key);
        ck_assert_str_eq(qkv_safetensors_meta(&st, meta[i].key), meta[i].value);
    }
    ck_assert(qkv_safetensors_meta(&st, "missing") == NULL);
    qkv_safetensors_free(&st);
    ck_assert(st.memory == NULL && st.n_tensors == 0);

    /* no metadata; no tensors */
    ck_assert(qkv_safetensors_save(path, 1, tensors, 0, NULL) == 0);
    ck_assert(qkv_safetensors_load(path, &st) == 0 && st.n_tensors == 1 && st.n_meta == 0);
    qkv_safetensors_free(&st);
    ck_assert(qkv_safetensors_save(path, 0, NULL, 1, meta) == 0);
    ck_assert(qkv_safetensors_load(path, &st) == 0 && st.n_tensors == 0 && st.n_meta == 1);
    ck_assert_str_eq(qkv_safetensors_meta(&st, "step"), "1200");
    qkv_safetensors_free(&st);
}
END_TEST

static void expect_file_bytes(const char *path, const void *expected, size_t len) {
    size_t got_len = 0;
    unsigned char *got = qkv_read_file(path, 1 << 20, &got_len);
    ck_assert_msg(got != NULL, "%s", qkv_last_error());
    ck_assert_msg(got_len == len, "%zu bytes, expected %zu", got_len, len);
    for (size_t i = 0; i < len; i++)
        ck_assert_msg(got[i] == ((const unsigned char *)expected)[i], "byte %zu is 0x%02x, expected 0x%02x", i,
                      got[i], ((const unsigned char *)expected)[i]);
    free(got);
}

/* The layout byte for byte: 8-byte little-endian length, compact JSON in the
 * reference implementation's key order, spaces up to a multiple of 8, then the
 * data. The first three are exactly the bytes that huggingface/safetensors'
 * own serializer produces for the same input (its unit tests list them). */
START_TEST(test_exact_bytes) {
    const char *path = scratch_file("exact.safetensors");
    static const float values[6] = {0, 1, 2, 3, 4, 5};
    qkv_st_tensor attn = {"attn0", 4, {1, 1, 2, 3}, values};
    ck_assert(qkv_safetensors_save(path, 1, &attn, 0, NULL) == 0);
    static const char one[] = "\x48\0\0\0\0\0\0\0"
                              "{\"attn0\":{\"dtype\":\"F32\",\"shape\":[1,1,2,3],\"data_offsets\":[0,24]}}       "
                              "\0\0\0\0" "\0\0\x80\x3f" "\0\0\0\x40" "\0\0\x40\x40" "\0\0\x80\x40" "\0\0\xa0\x40";
    expect_file_bytes(path, one, sizeof one - 1);

    qkv_st_meta framework = {"framework", "pt"};
    ck_assert(qkv_safetensors_save(path, 0, NULL, 1, &framework) == 0);
    static const char meta_only[] = "\x28\0\0\0\0\0\0\0{\"__metadata__\":{\"framework\":\"pt\"}}     ";
    expect_file_bytes(path, meta_only, sizeof meta_only - 1);

    ck_assert(qkv_safetensors_save(path, 0, NULL, 0, NULL) == 0);
    expect_file_bytes(path, "\x08\0\0\0\0\0\0\0{}      ", 16);

    /* two tensors: offsets follow each other in the order given; escapes */
    qkv_st_tensor two[2] = {{"a\"\n", 1, {2}, values + 1}, {"b", 0, {0}, values + 4}};
    qkv_st_meta kv = {"k", "v\\"};
    ck_assert(qkv_safetensors_save(path, 2, two, 1, &kv) == 0);
    static const char expected[] = "\x90\0\0\0\0\0\0\0"
                                   "{\"__metadata__\":{\"k\":\"v\\\\\"},"
                                   "\"a\\\"\\n\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
                                   "\"b\":{\"dtype\":\"F32\",\"shape\":[],\"data_offsets\":[8,12]}}"
                                   "      "
                                   "\0\0\x80\x3f" "\0\0\0\x40" "\0\0\x80\x40";
    expect_file_bytes(path, expected, sizeof expected - 1);
}
END_TEST

/* Written by make_safetensors_reference.py: json.dumps escapes, tensors sorted by
 * name in the header but in reverse order in the data, metadata last. */
START_TEST(test_reference_file) {
    static const struct { const char *name; int ndim, shape[4]; } expected[] = {
        {"scalar", 0, {0}},
        {"vec", 1, {5}},
        {"mat", 2, {2, 3}},
        {"enc.0.attn.wq", 3, {2, 1, 3}},
        {"t4", 4, {1, 2, 3, 2}},
        {"say \"hi\"", 1, {2}},
        {"back\\slash", 1, {1}},
        {"\xc3\xbcn\xc3\xaf \xe6\xb3\xa8\xe6\x84\x8f \xf0\x9f\x99\x82", 1, {3}},
        {"tab\there\nnewline", 1, {1}},
        {"specials", 1, {7}},
    };
    static const uint32_t special_bits[] = {0x80000000, 0x7f800000, 0xff800000, 0x7fc00123,
                                            0x00000001, 0x7f7fffff, 0x00800000};
    static const char *const meta[][2] = {{"format", "pt"},
                                          {"step", "1200"},
                                          {"quote\"key", "back\\slash value"},
                                          {"unicode", "\xc3\xa9 \xe6\xb3\xa8\xe6\x84\x8f \xf0\x9f\x99\x82"},
                                          {"multi", "line1\nline2\ttab"},
                                          {"empty", ""}};
    qkv_safetensors st;
    ck_assert_msg(qkv_safetensors_load("ref/st_reference.safetensors", &st) == 0, "%s", qkv_last_error());
    ck_assert_int_eq(st.n_tensors, 10);
    ck_assert_int_eq(st.n_meta, 6);
    for (int k = 0; k < 10; k++) {
        const qkv_st_tensor *t = qkv_safetensors_find(&st, expected[k].name);
        ck_assert_msg(t != NULL, "tensor '%s' not found", expected[k].name);
        ck_assert_int_eq(t->ndim, expected[k].ndim);
        ck_assert(memcmp(t->shape, expected[k].shape, (size_t)t->ndim * sizeof(int)) == 0);
        ck_assert((uintptr_t)t->data % 4 == 0);
        size_t size = qkv_shape_size(t->ndim, t->shape);
        for (size_t i = 0; i < size; i++) {
            uint32_t want = k == 9 ? special_bits[i] : bits_of(pattern(k, i));
            ck_assert_msg(bits_of(t->data[i]) == want, "%s[%zu] = 0x%08x, expected 0x%08x", t->name, i,
                          bits_of(t->data[i]), want);
        }
    }
    for (int i = 0; i < 6; i++) {
        const char *value = qkv_safetensors_meta(&st, meta[i][0]);
        ck_assert_msg(value != NULL && strcmp(value, meta[i][1]) == 0, "metadata '%s'", meta[i][0]);
    }
    qkv_safetensors_free(&st);
}
END_TEST

START_TEST(test_load_errors) {
    qkv_safetensors st;
    const char *missing = scratch_file("missing.safetensors");
    ck_assert(qkv_safetensors_load(missing, &st) == -1);
    expect_last_error(missing, "No such file");
    ck_assert(st.memory == NULL && st.n_tensors == 0);
    qkv_safetensors_free(&st); /* harmless after a failure */

    ck_assert(qkv_safetensors_load(scratch_dir, &st) == -1);
    expect_last_error(scratch_dir, "not a regular file");
    const char *fifo = scratch_file("fifo"); /* must not wait for a writer */
    ck_assert(mkfifo(fifo, 0600) == 0);
    ck_assert(qkv_safetensors_load(fifo, &st) == -1);
    expect_last_error(fifo, "not a regular file");

    const char *path = scratch_file("bad.safetensors");
    write_file_bytes(path, "", 0);
    ck_assert(qkv_safetensors_load(path, &st) == -1);
    expect_last_error(path, "too short");

    /* a valid one-float header in front of a megabyte: trailing bytes */
    size_t len;
    unsigned char *b = build_file("{" ENTRY("w", "[1]", "[0,4]") "}", 4 + (1u << 20), &len);
    write_file_bytes(path, b, len);
    free(b);
    ck_assert(qkv_safetensors_load(path, &st) == -1);
    expect_last_error(path, "trailing bytes");

    /* data cut short on disk */
    b = build_file("{" ENTRY("w", "[4]", "[0,16]") "}", 12, &len);
    write_file_bytes(path, b, len);
    free(b);
    ck_assert(qkv_safetensors_load(path, &st) == -1);
    expect_last_error(path, "tensor 'w': data_offsets [0, 16] run past the end of the data section (12 bytes");

    b = build_file("{}", 0, &len);
    memcpy(b, "\0\0\0\0\0\0\0\x80", 8); /* 2^63 */
    write_file_bytes(path, b, len);
    free(b);
    ck_assert(qkv_safetensors_load(path, &st) == -1);
    expect_last_error(path, "header length 9223372036854775808 runs past the end of the file (10 bytes)");
}
END_TEST

START_TEST(test_save_into_missing_directory) {
    float x = 1;
    qkv_st_tensor t = {"x", 0, {0}, &x};
    const char *path = scratch_file("no/such/dir/model.safetensors");
    qkv_set_error("%s", "");
    ck_assert_int_eq(qkv_safetensors_save(path, 1, &t, 0, NULL), -1);
    expect_last_error(path, "No such file or directory");
    ck_assert_int_eq(count_dir_entries(scratch_dir), 0);
}
END_TEST

/* A save that fails while writing (the file size limit, which binds even root)
 * leaves the previous file intact and no temporary file. */
START_TEST(test_failed_write_keeps_existing_file) {
    static float small[3] = {1, 2, 3}, large[64 * 64];
    qkv_st_tensor before = {"w", 1, {3}, small}, after = {"w", 2, {64, 64}, large};
    const char *path = scratch_file("keep.safetensors");
    ck_assert(qkv_safetensors_save(path, 1, &before, 0, NULL) == 0);

    struct rlimit saved;
    ck_assert(getrlimit(RLIMIT_FSIZE, &saved) == 0);
    struct rlimit limited = saved;
    limited.rlim_cur = 4096;
    void (*previous)(int) = signal(SIGXFSZ, SIG_IGN);
    ck_assert(setrlimit(RLIMIT_FSIZE, &limited) == 0);
    int rc = qkv_safetensors_save(path, 1, &after, 0, NULL);
    setrlimit(RLIMIT_FSIZE, &saved);
    signal(SIGXFSZ, previous);

    ck_assert_int_eq(rc, -1);
    expect_last_error(path, "write failed");
    ck_assert_int_eq(count_dir_entries(scratch_dir), 1);
    qkv_safetensors st;
    ck_assert_msg(qkv_safetensors_load(path, &st) == 0, "%s", qkv_last_error());
    ck_assert(st.n_tensors == 1 && st.tensors[0].shape[0] == 3);
    ck_assert(memcmp(st.tensors[0].data, small, sizeof small) == 0);
    qkv_safetensors_free(&st);
}
END_TEST

/* The final rename fails (the target is a non-empty directory): the directory is
 * as it was and no temporary file is left. */
START_TEST(test_failed_rename_leaves_nothing) {
    const char *dir = scratch_file("taken.safetensors");
    ck_assert(mkdir(dir, 0700) == 0);
    write_file_bytes(scratch_file("taken.safetensors/inside"), "x", 1);
    float x = 1;
    qkv_st_tensor t = {"x", 0, {0}, &x};
    ck_assert_int_eq(qkv_safetensors_save(dir, 1, &t, 0, NULL), -1);
    expect_last_error(dir, "rename");
    ck_assert_int_eq(count_dir_entries(scratch_dir), 1);
    ck_assert_int_eq(count_dir_entries(dir), 1);
}
END_TEST

/* Bad arguments are programmer errors: they stop before any file is touched. */
START_TEST(test_save_rejects_bad_arguments) {
    float x[4] = {0};
    const char *path = scratch_file("never.safetensors");
    qkv_st_tensor dup[2] = {{"w", 1, {4}, x}, {"w", 0, {0}, x}};
    EXPECT_FATAL(qkv_safetensors_save(path, 2, dup, 0, NULL), "duplicate tensor name 'w'");
    qkv_st_tensor reserved = {"__metadata__", 0, {0}, x};
    EXPECT_FATAL(qkv_safetensors_save(path, 1, &reserved, 0, NULL), "'__metadata__' is reserved");
    qkv_st_tensor zero_dim = {"z", 2, {2, 0}, x};
    EXPECT_FATAL(qkv_safetensors_save(path, 1, &zero_dim, 0, NULL), "tensor 'z': dim 1 is 0");
    qkv_st_tensor five_dims = {"f", 5, {1, 1, 1, 1}, x};
    EXPECT_FATAL(qkv_safetensors_save(path, 1, &five_dims, 0, NULL), "tensor 'f': ndim 5");
    qkv_st_tensor no_data = {"n", 1, {4}, NULL};
    EXPECT_FATAL(qkv_safetensors_save(path, 1, &no_data, 0, NULL), "tensor 'n': no data");
    qkv_st_tensor bad_utf8 = {"bad\xff", 1, {4}, x};
    EXPECT_FATAL(qkv_safetensors_save(path, 1, &bad_utf8, 0, NULL), "not valid UTF-8");
    qkv_st_meta dup_meta[2] = {{"k", "1"}, {"k", "2"}};
    EXPECT_FATAL(qkv_safetensors_save(path, 0, NULL, 2, dup_meta), "duplicate metadata key 'k'");
    qkv_st_meta null_value = {"k", NULL};
    EXPECT_FATAL(qkv_safetensors_save(path, 0, NULL, 1, &null_value), "metadata 0");
    ck_assert_int_eq(count_dir_entries(scratch_dir), 0);
}
END_TEST

/* ---- hostile bytes ----------------------------------------------------------------------- */

typedef struct {
    const char *header;
    size_t data_bytes;
    const char *reason; /* expected in the message */
} bad_case;

#define W4 ENTRY("w", "[1]", "[0,4]")
static const bad_case bad_cases[] = {
    /* not JSON, or not strict JSON */
    {"{", 0, "expected a string key, found the end of the text"},
    {"{\"w\":{}", 0, "',' or '}' after an object member, found the end"},
    {"{\"a\":\"x\",}", 0, "expected a string key, found '}'"},
    {"{\"a\" \"x\"}", 0, "':' after an object key"},
    {"{'a':'x'}", 0, "expected a string key, found '''"},
    {"{\"a\":tru}", 0, "expected a value"},
    {"{\"a\":NaN}", 0, "expected a value"},
    {"{} x", 0, "the end of the text after the value"},
    {"{}{}", 0, "the end of the text after the value"},
    {"{/* c */}", 0, "expected a string key"},
    {"\xef\xbb\xbf{}", 0, "expected a value, found byte 0xef"},
    {"{\"w\x01\":1}", 0, "a raw control character in a string at offset 3"},
    {"{\"w\\q\":1}", 0, "an invalid escape"},
    {"{\"w\\u12G4\":1}", 0, "\\u without 4 hex digits"},
    {"{\"w\\ud800\":1}", 0, "high surrogate"},
    {"{\"w\\ud800\\u0041\":1}", 0, "high surrogate"},
    {"{\"w\\udc00\":1}", 0, "unpaired low surrogate"},
    {"{\"w\\u0000\":1}", 0, "\\u0000"},
    {"{\"\xff\":1}", 0, "invalid UTF-8"},
    {"{\"\xc0\xaf\":1}", 0, "invalid UTF-8"},         /* overlong '/' */
    {"{\"\xed\xa0\x80\":1}", 0, "invalid UTF-8"},     /* an encoded surrogate */
    {"{\"\xf4\x90\x80\x80\":1}", 0, "invalid UTF-8"}, /* above U+10FFFF */
    {"{\"\xe6\xb3\":1}", 0, "invalid UTF-8"},         /* cut short */
    {"{\"w\":\"abc}", 0, "unterminated string"},
    {"{\"w\":01}", 0, "leading zero"},
    {"{\"w\":1.}", 0, "a digit after '.'"},
    {"{\"w\":-}", 0, "a digit in a number"},
    {"{\"w\":1e}", 0, "a digit in an exponent"},
    {"{\"w\":+1}", 0, "expected a value, found '+'"},
    {"{\"w\":{\"shape\":[[1]]}}", 0, "nesting deeper than 3"},
    /* not a header */
    {"[]", 0, "the header is a JSON array, not an object"},
    {"\"x\"", 0, "the header is a JSON string"},
    {"{\"w\":[1,2]}", 0, "tensor 'w': the entry is a JSON array, not an object"},
    {"{\"w\":\"F32\"}", 0, "tensor 'w': the entry is a JSON string"},
    {"{\"w\":null}", 0, "tensor 'w': the entry is a JSON null"},
    {"{\"bad\\nname\":3}", 0, "tensor 'bad?name': the entry is a JSON number"},
    {"{\"w\":{\"shape\":[1],\"data_offsets\":[0,4]}}", 4, "tensor 'w': missing key 'dtype'"},
    {"{\"w\":{\"dtype\":\"F32\",\"data_offsets\":[0,4]}}", 4, "tensor 'w': missing key 'shape'"},
    {"{\"w\":{\"dtype\":\"F32\",\"shape\":[1]}}", 4, "tensor 'w': missing key 'data_offsets'"},
    {"{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4],\"extra\":1}}", 4, "unexpected key 'extra'"},
    {"{\"w\":{\"dtype\":\"F32\",\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4,
     "duplicate key 'dtype'"},
    /* dtype */
    {"{\"w\":{\"dtype\":\"F16\",\"shape\":[2],\"data_offsets\":[0,4]}}", 4,
     "tensor 'w': dtype F16 not supported (F32 only)"},
    {"{\"w\":{\"dtype\":\"BF16\",\"shape\":[2],\"data_offsets\":[0,4]}}", 4, "dtype BF16 not supported (F32 only)"},
    {"{\"w\":{\"dtype\":\"I64\",\"shape\":[1],\"data_offsets\":[0,8]}}", 8, "dtype I64 not supported"},
    {"{\"w\":{\"dtype\":\"F33\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4, "tensor 'w': unknown dtype 'F33'"},
    {"{\"w\":{\"dtype\":\"f32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4, "unknown dtype 'f32'"},
    {"{\"w\":{\"dtype\":32,\"shape\":[1],\"data_offsets\":[0,4]}}", 4, "dtype is a JSON number, not a string"},
    /* shape */
    {"{" ENTRY("w", "[-1]", "[0,4]") "}", 4, "tensor 'w': shape[0] is -1, not a positive integer"},
    {"{" ENTRY("w", "[0,3]", "[0,0]") "}", 0, "tensor 'w': shape[0] is 0"},
    {"{" ENTRY("w", "[3,0]", "[0,0]") "}", 0, "shape[1] is 0"},
    {"{" ENTRY("w", "[1,1,1,1,2]", "[0,8]") "}", 8, "shape has 5 dims (at most 4)"},
    {"{" ENTRY("w", "[2.0]", "[0,8]") "}", 8, "shape[0] is 2.0, not a positive integer"},
    {"{" ENTRY("w", "[1e3]", "[0,4000]") "}", 4000, "shape[0] is 1e3"},
    {"{" ENTRY("w", "[\"2\"]", "[0,8]") "}", 8, "shape[0] is a JSON string"},
    {"{" ENTRY("w", "[null]", "[0,8]") "}", 8, "shape[0] is a JSON null"},
    {"{" ENTRY("w", "\"2\"", "[0,8]") "}", 8, "shape is a JSON string, not an array"},
    {"{" ENTRY("w", "[2147483648]", "[0,8]") "}", 8, "shape[0] = 2147483648 is too large"},
    {"{" ENTRY("w", "[18446744073709551616]", "[0,8]") "}", 8, "is too large"},
    {"{" ENTRY("w", "[2147483647,2147483647,2147483647,2147483647]", "[0,8]") "}", 8, "too many elements"},
    {"{" ENTRY("w", "[65536,65536,65536,65536]", "[0,8]") "}", 8, "too many elements"},
    /* data_offsets */
    {"{" ENTRY("w", "[6]", "[0,32]") "}", 24,
     "tensor 'w': data_offsets [0, 32] run past the end of the data section (24"},
    {"{" ENTRY("w", "[6]", "[0,24]") "}", 20, "run past the end of the data section (20 bytes"},
    {"{" ENTRY("w", "[1]", "[4,0]") "}", 4, "data_offsets [4, 0] end before they begin"},
    {"{" ENTRY("w", "[1]", "[0]") "}", 4, "data_offsets must be an array [begin, end]"},
    {"{" ENTRY("w", "[1]", "[0,4,8]") "}", 8, "data_offsets must be an array"},
    {"{" ENTRY("w", "[1]", "\"0,4\"") "}", 4, "data_offsets must be an array"},
    {"{" ENTRY("w", "[1]", "[-4,0]") "}", 4, "data_offsets[0] is -4, not a non-negative integer"},
    {"{" ENTRY("w", "[1]", "[0,4.0]") "}", 4, "data_offsets[1] is 4.0"},
    {"{" ENTRY("w", "[1]", "[0,99999999999999999999]") "}", 4, "data_offsets[1] is 99999999999999999999, too large"},
    {"{" ENTRY("w", "[3]", "[0,8]") "}", 8,
     "tensor 'w': data_offsets [0, 8] hold 8 bytes, but shape [3] of F32 needs 12"},
    {"{" ENTRY("w", "[1]", "[0,8]") "}", 8, "needs 4"},
    {"{" ENTRY("a", "[2]", "[0,8]") "," ENTRY("b", "[2]", "[4,12]") "}", 12,
     "tensor 'b': data_offsets [4, 12] overlap tensor 'a' [0, 8]"},
    {"{" ENTRY("a", "[2]", "[0,8]") "," ENTRY("b", "[2]", "[0,8]") "}", 8, "overlap tensor"},
    {"{" ENTRY("a", "[1]", "[0,4]") "," ENTRY("b", "[1]", "[8,12]") "}", 12,
     "gap in the data section: bytes [4, 8) belong to no tensor (the next is 'b')"},
    {"{" ENTRY("a", "[1]", "[4,8]") "}", 8, "bytes [0, 4) belong to no tensor"},
    {"{" W4 "}", 8, "trailing bytes: the tensors cover 4 bytes of the 8-byte data section"},
    {"{}", 4, "trailing bytes: the tensors cover 0 bytes of the 4-byte"},
    {"{\"__metadata__\":{}}", 1, "trailing bytes"},
    /* names and metadata */
    {"{" W4 "," ENTRY("w", "[1]", "[4,8]") "}", 8, "duplicate tensor name 'w'"},
    {"{" W4 "," ENTRY("\\u0077", "[1]", "[4,8]") "}", 8, "duplicate tensor name 'w'"},
    {"{\"__metadata__\":{\"a\":1}}", 0, "__metadata__ 'a': the value is a JSON number, not a string"},
    {"{\"__metadata__\":{\"a\":null}}", 0, "the value is a JSON null"},
    {"{\"__metadata__\":{\"a\":{\"b\":\"c\"}}}", 0, "the value is a JSON object"},
    {"{\"__metadata__\":{\"a\":[\"x\"]}}", 0, "the value is a JSON array"},
    {"{\"__metadata__\":[]}", 0, "__metadata__ is a JSON array, not an object of strings"},
    {"{\"__metadata__\":\"x\"}", 0, "__metadata__ is a JSON string"},
    {"{\"__metadata__\":{\"a\":\"1\",\"a\":\"2\"}}", 0, "duplicate __metadata__ key 'a'"},
    {"{\"__metadata__\":{},\"__metadata__\":{}}", 0, "duplicate key '__metadata__'"},
    {"{\"__metadata__\":" "{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4, "__metadata__ 'shape'"},
};
#define N_BAD_CASES ((int)(sizeof bad_cases / sizeof bad_cases[0]))

START_TEST(test_rejects_bad_header) {
    const bad_case *c = &bad_cases[_i];
    qkv_safetensors st;
    int rc = parse_text(c->header, c->data_bytes, &st);
    ck_assert_msg(rc == -1, "case %d was accepted: %s", _i, c->header);
    ck_assert(st.memory == NULL && st.n_tensors == 0);
    expect_last_error(WHAT, c->reason);
}
END_TEST

START_TEST(test_header_length) {
    qkv_safetensors st;
    size_t len;
    unsigned char *b = build_file("{" W4 "}", 4, &len);
    ck_assert_msg(qkv_safetensors_parse(b, len, WHAT, &st) == 0, "baseline: %s", qkv_last_error());
    qkv_safetensors_free(&st);

    for (size_t n = 0; n < 8; n++) {
        ck_assert(qkv_safetensors_parse(b, n, WHAT, &st) == -1);
        expect_last_error(WHAT, "too short to be a safetensors file");
    }
    unsigned char *bad = malloc(len);
    static const struct { uint64_t length; const char *reason; } lengths[] = {
        {0, "header length is 0"},
        {1, "bad JSON in the header: expected a string key, found the end of the text"},
        {55, "expected the end of the text after the value, found byte 0x00 at offset 54"}, /* eats data */
        {59, "header length 59 runs past the end of the file (66 bytes)"},
        {(uint64_t)1 << 32, "header length 4294967296 runs past"},
        {(uint64_t)1 << 63, "header length 9223372036854775808 runs past"},
        {UINT64_MAX, "header length 18446744073709551615 runs past"},
    };
    for (size_t k = 0; k < sizeof lengths / sizeof lengths[0]; k++) {
        memcpy(bad, b, len);
        for (int i = 0; i < 8; i++) bad[i] = (unsigned char)(lengths[k].length >> (8 * i));
        ck_assert(qkv_safetensors_parse(bad, len, WHAT, &st) == -1);
        expect_last_error(WHAT, lengths[k].reason);
    }
    free(bad);
    free(b);
}
END_TEST

/* The reference implementation's limit is 100,000,000 header bytes: exactly that
 * many (a small JSON object, then spaces) parses; 8 more are refused unparsed. */
START_TEST(test_header_limit) {
    const size_t limit = 100000000;
    static const char json[] = "{" W4 "}";
    size_t cap = 8 + limit + 8 + 4;
    unsigned char *b = malloc(cap);
    memset(b, ' ', cap);
    memcpy(b + 8, json, sizeof json - 1);
    qkv_safetensors st;
    for (int over = 0; over <= 1; over++) {
        size_t header_len = limit + (over ? 8 : 0);
        for (int i = 0; i < 8; i++) b[i] = (unsigned char)((uint64_t)header_len >> (8 * i));
        memcpy(b + 8 + header_len, "\0\0\x80\x3f", 4); /* 1.0f */
        int rc = qkv_safetensors_parse(b, 8 + header_len + 4, WHAT, &st);
        if (over) {
            ck_assert(rc == -1);
            expect_last_error(WHAT, "header length 100000008 exceeds the limit of 100000000 bytes");
        } else {
            ck_assert_msg(rc == 0, "%s", qkv_last_error());
            ck_assert(st.n_tensors == 1 && st.tensors[0].data[0] == 1.0f);
            qkv_safetensors_free(&st);
        }
        memset(b + 8 + header_len, ' ', 4);
    }
    free(b);
}
END_TEST

/* What other writers may do: whitespace anywhere, any key order, escapes in
 * names and keys, an odd header length (unaligned data, copied to aligned
 * memory), data in another order than the header, metadata anywhere or empty. */
START_TEST(test_accepts_variants) {
    qkv_safetensors st;
    const char *spaced =
        " {\n\t\"w\" : { \"data_offsets\" : [ 0 , 4 ] , \"shape\" : [ ] ,\r\"dtype\" : \"F32\" } } \n";
    ck_assert_msg(parse_text(spaced, 4, &st) == 0, "%s", qkv_last_error());
    ck_assert(st.n_tensors == 1 && st.tensors[0].ndim == 0 && st.tensors[0].data[0] == 0.5f);
    qkv_safetensors_free(&st);

    /* escaped names and keys; "b" is first in the data, second in the header */
    const char *escaped = "{\"\\u0061\\n\\\"\\\\\\/\\ud83d\\ude42\\u00e9\":{\"\\u0064type\":\"F\\u0033\\u0032\","
                          "\"shape\":[2],\"data_offsets\":[4,12]},"
                          "\"__metadata__\":{\"k\\t\":\"v\\b\\f\\r\"},"
                          "\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}";
    ck_assert_msg(parse_text(escaped, 12, &st) == 0, "%s", qkv_last_error());
    ck_assert_int_eq(st.n_tensors, 2);
    ck_assert_str_eq(st.tensors[0].name, "a\n\"\\/\xf0\x9f\x99\x82\xc3\xa9");
    ck_assert_str_eq(st.tensors[1].name, "b");
    ck_assert(st.tensors[0].data[0] == 1.5f && st.tensors[0].data[1] == 2.5f && st.tensors[1].data[0] == 0.5f);
    ck_assert_str_eq(qkv_safetensors_meta(&st, "k\t"), "v\b\f\r");
    ck_assert(qkv_safetensors_find(&st, "b") == &st.tensors[1]);
    qkv_safetensors_free(&st);

    /* header length 61: the data starts at file offset 69 */
    char odd[128];
    static const char odd_json[] = "{" ENTRY("w", "[2]", "[0,8]") "}";
    snprintf(odd, sizeof odd, "%s%*s", odd_json, 61 - (int)strlen(odd_json), "");
    ck_assert_int_eq((int)strlen(odd), 61);
    ck_assert_msg(parse_text(odd, 8, &st) == 0, "%s", qkv_last_error());
    ck_assert((uintptr_t)st.tensors[0].data % 4 == 0);
    ck_assert(st.tensors[0].data[0] == 0.5f && st.tensors[0].data[1] == 1.5f);
    qkv_safetensors_free(&st);

    ck_assert(parse_text("{\"__metadata__\":{}}", 0, &st) == 0 && st.n_tensors == 0 && st.n_meta == 0);
    qkv_safetensors_free(&st);
    ck_assert(parse_text("{}", 0, &st) == 0 && st.n_tensors == 0);
    qkv_safetensors_free(&st);
}
END_TEST

/* Every proper prefix of a valid file is refused. */
START_TEST(test_every_truncation_fails) {
    size_t len;
    qkv_safetensors st;
    unsigned char *b = build_file(
        "{\"__metadata__\":{\"k\":\"v\"}," ENTRY("a", "[2]", "[0,8]") "," ENTRY("w", "[1]", "[8,12]") "}", 12, &len);
    ck_assert_msg(qkv_safetensors_parse(b, len, WHAT, &st) == 0, "%s", qkv_last_error());
    qkv_safetensors_free(&st);
    for (size_t n = 0; n < len; n++) {
        unsigned char *copy = malloc(n ? n : 1);
        memcpy(copy, b, n);
        qkv_set_error("%s", "");
        ck_assert_msg(qkv_safetensors_parse(copy, n, WHAT, &st) == -1, "prefix of %zu bytes accepted", n);
        ck_assert(strstr(qkv_last_error(), WHAT) != NULL);
        free(copy);
    }
    free(b);
}
END_TEST

/* Random mutations of a valid file: each is refused with a one-line message, or
 * accepted with tensors that tile the data exactly. Deterministic (xorshift). */
START_TEST(test_mutation_fuzz) {
    static const char interesting[] = "{}[]\",:0123456789-.eE \\u\x01\xff\x80";
    size_t len;
    unsigned char *base = build_file("{\"__metadata__\":{\"k\":\"v\\u00e9\"}," ENTRY("a", "[2,1]", "[0,8]") ","
                                     ENTRY("w", "[1]", "[8,12]") "," ENTRY("s", "[]", "[12,16]") "}", 16, &len);
    uint64_t state = 0x9e3779b97f4a7c15u;
    int accepted = 0, refused = 0;
    for (int iter = 0; iter < 4000; iter++) {
        unsigned char *copy = malloc(len);
        memcpy(copy, base, len);
        size_t n = len;
        int edits = 1 + (int)(state % 3);
        for (int e = 0; e < edits; e++) {
            state ^= state << 13, state ^= state >> 7, state ^= state << 17;
            size_t pos = (size_t)(state >> 16) % n;
            switch (state % 5) {
            case 0: copy[pos] = (unsigned char)(state >> 40); break;
            case 1: copy[pos] = (unsigned char)interesting[(state >> 40) % (sizeof interesting - 1)]; break;
            case 2: n = pos; break;                                    /* truncate */
            case 3: copy[(state >> 40) % 8] ^= (unsigned char)(1u << ((state >> 50) % 8)); break; /* length */
            default: copy[pos] = copy[(state >> 40) % n]; break;       /* a byte from elsewhere */
            }
            if (n == 0) break;
        }
        unsigned char *exact = malloc(n ? n : 1); /* exact size, so overreads are seen */
        memcpy(exact, copy, n);
        qkv_safetensors st;
        qkv_set_error("%s", "");
        if (qkv_safetensors_parse(exact, n, WHAT, &st) == 0) {
            size_t floats = 0;
            double sum = 0;
            for (int t = 0; t < st.n_tensors; t++) {
                size_t size = qkv_shape_size(st.tensors[t].ndim, st.tensors[t].shape);
                for (size_t i = 0; i < size; i++) sum += st.tensors[t].data[i];
                floats += size;
            }
            uint64_t header_len = 0;
            for (int i = 7; i >= 0; i--) header_len = header_len << 8 | exact[i];
            ck_assert_msg(8 + header_len + 4 * floats == n, "iteration %d: tensors do not tile the data", iter);
            (void)sum;
            accepted++;
            qkv_safetensors_free(&st);
        } else {
            const char *msg = qkv_last_error();
            ck_assert_msg(strncmp(msg, WHAT ": ", strlen(WHAT) + 2) == 0 && strchr(msg, '\n') == NULL,
                          "iteration %d: bad message \"%s\"", iter, msg);
            refused++;
        }
        free(exact);
        free(copy);
    }
    free(base);
    ck_assert(accepted > 0 && refused > 0);
}
END_TEST

/* ---- fileio.c ---------------------------------------------------------------------------- */

START_TEST(test_read_file) {
    const char *path = scratch_file("ten.txt");
    write_file_bytes(path, "0123456789", 10);
    size_t len = 0;
    unsigned char *b = qkv_read_file(path, 10, &len);
    ck_assert_msg(b != NULL, "%s", qkv_last_error());
    ck_assert(len == 10 && memcmp(b, "0123456789", 11) == 0); /* '\0'-terminated */
    free(b);
    ck_assert(qkv_read_file(path, 9, &len) == NULL);
    expect_last_error(path, "file too large (10 bytes; the limit is 9)");
    ck_assert(qkv_read_file(scratch_dir, 100, &len) == NULL);
    expect_last_error(scratch_dir, "not a regular file");
    write_file_bytes(path, "", 0);
    b = qkv_read_file(path, 10, &len);
    ck_assert(b != NULL && len == 0 && b[0] == '\0');
    free(b);

    /* the reader in steps: a head, then the rest straight into caller memory */
    write_file_bytes(path, "headbody", 8);
    qkv_file_reader r;
    ck_assert(qkv_reader_open(&r, path, 100) == 0 && r.size == 8);
    const unsigned char *head = qkv_reader_head(&r, 2);
    ck_assert(head && memcmp(head, "he", 2) == 0);
    head = qkv_reader_head(&r, 4);
    ck_assert(head && memcmp(head, "head", 5) == 0);
    char body[4];
    ck_assert(qkv_reader_read(&r, body, 4) == 0 && memcmp(body, "body", 4) == 0);
    ck_assert(qkv_reader_end(&r) == 0);
    qkv_reader_close(&r);
    qkv_reader_close(&r);
}
END_TEST

/* A file that grows between open and the end of reading is refused. */
START_TEST(test_reader_detects_growth) {
    const char *path = scratch_file("grows");
    write_file_bytes(path, "abcd", 4);
    qkv_file_reader r;
    ck_assert(qkv_reader_open(&r, path, 100) == 0);
    FILE *f = fopen(path, "ab");
    ck_assert(f && fwrite("ef", 1, 2, f) == 2 && fclose(f) == 0);
    ck_assert(qkv_reader_head(&r, 4) != NULL);
    ck_assert(qkv_reader_end(&r) == -1);
    expect_last_error(path, "file grew while being read");
    qkv_reader_close(&r);

    ck_assert(qkv_reader_open(&r, path, 100) == 0 && r.size == 6);
    ck_assert(truncate(path, 3) == 0);
    ck_assert(qkv_reader_head(&r, 6) == NULL);
    expect_last_error(path, "file shrank while being read");
    qkv_reader_close(&r);
}
END_TEST

START_TEST(test_atomic_abort_and_commit) {
    const char *path = scratch_file("atomic");
    qkv_atomic_file f;
    ck_assert(qkv_atomic_open(&f, path) == 0);
    ck_assert(qkv_atomic_write(&f, "partial", 7) == 0);
    ck_assert_int_eq(count_dir_entries(scratch_dir), 1); /* only the temporary file */
    qkv_atomic_abort(&f);
    qkv_atomic_abort(&f);
    ck_assert_int_eq(count_dir_entries(scratch_dir), 0);
    ck_assert(qkv_atomic_commit(&f) == -1); /* nothing left to commit */
    ck_assert(qkv_atomic_write(&f, "x", 1) == -1);

    const float values[2] = {1.0f, -2.0f};
    ck_assert(qkv_atomic_open(&f, path) == 0);
    ck_assert(qkv_atomic_write(&f, "ab", 2) == 0 && qkv_atomic_write_f32(&f, values, 2) == 0);
    ck_assert_msg(qkv_atomic_commit(&f) == 0, "%s", qkv_last_error());
    expect_file_bytes(path, "ab\0\0\x80\x3f\0\0\0\xc0", 10);
    ck_assert_int_eq(count_dir_entries(scratch_dir), 1);
    float back[2];
    qkv_f32_from_le(back, (const unsigned char *)"\0\0\x80\x3f\0\0\0\xc0", 2);
    ck_assert(back[0] == 1.0f && back[1] == -2.0f);
}
END_TEST

/* Hostile headers in front of (sparse) files are refused from the header alone:
 * qkv_safetensors_load reads the 8-byte length, then the header, and allocates
 * for the data only once the header has been checked against the file size. */
START_TEST(test_load_refuses_hostile_headers_unread) {
    const char *path = scratch_file("hostile.safetensors");
    size_t len;
    /* 150 MB of header in a 200 MB file: over the 100 MB limit, refused before reading it. */
    unsigned char *b = build_file("{}", 0, &len);
    uint64_t huge = 150000000;
    for (int i = 0; i < 8; i++) b[i] = (unsigned char)(huge >> (8 * i));
    write_sparse_file(path, b, len, 200000000);
    qkv_safetensors st;
    ck_assert_int_eq(qkv_safetensors_load(path, &st), -1);
    expect_last_error(path, "header length 150000000 exceeds the limit of 100000000 bytes");
    free(b);
    static const struct { const char *header; size_t data_bytes, file_size; const char *reason; } cases[] = {
        /* A header length beyond the file's end. */
        {"{}", 0, 0, "runs past the end of the file"},
        /* An element count beyond the file (a 16 GB tensor in a sparse 4 GB file). */
        {"{" ENTRY("w", "[65536,65536]", "[0,17179869184]") "}", 0, (size_t)4 << 30,
         "data_offsets [0, 17179869184] run past the end of the data section"},
        /* Element counts that overflow, negative sizes, duplicate names, overlapping ranges. */
        {"{" ENTRY("w", "[2147483647,2147483647,2147483647,2147483647]", "[0,8]") "}", 8, 0, "too many elements"},
        {"{" ENTRY("w", "[-2]", "[0,8]") "}", 8, 0, "shape[0] is -2, not a positive integer"},
        {"{" ENTRY("w", "[2]", "[-8,0]") "}", 8, 0, "data_offsets[0] is -8"},
        {"{" W4 "," ENTRY("w", "[1]", "[4,8]") "}", 8, 0, "duplicate tensor name 'w'"},
        {"{" ENTRY("a", "[2]", "[0,8]") "," ENTRY("b", "[2]", "[4,12]") "}", 12, 0, "overlap tensor 'a'"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        b = build_file(cases[k].header, cases[k].data_bytes, &len);
        if (k == 0) b[0] = 0x40; /* 64 header bytes claimed, 2 present */
        if (cases[k].file_size) write_sparse_file(path, b, len, cases[k].file_size);
        else write_file_bytes(path, b, len);
        ck_assert_int_eq(qkv_safetensors_load(path, &st), -1);
        expect_last_error(path, cases[k].reason);
        free(b);
    }
}
END_TEST

Suite *suite_safetensors(void) {
    Suite *s = suite_create("safetensors");
    TCase *files = tcase_create("files");
    tcase_add_checked_fixture(files, scratch_dir_create, scratch_dir_remove);
    tcase_add_test(files, test_round_trip);
    tcase_add_test(files, test_exact_bytes);
    tcase_add_test(files, test_reference_file);
    tcase_add_test(files, test_load_errors);
    tcase_add_test(files, test_save_into_missing_directory);
    tcase_add_test(files, test_failed_write_keeps_existing_file);
    tcase_add_test(files, test_failed_rename_leaves_nothing);
    tcase_add_test(files, test_save_rejects_bad_arguments);
    tcase_add_test(files, test_load_refuses_hostile_headers_unread);
    suite_add_tcase(s, files);

    TCase *parse = tcase_create("parse");
    tcase_set_timeout(parse, 30);
    tcase_add_loop_test(parse, test_rejects_bad_header, 0, N_BAD_CASES);
    tcase_add_test(parse, test_header_length);
    tcase_add_test(parse, test_header_limit);
    tcase_add_test(parse, test_accepts_variants);
    tcase_add_test(parse, test_every_truncation_fails);
    tcase_add_test(parse, test_mutation_fuzz);
    suite_add_tcase(s, parse);

    suite_add_tcase(s, tcase_json());

    TCase *fileio = tcase_create("fileio");
    tcase_add_checked_fixture(fileio, scratch_dir_create, scratch_dir_remove);
    tcase_add_test(fileio, test_read_file);
    tcase_add_test(fileio, test_reader_detects_growth);
    tcase_add_test(fileio, test_atomic_abort_and_commit);
    suite_add_tcase(s, fileio);
    return s;
}
