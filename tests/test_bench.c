/* test_bench.c — `qkv bench`'s command line: an unknown section, a bad flag or
 * value, and an unwritable --json path are refused with one line and exit 2
 * before anything is measured; --help exits 0. (Speed itself is never tested.) */
#include "test_util.h"

START_TEST(bench_refuses_bad_arguments) {
    char line[512];
    ck_assert_int_eq(run_qkv("bench nosuch", line, sizeof line), 2);
    ck_assert_msg(strstr(line, "unknown section 'nosuch'"), "message: %s", line);
    ck_assert_int_eq(run_qkv("bench matmul --clock sundial", line, sizeof line), 2);
    ck_assert_msg(strstr(line, "--clock"), "message: %s", line);
    ck_assert_int_eq(run_qkv("bench matmul --bogus", line, sizeof line), 2);
    ck_assert_msg(strstr(line, "--bogus"), "message: %s", line);
    ck_assert_int_eq(run_qkv("bench matmul --json /nonexistent-dir/x.json", line, sizeof line), 2);
    ck_assert_msg(strstr(line, "--json"), "message: %s", line);
    ck_assert_int_eq(run_qkv("bench --help", line, sizeof line), 0);
}
END_TEST

Suite *suite_bench(void) {
    Suite *s = suite_create("bench");
    TCase *tc = tcase_create("bench");
    tcase_add_test(tc, bench_refuses_bad_arguments);
    suite_add_tcase(s, tc);
    return s;
}
