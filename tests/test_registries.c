/* test_registries.c — the lists that name what exists, against the sources: a
 * thing defined but not listed would silently not run, so each test scans the
 * source files for definitions and fails on one its list does not name (a listed
 * thing that nothing defines fails to link instead).
 *   suites:    every `Suite *suite_NAME(void)` of the .c files in tests/ is in
 *              QKV_TEST_SUITES (suites.h), which run_tests.c runs;
 *   gradcheck: every exported `const qkv_gradcheck_group NAME` of the repository's
 *              C files is in QKV_GRADCHECK_GROUPS (layers/check/checks.h), which
 *              test_gradcheck.c and `./qkv gradcheck` run; their printed names
 *              differ, so each names one group;
 *   unary ops: every row of the elementwise table (qkv_unary_ops, core/ops/
 *              ops_elementwise.c) has a public qkv_NAME in ops.h and gradient-check
 *              rows "NAME [shape]" in the elementwise group at 1-D and more dims;
 *              the table's names differ. */
#include <stdlib.h>

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

/* Does any case of the group have a name "op [..." of the given rank (dims counted
 * by commas + 1 inside the brackets)? */
static int has_case(const qkv_gradcheck_group *g, const char *op, int *ranks_seen) {
    size_t n = strlen(op);
    int found = 0;
    for (int i = 0; i < g->n_cases; i++) {
        const char *name = g->cases[i].name;
        if (strncmp(name, op, n) != 0 || strncmp(name + n, " [", 2) != 0) continue;
        found = 1;
        int rank = 1;
        for (const char *c = name + n + 2; *c && *c != ']'; c++) rank += *c == ',';
        if (rank <= 4) ranks_seen[rank] = 1;
    }
    return found;
}

START_TEST(every_unary_op_has_a_wrapper_and_gradcheck_rows) {
    size_t len;
    char *ops_h = (char *)read_file_bytes("../core/ops/ops.h", &len);
    ops_h[len] = '\0';
    ck_assert_int_gt(qkv_unary_op_count, 0);
    for (int i = 0; i < qkv_unary_op_count; i++) {
        const char *op = qkv_unary_ops[i].name;
        for (int j = i + 1; j < qkv_unary_op_count; j++)
            ck_assert_msg(strcmp(op, qkv_unary_ops[j].name) != 0, "unary table names %s twice", op);
        ck_assert_msg(qkv_unary_ops[i].cost >= 1, "unary op %s: cost %d", op, qkv_unary_ops[i].cost);
        char declaration[64];
        snprintf(declaration, sizeof declaration, "*qkv_%s(qkv_tape *tape, qkv_tensor *x", op);
        ck_assert_msg(strstr(ops_h, declaration), "unary op %s: core/ops/ops.h declares no qkv_%s", op, op);
        int ranks[5] = {0};
        ck_assert_msg(has_case(&qkv_checks_elementwise, op, ranks),
                      "unary op %s has no gradient-check row \"%s [shape]\" (core/check/checks_elementwise.c)", op, op);
        ck_assert_msg(ranks[2] && ranks[3], "unary op %s: gradient-check rows need 2-D and 3-D shapes", op);
    }
    free(ops_h);
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
    TCase *unary = tcase_create("unary ops");
    tcase_add_test(unary, every_unary_op_has_a_wrapper_and_gradcheck_rows);
    suite_add_tcase(s, unary);
    return s;
}
