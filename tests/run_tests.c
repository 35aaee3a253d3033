/* run_tests.c — runs every Check suite in one process, without fork (see
 * test_util.h), and exits non-zero if any test failed. */
#include <check.h>
#include <stdlib.h>

#include "core/wait_policy.h"

#define SUITES(X)                                                                           \
    X(dist)                                                                                 \
    X(core) X(isa) X(elementwise) X(reduce) X(matmul) X(softmax) X(norm) X(shape) X(npy) X(safetensors)        \
    X(patch)                                                                                \
    X(queries)                                                                              \
    X(attention) X(position) X(reference) X(determinism) X(layers) X(mha) X(train)          \
    X(sequence) X(optim) X(trainer) X(set_tasks) X(sets) X(points) X(off) X(png)            \
    X(hungarian) X(set_loss) X(image) X(detect_data) X(viz) X(bench) X(experiments)         \
    X(reliability) X(fuzz) X(detect) X(tasks)

#define DECLARE(name) Suite *suite_##name(void);
SUITES(DECLARE)

int main(int argc, char **argv) {
    (void)argc;
    qkv_default_wait_policy(argv); /* spin or sleep by load, unless the environment chose */
    SRunner *runner = srunner_create(NULL);
#define ADD(name) srunner_add_suite(runner, suite_##name());
    SUITES(ADD)
    srunner_set_fork_status(runner, CK_NOFORK);
    srunner_run_all(runner, CK_NORMAL);
    int failed = srunner_ntests_failed(runner);
    srunner_free(runner);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
