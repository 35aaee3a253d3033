/* test_registries.c — the lists that name what exists, against the sources: a
 * thing defined but not listed would silently not run, so each test scans the
 * source files for definitions and fails on one its list does not name (a listed
 * thing that nothing defines fails to link instead).
 *   suites:    every `Suite *suite_NAME(void)` of the .c files in tests/ is in
 *              QKV_TEST_SUITES (suites.h), which run_tests.c runs;
 *   gradcheck: every exported `const qkv_gradcheck_group NAME` of the repository's
 *              C files is in QKV_GRADCHECK_GROUPS (layers/check/checks.h), which
 *              test_gradcheck.c and `./qkv gradcheck` run; their printed names
 *              differ, so each names one group. */
#include "tests/suites.h"
#include "tests/test_util.h"

#define ELEMENTS(array) ((int)(sizeof array / sizeof array[0]))

START_TEST(every_defined_suite_is_listed) {
#define SUITE_SYMBOL(name) "suite_" #name,
    static const char *const listed[] = {QKV_TEST_SUITES(SUITE_SYMBOL)};
#undef SUITE_SYMBOL
    /* The runner links the .c files of tests/, none deeper (the Makefile's TEST_SRC). */
    static const char *const sources[] = {"../tests/*.c", NULL};
    assert_list_matches_sources("QKV_TEST_SUITES (tests/suites.h)", listed, ELEMENTS(listed), sources,
                                "^Suite[[:space:]]*\\*[[:space:]]*([A-Za-z_][A-Za-z0-9_]*)[[:space:]]*\\(");
}
END_TEST

START_TEST(every_defined_gradcheck_group_is_listed) {
#define GROUP_SYMBOL(name) "qkv_checks_" #name,
    static const char *const listed[] = {QKV_GRADCHECK_GROUPS(GROUP_SYMBOL)};
#undef GROUP_SYMBOL
    /* Groups belong in core/check/ and layers/check/, but one anywhere would be missed
     * as surely: every C file one and two folders down from the top is scanned. */
    static const char *const sources[] = {"../*/*.c", "../*/*/*.c", NULL};
    assert_list_matches_sources("QKV_GRADCHECK_GROUPS (layers/check/checks.h)", listed, ELEMENTS(listed), sources,
                                "^const[[:space:]]+qkv_gradcheck_group[[:space:]]+([A-Za-z_][A-Za-z0-9_]*)");
}
END_TEST

START_TEST(gradcheck_group_names_differ) {
    for (int i = 0; i < QKV_GRADCHECK_N_GROUPS; i++)
        for (int j = i + 1; j < QKV_GRADCHECK_N_GROUPS; j++)
            ck_assert_msg(strcmp(qkv_gradcheck_groups[i]->name, qkv_gradcheck_groups[j]->name) != 0,
                          "groups %d and %d of QKV_GRADCHECK_GROUPS are both named %s", i, j,
                          qkv_gradcheck_groups[i]->name);
}
END_TEST

Suite *suite_registries(void) {
    Suite *s = suite_create("registries");
    TCase *suites = tcase_create("suites");
    tcase_add_test(suites, every_defined_suite_is_listed);
    suite_add_tcase(s, suites);
    TCase *gradcheck = tcase_create("gradcheck");
    tcase_add_test(gradcheck, every_defined_gradcheck_group_is_listed);
    tcase_add_test(gradcheck, gradcheck_group_names_differ);
    suite_add_tcase(s, gradcheck);
    return s;
}
