/* test_tasks.c — every registered task against fixtures written by an earlier
 * version of qkv (tests/ref/tasks/, made by tests/make_task_fixtures.sh):
 *
 *   - the same flags and seed train to the same checkpoint, byte for byte
 *     (weights, optimizer state, step, config description);
 *   - `qkv eval` loads each committed checkpoint and prints the metrics that its
 *     training run ended with;
 *   - `qkv train TASK --resume` continues from it;
 *   - every task in the registry has a fixture, so a new task cannot skip this;
 *   - the field layer (train/fields.h): defaults, descriptions in table
 *     order, parsing back, bad values refused, optional settings.
 */
#include "tests/test_util.h"

#include <stdio.h>
#include <stdlib.h>

#include "train/checkpoint.h"
#include "train/tasks/registry.h"
#include "train/settings.h"

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
    snprintf(out, len, "%.*s", (int)(n < 200 ? n : 200), (const char *)text);   /* text is not NUL-terminated */
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
        char flags[400]; /* the run's flags but its --steps (a flag is given once) */
        snprintf(flags, sizeof flags, "%s", runs[i].flags);
        char *steps = strstr(flags, "--steps ");
        ck_assert_ptr_nonnull(steps);
        char *after = strchr(steps + 8, ' ');
        memmove(steps, after ? after + 1 : "", strlen(after ? after + 1 : "") + 1);
        snprintf(args, sizeof args, "train %s %s --steps 4 --quiet --resume " FIXTURES "/%s.safetensors",
                 runs[i].task, flags, runs[i].name);
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

/* A toy config and table for the field layer itself. */
typedef struct toy_config {
    int width, mode, verbose;
    float rate;
    unsigned long long seed;
    const char *data;
    int later;
} toy_config;
static const char *const toy_modes[] = {"fast", "slow", NULL};
static const qkv_field toy_fields[] = {
    QKV_INT_FIELD("--width", "width", toy_config, width, 1, 64, 8, "width"),
    QKV_CHOICE_FIELD("--mode", "mode", toy_config, mode, toy_modes, 1, "mode"),
    QKV_FLAG_FIELD("--verbose", toy_config, verbose, "talk"),
    QKV_FLOAT_FIELD("--rate", "rate", toy_config, rate, 0, 1, 0.25, "rate"),
    QKV_SEED_FIELD(toy_config, seed, "seed"),
    QKV_TEXT_FIELD("--data", "data", toy_config, data, "none", "data"),
    {"--later", "later", QKV_FIELD_INT, offsetof(toy_config, later), 0, 9, 3, NULL, NULL, "added later",
     QKV_FIELD_OPTIONAL, 0, NULL},
};
#define N_TOY ((int)(sizeof toy_fields / sizeof toy_fields[0]))

START_TEST(fields_describe_and_parse_back) {
    toy_config c, back;
    qkv_fields_defaults(toy_fields, N_TOY, &c);
    ck_assert_int_eq(c.width, 8);
    ck_assert_int_eq(c.mode, 1);
    ck_assert(c.rate == 0.25f && c.seed == 1 && !c.data && c.later == 3 && !c.verbose);
    qkv_config_kv kv = {0};
    qkv_fields_describe(toy_fields, N_TOY, &c, &kv);
    /* In table order; the flag and the optional field at its default are not written. */
    const char *keys[] = {"width", "mode", "rate", "seed", "data"}, *values[] = {"8", "slow", "0.25", "1", "none"};
    ck_assert_int_eq(kv.n, 5);
    for (int i = 0; i < 5; i++) {
        ck_assert_str_eq(kv.key[i], keys[i]);
        ck_assert_str_eq(kv.value[i], values[i]);
    }
    c.width = 64, c.mode = 0, c.rate = 0.5f, c.seed = 18446744073709551615ULL, c.data = "dir", c.later = 7;
    kv.n = 0;
    qkv_fields_describe(toy_fields, N_TOY, &c, &kv);
    ck_assert_int_eq(kv.n, 6);
    qkv_fields_defaults(toy_fields, N_TOY, &back);
    ck_assert_int_eq(qkv_fields_parse(toy_fields, N_TOY, &kv, &back), 0);
    ck_assert(back.width == 64 && back.mode == 0 && back.rate == 0.5f && back.seed == c.seed && back.later == 7);
    ck_assert_str_eq(back.data, "dir");
    /* An older description without the optional key reads as its default. */
    kv.n = 5;
    qkv_fields_defaults(toy_fields, N_TOY, &back);
    ck_assert_int_eq(qkv_fields_parse(toy_fields, N_TOY, &kv, &back), 0);
    ck_assert_int_eq(back.later, 3);
}
END_TEST

START_TEST(fields_refuse_bad_descriptions) {
    struct { const char *key, *value, *reason; } bad[] = {
        {"width", "65", "1..64"}, {"width", "x", "integer"}, {"width", "8 ", "integer"},
        {"mode", "medium", "one of"}, {"rate", "nan", "[0, 1]"}, {"rate", "2", "[0, 1]"},
        {"seed", "-1", "unsigned"}, {"seed", "99999999999999999999", "unsigned"},
    };
    for (size_t b = 0; b < sizeof bad / sizeof bad[0]; b++) {
        toy_config c;
        qkv_fields_defaults(toy_fields, N_TOY, &c);
        qkv_config_kv kv = {0};
        qkv_fields_describe(toy_fields, N_TOY, &c, &kv);
        snprintf((char *)qkv_config_get(&kv, bad[b].key), QKV_CONFIG_VALUE_LEN, "%s", bad[b].value);
        ck_assert_int_eq(qkv_fields_parse(toy_fields, N_TOY, &kv, &c), -1);
        expect_last_error(bad[b].key, bad[b].reason);
    }
    toy_config c;
    qkv_fields_defaults(toy_fields, N_TOY, &c);
    qkv_config_kv kv = {0};
    qkv_fields_describe(toy_fields, N_TOY, &c, &kv);
    kv.n = 2;   /* rate, seed and data missing */
    ck_assert_int_eq(qkv_fields_parse(toy_fields, N_TOY, &kv, &c), -1);
    expect_last_error("rate", "missing");
}
END_TEST

/* --rotate is written only when it is not z: a so3 run's checkpoint says so, is
 * evaluated as so3, and does not resume as a z run. */
START_TEST(an_optional_setting_travels_with_its_checkpoint) {
    char args[1024], last[512], line[512];
    const char *small = "--width 16 --heads 2 --layers 1 --points 16 --batch 4 --test-size 8 --quiet";
    snprintf(args, sizeof args, "train points --rotate so3 %s --steps 2 --save %s", small,
             scratch_file("so3.safetensors"));
    ck_assert_int_eq(run_last_line(args, last, sizeof last), 0);
    qkv_config_kv kv;
    ck_assert_int_eq(qkv_checkpoint_read_config(scratch_file("so3.safetensors"), &kv), 0);
    ck_assert_str_eq(qkv_config_get(&kv, "rotate"), "so3");
    snprintf(args, sizeof args, "eval %s", scratch_file("so3.safetensors"));
    ck_assert_int_eq(run_last_line(args, last, sizeof last), 0);
    snprintf(args, sizeof args, "train points %s --steps 3 --resume %s", small, scratch_file("so3.safetensors"));
    ck_assert_int_eq(run_qkv(args, line, sizeof line), 2);
    ck_assert_msg(strstr(line, "rotate is \"so3\" there"), "%s", line);
    snprintf(args, sizeof args, "train points --rotate so3 %s --steps 3 --resume %s", small,
             scratch_file("so3.safetensors"));
    ck_assert_int_eq(run_last_line(args, last, sizeof last), 0);
}
END_TEST

/* The messages of a checkpoint that is not one of a task's, and of --data on a task
 * without a data set. */
START_TEST(eval_names_what_is_wrong_with_a_checkpoint) {
    char args[512], line[512];
    qkv_config_kv kv = {0};
    qkv_config_add(&kv, "task", "juggling");
    qkv_params none = {0};
    ck_assert_int_eq(qkv_checkpoint_save(scratch_file("odd.safetensors"), &none, NULL, 0, NULL, &kv, NULL, NULL), 0);
    snprintf(args, sizeof args, "eval %s", scratch_file("odd.safetensors"));
    ck_assert_int_eq(run_qkv(args, line, sizeof line), 2);
    ck_assert_msg(strstr(line, "juggling") && strstr(line, "reverse, copy"), "%s", line);
    ck_assert_int_eq(run_qkv("eval " FIXTURES "/spirals.safetensors --data /tmp", line, sizeof line), 2);
    ck_assert_msg(strstr(line, "--data") && strstr(line, "spirals"), "%s", line);
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
    tcase_add_test(tc, fields_describe_and_parse_back);
    tcase_add_test(tc, fields_refuse_bad_descriptions);
    tcase_add_test(tc, an_optional_setting_travels_with_its_checkpoint);
    tcase_add_test(tc, eval_names_what_is_wrong_with_a_checkpoint);
    suite_add_tcase(s, tc);
    return s;
}
