/* run_tests.c — runs every Check suite of the list in suites.h in one process,
 * without fork (see test_util.h), and exits non-zero if any test failed.
 * QKV_TEST_SKIP=a,b leaves the named suites out (the valgrind run: see the
 * Makefile); a name that is no suite is refused, so a skip list cannot go stale. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/kernels/wait_policy.h"
#include "tests/suites.h"

#define DECLARE(name) Suite *suite_##name(void);
QKV_TEST_SUITES(DECLARE)

/* The item after p's in a comma-separated list, or NULL. */
static const char *next_item(const char *p) {
    const char *comma = strchr(p, ',');
    return comma ? comma + 1 : NULL;
}

/* Whether name is an item of the comma-separated list. */
static int listed(const char *list, const char *name) {
    size_t n = strlen(name);
    for (const char *p = list; p && *p; p = next_item(p))
        if (strncmp(p, name, n) == 0 && (p[n] == ',' || p[n] == '\0')) return 1;
    return 0;
}

int main(int argc, char **argv) {
    (void)argc;
    qkv_default_wait_policy(argv); /* spin or sleep by load, unless the environment chose */
    const char *skip = getenv("QKV_TEST_SKIP");
    int known = 0, skipped = 0;
#define COUNT(name) known += listed(skip, #name);
    QKV_TEST_SUITES(COUNT)
    for (const char *p = skip; p && *p; p = next_item(p)) skipped++;
    if (skipped != known) {
        fprintf(stderr, "run_tests: QKV_TEST_SKIP=%s names a suite that is not in tests/suites.h\n", skip);
        return 2;
    }
    SRunner *runner = srunner_create(NULL);
#define ADD(name) if (!listed(skip, #name)) srunner_add_suite(runner, suite_##name());
    QKV_TEST_SUITES(ADD)
    srunner_set_fork_status(runner, CK_NOFORK);
    srunner_run_all(runner, CK_NORMAL);
    int failed = srunner_ntests_failed(runner);
    srunner_free(runner);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
