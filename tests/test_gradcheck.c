/* test_gradcheck.c — the finite-difference gradient check of every op and layer:
 * every group of the list in layers/check/checks.h, each its own test case named after
 * the group (CK_RUN_SUITE=gradcheck CK_RUN_CASE=matmul runs one), with the seeds
 * `./qkv gradcheck` uses. The list itself is checked against the sources in
 * test_registries.c; the checker's own test, that it catches a wrong gradient,
 * is in test_core.c. */
#include "tests/test_util.h"

/* Fails on the first case above its tolerance, naming the case, the input and
 * element, and both gradients. */
static void check_group_gradients(const qkv_gradcheck_group *group) {
    ck_assert_msg(group->n_cases > 0, "group %s has no cases", group->name);
    for (int i = 0; i < group->n_cases; i++) {
        const qkv_gradcheck_case *c = &group->cases[i];
        qkv_gradcheck_result r = qkv_gradcheck_run_case(c, 1234 + (uint64_t)i);
        ck_assert_msg(r.n_checked > 0, "%s: no element was checked", c->name);
        ck_assert_msg(r.max_err <= qkv_gradcheck_tolerance(c),
                      "%s: gradient error %.3g > %.3g (input %d, element %zu: analytic %.6g, numeric %.6g)",
                      c->name, r.max_err, (double)qkv_gradcheck_tolerance(c), r.worst_input,
                      r.worst_index, r.worst_analytic, r.worst_numeric);
    }
}

/* _i is the group's index in the list: each case runs one loop iteration. */
START_TEST(group_gradients) { check_group_gradients(qkv_gradcheck_groups[_i]); }
END_TEST

Suite *suite_gradcheck(void) {
    Suite *s = suite_create("gradcheck");
    for (int g = 0; g < QKV_GRADCHECK_N_GROUPS; g++) {
        TCase *tc = tcase_create(qkv_gradcheck_groups[g]->name);
        tcase_set_timeout(tc, 0);
        tcase_add_loop_test(tc, group_gradients, g, g + 1);
        suite_add_tcase(s, tc);
    }
    return s;
}
