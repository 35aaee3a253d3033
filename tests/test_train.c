/* test_train.c — the spirals data, the demo's accuracy, and the CLI's
 * handling of bad flags. */
#include "tests/test_util.h"

#include <stdlib.h>

#include "cli/commands.h"
#include "train/tasks/spirals.h"

START_TEST(spirals_are_deterministic_and_balanced) {
    float x1[200 * 2], x2[200 * 2];
    int32_t y1[200], y2[200];
    qkv_spirals_make(100, 2, 0.1f, 3, x1, y1);
    qkv_spirals_make(100, 2, 0.1f, 3, x2, y2);
    ck_assert_int_eq(memcmp(x1, x2, sizeof x1), 0);
    int ones = 0;
    for (int i = 0; i < 200; i++) {
        ones += y1[i];
        ck_assert(hypotf(x1[2 * i], x1[2 * i + 1]) <= 1.0001f);
    }
    ck_assert_int_eq(ones, 100);
}
END_TEST

START_TEST(mlp_learns_spirals) {
    qkv_spirals_config config;
    qkv_spirals_default_config(&config);
    qkv_spirals_task model;
    qkv_spirals_task_init(&model, &config);
    qkv_trainer_config trainer = {.steps = 2000, .quiet = 1, .seed = 1};
    trainer.optim = (qkv_optimizer_config){.kind = QKV_OPT_SGD, .lr = 0.1f, .momentum = 0.9f};
    qkv_train_result result;
    ck_assert_int_eq(train_with(&trainer, &model.task, &result), 0);
    const double *accuracy = qkv_metrics_get(&result.metrics, "test_acc");
    ck_assert_ptr_nonnull(accuracy);
    ck_assert_msg(*accuracy > 0.95, "test accuracy %.3f", *accuracy);
    ck_assert_float_lt(result.final_loss, 0.1f);
    qkv_spirals_task_free(&model);
}
END_TEST

/* `qkv args --help` prints what on stdout. */
static void expect_help_lists(const char *args, const char *what) {
    char command[512], line[1024];
    snprintf(command, sizeof command, "%s %s --help 2>/dev/null", qkv_binary(), args);
    FILE *p = popen(command, "r");
    ck_assert_ptr_nonnull(p);
    int found = 0;
    while (fgets(line, sizeof line, p)) found |= strstr(line, what) != NULL;
    pclose(p);
    ck_assert_msg(found, "qkv %s --help does not list %s", args, what);
}

/* `qkv args --help` says word (not as part of a longer word: "--plot" is not in
 * "--plot-metric") exactly once. */
static void expect_help_says_once(const char *args, const char *word) {
    char command[512], line[1024];
    snprintf(command, sizeof command, "%s %s --help 2>/dev/null", qkv_binary(), args);
    FILE *p = popen(command, "r");
    ck_assert_ptr_nonnull(p);
    int count = 0;
    size_t len = strlen(word);
    while (fgets(line, sizeof line, p))
        for (const char *at = strstr(line, word); at; at = strstr(at + 1, word)) {
            char next = at[len];
            count += !(next == '-' || next == '_' || (next >= 'a' && next <= 'z'));
        }
    pclose(p);
    ck_assert_msg(count == 1, "qkv %s --help says %s %d times", args, word, count);
}

START_TEST(cli_rejects_bad_flags_with_one_line) {
    char line[512];
    ck_assert_int_eq(run_qkv("train spirals --steps abc", line, sizeof line), 2);
    ck_assert_ptr_nonnull(strstr(line, "--steps: expected an integer"));
    ck_assert_int_eq(run_qkv("train spirals --lr", line, sizeof line), 2);
    ck_assert_ptr_nonnull(strstr(line, "--lr needs a value"));
    ck_assert_int_eq(run_qkv("train spirals --bogus 1", line, sizeof line), 2);
    ck_assert_ptr_nonnull(strstr(line, "unknown flag '--bogus'"));
    /* A micro-batch that does not divide the batch: one line, before the banner. */
    ck_assert_int_eq(run_qkv("train reverse --micro-batch 5 --steps 2", line, sizeof line), 2);
    ck_assert_ptr_nonnull(strstr(line, "--micro-batch 5 does not divide the batch of 64 (try 16)"));
    char command[512], out[256];
    snprintf(command, sizeof command, "%s train reverse --micro-batch 5 --steps 2 2>/dev/null", qkv_binary());
    FILE *p = popen(command, "r");
    ck_assert_ptr_nonnull(p);
    ck_assert_msg(!fgets(out, sizeof out, p), "printed before the error: %s", out);
    pclose(p);
    ck_assert_int_eq(run_qkv("train nosuchtask", line, sizeof line), 2);
    ck_assert_ptr_nonnull(strstr(line, "unknown task 'nosuchtask'"));
    ck_assert_int_eq(run_qkv("frobnicate", line, sizeof line), 2);
    ck_assert_int_eq(run_qkv("train spirals --steps 5 --quiet", line, sizeof line), 0);
    ck_assert_int_eq(run_qkv("gradcheck --filter nothing-has-this-name", line, sizeof line), 2);
    /* A picture's name says PNG, before any work. */
    static const char *const not_png[] = {"train spirals --plot out.jpg", "experiment lengthgen --plot lg.svg",
                                          "detect no.safetensors img.png --out boxes.jpeg"};
    for (size_t i = 0; i < sizeof not_png / sizeof *not_png; i++) {
        ck_assert_int_eq(run_qkv(not_png[i], line, sizeof line), 2);
        ck_assert_msg(strstr(line, ": qkv writes pictures as PNG: give a name ending in .png"), "%s: %s", not_png[i],
                      line);
    }
}
END_TEST

/* Every command takes --threads (its --help lists it): the commands of the table in
 * cli/commands.h, a command with subcommands through one of them. */
START_TEST(every_command_takes_threads) {
#define COMMAND_NAME(fn, under_mpi) qkv_command_##fn.name,
    const char *const names[] = {QKV_COMMANDS(COMMAND_NAME)};
#undef COMMAND_NAME
    static const struct { const char *command, *as; } sub[] = {
        {"train", "train spirals"}, {"data", "data detect"}, {"explain", "explain attention"},
        {"experiment", "experiment permutation"}, {"experiment", "experiment lengthgen"}};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        if (strcmp(names[i], "--version") == 0) continue;
        int runs = 0;
        for (size_t s = 0; s < sizeof sub / sizeof *sub; s++)
            if (strcmp(sub[s].command, names[i]) == 0) runs += 1, expect_help_lists(sub[s].as, "--threads N");
        if (!runs) expect_help_lists(names[i], "--threads N");
    }
}
END_TEST

/* Each command's usage comes from its spec (cli/args.h): `qkv --help` lists
 * "NAME ARGS" and its summary, its own --help opens with "usage: qkv NAME ARGS
 * [flags]" and the summary, and a command that needs positional arguments refuses
 * a command line without them (one line, exit 2) naming them. */
START_TEST(every_command_usage_comes_from_its_spec) {
    char command[512], line[1024], expected[256];
    snprintf(command, sizeof command, "%s --help", qkv_binary());
    FILE *p = popen(command, "r");
    ck_assert_ptr_nonnull(p);
    char help[8192] = "";
    while (fgets(line, sizeof line, p)) strncat(help, line, sizeof help - strlen(help) - 1);
    pclose(p);
#define SPEC_PTR(fn, under_mpi) &qkv_command_##fn,
    const qkv_command_spec *const specs[] = {QKV_COMMANDS(SPEC_PTR)};
#undef SPEC_PTR
    for (size_t i = 0; i < sizeof specs / sizeof *specs; i++) {
        const qkv_command_spec *c = specs[i];
        ck_assert_ptr_nonnull(strstr(help, c->summary));
        snprintf(expected, sizeof expected, "  %s%s%s ", c->name, c->args[0] ? " " : "", c->args);
        ck_assert_msg(strstr(help, expected), "qkv --help lacks '%s'", expected);
        if (c->subs || c->run == qkv_cmd_train || c->run == qkv_cmd_version) continue;
        snprintf(expected, sizeof expected, "usage: qkv %s%s%s [flags]", c->name, c->args[0] ? " " : "", c->args);
        expect_help_lists(c->name, expected);
        expect_help_says_once(c->name, "usage:");
        for (int f = 0; c->run == qkv_cmd_sample && f < c->n_fields; f++)   /* its row, not the summary again */
            if (c->fields[f].flag) expect_help_says_once(c->name, c->fields[f].flag);
        expect_help_lists(c->name, c->summary);
        if (c->n_args == 0) continue;
        ck_assert_int_eq(run_qkv(c->name, line, sizeof line), 2);
        snprintf(expected, sizeof expected, "qkv %s: name %s first", c->name, c->args);
        ck_assert_msg(strstr(line, expected), "qkv %s: %s", c->name, line);
    }
}
END_TEST

/* A misspelled command, task, experiment, flag or value names the nearest known
 * one; a name far from every known one gets no guess. */
START_TEST(cli_suggests_the_nearest_name) {
    static const struct { const char *args, *says; } cases[] = {
        {"trian reverse", "unknown command 'trian' (did you mean train? "},
        {"train revrese", "unknown task 'revrese' (did you mean reverse? "},
        {"train reverse --step 5", "unknown flag '--step' (did you mean --steps? try --help)"},
        {"train reverse --optimizer adamm", "unknown value 'adamm' (did you mean adam? allowed: "},
        {"experiment lengthgn", "unknown experiment 'lengthgn' (did you mean lengthgen? "},
        {"data detcet", "unknown set 'detcet' (did you mean detect? "},
        {"explain atention", "unknown topic 'atention' (did you mean attention? "},
        {"train reverse --zzz 1", "unknown flag '--zzz' (try --help)"},
        {"zzz", "unknown command 'zzz' (qkv --help lists the commands)"},
    };
    char line[512];
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        ck_assert_int_eq(run_qkv(cases[i].args, line, sizeof line), 2);
        ck_assert_msg(strstr(line, cases[i].says), "qkv %s: %s", cases[i].args, line);
    }
}
END_TEST

/* A command line that names no command, task or subcommand it knows gets one
 * line (a hint, never the whole usage after it) and exit 2. */
START_TEST(an_unknown_or_missing_name_is_one_line) {
    static const struct { const char *args, *says; } cases[] = {
        {"trian", "qkv: unknown command 'trian' (did you mean train? qkv --help lists the commands)"},
        {"train", "qkv train: which task? "},
        {"experiment", "qkv experiment: which experiment? permutation"},
        {"data", "qkv data: which set? "},
        {"explain", "qkv explain: which topic? "},
    };
    char line[512];
    scratch_dir_create();
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        const char *err = scratch_file("one_line.err");
        int status = wait_qkv(spawn_qkv(cases[i].args, NULL, 0, err));
        ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 2, "qkv %s: status %d", cases[i].args, status);
        first_line(err, line, sizeof line);   /* fails on a second line */
        ck_assert_msg(strncmp(line, cases[i].says, strlen(cases[i].says)) == 0, "qkv %s: %s", cases[i].args, line);
    }
    scratch_dir_remove();
}
END_TEST

Suite *suite_train(void) {
    Suite *s = suite_create("train");
    TCase *tc = tcase_create("train");
    tcase_set_timeout(tc, 0);
    tcase_add_test(tc, spirals_are_deterministic_and_balanced);
    tcase_add_test(tc, mlp_learns_spirals);
    tcase_add_test(tc, cli_rejects_bad_flags_with_one_line);
    tcase_add_test(tc, cli_suggests_the_nearest_name);
    tcase_add_test(tc, an_unknown_or_missing_name_is_one_line);
    tcase_add_test(tc, every_command_takes_threads);
    tcase_add_test(tc, every_command_usage_comes_from_its_spec);
    suite_add_tcase(s, tc);
    return s;
}
