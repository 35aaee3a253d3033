/* test_experiments.c — `qkv experiment permutation` and `qkv experiment lengthgen`
 * on reduced settings, and the tutorial program (docs/tutorial.c) end to end:
 * verdicts agree with the theory, the measures have the promised orders of
 * magnitude, the output files are valid and have the right number of rows, bad
 * flags (and bad options given to the C API) give one line and exit 2 (return -1)
 * with nothing written, and the tutorial's loss falls below a threshold. */
#include "tests/test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>

#include "core/io/json.h"
#include "train/experiments/experiments.h"

/* Parses path as JSON (failing the test otherwise); the caller frees both. */
static unsigned char *parse_json_file(const char *path, qkv_json *doc) {
    size_t len;
    unsigned char *text = read_file_bytes(path, &len);
    ck_assert_msg(qkv_json_parse(doc, text, len, 8) == 0, "%s: %s", path, doc->error);
    return text;
}

/* Index of the value of key in object token obj, or 0 if absent. */
static uint32_t json_member(const qkv_json *doc, uint32_t obj, const char *key) {
    for (uint32_t k = 0, j = obj + 1; k < doc->tokens[obj].count; k++, j = doc->tokens[j + 1].next)
        if (qkv_json_equals(doc, j, key)) return j + 1;
    return 0;
}

static int count_lines(const char *path) {
    size_t len;
    unsigned char *text = read_file_bytes(path, &len);
    int lines = 0;
    for (size_t i = 0; i < len; i++) lines += text[i] == '\n';
    free(text);
    return lines;
}

static const qkv_perm_row *find_row(const qkv_perm_row *rows, int n, const char *config) {
    for (int i = 0; i < n; i++)
        if (strcmp(rows[i].config, config) == 0) return &rows[i];
    ck_abort_msg("no row \"%s\"", config);
    return NULL;
}

START_TEST(permutation_measures_have_the_promised_size) {
    qkv_perm_options o;
    qkv_perm_default_options(&o);
    o.seeds = 1;
    o.perms = 2;
    qkv_perm_row rows[QKV_PERM_MAX_ROWS];
    int n = qkv_permutation_experiment(&o, rows);
    ck_assert_int_ge(n, 13);
    const qkv_perm_row *none = find_row(rows, n, "encoder, no positions");
    const qkv_perm_row *learned = find_row(rows, n, "encoder, learned positions");
    ck_assert_msg(none->equivariance >= 0 && none->equivariance < 1e-5, "no positions: %g", none->equivariance);
    ck_assert_msg(learned->equivariance > 0.1, "learned positions: %g", learned->equivariance);
    ck_assert_msg(find_row(rows, n, "causal mask, no positions")->equivariance > 0.05, "causal mask");
    const qkv_perm_row *context = find_row(rows, n, "cross-attention, context permuted");
    ck_assert(context->equivariance < 0 && context->invariance < 1e-5);   /* n/a, holds */
    for (int i = 0; i < n; i++) ck_assert_msg(rows[i].agrees, "%s disagrees with the theory", rows[i].config);
    ck_assert_str_eq(qkv_perm_measured(-1), "n/a");
    ck_assert_str_eq(qkv_perm_measured(1e-7), "holds");
    ck_assert_str_eq(qkv_perm_measured(1e-3), "unclear");
    ck_assert_str_eq(qkv_perm_measured(0.5), "broken");
}
END_TEST

/* The errors as floats (equivariance, invariance per row), for the thread check. */
static void permutation_errors(float *out, void *ctx) {
    (void)ctx;
    qkv_perm_options o;
    qkv_perm_default_options(&o);
    o.seeds = 1;
    o.perms = 1;
    qkv_perm_row rows[QKV_PERM_MAX_ROWS];
    int n = qkv_permutation_experiment(&o, rows);
    for (int i = 0; i < n; i++) {
        out[2 * i] = (float)rows[i].equivariance;
        out[2 * i + 1] = (float)rows[i].invariance;
    }
}

START_TEST(permutation_errors_are_thread_independent) {
    expect_same_for_1_and_2_threads(permutation_errors, NULL, 2 * QKV_PERM_MAX_ROWS, "permutation errors");
}
END_TEST

START_TEST(permutation_command_writes_json_and_csv) {
    char args[512], line[512];
    const char *json = scratch_file("perm.json");
    snprintf(args, sizeof args, "experiment permutation --seeds 1 --perms 2 --threads 1 --json %s", json);
    const char *csv = scratch_file("perm.csv");
    snprintf(args + strlen(args), sizeof args - strlen(args), " --csv %s", csv);
    ck_assert_int_eq(run_qkv(args, line, sizeof line), 0);
    qkv_json doc;
    unsigned char *text = parse_json_file(scratch_file("perm.json"), &doc);
    uint32_t all = json_member(&doc, 0, "all_agree"), rows = json_member(&doc, 0, "rows");
    ck_assert(all && doc.tokens[all].type == QKV_JSON_TRUE);
    ck_assert(rows && doc.tokens[rows].type == QKV_JSON_ARRAY);
    int n_rows = (int)doc.tokens[rows].count;
    ck_assert_int_ge(n_rows, 13);
    uint32_t first = rows + 1;   /* encoder, no positions: both errors numbers */
    ck_assert_int_eq(doc.tokens[json_member(&doc, first, "equivariance_error")].type, QKV_JSON_NUMBER);
    qkv_json_free(&doc);
    free(text);
    ck_assert_int_eq(count_lines(scratch_file("perm.csv")), n_rows + 1);
    /* An output in a missing directory: one line, exit 2, before any work. */
    ck_assert_int_eq(run_qkv("experiment permutation --csv /nonexistent-dir/p.csv", line, sizeof line), 2);
    ck_assert_msg(strstr(line, "/nonexistent-dir/p.csv") != NULL, "message: %s", line);
    ck_assert_int_eq(run_qkv("experiment permutation --heads 3", line, sizeof line), 2);
    ck_assert_ptr_nonnull(strstr(line, "--heads"));
}
END_TEST

#define TINY "experiment lengthgen --steps 3 --train-max 2 --test-max 4 --seeds 1 --test-size 4 --dim 8 " \
             "--heads 2 --ff 16 --layers 1 --batch 8 --threads 1 --quiet"

START_TEST(lengthgen_writes_csv_json_and_png) {
    char args[1024], line[512];
    int n = snprintf(args, sizeof args, TINY " --pos none,learned --csv %s", scratch_file("lg.csv"));
    n += snprintf(args + n, sizeof args - n, " --json %s", scratch_file("lg.json"));
    snprintf(args + n, sizeof args - n, " --plot %s", scratch_file("lg.png"));
    ck_assert_int_eq(run_qkv(args, line, sizeof line), 0);
    ck_assert_int_eq(count_lines(scratch_file("lg.csv")), 1 + 2 * 1 * 4);   /* header + schemes x seeds x K */
    qkv_json doc;
    unsigned char *text = parse_json_file(scratch_file("lg.json"), &doc);
    uint32_t tasks = json_member(&doc, 0, "tasks");
    ck_assert(tasks && doc.tokens[tasks].count == 1);
    uint32_t schemes = json_member(&doc, tasks + 1, "schemes");
    ck_assert(schemes && doc.tokens[schemes].count == 2);
    uint32_t curve = json_member(&doc, schemes + 1, "exact_match");
    ck_assert(curve && doc.tokens[curve].type == QKV_JSON_ARRAY && doc.tokens[curve].count == 4);
    qkv_json_free(&doc);
    free(text);
    size_t len;
    unsigned char *png = read_file_bytes(scratch_file("lg.png"), &len);
    ck_assert(len > 8 && memcmp(png, "\x89PNG\r\n\x1a\n", 8) == 0);
    free(png);
}
END_TEST

/* The kazemnejad preset parses, and a tiny version of it (flags after --preset
 * override it) runs every scheme on both tasks: a CSV row per task, scheme, seed
 * and length, the summary and the MRR next to the paper's. */
START_TEST(lengthgen_preset_runs_tiny) {
    qkv_lengthgen_options g;
    qkv_lengthgen_default_options(&g);
    ck_assert_int_eq(qkv_lengthgen_preset(&g, "kazemnejad"), 0);
    ck_assert_int_eq(g.train_max, 20);
    ck_assert_int_eq(g.test_max, 40);
    ck_assert_int_eq(g.seeds, 3);
    ck_assert_str_eq(g.tasks, "copy,reverse");
    g.plot = NULL;
    ck_assert_int_eq(qkv_lengthgen_check(&g), 0);
    ck_assert_int_eq(qkv_lengthgen_preset(&g, "nosuch"), -1);
    ck_assert_msg(strstr(qkv_last_error(), "--preset") && strstr(qkv_last_error(), "kazemnejad"), "%s",
                  qkv_last_error());

    char args[1024], line[512];
    int n = snprintf(args, sizeof args,
                     "experiment lengthgen --preset kazemnejad --steps 2 --train-max 2 --test-max 3 --seeds 2 "
                     "--test-size 3 --dim 8 --heads 2 --ff 8 --layers 1 --batch 4 --jobs 2 --quiet --csv %s",
                     scratch_file("k.csv"));
    snprintf(args + n, sizeof args - n, " --plot %s", scratch_file("k.png"));
    ck_assert_int_eq(run_qkv(args, line, sizeof line), 0);
    ck_assert_int_eq(count_lines(scratch_file("k.csv")), 1 + 2 * 9 * 2 * 3);   /* tasks x schemes x seeds x K */
    ck_assert_int_eq(run_qkv("experiment lengthgen --preset bogus", line, sizeof line), 2);
    ck_assert_msg(strstr(line, "'bogus'"), "message: %s", line);
    ck_assert_int_eq(run_qkv("experiment lengthgen --preset kazemnejad --pos alibi-rand", line, sizeof line), 2);
    ck_assert_msg(strstr(line, "'alibi-rand'"), "message: %s", line);
    ck_assert_int_eq(run_qkv("experiment lengthgen --preset kazemnejad --pos-randomize 40", line, sizeof line), 2);
    ck_assert_msg(strstr(line, "--pos-randomize 40"), "message: %s", line);
}
END_TEST

START_TEST(lengthgen_refuses_bad_flags_in_one_line) {
    char args[512], line[512];
    int before = count_dir_entries(scratch_dir);
    snprintf(args, sizeof args, TINY " --pos none,bogus --plot %s", scratch_file("x.png"));
    ck_assert_int_eq(run_qkv(args, line, sizeof line), 2);
    ck_assert_msg(strstr(line, "--pos") && strstr(line, "'bogus'") && strstr(line, "rope"), "message: %s", line);
    snprintf(args, sizeof args, TINY " --pos rope,rope --plot %s", scratch_file("x.png"));
    ck_assert_int_eq(run_qkv(args, line, sizeof line), 2);
    ck_assert_ptr_nonnull(strstr(line, "twice"));
    snprintf(args, sizeof args, "experiment lengthgen --steps 3 --train-max 5 --test-max 3 --seeds 1 --test-size 4 "
             "--dim 8 --heads 2 --ff 16 --layers 1 --batch 8 --threads 1 --quiet --plot %s", scratch_file("x.png"));
    ck_assert_int_eq(run_qkv(args, line, sizeof line), 2);
    ck_assert_ptr_nonnull(strstr(line, "--test-max"));
    snprintf(args, sizeof args, "experiment lengthgen --steps 3 --train-max 2 --test-max 4 --seeds 1 --test-size 4 "
             "--dim 6 --heads 2 --ff 16 --layers 1 --batch 8 --threads 1 --quiet --pos rope --plot %s",
             scratch_file("x.png"));
    ck_assert_int_eq(run_qkv(args, line, sizeof line), 2);   /* odd head width */
    ck_assert_ptr_nonnull(strstr(line, "rope"));
    ck_assert_int_eq(count_dir_entries(scratch_dir), before);   /* nothing written */
}
END_TEST

/* The C API's checks: one line naming the option by its flag, nothing run or written. */
START_TEST(experiment_checks_name_the_bad_option) {
    qkv_lengthgen_options g;
    qkv_lengthgen_default_options(&g);
    g.plot = scratch_file("lg.png");
    ck_assert_int_eq(qkv_lengthgen_check(&g), 0);
    g.schemes = "rope,bogus";
    ck_assert_int_eq(qkv_lengthgen_check(&g), -1);
    ck_assert_msg(strstr(qkv_last_error(), "--pos") && strstr(qkv_last_error(), "'bogus'"), "%s", qkv_last_error());
    g.schemes = "rope";
    g.test_max = g.train_max - 1;
    ck_assert_int_eq(qkv_lengthgen_run(&g), -1);   /* run checks first */
    ck_assert_ptr_nonnull(strstr(qkv_last_error(), "--test-max"));
    g.test_max = g.train_max;
    g.seeds = 0;
    ck_assert_int_eq(qkv_lengthgen_check(&g), -1);
    ck_assert_ptr_nonnull(strstr(qkv_last_error(), "--seeds 0"));
    g.seeds = 1;
    g.json = g.plot;
    ck_assert_int_eq(qkv_lengthgen_check(&g), -1);
    ck_assert_ptr_nonnull(strstr(qkv_last_error(), "given for two outputs"));

    qkv_perm_options p;
    qkv_perm_default_options(&p);
    ck_assert_int_eq(qkv_perm_check(&p), 0);
    p.heads = 3;
    int all_agree = -1;
    ck_assert_int_eq(qkv_perm_run(&p, &all_agree), -1);
    ck_assert_ptr_nonnull(strstr(qkv_last_error(), "--heads 3"));
    ck_assert_int_eq(all_agree, -1);
    p.heads = 4;
    p.tokens = 1;
    ck_assert_int_eq(qkv_perm_check(&p), -1);
    ck_assert_ptr_nonnull(strstr(qkv_last_error(), "--tokens 1"));
    ck_assert_int_eq(count_dir_entries(scratch_dir), 0);
}
END_TEST

/* `qkv experiment` lists every experiment, and names them for an unknown one. */
START_TEST(experiment_usage_lists_every_experiment) {
    char line[512];
    ck_assert_int_eq(run_qkv("experiment nosuch", line, sizeof line), 2);
    ck_assert_msg(strstr(line, "'nosuch'") && strstr(line, "permutation, lengthgen"), "message: %s", line);
}
END_TEST

/* docs/tutorial.c, built by make test: its loss falls from ~2.6 to below 0.05. */
START_TEST(tutorial_loss_falls) {
    /* make test names the tutorial of its build directory (build/, build-asan/). */
    const char *tutorial = getenv("QKV_TUTORIAL") ? getenv("QKV_TUTORIAL") : "../build/tutorial";
    char command[600];
    snprintf(command, sizeof command, "OMP_NUM_THREADS=1 %s", tutorial);
    FILE *p = popen(command, "r");
    ck_assert_ptr_nonnull(p);
    char buf[256];
    double first = -1, final = -1;
    while (fgets(buf, sizeof buf, p)) {
        if (first < 0) sscanf(buf, "step %*d loss %lf", &first);
        sscanf(buf, "final loss %lf", &final);
    }
    int status = pclose(p);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "%s failed (make build/tutorial)", tutorial);
    ck_assert_msg(first > 2.0, "first loss %g", first);
    ck_assert_msg(final >= 0 && final < 0.05, "final loss %g", final);
}
END_TEST

Suite *suite_experiments(void) {
    Suite *s = suite_create("experiments");
    TCase *tc = tcase_create("experiments");
    tcase_set_timeout(tc, 0);
    tcase_add_checked_fixture(tc, scratch_dir_create, scratch_dir_remove);
    tcase_add_test(tc, permutation_measures_have_the_promised_size);
    tcase_add_test(tc, permutation_errors_are_thread_independent);
    tcase_add_test(tc, permutation_command_writes_json_and_csv);
    tcase_add_test(tc, lengthgen_writes_csv_json_and_png);
    tcase_add_test(tc, lengthgen_refuses_bad_flags_in_one_line);
    tcase_add_test(tc, lengthgen_preset_runs_tiny);
    tcase_add_test(tc, experiment_checks_name_the_bad_option);
    tcase_add_test(tc, experiment_usage_lists_every_experiment);
    tcase_add_test(tc, tutorial_loss_falls);
    suite_add_tcase(s, tc);
    return s;
}
