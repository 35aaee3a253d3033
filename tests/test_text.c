/* test_text.c — data/text.h: a corpus from a file or a directory (its order and
 * what it skips), the errors that name the path, and the train/validation split.
 * Every file is generated in a scratch directory; sparse files stand in for
 * oversized ones. */
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "data/text.h"
#include "tests/test_util.h"

START_TEST(text_load_reads_a_file) {
    enum { N = 5000 };
    uint8_t bytes[N];
    qkv_rng rng = qkv_rng_make(11);
    for (int i = 0; i < N; i++) bytes[i] = (uint8_t)qkv_rng_below(&rng, 256); /* NULs and 0xff included */
    write_file_bytes(scratch_file("corpus.bin"), bytes, N);
    qkv_text_corpus c;
    ck_assert_msg(qkv_text_load(scratch_file("corpus.bin"), &c) == 0, "%s", qkv_last_error());
    ck_assert(c.n == N && c.n_files == 1 && memcmp(c.bytes, bytes, N) == 0 && c.bytes[c.n] == '\0');
    qkv_text_corpus_free(&c);
    qkv_text_corpus_free(&c); /* twice is fine */
    ck_assert_ptr_null(c.bytes);
    /* through a symlink given as the path */
    ck_assert_int_eq(symlink("corpus.bin", scratch_file("link")), 0);
    ck_assert_int_eq(qkv_text_load(scratch_file("link"), &c), 0);
    ck_assert_int_eq(c.n, N);
    qkv_text_corpus_free(&c);
}
END_TEST

START_TEST(text_load_concatenates_a_directory_by_name) {
    ck_assert_int_eq(mkdir(scratch_file("d"), 0777), 0);
    write_file_bytes(scratch_file("d/b.txt"), "BBB", 3);
    write_file_bytes(scratch_file("d/a"), "a\0a", 3);
    write_file_bytes(scratch_file("d/B"), "\xff", 1); /* strcmp: 'B' < 'a' */
    write_file_bytes(scratch_file("d/0empty"), "", 0);
    write_file_bytes(scratch_file("d/a.dat"), "index", 5);
    write_file_bytes(scratch_file("d/.hidden"), "hidden", 6);
    ck_assert_int_eq(symlink("a", scratch_file("d/c")), 0);
    ck_assert_int_eq(mkdir(scratch_file("d/sub"), 0777), 0);
    write_file_bytes(scratch_file("d/sub/x"), "nested", 6);
    ck_assert_int_eq(mkfifo(scratch_file("d/fifo"), 0666), 0); /* skipped, not opened: no hang */
    qkv_text_corpus c;
    ck_assert_msg(qkv_text_load(scratch_file("d"), &c) == 0, "%s", qkv_last_error());
    ck_assert_int_eq(c.n, 7);
    ck_assert_mem_eq(c.bytes, "\xff" "a\0aBBB", 7); /* 0empty, B, a, b.txt */
    ck_assert_int_eq(c.n_files, 4);
    qkv_text_corpus_free(&c);
}
END_TEST

START_TEST(text_load_errors_name_the_path) {
    qkv_text_corpus c;
    const char *missing = scratch_file("missing");
    ck_assert_int_eq(qkv_text_load(missing, &c), -1);
    expect_last_error(missing, "cannot open: No such file or directory");
    ck_assert(c.bytes == NULL && c.n == 0);
    write_file_bytes(scratch_file("empty"), "", 0);
    ck_assert_int_eq(qkv_text_load(scratch_file("empty"), &c), -1);
    expect_last_error(scratch_file("empty"), "empty file");
    ck_assert_int_eq(mkdir(scratch_file("none"), 0777), 0);
    ck_assert_int_eq(qkv_text_load(scratch_file("none"), &c), -1);
    expect_last_error(scratch_file("none"), "no file to read in the directory");
    ck_assert_int_eq(mkdir(scratch_file("dat"), 0777), 0);
    write_file_bytes(scratch_file("dat/fortunes.dat"), "xx", 2);
    write_file_bytes(scratch_file("dat/.x"), "xx", 2);
    ck_assert_int_eq(qkv_text_load(scratch_file("dat"), &c), -1);
    expect_last_error(scratch_file("dat"), "no file to read in the directory");
    ck_assert_int_eq(mkdir(scratch_file("blank"), 0777), 0);
    write_file_bytes(scratch_file("blank/a"), "", 0);
    write_file_bytes(scratch_file("blank/b"), "", 0);
    ck_assert_int_eq(qkv_text_load(scratch_file("blank"), &c), -1);
    expect_last_error(scratch_file("blank"), "the directory's 2 files are all empty");
    ck_assert_int_eq(qkv_text_load("/dev/null", &c), -1);
    expect_last_error("/dev/null", "not a regular file or a directory");
    ck_assert_int_eq(mkfifo(scratch_file("fifo"), 0666), 0);
    ck_assert_int_eq(qkv_text_load(scratch_file("fifo"), &c), -1); /* no writer, yet no hang */
    expect_last_error(scratch_file("fifo"), "not a regular file or a directory");
}
END_TEST

/* Sparse files claim the sizes for free; nothing of that size is allocated. */
START_TEST(text_load_refuses_more_than_the_limit) {
    qkv_text_corpus c;
    write_sparse_file(scratch_file("huge"), "x", 1, QKV_TEXT_MAX_BYTES + 1);
    ck_assert_int_eq(qkv_text_load(scratch_file("huge"), &c), -1);
    expect_last_error(scratch_file("huge"), "file too large (1073741825 bytes; the limit is 1073741824)");
    ck_assert_int_eq(mkdir(scratch_file("two"), 0777), 0);
    write_sparse_file(scratch_file("two/a"), "x", 1, QKV_TEXT_MAX_BYTES / 2 + 1);
    write_sparse_file(scratch_file("two/b"), "x", 1, QKV_TEXT_MAX_BYTES / 2);
    ck_assert_int_eq(qkv_text_load(scratch_file("two"), &c), -1);
    expect_last_error(scratch_file("two"), "its files hold more than 1073741824 bytes");
}
END_TEST

START_TEST(text_split_boundaries) {
    ck_assert_int_eq(qkv_text_split(10, 0.1), 9);
    ck_assert_int_eq(qkv_text_split(99, 0.1), 90);     /* floor(9.9) = 9 */
    ck_assert_int_eq(qkv_text_split(1000, 0.25), 750);
    ck_assert_int_eq(qkv_text_split(10, 0.0), 10);
    ck_assert_int_eq(qkv_text_split(7, 0.5), 4);       /* floor(3.5) = 3 validate */
    ck_assert_int_eq(qkv_text_split(8, 0.5), 4);
    ck_assert_int_eq(qkv_text_split(1, 0.5), 1);
    ck_assert_int_eq(qkv_text_split(0, 0.1), 0);
    ck_assert_int_eq(qkv_text_split(2319007 + 257667, 0.1), 2319007); /* 2576674 bytes */
    EXPECT_FATAL(qkv_text_split(10, 0.6), "val_fraction 0.6 outside [0, 0.5]");
    EXPECT_FATAL(qkv_text_split(10, -0.1), "outside [0, 0.5]");
}
END_TEST

Suite *suite_text(void) {
    Suite *s = suite_create("text");
    TCase *tc = tcase_create("corpus");
    tcase_add_checked_fixture(tc, scratch_dir_create, scratch_dir_remove);
    tcase_add_test(tc, text_load_reads_a_file);
    tcase_add_test(tc, text_load_concatenates_a_directory_by_name);
    tcase_add_test(tc, text_load_errors_name_the_path);
    tcase_add_test(tc, text_load_refuses_more_than_the_limit);
    tcase_add_test(tc, text_split_boundaries);
    suite_add_tcase(s, tc);
    return s;
}
