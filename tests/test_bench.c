/* test_bench.c — `qkv bench`'s command line: an unknown section, a bad flag or
 * value, and an unwritable --json path are refused with one line and exit 2
 * before anything is measured; --help exits 0. (Speed itself is never tested.)
 * And the wait policy qkv starts libgomp with (qkv_default_wait_policy). */
#include "tests/test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/kernels/omp_shim.h"

#include "core/kernels/wait_policy.h"

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

/* Runs `env ENV qkv_binary() --version` with the OpenMP runtime's verbose
 * environment display; returns how many times the runtime started, *spin =
 * libgomp's last GOMP_SPINCOUNT, or under libomp its last KMP_BLOCKTIME. */
static int runtime_starts(const char *env, long *spin) {
#ifdef QKV_LIBOMP
    const char *key = "KMP_BLOCKTIME='";
#else
    const char *key = "GOMP_SPINCOUNT = '";
#endif
    char command[512], line[256];
    snprintf(command, sizeof command,
             "env -u OMP_WAIT_POLICY -u GOMP_SPINCOUNT -u KMP_BLOCKTIME %s OMP_DISPLAY_ENV=verbose %s --version 2>&1",
             env, qkv_binary());
    FILE *p = popen(command, "r");
    ck_assert_ptr_nonnull(p);
    int starts = 0;
    while (fgets(line, sizeof line, p)) {
        if (strstr(line, "OPENMP DISPLAY ENVIRONMENT BEGIN")) starts++;
        const char *at = strstr(line, key);
        if (at) *spin = atol(at + strlen(key));
    }
    ck_assert_int_eq(pclose(p), 0);
    return starts;
}

#ifndef QKV_LIBOMP
/* Nothing set: libgomp's first start spins (300000), qkv re-executes itself with
 * a short spin (3000) on an idle machine or OMP_WAIT_POLICY=passive (spin 0) on a
 * busy one; which one depends on the machine at that moment, so both are
 * accepted here and the choice itself is checked below. Set by the user: one
 * start, the user's value. */
START_TEST(bench_default_wait_policy) {
    long spin = -1;
    ck_assert_int_eq(runtime_starts("", &spin), 2);
    ck_assert_msg(spin == 0 || spin == atol(QKV_IDLE_SPINCOUNT), "spin %ld", spin);
    ck_assert_int_eq(runtime_starts("GOMP_SPINCOUNT=1000", &spin), 1);
    ck_assert_int_eq(spin, 1000);
    ck_assert_int_eq(runtime_starts("OMP_WAIT_POLICY=active", &spin), 1);
    ck_assert_int_gt(spin, 300000);
}
END_TEST
#else
/* libomp starts when first used, so once whatever qkv chose: on an idle machine
 * its default blocktime (200 ms), on a busy one passive (blocktime 0). Set by the
 * user: the user's value. */
START_TEST(bench_default_wait_policy) {
    long spin = -1;
    ck_assert_int_eq(runtime_starts("", &spin), 1);
    ck_assert_msg(spin == 0 || spin == 200, "blocktime %ld", spin);
    ck_assert_int_eq(runtime_starts("KMP_BLOCKTIME=7", &spin), 1);
    ck_assert_int_eq(spin, 7);
    ck_assert_int_eq(runtime_starts("OMP_WAIT_POLICY=active", &spin), 1);
    ck_assert_int_gt(spin, 0);
}
END_TEST
#endif

START_TEST(wait_policy_follows_the_other_runnable_tasks) {
    const char *name, *value;
    ck_assert_int_eq(qkv_wait_policy_for(0, &name, &value), 1);
#ifdef QKV_LIBOMP
    ck_assert_ptr_null(name); /* libomp's own default is the idle choice */
    ck_assert_ptr_null(value);
#else
    ck_assert_str_eq(name, "GOMP_SPINCOUNT");
    ck_assert_str_eq(value, QKV_IDLE_SPINCOUNT);
#endif
    for (int others = -1; others <= 3; others += 2) { /* -1: /proc/loadavg unreadable */
        ck_assert_int_eq(qkv_wait_policy_for(others, &name, &value), 0);
        ck_assert_str_eq(name, "OMP_WAIT_POLICY");
        ck_assert_str_eq(value, "passive");
    }
    ck_assert_int_ge(qkv_other_runnable(), 0); /* Linux: /proc/loadavg is there */
    /* The default thread count: OMP_NUM_THREADS wins; otherwise 1..cores. */
    int before = qkv_threads();
    setenv("OMP_NUM_THREADS", "3", 1);
    ck_assert_int_eq(qkv_set_threads(0), 3);
    unsetenv("OMP_NUM_THREADS");
    int n = qkv_set_threads(0);
    ck_assert_int_ge(n, 1);
    ck_assert_int_le(n, omp_get_num_procs());
    qkv_set_threads(before);
}
END_TEST

Suite *suite_bench(void) {
    Suite *s = suite_create("bench");
    TCase *tc = tcase_create("bench");
    tcase_add_test(tc, bench_refuses_bad_arguments);
    tcase_add_test(tc, bench_default_wait_policy);
    tcase_add_test(tc, wait_policy_follows_the_other_runnable_tasks);
    suite_add_tcase(s, tc);
    return s;
}
