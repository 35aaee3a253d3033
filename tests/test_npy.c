/* test_npy.c — .npy files: round trips, numpy's own files, hostile bytes, and
 * saves that fail without damage.
 *
 * Scratch files live in a fresh mkdtemp directory per test (removed afterwards).
 * numpy-written fixtures come from tests/make_reference.py (ref/npy_*.npy); paths
 * are relative to tests/, where `make test` runs. */
#include <float.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include "tests/test_util.h"

/* A tensor of distinct, non-integer values. */
static qkv_tensor *make_tensor(int ndim, const int *shape) { return ramp_tensor(ndim, shape, -1.5f, 0.37f, 0); }

/* ---- files ------------------------------------------------------------------ */

START_TEST(test_round_trip_0d_to_4d) {
    static const int shapes[5][4] = {{0}, {5}, {2, 3}, {2, 1, 3}, {1, 2, 3, 2}};
    for (int ndim = 0; ndim <= 4; ndim++) {
        qkv_tensor *t = make_tensor(ndim, shapes[ndim]);
        if (ndim == 4) { /* bit patterns a text format would lose */
            const float special[] = {-0.0f, FLT_MIN / 4, FLT_MAX, INFINITY, -INFINITY, NAN};
            memcpy(t->data, special, sizeof special);
        }
        const char *path = scratch_file("t.npy");
        ck_assert_msg(qkv_npy_save(path, t) == 0, "save %dD: %s", ndim, qkv_last_error());
        size_t len;
        unsigned char *bytes = read_file_bytes(path, &len);
        size_t data_offset = len - 4 * t->size;
        ck_assert_msg(data_offset % 64 == 0, "%dD: data starts at %zu", ndim, data_offset);
        ck_assert(bytes[data_offset - 1] == '\n' && bytes[6] == 1 && bytes[7] == 0);
        free(bytes);

        qkv_tensor *back = qkv_npy_load(path, ndim % 2);
        ck_assert_msg(back != NULL, "load %dD: %s", ndim, qkv_last_error());
        ck_assert(qkv_same_shape(back, t) && back->size == t->size);
        ck_assert(memcmp(back->data, t->data, t->size * sizeof(float)) == 0);
        ck_assert(back->name == NULL && back->owned);
        ck_assert_int_eq(back->requires_grad, ndim % 2);
        ck_assert(ndim % 2 ? back->grad != NULL : back->grad == NULL);
        qkv_tensor_free(back);
        qkv_tensor_free(t);
    }
    ck_assert_int_eq(count_dir_entries(scratch_dir), 1); /* no temporary file left over */
}
END_TEST

/* Loading numpy's file and saving it again gives numpy's bytes exactly. */
START_TEST(test_save_matches_numpy_bytes) {
    static const char *fixtures[] = {"ref/npy_f4_2x3.npy", "ref/npy_f4_scalar.npy", "ref/npy_f4_1x2x1x3.npy"};
    for (int i = 0; i < 3; i++) {
        qkv_tensor *t = qkv_npy_load(fixtures[i], 0);
        ck_assert_msg(t != NULL, "%s", qkv_last_error());
        ck_assert(qkv_npy_save(scratch_file("copy.npy"), t) == 0);
        size_t len_numpy, len_ours;
        unsigned char *numpy_bytes = read_file_bytes(fixtures[i], &len_numpy);
        unsigned char *our_bytes = read_file_bytes(scratch_file("copy.npy"), &len_ours);
        ck_assert_msg(len_numpy == len_ours && memcmp(numpy_bytes, our_bytes, len_ours) == 0,
                      "%s: saved bytes differ from numpy's", fixtures[i]);
        free(numpy_bytes);
        free(our_bytes);
        qkv_tensor_free(t);
    }
}
END_TEST

START_TEST(test_load_numpy_values) {
    qkv_tensor *t = qkv_npy_load("ref/npy_f4_2x3.npy", 0);
    ck_assert_msg(t != NULL, "%s", qkv_last_error());
    ck_assert(t->ndim == 2 && t->shape[0] == 2 && t->shape[1] == 3);
    for (int i = 0; i < 6; i++) ck_assert(t->data[i] == (float)i * 0.5f - 1.0f);
    ck_assert(qkv_at(t, 1, 2, 0, 0) == 1.5f);
    qkv_tensor_free(t);

    t = qkv_npy_load("ref/npy_f8_3.npy", 0); /* float64, converted */
    ck_assert_msg(t != NULL, "%s", qkv_last_error());
    ck_assert(t->ndim == 1 && t->shape[0] == 3);
    ck_assert(t->data[0] == (float)0.1 && t->data[1] == -2.5f && t->data[2] == (float)1e30);
    qkv_tensor_free(t);

    t = qkv_npy_load("ref/npy_f4_scalar.npy", 0);
    ck_assert_msg(t != NULL, "%s", qkv_last_error());
    ck_assert(t->ndim == 0 && t->size == 1 && t->data[0] == 3.25f);
    qkv_tensor_free(t);
}
END_TEST

START_TEST(test_load_errors) {
    const char *missing = scratch_file("missing.npy");
    ck_assert(qkv_npy_load(missing, 0) == NULL);
    expect_last_error(missing, "No such file");

    ck_assert(qkv_npy_load(scratch_dir, 0) == NULL);
    expect_last_error(scratch_dir, "not a regular file");
    const char *fifo = scratch_file("fifo.npy"); /* must not wait for a writer */
    ck_assert(mkfifo(fifo, 0600) == 0);
    ck_assert(qkv_npy_load(fifo, 0) == NULL);
    expect_last_error(fifo, "not a regular file");

    /* A valid (2,) header in front of a megabyte: refused by size, unread. */
    static const char header[] = "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }\n";
    size_t len = 10 + sizeof header - 1 + ((size_t)1 << 20);
    unsigned char *bytes = calloc(1, len);
    memcpy(bytes, "\x93NUMPY\x01\x00", 8);
    bytes[8] = (unsigned char)(sizeof header - 1);
    memcpy(bytes + 10, header, sizeof header - 1);
    const char *big = scratch_file("big.npy");
    write_file_bytes(big, bytes, len);
    free(bytes);
    ck_assert(qkv_npy_load(big, 0) == NULL);
    expect_last_error(big, "trailing bytes");

    write_file_bytes(big, "\x93NUMPY", 6);
    ck_assert(qkv_npy_load(big, 0) == NULL);
    expect_last_error(big, "too short");
}
END_TEST

START_TEST(test_save_into_missing_directory) {
    qkv_tensor *t = make_tensor(1, (int[]){4});
    const char *path = scratch_file("no/such/dir/t.npy");
    qkv_set_error("%s", "");
    ck_assert_int_eq(qkv_npy_save(path, t), -1);
    expect_last_error(path, "No such file or directory");
    ck_assert_int_eq(count_dir_entries(scratch_dir), 0);
    qkv_tensor_free(t);
}
END_TEST

/* A save that fails while writing (the file size limit, which binds even root)
 * leaves the previous file intact and removes its temporary file. */
START_TEST(test_failed_write_keeps_existing_file) {
    qkv_tensor *small = make_tensor(1, (int[]){3});
    qkv_tensor *large = make_tensor(2, (int[]){64, 64});
    const char *path = scratch_file("keep.npy");
    ck_assert(qkv_npy_save(path, small) == 0);

    struct rlimit saved;
    ck_assert(getrlimit(RLIMIT_FSIZE, &saved) == 0);
    struct rlimit limited = saved;
    limited.rlim_cur = 4096;
    void (*previous)(int) = signal(SIGXFSZ, SIG_IGN);
    ck_assert(setrlimit(RLIMIT_FSIZE, &limited) == 0);
    int rc = qkv_npy_save(path, large);
    setrlimit(RLIMIT_FSIZE, &saved);
    signal(SIGXFSZ, previous);

    ck_assert_int_eq(rc, -1);
    expect_last_error(path, "write failed");
    ck_assert_int_eq(count_dir_entries(scratch_dir), 1);
    qkv_tensor *back = qkv_npy_load(path, 0);
    ck_assert_msg(back != NULL, "%s", qkv_last_error());
    ck_assert(qkv_same_shape(back, small) && memcmp(back->data, small->data, 3 * sizeof(float)) == 0);
    qkv_tensor_free(back);
    qkv_tensor_free(small);
    qkv_tensor_free(large);
}
END_TEST

/* A save whose final rename fails (the target is a non-empty directory) leaves
 * that directory as it was and no temporary file. */
START_TEST(test_failed_rename_leaves_nothing) {
    const char *dir = scratch_file("taken.npy");
    ck_assert(mkdir(dir, 0700) == 0);
    write_file_bytes(scratch_file("taken.npy/inside"), "x", 1);
    qkv_tensor *t = make_tensor(1, (int[]){4});
    ck_assert_int_eq(qkv_npy_save(dir, t), -1);
    expect_last_error(dir, "rename");
    ck_assert_int_eq(count_dir_entries(scratch_dir), 1);
    ck_assert_int_eq(count_dir_entries(dir), 1);
    qkv_tensor_free(t);
}
END_TEST

/* ---- parsing bytes in memory ----------------------------------------------------- */

#define WHAT "hostile.npy"

/* magic, version major.0, header length field, header text as given, then
 * data_bytes of data (float32 values 0.5, 1.5, ... as far as they fit). */
static size_t build_npy(unsigned char *buf, size_t cap, int major, const char *header, size_t data_bytes) {
    size_t header_len = strlen(header), prefix = major == 1 ? 10 : 12;
    ck_assert(prefix + header_len + data_bytes <= cap);
    memcpy(buf, "\x93NUMPY", 6);
    buf[6] = (unsigned char)major;
    buf[7] = 0;
    for (size_t i = 0; i < prefix - 8; i++) buf[8 + i] = (unsigned char)(header_len >> (8 * i));
    memcpy(buf + prefix, header, header_len);
    for (size_t i = 0; i < data_bytes; i++) {
        float v = (float)(i / 4) + 0.5f;
        unsigned char le[4];
        memcpy(le, &v, 4);
        buf[prefix + header_len + i] = le[i % 4];
    }
    return prefix + header_len + data_bytes;
}

typedef struct {
    const char *header;
    size_t data_bytes;
    const char *reason; /* expected in the message */
} bad_header;

static const bad_header bad_headers[] = {
    {"{'descr': '<f4', 'shape': (2,), }\n", 8, "missing key 'fortran_order'"},
    {"{'fortran_order': False, 'shape': (2,), }\n", 8, "missing key 'descr'"},
    {"{'descr': '<f4', 'fortran_order': False}\n", 4, "missing key 'shape'"},
    {"{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'extra': 1}\n", 8, "unexpected key 'extra'"},
    {"{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (2,)}\n", 8, "duplicate key 'descr'"},
    {"{'descr': '<i4', 'fortran_order': False, 'shape': (2,), }\n", 8, "dtype '<i4' is not supported"},
    {"{'descr': '|u1', 'fortran_order': False, 'shape': (8,), }\n", 8, "dtype '|u1'"},
    {"{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }\n", 8, "big-endian"},
    {"{'descr': '>f8', 'fortran_order': False, 'shape': (1,), }\n", 8, "big-endian"},
    {"{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2,), }\n", 8, "dtype string"},
    {"{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }\n", 16, "fortran_order True"},
    {"{'descr': '<f4', 'fortran_order': 0, 'shape': (2,), }\n", 8, "True or False"},
    {"{'descr': '<f4', 'fortran_order': False, 'shape': (1, 1, 1, 1, 2), }\n", 8, "more than 4 dims"},
    {"{'descr': '<f4', 'fortran_order': False, 'shape': (0, 3), }\n", 0, "dim 0 is 0"},
    {"{'descr': '<f4', 'fortran_order': False, 'shape': (3, -1), }\n", 12, "dim 1 is negative"},
    {"{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296), }\n", 0, "too large"},
    {"{'descr': '<f4', 'fortran_order': False, 'shape': (2147483647, 2147483647, 2147483647, 2147483647), }\n",
     0, "overflows"},
    {"{'descr': '<f8', 'fortran_order': False, 'shape': (2147483647, 2147483647, 2), }\n", 0, "data size overflows"},
    {"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }\n", 20, "data truncated"},
    {"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }\n", 28, "trailing bytes"},
    {"{'descr': '<f8', 'fortran_order': False, 'shape': (2,), }\n", 8, "data truncated"},
    {"{'descr': '<f4', 'fortran_order': False, 'shape': (3), }\n", 12, "not a tuple"},
    {"{'descr': '<f4', 'fortran_order': False, 'shape': [3], }\n", 12, "'(' starting the shape"},
    {"{'descr': '<f4', 'fortran_order': False, 'shape': (3.0,), }\n", 12, "plain decimal"},
    {"{'descr': '<f4', 'fortran_order': False, 'shape': (0x3,), }\n", 12, "plain decimal"},
    {"{'descr': '<f4', 'fortran_order': False, 'shape': (,), }\n", 0, "expected a dim"},
    {"{'descr': '<f4', 'fortran_order': False, 'shape': (2 3), }\n", 24, "',' or ')'"},
    {"{'descr': '<f4', 'fortran_order': False, 'shape': (2,), \n", 8, "the end of the header"},
    {"{'descr': '<f4' 'fortran_order': False, 'shape': (2,)}\n", 8, "',' or '}'"},
    {"{'descr': '<f4', 'fortran_order': False, 'shape': (2,)} x\n", 8, "only whitespace"},
    {"{'descr': '<f4', 'fortran_order': False, 'shape': (2,),,}\n", 8, "a quoted key"},
    {"{'descr: '<f4', 'fortran_order': False, 'shape': (2,)}\n", 8, "unexpected key 'descr: '"},
    {"{'descr' '<f4', 'fortran_order': False, 'shape': (2,)}\n", 8, "':' after a key"},
    {"{'descr': '<f4, 'fortran_order': False, 'shape': (2,)}\n", 8, "dtype '<f4, '"},
    {"{'descr': 'float32float32float32', 'fortran_order': False, 'shape': (2,)}\n", 8, "too long"},
    {"{'descr': '<f4', 'fortran_order': False, 'shape': (2,)", 8, "',' or '}'"},
    {"{'descr': '<f\xc3\xa4', 'fortran_order': False, 'shape': (2,)}\n", 8, "byte 0xc3"},
    {"{'descr': '<f4', 'fortran_order': False, 'shape': (2,), \"abc", 8, "unterminated string"},
    {"{'descr': '<\\x66\\x34', 'fortran_order': False, 'shape': (2,)}\n", 8, "plain ASCII"},
    {"", 0, "'{' starting the header dict"},
    {"\n", 0, "'{'"},
};
#define N_BAD_HEADERS ((int)(sizeof bad_headers / sizeof bad_headers[0]))

START_TEST(test_parse_rejects_bad_header) {
    const bad_header *c = &bad_headers[_i];
    unsigned char buf[512];
    for (int major = 1; major <= 3; major++) {
        size_t len = build_npy(buf, sizeof buf, major, c->header, c->data_bytes);
        qkv_set_error("%s", "");
        qkv_tensor *t = qkv_npy_parse(buf, len, WHAT, 0);
        ck_assert_msg(t == NULL, "case %d (v%d) was accepted: %s", _i, major, c->header);
        expect_last_error(WHAT, c->reason);
    }
}
END_TEST

static const char good_header[] = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }\n";

START_TEST(test_parse_rejects_bad_preamble) {
    unsigned char buf[256];
    size_t len = build_npy(buf, sizeof buf, 1, good_header, 24);
    qkv_tensor *baseline = qkv_npy_parse(buf, len, WHAT, 0);
    ck_assert_msg(baseline != NULL, "baseline: %s", qkv_last_error());
    qkv_tensor_free(baseline);

    unsigned char bad[256];
    memcpy(bad, buf, len);
    bad[5] = 'Z';
    ck_assert(qkv_npy_parse(bad, len, WHAT, 0) == NULL);
    expect_last_error(WHAT, "bad magic");

    memcpy(bad, buf, len);
    bad[6] = 4;
    ck_assert(qkv_npy_parse(bad, len, WHAT, 0) == NULL);
    expect_last_error(WHAT, "version 4.0");
    bad[6] = 1;
    bad[7] = 1;
    ck_assert(qkv_npy_parse(bad, len, WHAT, 0) == NULL);
    expect_last_error(WHAT, "version 1.1");

    memcpy(bad, buf, len); /* header length past the end of the file */
    bad[8] = 0xff;
    bad[9] = 0x00;
    ck_assert(qkv_npy_parse(bad, len, WHAT, 0) == NULL);
    expect_last_error(WHAT, "runs past the end");
    bad[9] = 0xff;
    ck_assert(qkv_npy_parse(bad, len, WHAT, 0) == NULL);
    expect_last_error(WHAT, "runs past the end");

    size_t len2 = build_npy(bad, sizeof bad, 2, good_header, 24);
    bad[11] = 0xff; /* 4-byte length near 4 GiB */
    ck_assert(qkv_npy_parse(bad, len2, WHAT, 0) == NULL);
    expect_last_error(WHAT, "runs past the end");
    ck_assert(qkv_npy_parse(bad, 11, WHAT, 0) == NULL); /* v2 preamble cut short */
    expect_last_error(WHAT, "truncated .npy header");

    ck_assert(qkv_npy_parse(buf, 9, WHAT, 0) == NULL);
    expect_last_error(WHAT, "too short");
    ck_assert(qkv_npy_parse(NULL, 0, WHAT, 0) == NULL);
    expect_last_error(WHAT, "too short");
}
END_TEST

/* What numpy (or a person) may write: either quotes, any key order, v2/v3, no
 * padding, trailing commas, '<f8'. */
START_TEST(test_parse_accepts_variants) {
    static const struct { int major; const char *header; int ndim; int dim0; size_t data_bytes; } ok[] = {
        {1, "{\"descr\": \"<f4\", \"fortran_order\": False, \"shape\": (2, 3)}", 2, 2, 24},
        {1, "{'shape':(6,),'fortran_order':False,'descr':'<f4'}", 1, 6, 24},
        {2, "{ 'fortran_order' : False ,\n 'shape' : ( 3 , 2 , ) , 'descr' : '<f4' , }  \n", 2, 3, 24},
        {3, "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 2, 1, 3), }\n", 4, 1, 24},
        {1, "{'descr': '<f4', 'fortran_order': False, 'shape': (), }\n", 0, 0, 4},
        {1, "{'descr': '<f8', 'fortran_order': False, 'shape': (3,), }\r\n", 1, 3, 24},
    };
    for (size_t k = 0; k < sizeof ok / sizeof ok[0]; k++) {
        unsigned char buf[256];
        size_t len = build_npy(buf, sizeof buf, ok[k].major, ok[k].header, ok[k].data_bytes);
        qkv_tensor *t = qkv_npy_parse(buf, len, WHAT, 0);
        ck_assert_msg(t != NULL, "variant %zu: %s", k, qkv_last_error());
        ck_assert_int_eq(t->ndim, ok[k].ndim);
        if (t->ndim) ck_assert_int_eq(t->shape[0], ok[k].dim0);
        if (strstr(ok[k].header, "<f4"))
            for (size_t i = 0; i < t->size; i++) ck_assert(t->data[i] == (float)i + 0.5f);
        qkv_tensor_free(t);
    }
}
END_TEST

/* Every proper prefix of a valid file is refused (never read past len). */
START_TEST(test_parse_every_truncation_fails) {
    unsigned char buf[256];
    size_t len = build_npy(buf, sizeof buf, 1, good_header, 24);
    for (size_t n = 0; n < len; n++) {
        unsigned char *copy = malloc(n ? n : 1); /* exact size, so a sanitizer sees overreads */
        memcpy(copy, buf, n);
        ck_assert_msg(qkv_npy_parse(copy, n, WHAT, 0) == NULL, "prefix of %zu bytes accepted", n);
        ck_assert(strstr(qkv_last_error(), WHAT) != NULL);
        free(copy);
    }
}
END_TEST

/* A small deterministic fuzz: every header byte replaced by a few values. The
 * parser must either refuse with a message or return a tensor that accounts for
 * exactly the data bytes. */
START_TEST(test_parse_survives_corruption) {
    static const unsigned char values[] = {0x00, 0xff, ' ', '\'', '"', ',', '(', ')', '{', '}', '9', '-', 'T'};
    unsigned char buf[256];
    size_t len = build_npy(buf, sizeof buf, 1, good_header, 24);
    int accepted = 0, refused = 0;
    for (size_t pos = 0; pos < len - 24; pos++) {
        for (size_t v = 0; v < sizeof values; v++) {
            unsigned char *copy = malloc(len);
            memcpy(copy, buf, len);
            copy[pos] = values[v];
            qkv_set_error("%s", "");
            qkv_tensor *t = qkv_npy_parse(copy, len, WHAT, 0);
            if (t) {
                ck_assert(t->size * 4 == 24);
                accepted++;
                qkv_tensor_free(t);
            } else {
                ck_assert(strstr(qkv_last_error(), WHAT) != NULL);
                refused++;
            }
            free(copy);
        }
    }
    ck_assert(accepted > 0 && refused > 0);
}
END_TEST

/* Hostile headers in front of (sparse) files are refused from the header alone,
 * before the data is read or anything is allocated for it. */
START_TEST(test_load_refuses_hostile_headers_unread) {
    const char *path = scratch_file("hostile.npy");
    unsigned char buf[256];
    /* A v2 header length of ~4 GiB, inside a 5 GiB file: the analogue of a 100 MB JSON header. */
    size_t len = build_npy(buf, sizeof buf, 2, good_header, 0);
    buf[8] = 0xf0, buf[9] = buf[10] = buf[11] = 0xff;
    write_sparse_file(path, buf, len, (size_t)5 << 30);
    ck_assert(qkv_npy_load(path, 0) == NULL);
    expect_last_error(path, "header length 4294967280 exceeds the limit of 1048576 bytes");
    /* A header longer than the file. */
    write_file_bytes(path, buf, len);
    ck_assert(qkv_npy_load(path, 0) == NULL);
    expect_last_error(path, "header length 4294967280 runs past the end of the file");
    /* An element count beyond the file, and one that overflows. */
    static const struct { const char *header; const char *reason; } shapes[] = {
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (1000000000,), }\n",
         "data truncated: the shape needs 4000000000 bytes, the file has 8"},
        {"{'descr': '<f8', 'fortran_order': False, 'shape': (2147483647, 2147483647, 2147483647, 2), }\n",
         "overflows"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (-2,), }\n", "dim 0 is negative"},
    };
    for (size_t k = 0; k < sizeof shapes / sizeof shapes[0]; k++) {
        len = build_npy(buf, sizeof buf, 1, shapes[k].header, 8);
        write_file_bytes(path, buf, len);
        ck_assert(qkv_npy_load(path, 0) == NULL);
        expect_last_error(path, shapes[k].reason);
    }
}
END_TEST

Suite *suite_npy(void) {
    Suite *s = suite_create("npy");
    TCase *files = tcase_create("files");
    tcase_add_checked_fixture(files, scratch_dir_create, scratch_dir_remove);
    tcase_add_test(files, test_round_trip_0d_to_4d);
    tcase_add_test(files, test_save_matches_numpy_bytes);
    tcase_add_test(files, test_load_numpy_values);
    tcase_add_test(files, test_load_errors);
    tcase_add_test(files, test_save_into_missing_directory);
    tcase_add_test(files, test_failed_write_keeps_existing_file);
    tcase_add_test(files, test_failed_rename_leaves_nothing);
    tcase_add_test(files, test_load_refuses_hostile_headers_unread);
    suite_add_tcase(s, files);

    TCase *parse = tcase_create("parse");
    tcase_add_loop_test(parse, test_parse_rejects_bad_header, 0, N_BAD_HEADERS);
    tcase_add_test(parse, test_parse_rejects_bad_preamble);
    tcase_add_test(parse, test_parse_accepts_variants);
    tcase_add_test(parse, test_parse_every_truncation_fails);
    tcase_add_test(parse, test_parse_survives_corruption);
    suite_add_tcase(s, parse);
    return s;
}
