/* test_fuzz.c — replays every committed fuzz input through its harness's target
 * (fuzz_targets.h): the seed corpora and every input that once crashed a harness
 * live in tests/fuzz/<harness>/, so a fixed bug stays fixed in `make test`, and
 * under `make test-asan` each replay is also checked by ASan and UBSan. The
 * fuzzing itself is `make fuzz`. */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "tests/fuzz_targets.h"
#include "tests/test_util.h"

/* run(bytes, len) with stdout and stderr sent to /dev/null: the parsers'
 * messages (the args harness prints them) are not the point here. Restored
 * before anything can fail, so a failing check's report is seen. What is
 * checked is that the target returns at all: no crash, and under test-asan no
 * ASan or UBSan report. */
static void run_quietly(qkv_fuzz_target run, const unsigned char *bytes, size_t len) {
    fflush(stdout);
    fflush(stderr);
    int saved_out = dup(1), saved_err = dup(2), null = open("/dev/null", O_WRONLY);
    if (saved_out >= 0 && saved_err >= 0 && null >= 0) {
        dup2(null, 1);
        dup2(null, 2);
    }
    run(bytes, len);
    fflush(stdout);
    fflush(stderr);
    if (saved_out >= 0) dup2(saved_out, 1), close(saved_out);
    if (saved_err >= 0) dup2(saved_err, 2), close(saved_err);
    if (null >= 0) close(null);
}

/* Runs every file of tests/fuzz/<name>/ through run; returns how many. */
static int replay_dir(const char *name, qkv_fuzz_target run) {
    char dir[256];
    snprintf(dir, sizeof dir, "fuzz/%s", name);
    DIR *d = opendir(dir);
    ck_assert_msg(d != NULL, "no corpus directory %s", dir);
    int count = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.') continue;
        char path[512];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        size_t len = 0;
        unsigned char *bytes = read_file_bytes(path, &len);
        run_quietly(run, bytes, len);
        free(bytes);
        count++;
    }
    closedir(d);
    return count;
}

START_TEST(committed_fuzz_inputs_replay_cleanly) {
    for (int h = 0; h < qkv_fuzz_n_harnesses; h++) {
        int count = replay_dir(qkv_fuzz_harnesses[h].name, qkv_fuzz_harnesses[h].run);
        ck_assert_msg(count >= 3, "%s: only %d inputs in tests/fuzz/%s", qkv_fuzz_harnesses[h].name, count,
                      qkv_fuzz_harnesses[h].name);
    }
}
END_TEST

Suite *suite_fuzz(void) {
    Suite *s = suite_create("fuzz");
    TCase *tc = tcase_create("replay");
    tcase_add_test(tc, committed_fuzz_inputs_replay_cleanly);
    suite_add_tcase(s, tc);
    return s;
}
