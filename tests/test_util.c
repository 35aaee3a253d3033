/* test_util.c — see test_util.h. */
#include "test_util.h"

#include <stdio.h>

jmp_buf qkv_test_jump;
char qkv_test_message[512];

void qkv_test_hook(const char *message) {
    snprintf(qkv_test_message, sizeof qkv_test_message, "%s", message);
    longjmp(qkv_test_jump, 1);
}

void check_group_gradients(const qkv_gradcheck_group *group) {
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
