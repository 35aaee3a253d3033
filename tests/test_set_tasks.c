/* test_set_tasks.c — `qkv train points` and `qkv train maxreg` end to end: a
 * ModelNet-style tree of OFF files written here trains and evaluates, a bad mesh
 * stops the run (or is counted with --skip-bad), resuming is bitwise exact, and bad
 * flags are refused; maxreg --compare's seeds, intervals, jobs and recipe. */
#include "tests/test_util.h"

#include <stdlib.h>
#include <sys/stat.h>

#include "train/stats.h"
#include "train/tasks/points.h"
#include "train/tasks/maxreg.h"
#include "train/tasks/registry.h"

static const char tetrahedron[] = "OFF\n4 4 0\n0 0 0\n1 0 0\n0 1 0\n0 0 1\n3 0 1 2\n3 0 1 3\n3 0 2 3\n3 1 2 3\n";
static const char cube[] = "OFF8 6 0\n" /* the glued variant */
                           "-1 -1 -1\n1 -1 -1\n1 1 -1\n-1 1 -1\n-1 -1 1\n1 -1 1\n1 1 1\n-1 1 1\n"
                           "4 0 1 2 3\n4 4 5 6 7\n4 0 1 5 4\n4 2 3 7 6\n4 1 2 6 5\n4 0 3 7 4\n";

static void write_mesh(const char *cls, const char *split, const char *file, const char *text) {
    char path[256];
    snprintf(path, sizeof path, "%s/%s", scratch_dir, cls);
    mkdir(path, 0755);
    snprintf(path, sizeof path, "%s/%s/%s", scratch_dir, cls, split);
    mkdir(path, 0755);
    snprintf(path, sizeof path, "%s/%s/%s/%s", scratch_dir, cls, split, file);
    write_file_bytes(path, text, strlen(text));
}

static void write_tree(void) {
    const char *names[] = {"a.off", "b.off", "c.off"};
    for (int i = 0; i < 3; i++) {
        write_mesh("cube", "train", names[i], cube);
        write_mesh("tetra", "train", names[i], tetrahedron);
    }
    write_mesh("cube", "test", "t.off", cube);
    write_mesh("tetra", "test", "t.off", tetrahedron);
}

#define SMALL "--steps 6 --width 16 --heads 2 --inducing 4 --points 32 --batch 4 --quiet"

START_TEST(points_trains_on_an_off_tree) {
    char args[1024], line[512];
    write_tree();
    snprintf(args, sizeof args, "train points %s --data %s", SMALL, scratch_dir);
    ck_assert_int_eq(run_qkv(args, line, sizeof line), 0);
    /* A mesh with a face of two vertices stops the run, naming file and line. */
    write_mesh("tetra", "train", "d.off", "OFF\n3 1 0\n0 0 0\n1 0 0\n0 1 0\n2 0 1\n");
    ck_assert_int_eq(run_qkv(args, line, sizeof line), 2);
    ck_assert_msg(strstr(line, "d.off:6") && strstr(line, "2 vertices"), "message: %s", line);
    snprintf(args, sizeof args, "train points %s --data %s --skip-bad", SMALL, scratch_dir);
    ck_assert_int_eq(run_qkv(args, line, sizeof line), 0);
    snprintf(args, sizeof args, "train points %s --data %s/nonexistent", SMALL, scratch_dir);
    ck_assert_int_eq(run_qkv(args, line, sizeof line), 2);
    ck_assert_ptr_nonnull(strstr(line, "nonexistent"));
}
END_TEST

/* Trains a synthetic points task for steps (resuming from resume if not NULL,
 * saving to save if not NULL) and returns its flattened parameters. */
static float *points_run(int steps, const char *save, const char *resume, size_t *n) {
    qkv_points_task_config config;
    qkv_points_task_default_config(&config);
    config.model.width = 16;
    config.model.n_heads = 2;
    config.model.n_inducing = 4;
    config.data.n_points = 24;
    config.data.classes = 3;
    config.batch = 6;
    config.test_size = 12;
    qkv_points_task task;
    ck_assert_int_eq(qkv_points_task_init(&task, &config, NULL, NULL, 0), 0);
    qkv_trainer_config trainer = {.steps = steps, .quiet = 1, .seed = 1, .save_path = save, .resume_path = resume};
    trainer.optim = (qkv_optimizer_config){.kind = QKV_OPT_ADAM, .lr = 1e-3f};
    trainer.schedule = (qkv_schedule){.kind = QKV_SCHED_COSINE, .warmup = 2, .total = 12};
    qkv_train_result result;
    ck_assert_int_eq(train_with(&trainer, &task.task, &result), 0);
    *n = qkv_params_count(&task.params);
    float *flat = malloc(*n * sizeof(float));
    qkv_params_copy_values(&task.params, flat);
    qkv_points_task_free(&task);
    return flat;
}

START_TEST(points_resume_is_bitwise_exact) {
    size_t n1, n2;
    float *straight = points_run(12, NULL, NULL, &n1);
    free(points_run(5, scratch_file("half.safetensors"), NULL, &n2));
    float *resumed = points_run(12, NULL, scratch_file("half.safetensors"), &n2);
    ck_assert_int_eq(n1, n2);
    ck_assert_int_eq(memcmp(straight, resumed, n1 * sizeof(float)), 0);
    free(straight);
    free(resumed);
}
END_TEST

START_TEST(maxreg_runs_and_refuses_bad_flags) {
    char line[512], args[512];
    ck_assert_int_eq(run_qkv("train maxreg --steps 5 --width 8 --heads 2 --quiet", line, sizeof line), 0);
    ck_assert_int_eq(run_qkv("train maxreg --steps 5 --width 8 --heads 3", line, sizeof line), 2);
    ck_assert_ptr_nonnull(strstr(line, "--heads 3 does not divide --width 8"));
    ck_assert_int_eq(run_qkv("train maxreg --model fancy", line, sizeof line), 2);
    ck_assert_ptr_nonnull(strstr(line, "allowed: isab, sab, deepsets-max"));
    ck_assert_int_eq(run_qkv("train maxreg --compare --save /tmp/x.safetensors", line, sizeof line), 2);
    ck_assert_int_eq(run_qkv("train maxreg --min-size 5 --max-size 3", line, sizeof line), 2);
    ck_assert_int_eq(run_qkv("train maxreg --seeds 5", line, sizeof line), 2);   /* not silently ignored */
    ck_assert_ptr_nonnull(strstr(line, "train maxreg: --seeds applies to --compare only"));
    ck_assert_int_eq(run_qkv("train maxreg --jobs 2", line, sizeof line), 2);
    ck_assert_ptr_nonnull(strstr(line, "train maxreg: --jobs applies to --compare only"));
    /* the cosine's floor (the task's 0.1) has a flag, --lr-floor, a fraction of --lr in [0, 1] */
    ck_assert_int_eq(run_qkv("train maxreg --lr-floor 1.5", line, sizeof line), 2);
    ck_assert_ptr_nonnull(strstr(line, "--lr-floor: expected a number in [0, 1]"));
    const char *floors[] = {"", " --lr-floor 0"}, *recorded[] = {"\"min_factor\": 0.1}", "\"min_factor\": 0}"};
    for (int i = 0; i < 2; i++) {
        char run[512];
        snprintf(run, sizeof run,
                 "train maxreg --steps 2 --width 8 --heads 2 --test-size 8 --quiet%s --json %s --save %s", floors[i],
                 scratch_file("floor.json"), scratch_file("floor.safetensors"));
        ck_assert_int_eq(run_qkv(run, line, sizeof line), 0);
        char *record = read_text(scratch_file("floor.json"));
        ck_assert_msg(strstr(record, recorded[i]), "%s: no %s in %s", run, recorded[i], record);
        free(record);
    }
    /* a setting as every other: on --resume a changed floor is named */
    snprintf(args, sizeof args,
             "train maxreg --steps 3 --width 8 --heads 2 --test-size 8 --quiet --lr-floor 0.5 --resume %s",
             scratch_file("floor.safetensors"));
    ck_assert_int_eq(run_qkv(args, line, sizeof line), 0);
    ck_assert_msg(strstr(line, "--lr-floor 0.5 (the checkpoint's run: 0)"), "%s", line);
    ck_assert_int_eq(run_qkv("train points --points 0", line, sizeof line), 2);
    snprintf(args, sizeof args, "train maxreg --compare --steps 3 --width 8 --heads 2 --test-size 16 --json %s",
             scratch_file("compare.json"));
    ck_assert_int_eq(run_qkv(args, line, sizeof line), 0);
    size_t len;
    unsigned char *json = read_file_bytes(scratch_file("compare.json"), &len);
    ck_assert_ptr_nonnull(strstr((char *)json, "\"paper_mae\": 0.2085"));
    free(json);
}
END_TEST


/* The 95% t-interval over seeds (train/stats.h): mean +- t_{0.975,n-1} s / sqrt(n). */
START_TEST(mean_and_t_interval) {
    double mean, half;
    qkv_mean_t95((const double[]){1, 2, 3}, 3, &mean, &half);
    ck_assert_double_eq_tol(mean, 2.0, 1e-15);
    ck_assert_double_eq_tol(half, 4.303 / sqrt(3.0), 1e-12);   /* s = 1 */
    qkv_mean_t95((const double[]){5, 5}, 2, &mean, &half);
    ck_assert(half == 0.0);
    qkv_mean_t95((const double[]){0.25}, 1, &mean, &half);
    ck_assert(mean == 0.25 && isnan(half));
    ck_assert(qkv_t975(1) == 12.706 && qkv_t975(31) == 1.96 && isnan(qkv_t975(0)));
}
END_TEST

/* A --compare record with every run's "seconds" (the wall clock) cut out. */
static char *compare_without_seconds(const char *path) {
    char *text = read_text(path);
    for (char *at; (at = strstr(text, "\"seconds\": "));) {
        char *end = at + strlen("\"seconds\": ");
        while (*end && *end != '}') end++;
        memmove(at, end, strlen(end) + 1);
    }
    return text;
}

/* --compare trains --seeds seeds per model; the table is the same bits whether
 * the runs go one at a time or two at once (--jobs), as lengthgen's. */
START_TEST(maxreg_compare_same_over_jobs) {
    char line[512], args[512];
    const char *base = "train maxreg --compare --steps 3 --width 8 --heads 2 --batch 16 --test-size 16 --seeds 3 --seed 5";
    snprintf(args, sizeof args, "%s --jobs 1 --json %s", base, scratch_file("one.json"));
    ck_assert_int_eq(run_qkv(args, line, sizeof line), 0);
    snprintf(args, sizeof args, "%s --jobs 2 --threads 2 --json %s", base, scratch_file("two.json"));
    ck_assert_int_eq(run_qkv(args, line, sizeof line), 0);
    char *one = compare_without_seconds(scratch_file("one.json")), *two = compare_without_seconds(scratch_file("two.json"));
    ck_assert_str_eq(one, two);
    ck_assert_ptr_nonnull(strstr(one, "\"seeds\": 3"));
    int runs = 0;
    for (const char *at = one; (at = strstr(at, "{\"test_mae\": ")); at++) runs++;
    ck_assert_int_eq(runs, 4 * 3);   /* every model, every seed */
    free(one);
    free(two);
    ck_assert_int_eq(run_qkv("train maxreg --compare --seeds 0", line, sizeof line), 2);
    ck_assert_ptr_nonnull(strstr(line, "--seeds"));
}
END_TEST

/* A model's mean test MAE and its interval's half-width in a --compare record. */
static void compare_model(const char *json, const char *model, double *mae, double *half) {
    char key[64];
    snprintf(key, sizeof key, "\"model\": \"%s\"", model);
    const char *at = strstr(json, key);
    ck_assert_msg(at != NULL, "no %s in the record", model);
    ck_assert_int_eq(sscanf(at + strlen(key), ", \"test_mae\": %lf, \"half_95\": %lf", mae, half), 2);
}

/* A reduced --compare (width 16, batch 32, 300 steps: the recipe's cosine decay
 * over a short run) over two seeds: SAB+PMA learns the maximum (MAE under 0.5 on
 * values in [0, 100)) and beats mean and sum pooling by the paper's factors
 * beyond the 95% intervals. Over seeds 1..3 and 4..6 its MAE is 0.13 to 0.32
 * and theirs 14 to 28, so a training change that breaks set attention, the
 * optimizer or the schedule fails here; the bound against max pooling is a
 * property of the full run's noise floor (docs/sets.md) that a run this short
 * cannot settle, so it is left to the full run recorded in results/maxreg-compare.txt. */
START_TEST(maxreg_compare_reduced_keeps_the_ordering) {
    char line[512], args[512];
    snprintf(args, sizeof args,
             "train maxreg --compare --width 16 --heads 2 --batch 32 --steps 300 --test-size 200 --seeds 2 --jobs 2 "
             "--threads 2 --json %s", scratch_file("reduced.json"));
    ck_assert_int_eq(run_qkv(args, line, sizeof line), 0);
    char *json = read_text(scratch_file("reduced.json"));
    double mean, mean_half, sum, sum_half, sab, sab_half;
    compare_model(json, "deepsets-mean", &mean, &mean_half);
    compare_model(json, "deepsets-sum", &sum, &sum_half);
    compare_model(json, "sab", &sab, &sab_half);
    ck_assert_msg(sab < 0.5, "SAB+PMA's MAE %g: it did not learn the maximum", sab);
    ck_assert_msg(sab + sab_half <= (mean - mean_half) / 3, "SAB+PMA %g +- %g vs mean pooling %g +- %g", sab,
                  sab_half, mean, mean_half);
    ck_assert_msg(sab + sab_half <= (sum - sum_half) / 2, "SAB+PMA %g +- %g vs sum pooling %g +- %g", sab, sab_half,
                  sum, sum_half);
    free(json);
}
END_TEST

/* docs/sets.md's table is the output recorded in results/maxreg-compare.txt:
 * its recipe line is the one the defaults print now, so a change of the recipe
 * (steps, batch, optimizer, lr, schedule, seeds) that is not measured again fails. */
START_TEST(maxreg_recorded_table_is_of_the_default_recipe) {
    const qkv_task_kind *kind = &qkv_task_kind_maxreg;
    qkv_maxreg_task_config config;
    qkv_maxreg_task_default_config(&config);
    qkv_trainer_config trainer = kind->trainer;
    char recipe[512];
    qkv_maxreg_compare_recipe(&config, &trainer, recipe, sizeof recipe);
    char *recorded = read_text("../results/maxreg-compare.txt");
    ck_assert_msg(strstr(recorded, recipe), "results/maxreg-compare.txt is not of the recipe \"%s\"", recipe);
    ck_assert_ptr_nonnull(strstr(recorded, "verdict: the paper's ordering holds"));
    free(recorded);
}
END_TEST

Suite *suite_set_tasks(void) {
    Suite *s = suite_create("set_tasks");
    TCase *tc = tcase_create("set_tasks");
    tcase_set_timeout(tc, 0);
    tcase_add_checked_fixture(tc, scratch_dir_create, scratch_dir_remove);
    tcase_add_test(tc, points_trains_on_an_off_tree);
    tcase_add_test(tc, points_resume_is_bitwise_exact);
    tcase_add_test(tc, maxreg_runs_and_refuses_bad_flags);
    tcase_add_test(tc, mean_and_t_interval);
    tcase_add_test(tc, maxreg_compare_same_over_jobs);
    tcase_add_test(tc, maxreg_compare_reduced_keeps_the_ordering);
    tcase_add_test(tc, maxreg_recorded_table_is_of_the_default_recipe);
    suite_add_tcase(s, tc);
    return s;
}
