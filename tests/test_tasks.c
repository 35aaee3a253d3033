/* test_tasks.c — every registered task against fixtures written by an earlier
 * version of qkv (tests/ref/tasks/, made by tests/make_task_fixtures.sh):
 *
 *   - the same flags and seed train to the same checkpoint, byte for byte
 *     (weights, optimizer state, step, config description);
 *   - `qkv eval` loads each committed checkpoint and prints the metrics that its
 *     training run ended with;
 *   - `qkv train TASK --resume` continues from it;
 *   - every task in the registry has a fixture, so a new task cannot skip this.
 */
#include "test_util.h"

#include <stdio.h>
#include <stdlib.h>

#include "train/tasks/registry.h"

#define FIXTURES "ref/tasks"
#define MAX_RUNS 32

typedef struct fixture_run {
    char name[32], task[32], flags[400];
} fixture_run;

/* The lines "NAME TASK FLAGS..." of runs.txt. */
static int read_runs(fixture_run *runs) {
    FILE *f = fopen(FIXTURES "/runs.txt", "r");
    ck_assert_msg(f != NULL, "cannot open " FIXTURES "/runs.txt");
    char line[512];
    int n = 0;
    while (fgets(line, sizeof line, f) && n < MAX_RUNS) {
        int used = 0;
        if (sscanf(line, "%31s %31s %n", runs[n].name, runs[n].task, &used) < 2) continue;
        snprintf(runs[n].flags, sizeof runs[n].flags, "%s", line + used);
        runs[n].flags[strcspn(runs[n].flags, "\n")] = '\0';
        n++;
    }
    fclose(f);
    ck_assert_int_gt(n, 0);
    return n;
}

/* Runs ./qkv with args; the last line of its stdout into last (stderr to /dev/null). */
static int run_last_line(const char *args, char *last, size_t len) {
    char command[1024], line[512];
    snprintf(command, sizeof command, "%s %s 2>/dev/null", qkv_binary(), args);
    FILE *p = popen(command, "r");
    ck_assert_ptr_nonnull(p);
    last[0] = '\0';
    while (fgets(line, sizeof line, p)) snprintf(last, len, "%s", line);
    last[strcspn(last, "\n")] = '\0';
    int status = pclose(p);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static void expect_same_file(const char *got_path, const char *want_path) {
    size_t got_len, want_len;
    unsigned char *got = read_file_bytes(got_path, &got_len), *want = read_file_bytes(want_path, &want_len);
    size_t at = 0;
    while (at < got_len && at < want_len && got[at] == want[at]) at++;
    ck_assert_msg(got_len == want_len && at == got_len, "%s differs from %s at byte %zu (sizes %zu, %zu)", got_path,
                  want_path, at, got_len, want_len);
    free(got);
    free(want);
}

/* "final: task=X metric=v ..." from a fixture's .final file. */
static void read_final(const char *name, char *out, size_t len) {
    char path[256];
    snprintf(path, sizeof path, FIXTURES "/%.31s.final", name);
    size_t n;
    unsigned char *text = read_file_bytes(path, &n);
    snprintf(out, len, "%.200s", (char *)text);
    out[strcspn(out, "\n")] = '\0';
    free(text);
}

START_TEST(each_task_trains_to_its_fixture) {
    fixture_run runs[MAX_RUNS];
    int n = read_runs(runs);
    for (int i = 0; i < n; i++) {
        char args[1024], last[512], fixture[256];
        snprintf(args, sizeof args, "train %s %s --threads 2 --quiet --save %s", runs[i].task, runs[i].flags,
                 scratch_file("run.safetensors"));
        ck_assert_msg(run_last_line(args, last, sizeof last) == 0, "qkv %s failed", args);
        snprintf(fixture, sizeof fixture, FIXTURES "/%.31s.safetensors", runs[i].name);
        expect_same_file(scratch_file("run.safetensors"), fixture);
    }
}
END_TEST

START_TEST(each_fixture_evaluates_to_its_final_metrics) {
    fixture_run runs[MAX_RUNS];
    int n = read_runs(runs);
    for (int i = 0; i < n; i++) {
        char args[512], last[512], want[512], got[512];
        snprintf(args, sizeof args, "eval " FIXTURES "/%.31s.safetensors --threads 1", runs[i].name);
        ck_assert_msg(run_last_line(args, last, sizeof last) == 0, "qkv %s failed", args);
        /* "final: task=X checkpoint_step=3 m=v ..." against "final: task=X m=v ..." */
        char *step = strstr(last, " checkpoint_step=");
        ck_assert_msg(step != NULL, "qkv %s printed \"%s\"", args, last);
        char *rest = strchr(step + 1, ' ');
        snprintf(got, sizeof got, "%.*s%.200s", (int)(step - last), last, rest ? rest : "");
        read_final(runs[i].name, want, sizeof want);
        ck_assert_msg(strcmp(got, want) == 0, "qkv %s: \"%s\", expected \"%s\"", args, got, want);
    }
}
END_TEST

START_TEST(each_fixture_resumes) {
    fixture_run runs[MAX_RUNS];
    int n = read_runs(runs);
    for (int i = 0; i < n; i++) {
        char args[1024], last[512];
        snprintf(args, sizeof args, "train %s %s --steps 4 --quiet --resume " FIXTURES "/%s.safetensors",
                 runs[i].task, runs[i].flags, runs[i].name);
        ck_assert_msg(run_last_line(args, last, sizeof last) == 0, "qkv %s failed", args);
        ck_assert_msg(strstr(last, " steps=4 ") != NULL, "qkv %s: \"%s\"", args, last);
    }
}
END_TEST

START_TEST(every_registered_task_has_a_fixture) {
    fixture_run runs[MAX_RUNS];
    int n = read_runs(runs);
    for (int k = 0; k < qkv_task_kind_count(); k++) {
        const char *name = qkv_task_kind_at(k)->name;
        int found = 0;
        for (int i = 0; i < n; i++) found |= strcmp(runs[i].task, name) == 0;
        ck_assert_msg(found, "task %s has no line in " FIXTURES "/runs.txt", name);
    }
}
END_TEST

Suite *suite_tasks(void) {
    Suite *s = suite_create("tasks");
    TCase *tc = tcase_create("tasks");
    tcase_set_timeout(tc, 0);
    tcase_add_checked_fixture(tc, scratch_dir_create, scratch_dir_remove);
    tcase_add_test(tc, each_task_trains_to_its_fixture);
    tcase_add_test(tc, each_fixture_evaluates_to_its_final_metrics);
    tcase_add_test(tc, each_fixture_resumes);
    tcase_add_test(tc, every_registered_task_has_a_fixture);
    suite_add_tcase(s, tc);
    return s;
}
