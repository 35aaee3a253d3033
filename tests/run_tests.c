/* run_tests.c — runs every Check suite of the list in suites.h in one process,
 * without fork (see test_util.h), and exits non-zero if any test failed. */
#include <check.h>
#include <stdlib.h>

#include "core/kernels/wait_policy.h"
#include "tests/suites.h"

#define DECLARE(name) Suite *suite_##name(void);
QKV_TEST_SUITES(DECLARE)

int main(int argc, char **argv) {
    (void)argc;
    qkv_default_wait_policy(argv); /* spin or sleep by load, unless the environment chose */
    SRunner *runner = srunner_create(NULL);
#define ADD(name) srunner_add_suite(runner, suite_##name());
    QKV_TEST_SUITES(ADD)
    srunner_set_fork_status(runner, CK_NOFORK);
    srunner_run_all(runner, CK_NORMAL);
    int failed = srunner_ntests_failed(runner);
    srunner_free(runner);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
