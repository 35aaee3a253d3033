/* test_session.c — a training run prepared once, then run (train/session.h): the
 * run driven one call at a time writes the same checkpoint bytes as the whole
 * run; prepare settles the micro-batch and derives the schedule; and the warmup
 * rule: a warmup that does not fit the steps, from a flag, a checkpoint on
 * --resume or a checkpoint whose train.warmup was edited, is clamped to 0 with
 * one line, never an abort. */
#include "tests/test_util.h"

#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "train/session.h"
#include "train/tasks/sequence.h"

static void small_model(qkv_seq_model *model) {
    qkv_seq_model_config c;
    qkv_seq_model_default_config(&c);
    c.data.min_len = 3;
    c.data.max_len = 6;
    c.data.vocab = 5;
    c.layers = 1;
    c.heads = 2;
    c.dim = 16;
    c.ff = 32;
    c.batch = 8;
    c.test_size = 12;
    c.dropout = 0.1f; /* the dropout stream is in the checkpoint too */
    qkv_seq_model_init(model, &c);
}

static qkv_trainer_config small_trainer(const char *save) {
    qkv_trainer_config t = {.steps = 12, .eval_every = 4, .log_every = 3, .quiet = 1, .clip = 1.0f, .seed = 1,
                            .save_path = save};
    t.optim = (qkv_optimizer_config){.kind = QKV_OPT_ADAMW, .lr = 3e-3f, .weight_decay = 0.01f};
    t.schedule = (qkv_schedule){.kind = QKV_SCHED_COSINE, .warmup = 3};
    return t;
}

/* prepare, 12 x step with the evaluations at the steps the run makes them, save:
 * the same bytes (parameters, optimizer state, dropout stream, settings, history
 * with its evaluated rows) as qkv_train's whole run. */
START_TEST(a_run_driven_one_call_at_a_time_writes_the_same_checkpoint) {
    scratch_dir_create();
    char whole_path[256], steps_path[256];
    snprintf(whole_path, sizeof whole_path, "%s", scratch_file("whole.st"));
    snprintf(steps_path, sizeof steps_path, "%s", scratch_file("steps.st"));
    qkv_seq_model model;
    small_model(&model);
    qkv_trainer_config whole = small_trainer(whole_path);
    qkv_train_result result;
    ck_assert_int_eq(train_with(&whole, &model.task, &result), 0);
    qkv_seq_model_free(&model);

    small_model(&model);
    qkv_session s;
    ck_assert_int_eq(qkv_session_prepare(&s, &(qkv_session_spec){.config = small_trainer(steps_path),
                                                                  .task = &model.task}), 0);
    ck_assert_int_eq(s.config.micro_batch, 8);       /* settled once: the task's default */
    ck_assert_int_eq(s.config.schedule.total, 12);   /* derived from the steps */
    int evaluations = 0;
    for (int i = 0; i < 12; i++) {
        ck_assert_int_eq(qkv_session_step(&s), 0);
        if (qkv_session_evaluation_due(&s)) {
            ck_assert_int_eq(qkv_session_evaluate(&s), 0);
            evaluations++;
        }
    }
    ck_assert_int_eq(evaluations, 3);
    ck_assert_int_gt(qkv_session_metrics(&s)->n, 0);
    ck_assert_int_eq(qkv_session_step(&s), 1);       /* --steps reached: no 13th step */
    ck_assert_int_eq(qkv_session_save(&s), 0);
    qkv_session_close(&s);
    qkv_seq_model_free(&model);

    size_t a_len, b_len;
    unsigned char *a = read_file_bytes(whole_path, &a_len), *b = read_file_bytes(steps_path, &b_len);
    ck_assert_msg(a_len == b_len && memcmp(a, b, a_len) == 0, "the checkpoints differ (%zu and %zu bytes)", a_len,
                  b_len);
    free(a);
    free(b);
    scratch_dir_remove();
}
END_TEST

/* A session prepared for a run it cannot make says so in one line, before the run. */
START_TEST(prepare_refuses_in_one_line) {
    qkv_seq_model model;
    small_model(&model);
    qkv_session s;
    qkv_trainer_config t = small_trainer(NULL);
    t.micro_batch = 3;
    ck_assert_int_eq(qkv_session_prepare(&s, &(qkv_session_spec){.config = t, .task = &model.task}), -1);
    ck_assert_str_eq(qkv_last_error(), "--micro-batch 3 does not divide the batch of 8 (try 8)");
    ck_assert_int_eq(s.status, 2);
    t = small_trainer(NULL);
    t.max_memory = "2X";
    ck_assert_int_eq(qkv_session_prepare(&s, &(qkv_session_spec){.config = t, .task = &model.task}), -1);
    ck_assert_msg(strstr(qkv_last_error(), "--max-memory '2X': not a size"), "%s", qkv_last_error());
    qkv_seq_model_free(&model);
}
END_TEST

/* ---- the warmup rule (issue: resume with --steps at or below the warmup aborted) ---- */

#define COSINE_SPIRALS "train spirals --hidden 8 --batch 16 --points 50 --schedule cosine --eval-every 0 " \
                       "--target 0 --threads 1"

static void expect_warmup_clamped(const char *args, long warmup, long steps) {
    char line[512], expect[160];
    ck_assert_int_eq(run_qkv(args, line, sizeof line), 0);
    line[strcspn(line, "\n")] = '\0';
    snprintf(expect, sizeof expect, "qkv train spirals: --warmup %ld does not fit in --steps %ld: the run goes on "
             "without warmup", warmup, steps);
    ck_assert_msg(strcmp(line, expect) == 0, "%s: said '%s'", args, line);
}

START_TEST(a_warmup_from_a_flag_that_does_not_fit_is_clamped) {
    scratch_dir_create();
    char args[512], line[512];
    snprintf(args, sizeof args, COSINE_SPIRALS " --steps 5 --warmup 5 --save %s", scratch_file("a.st"));
    expect_warmup_clamped(args, 5, 5);
    snprintf(args, sizeof args, COSINE_SPIRALS " --steps 5 --warmup 9 --quiet");
    ck_assert_int_eq(run_qkv(args, line, sizeof line), 0);
    ck_assert_msg(line[0] == '\0', "--quiet said: %s", line);   /* --quiet: only the final line */
    snprintf(args, sizeof args, COSINE_SPIRALS " --steps 6 --warmup 5");
    ck_assert_int_eq(run_qkv(args, line, sizeof line), 0);
    ck_assert_msg(line[0] == '\0', "a warmup that fits: said %s", line);
    scratch_dir_remove();
}
END_TEST

/* The case: a run interrupted at step 2 of 10 with warmup 8, resumed with
 * --steps 5: the checkpoint's warmup does not fit. */
START_TEST(a_resumed_warmup_that_does_not_fit_is_clamped) {
    scratch_dir_create();
    char args[512], ck[256];
    snprintf(ck, sizeof ck, "%s", scratch_file("a.st"));
    snprintf(args, sizeof args, COSINE_SPIRALS " --steps 10 --warmup 8 --save %s", ck);
    int status = wait_qkv(spawn_qkv(args, "QKV_TEST_SIGNAL_AT_POLL=6", 0, NULL));
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 130, "status %d", status);
    long at = checkpoint_step(ck);
    ck_assert_msg(at >= 1 && at < 5, "step %ld", at);
    snprintf(args, sizeof args, COSINE_SPIRALS " --steps 5 --resume %s --save %s", ck, scratch_file("b.st"));
    expect_warmup_clamped(args, 8, 5);
    ck_assert_int_eq(checkpoint_step(scratch_file("b.st")), 5);
    scratch_dir_remove();
}
END_TEST

/* A checkpoint whose train.warmup was edited past the new --steps. */
START_TEST(an_edited_checkpoint_warmup_that_does_not_fit_is_clamped) {
    scratch_dir_create();
    char args[512], ck[256], line[512];
    snprintf(ck, sizeof ck, "%s", scratch_file("a.st"));
    snprintf(args, sizeof args, COSINE_SPIRALS " --steps 3 --warmup 0 --quiet --save %s", ck);
    ck_assert_int_eq(run_qkv(args, line, sizeof line), 0);
    size_t len;
    unsigned char *bytes = read_file_bytes(ck, &len);
    const char key[] = "\"train.warmup\":\"0\"";
    size_t at = 0;
    while (at + sizeof key - 1 <= len && memcmp(bytes + at, key, sizeof key - 1) != 0) at++;
    ck_assert_msg(at + sizeof key - 1 <= len, "no %s in the checkpoint", key);
    bytes[at + sizeof key - 3] = '9'; /* the same length: the header stays whole */
    write_file_bytes(ck, bytes, len);
    free(bytes);
    snprintf(args, sizeof args, COSINE_SPIRALS " --steps 6 --resume %s", ck);
    expect_warmup_clamped(args, 9, 6);
    scratch_dir_remove();
}
END_TEST

Suite *suite_session(void) {
    Suite *s = suite_create("session");
    TCase *tc = tcase_create("session");
    tcase_set_timeout(tc, 0);
    tcase_add_test(tc, a_run_driven_one_call_at_a_time_writes_the_same_checkpoint);
    tcase_add_test(tc, prepare_refuses_in_one_line);
    tcase_add_test(tc, a_warmup_from_a_flag_that_does_not_fit_is_clamped);
    tcase_add_test(tc, a_resumed_warmup_that_does_not_fit_is_clamped);
    tcase_add_test(tc, an_edited_checkpoint_warmup_that_does_not_fit_is_clamped);
    suite_add_tcase(s, tc);
    return s;
}
