/* test_train.c — SGD, the spirals data, the demo's accuracy, and the CLI's
 * handling of bad flags. */
#include "test_util.h"

#include <stdlib.h>

#include "train/spirals_task.h"

START_TEST(sgd_step_by_hand) {
    qkv_params params = {0};
    qkv_tensor *p = qkv_params_new(&params, "p", 1, (int[]){2});
    qkv_tensor_copy_from(p, (float[]){1.0f, -2.0f});
    qkv_sgd opt;
    qkv_sgd_init(&opt, 0.1f, 0.9f);
    /* step 1: v = g = (1, 2); p = (1 - 0.1, -2 - 0.2) */
    p->grad[0] = 1.0f; p->grad[1] = 2.0f;
    qkv_sgd_step(&opt, &params);
    ck_assert_float_eq_tol(p->data[0], 0.9f, 1e-7f);
    ck_assert_float_eq_tol(p->data[1], -2.2f, 1e-6f);
    /* step 2: v = 0.9 * (1, 2) + (1, 2) = (1.9, 3.8) */
    qkv_sgd_step(&opt, &params);
    ck_assert_float_eq_tol(p->data[0], 0.9f - 0.19f, 1e-6f);
    ck_assert_float_eq_tol(p->data[1], -2.2f - 0.38f, 1e-6f);
    qkv_sgd_free(&opt);
    qkv_params_free(&params);
}
END_TEST

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

START_TEST(demo_learns_spirals) {
    qkv_spirals_config config;
    qkv_spirals_default_config(&config);
    qkv_spirals_result result;
    qkv_spirals_train(&config, NULL, &result, NULL);
    ck_assert_float_lt(result.final_loss, result.first_loss);
    ck_assert_msg(result.test_accuracy > 0.95f, "test accuracy %.3f", result.test_accuracy);
}
END_TEST

/* Runs ../qkv with arguments; returns its exit status and the first line of stderr. */
static int run_cli(const char *args, char *first_line, size_t len) {
    char command[512];
    snprintf(command, sizeof command, "../qkv %s 2>&1 >/dev/null", args);
    FILE *p = popen(command, "r");
    ck_assert_ptr_nonnull(p);
    first_line[0] = '\0';
    if (!fgets(first_line, (int)len, p)) first_line[0] = '\0';
    char sink[256];
    while (fgets(sink, sizeof sink, p)) {}
    int status = pclose(p);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

START_TEST(cli_rejects_bad_flags_with_one_line) {
    char line[512];
    ck_assert_int_eq(run_cli("train spirals --steps abc", line, sizeof line), 2);
    ck_assert_ptr_nonnull(strstr(line, "--steps: expected an integer"));
    ck_assert_int_eq(run_cli("train spirals --lr", line, sizeof line), 2);
    ck_assert_ptr_nonnull(strstr(line, "--lr needs a value"));
    ck_assert_int_eq(run_cli("train spirals --bogus 1", line, sizeof line), 2);
    ck_assert_ptr_nonnull(strstr(line, "unknown flag '--bogus'"));
    ck_assert_int_eq(run_cli("train nosuchtask", line, sizeof line), 2);
    ck_assert_ptr_nonnull(strstr(line, "unknown task 'nosuchtask'"));
    ck_assert_int_eq(run_cli("frobnicate", line, sizeof line), 2);
    ck_assert_int_eq(run_cli("train spirals --steps 5 --quiet", line, sizeof line), 0);
    ck_assert_int_eq(run_cli("gradcheck --filter nothing-has-this-name", line, sizeof line), 1);
}
END_TEST

Suite *suite_train(void) {
    Suite *s = suite_create("train");
    TCase *tc = tcase_create("train");
    tcase_set_timeout(tc, 0);
    tcase_add_test(tc, sgd_step_by_hand);
    tcase_add_test(tc, spirals_are_deterministic_and_balanced);
    tcase_add_test(tc, demo_learns_spirals);
    tcase_add_test(tc, cli_rejects_bad_flags_with_one_line);
    suite_add_tcase(s, tc);
    return s;
}
