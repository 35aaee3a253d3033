/* test_interrupt.c — a run stopped from outside keeps its work, and the files a
 * save leaves are the right ones (issue 20, findings 2 and 6): SIGINT, SIGTERM and
 * SIGHUP end the run after its step with the checkpoint, CSV and JSON written and
 * exit 128 + the signal; a second SIGINT exits at once without a temporary file; a
 * closed stdout (SIGPIPE) ends the run the same way; stale temporary files of a
 * dead writer are removed; saving to a symlink writes through it; the final
 * checkpoint is written once; changed settings on --resume are named. The tests
 * spawn ./qkv and wait for a line of its output, never for a time.
 */
#include <dirent.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

#include "tests/test_util.h"
#include "train/tasks/maxreg.h"

/* ---- signals (finding 2 of issue 20) ------------------------------------------------ */

/* A run that would go on for ever, with a progress line every 5 steps to wait for. */
#define ENDLESS "train spirals --hidden 8 --batch 16 --points 50 --schedule constant --warmup 0 --eval-every 0 " \
                "--target 0 --threads 1 --log-every 5 --steps 100000000"

/* Reads the child's stdout until a progress line ("step ...") has come. */
static void wait_for_a_step_line(FILE *out) {
    char text[512];
    while (fgets(text, sizeof text, out))
        if (strncmp(text, "step ", 5) == 0) return;
    ck_abort_msg("the run ended before its first progress line");
}

/* Reads and drops the rest of the child's stdout (so that it never blocks on a full pipe). */
static void drain(FILE *out) {
    char text[512];
    while (fgets(text, sizeof text, out)) {}
    fclose(out);
}

/* No "*.tmp.*" file in the scratch directory. */
static void expect_no_temporary_files(void) {
    DIR *d = opendir(scratch_dir);
    ck_assert_ptr_nonnull(d);
    for (struct dirent *e; (e = readdir(d));) ck_assert_msg(!strstr(e->d_name, ".tmp."), "%s left behind", e->d_name);
    closedir(d);
}

/* SIGINT, SIGTERM and SIGHUP end the run after its step: the checkpoint at that
 * step, the CSV with its rows, the summary, exit 128 + the signal, and one line
 * saying where the work is; resuming from it ends as an uninterrupted run. */
START_TEST(a_signal_stops_after_the_step_and_keeps_the_work) {
    const int signals[] = {SIGINT, SIGTERM, SIGHUP};
    const char *names[] = {"SIGINT", "SIGTERM", "SIGHUP"};
    for (int i = 0; i < 3; i++) {
        scratch_dir_create();
        char args[1024], ck[64], csv[64], json[64], err[64], line[512], expect[256];
        snprintf(ck, sizeof ck, "%s", scratch_file("ck.safetensors"));
        snprintf(csv, sizeof csv, "%s", scratch_file("log.csv"));
        snprintf(json, sizeof json, "%s", scratch_file("run.json"));
        snprintf(err, sizeof err, "%s", scratch_file("stderr"));
        snprintf(args, sizeof args, ENDLESS " --save %s --csv %s --json %s", ck, csv, json);
        FILE *out = NULL;
        pid_t pid = spawn_qkv_piped(args, err, &out);
        wait_for_a_step_line(out);
        ck_assert_int_eq(kill(pid, signals[i]), 0);
        drain(out);
        int status = wait_qkv(pid);
        ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 128 + signals[i], "%s: status %d", names[i], status);
        first_line(err, line, sizeof line);
        long step = -1;
        snprintf(expect, sizeof expect, "qkv: stopped by %s after step %%ld of 100000000; ", names[i]);
        ck_assert_msg(sscanf(line, expect, &step) == 1 && step >= 1, "%s", line);
        snprintf(expect, sizeof expect, "ck.safetensors (step %ld) holds the work: continue with --resume ", step);
        ck_assert_msg(strstr(line, expect), "%s", line);
        ck_assert_int_eq(checkpoint_step(ck), step);
        size_t len = 0;
        char *text = (char *)read_file_bytes(csv, &len);
        text[len] = '\0';
        ck_assert_msg(strncmp(text, "step,loss,lr,seconds\n1,", 23) == 0, "%.60s", text);
        free(text);
        text = (char *)read_file_bytes(json, &len);
        text[len] = '\0';
        snprintf(expect, sizeof expect, "\"steps\": %ld,", step);
        ck_assert_msg(strstr(text, expect), "%s", text);
        free(text);
        expect_no_temporary_files();
        if (signals[i] == SIGINT) expect_resume_matches(SMALL_SPIRALS, ck, step + 7);
        scratch_dir_remove();
    }
}
END_TEST

/* A second Ctrl-C does not wait for the step or the save: exit 130 at once, and
 * no temporary file (checkpoint or CSV) is left. */
START_TEST(a_second_sigint_exits_at_once_without_a_partial_file) {
    scratch_dir_create();
    char args[1024], err[64];
    snprintf(err, sizeof err, "%s", scratch_file("stderr"));
    snprintf(args, sizeof args, ENDLESS " --save %s --csv %s", scratch_file("ck.safetensors"), scratch_file("log.csv"));
    FILE *out = NULL;
    pid_t pid = spawn_qkv_piped(args, err, &out);
    wait_for_a_step_line(out);
    ck_assert_int_eq(kill(pid, SIGINT), 0);
    ck_assert_int_eq(kill(pid, SIGINT), 0);
    drain(out);
    int status = wait_qkv(pid);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 130, "status %d", status);
    expect_no_temporary_files();
    scratch_dir_remove();
}
END_TEST

/* `qkv train ... | head -1`: the reader goes away, the run ends after its step as on
 * SIGINT (the checkpoint, exit 141), not killed silently. */
START_TEST(a_closed_stdout_stops_the_run_like_a_signal) {
    scratch_dir_create();
    char args[1024], err[64], line[512], ck[64];
    snprintf(err, sizeof err, "%s", scratch_file("stderr"));
    snprintf(ck, sizeof ck, "%s", scratch_file("ck.safetensors"));
    snprintf(args, sizeof args, ENDLESS " --save %s", ck);
    FILE *out = NULL;
    pid_t pid = spawn_qkv_piped(args, err, &out);
    wait_for_a_step_line(out);
    fclose(out);
    int status = wait_qkv(pid);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 141, "status %d", status);
    first_line(err, line, sizeof line);
    long step = -1;
    ck_assert_msg(sscanf(line, "qkv: stopped by SIGPIPE after step %ld of ", &step) == 1, "%s", line);
    ck_assert_int_eq(checkpoint_step(ck), step);
    expect_no_temporary_files();
    scratch_dir_remove();
}
END_TEST

/* The temporary file a killed save left is removed by the next save of the same
 * checkpoint; a live process's is not touched. */
START_TEST(stale_temporary_files_are_removed_at_the_next_save) {
    scratch_dir_create();
    char args[1024], line[512], stale[128], live[128], other[128];
    /* a process that has ended: `true`, spawned (a forked copy of this runner would
     * leave valgrind's report of the runner's thread buffers it cannot reach) */
    pid_t dead;
    char *true_argv[] = {"true", NULL};
    ck_assert_int_eq(posix_spawnp(&dead, "true", NULL, NULL, true_argv, environ), 0);
    wait_qkv(dead); /* its pid now belongs to no process */
    snprintf(stale, sizeof stale, "%s.tmp.%ld", scratch_file("ck.safetensors"), (long)dead);
    snprintf(live, sizeof live, "%s.tmp.%ld", scratch_file("ck.safetensors"), (long)getpid());
    snprintf(other, sizeof other, "%s.tmp.%ld", scratch_file("other.safetensors"), (long)dead);
    write_file_bytes(stale, "torn", 4);
    write_file_bytes(live, "busy", 4);
    write_file_bytes(other, "else", 4);
    snprintf(args, sizeof args, SMALL_SPIRALS " --steps 2 --save %s", scratch_file("ck.safetensors"));
    ck_assert_int_eq(run_qkv(args, line, sizeof line), 0);
    ck_assert(!path_exists(stale));
    ck_assert(path_exists(live) && path_exists(other));
    scratch_dir_remove();
}
END_TEST

/* ---- smaller promises (finding 6 of issue 20) ------------------------------------------ */

/* --save to a symlink writes through it: the link stays, its target is the checkpoint. */
START_TEST(saving_to_a_symlink_writes_through_it) {
    scratch_dir_create();
    char args[1024], line[512], target[64], link[64];
    snprintf(target, sizeof target, "%s", scratch_file("real.safetensors"));
    snprintf(link, sizeof link, "%s", scratch_file("link.safetensors"));
    write_file_bytes(target, "old", 3);
    ck_assert_int_eq(symlink("real.safetensors", link), 0);
    snprintf(args, sizeof args, SMALL_SPIRALS " --steps 3 --save %s", link);
    ck_assert_int_eq(run_qkv(args, line, sizeof line), 0);
    struct stat st;
    ck_assert(lstat(link, &st) == 0 && S_ISLNK(st.st_mode));
    ck_assert_int_eq(checkpoint_step(target), 3);
    ck_assert_int_eq(count_dir_entries(scratch_dir), 2);
    /* A link to a file that does not exist yet: the file is created, the link stays. */
    ck_assert_int_eq(symlink("later.safetensors", scratch_file("dangling")), 0);
    snprintf(args, sizeof args, SMALL_SPIRALS " --steps 2 --save %s", scratch_file("dangling"));
    ck_assert_int_eq(run_qkv(args, line, sizeof line), 0);
    ck_assert(lstat(scratch_file("dangling"), &st) == 0 && S_ISLNK(st.st_mode));
    ck_assert_int_eq(checkpoint_step(scratch_file("later.safetensors")), 2);
    scratch_dir_remove();
}
END_TEST

/* Changing --lr, --clip, --warmup or --schedule on --resume is allowed, and said in
 * one line: the run is then no longer the uninterrupted one. */
START_TEST(changed_settings_on_resume_are_named) {
    scratch_dir_create();
    char args[1024], line[512], ck[64];
    snprintf(ck, sizeof ck, "%s", scratch_file("ck.safetensors"));
    snprintf(args, sizeof args, SMALL_SPIRALS " --steps 5 --lr 0.1 --save %s", ck);
    ck_assert_int_eq(run_qkv(args, line, sizeof line), 0);
    snprintf(args, sizeof args, SMALL_SPIRALS " --steps 10 --lr 0.1 --resume %s", ck);
    ck_assert_int_eq(run_qkv(args, line, sizeof line), 0);
    ck_assert_str_eq(line, ""); /* nothing changed: nothing said */
    snprintf(args, sizeof args, SMALL_SPIRALS " --steps 10 --lr 0.05 --clip 2 --resume %s", ck);
    ck_assert_int_eq(run_qkv(args, line, sizeof line), 0);
    ck_assert_msg(strstr(line, "--resume with changed settings: --lr 0.05 (the checkpoint's run: 0.1), --clip 2 "
                               "(the checkpoint's run: 0); ") && strstr(line, "no longer the uninterrupted one"),
                  "%s", line);
    scratch_dir_remove();
}
END_TEST

/* When --save-every divides --steps, the last periodic save is the final one: the
 * third save of this run would be a second write of step 10 (the kill hook of
 * checkpoint.h makes it fatal). */
START_TEST(the_final_checkpoint_is_written_once) {
    scratch_dir_create();
    char args[1024];
    snprintf(args, sizeof args, SMALL_SPIRALS " --steps 10 --save-every 5 --save %s", scratch_file("ck.safetensors"));
    int status = wait_qkv(spawn_qkv(args, "QKV_TEST_KILL_SAVE=3:1", 0, NULL));
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "status %d: a third save", status);
    ck_assert_int_eq(checkpoint_step(scratch_file("ck.safetensors")), 10);
    scratch_dir_remove();
}
END_TEST

/* ---- answered within a unit of work (issue 29, finding 2) ---------------------------- */

/* Runs args with the test hook raising SIGINT at poll `poll`: exit 130, the first
 * stderr line holds `stopped`, the second says no poll came after the hook's. */
static void expect_stopped_at_poll(const char *args, int poll, const char *stopped) {
    char env[64], line[512], hook[96];
    snprintf(env, sizeof env, "QKV_TEST_SIGNAL_AT_POLL=%d", poll);
    int status = wait_qkv(spawn_qkv(args, env, 0, scratch_file("err")));
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 130, "status %d", status);
    FILE *err = fopen(scratch_file("err"), "r");
    ck_assert_ptr_nonnull(fgets(line, sizeof line, err));
    ck_assert_msg(strstr(line, stopped), "%s", line);
    ck_assert_ptr_nonnull(fgets(line, sizeof line, err));
    snprintf(hook, sizeof hook, "test hook: SIGINT at poll %d, 0 polls after it", poll);
    ck_assert_msg(strstr(line, hook), "%s", line);
    fclose(err);
}

/* A signal during a step drops that step: the test hook (train/interrupt.h) raises
 * SIGINT at the first micro-batch of step 4 (poll 1 is the memory's measurement,
 * then spirals polls twice a step: 2 micro-batches), the second micro-batch does
 * not run, and the checkpoint is step 3's, whole. */
START_TEST(a_signal_inside_a_step_drops_the_step) {
    scratch_dir_create();
    char args[1024], ck[64];
    snprintf(ck, sizeof ck, "%s", scratch_file("ck.safetensors"));
    snprintf(args, sizeof args, SMALL_SPIRALS " --steps 1000 --micro-batch 8 --save %s", ck);
    expect_stopped_at_poll(args, 8, "stopped by SIGINT after step 3 of 1000"); /* micro-batch 2 skipped */
    ck_assert_int_eq(checkpoint_step(ck), 3);
    scratch_dir_remove();
}
END_TEST

/* A signal during a long final evaluation (finding 2: 7 minutes, then `final:`)
 * ends it at the next chunk: the hook raises SIGINT in the third of 1,000 chunks,
 * no chunk runs after it, no final line, exit 130, and the checkpoint holds the
 * trained model. */
START_TEST(a_signal_during_an_evaluation_stops_it_at_the_next_chunk) {
    scratch_dir_create();
    char args[1024], ck[64], text[64], out[64];
    snprintf(ck, sizeof ck, "%s", scratch_file("ck.safetensors"));
    snprintf(text, sizeof text, "%s", scratch_file("corpus.txt"));
    snprintf(out, sizeof out, "%s", scratch_file("out"));
    char corpus[4096];
    for (size_t i = 0; i < sizeof corpus; i++) corpus[i] = "the quick brown fox jumps over the lazy dog\n"[i % 44];
    write_file_bytes(text, corpus, sizeof corpus);
    snprintf(args, sizeof args, "train text --data %s --context 8 --layers 1 --heads 2 --dim 16 --ff 32 --batch 4 "
             "--micro-batch 2 --val-windows 4000 --eval-every 0 --sample-tokens 0 --steps 1 --warmup 0 --threads 1 "
             "--save %s",
             text, ck);
    /* poll 1: the memory's measurement; 2-3: the step's micro-batches; 4..1003: the evaluation's chunks */
    expect_stopped_at_poll(args, 6, "stopped by SIGINT in the final evaluation, after step 1 of 1");
    ck_assert_int_eq(checkpoint_step(ck), 1);
    scratch_dir_remove();
}
END_TEST

/* Before the first step the run measures its memory with one micro-batch's forward
 * and backward (train/memory.h), which on a large model takes as long as a step: a
 * signal there (the hook's poll 1) ends the run with exit 130 and one line, before
 * any step, and writes nothing. */
START_TEST(a_signal_while_the_memory_is_measured_ends_the_run_before_it_starts) {
    scratch_dir_create();
    char args[1024], ck[64];
    snprintf(ck, sizeof ck, "%s", scratch_file("ck.safetensors"));
    snprintf(args, sizeof args, SMALL_SPIRALS " --steps 5 --save %s", ck);
    expect_stopped_at_poll(args, 1, "stopped by SIGINT while measuring the run's memory, before its first step; "
                                    "nothing was saved");
    ck_assert_int_ne(access(ck, F_OK), 0);
    scratch_dir_remove();
}
END_TEST

/* A micro-batch is the unit a signal waits for, so large sets make small
 * micro-batches (finding 2: `train maxreg --max-size 100000`, 8 sets of 100,000
 * per micro-batch, took 16 s to answer; 1 set takes under 2 s): about 4,096
 * elements at most, and sets up to 512 keep the old 8 (their results unchanged). */
START_TEST(large_sets_make_small_units_of_work) {
    const int sizes[] = {10, 512, 1000, 4096, 100000}, sets[] = {8, 8, 4, 1, 1}, chunks[] = {128, 128, 4, 1, 1};
    for (int i = 0; i < 5; i++) {
        qkv_maxreg_task_config c;
        qkv_maxreg_task_default_config(&c);
        c.data.max_size = sizes[i];
        qkv_maxreg_task t;
        qkv_maxreg_task_init(&t, &c);
        ck_assert_msg(t.task.micro_batch == sets[i] && t.task.eval_chunk == chunks[i], "max_size %d: %d and %d",
                      sizes[i], t.task.micro_batch, t.task.eval_chunk);
        qkv_maxreg_task_free(&t);
    }
}
END_TEST

/* ---- cut work never reaches a record (issue 36, findings 2 and 5) --------------------- */

/* Runs args with env; returns the exit status; the first stderr line in line, and
 * P of the hook's "SIGINT at cancellation point N of P" line in *points. */
static int run_with_hook(const char *args, const char *env, char *line, size_t len, long *points) {
    int status = wait_qkv(spawn_qkv(args, env, 0, scratch_file("err")));
    FILE *err = fopen(scratch_file("err"), "r");
    ck_assert_ptr_nonnull(err);
    char text[512], *first = line;
    *points = -1;
    first[0] = '\0';
    while (fgets(text, sizeof text, err)) {
        const char *hook = strstr(text, "cancellation point ");
        long n;
        if (hook && sscanf(hook, "cancellation point %ld of %ld", &n, points) == 2) continue;
        if (!first[0]) snprintf(first, len, "%s", text);
    }
    fclose(err);
    ck_assert_msg(WIFEXITED(status), "status %d", status);
    return WEXITSTATUS(status);
}

/* Two tiny lengthgen models; a --json path of its own. */
#define CUT_LENGTHGEN "experiment lengthgen --steps 4 --seeds 1 --train-max 2 --test-max 4 --test-size 4 --dim 8 " \
                      "--heads 2 --ff 16 --layers 1 --batch 8 --threads 1 --quiet --pos none,rope"

/* Finding 2: a signal inside the fused attention, while a model is tested at its
 * lengths or its attention distances are measured, cut that op short (its rows
 * stay finite, meaningless: core/cancel.h); the model used to be recorded as
 * finished with that half-computed result (distance_mean 0, a histogram of
 * [1, 0, ...], lower accuracies) and --resume kept it. The hook raises SIGINT at
 * the N-th cancellation point of the attention op itself (not between units of
 * work); the interrupted run finishes no model, and resumed, its --json equals
 * the uninterrupted run's byte for byte apart from the measured training times.
 * The points, counted with threads 1: each model passes 314 (170 in training:
 * the memory's measurement, 4 steps, the final evaluation; 80 testing at lengths
 * 1..4; 64 measuring distances), so 200 lands in model 1's test and 280 in its
 * distances. */
START_TEST(a_signal_inside_attention_never_reaches_a_lengthgen_record) {
    scratch_dir_create();
    setenv("SOURCE_DATE_EPOCH", "86400", 1);
    char args[1024], line[512], json[64], one[64];
    long points;
    snprintf(json, sizeof json, "%s", scratch_file("lg.json"));
    snprintf(one, sizeof one, "%s", scratch_file("one.json"));
    snprintf(args, sizeof args, CUT_LENGTHGEN " --plot %s --json %s", scratch_file("lg.png"), json);
    ck_assert_int_eq(run_with_hook(args, "QKV_TEST_SIGNAL_IN_OP=1000000000", line, sizeof line, &points), 0);
    ck_assert_msg(points == 2 * 314, "%ld cancellation points: recount the points of the comment above", points);
    ck_assert_int_eq(rename(json, one), 0);
    const int at[2] = {200, 280};
    for (int i = 0; i < 2; i++) {
        char env[64];
        snprintf(env, sizeof env, "QKV_TEST_SIGNAL_IN_OP=%d", at[i]);
        ck_assert_int_eq(run_with_hook(args, env, line, sizeof line, &points), 130);
        ck_assert_msg(strstr(line, "stopped by SIGINT after 0 of 2 models"), "point %d: %s", at[i], line);
        ck_assert_msg(points >= at[i], "point %d: the hook did not fire (%ld points)", at[i], points);
        snprintf(args + strlen(args), sizeof args - strlen(args), " --resume");
        ck_assert_int_eq(run_qkv(args, line, sizeof line), 0);
        args[strlen(args) - strlen(" --resume")] = '\0';
        char *a = without_times(one), *b = without_times(json);
        ck_assert_msg(strcmp(a, b) == 0, "point %d: the resumed record differs from the uninterrupted one", at[i]);
        free(a);
        free(b);
        remove(json);
    }
    unsetenv("SOURCE_DATE_EPOCH");
    scratch_dir_remove();
}
END_TEST

/* A CSV's text without its seconds column (the wall clock; rows restored from a
 * checkpoint leave it empty): the fourth cell of every line. */
static char *without_seconds(const char *path) {
    char *text = read_text(path), *to = text;
    int cell = 0;
    for (const char *from = text; *from; from++) {
        if (*from == ',' || *from == '\n') {
            int in_seconds = cell == 3;
            cell = *from == '\n' ? 0 : cell + 1;
            if (in_seconds) continue; /* the comma that ends it */
        } else if (cell == 3) {
            continue;
        }
        *to++ = *from;
    }
    *to = '\0';
    return text;
}

/* Finding 5: with --eval-every 10, a signal during step 10's evaluation drops that
 * evaluation, and the step-10 checkpoint used to be saved without its "10,..."
 * history row, so the resumed run's history differed from the uninterrupted
 * one's. Now the row (loss, learning rate) is saved with the checkpoint, the
 * resumed run evaluates step 10 first, and its checkpoint's history and its CSV
 * (apart from the seconds) are the uninterrupted run's. Spirals with the poll
 * hook (poll 1 is the memory's measurement, 2 per step, the 22nd is inside step
 * 10's evaluation), with every step kept (--log-every 0) and with rows kept only
 * at evaluations and every 7 steps; points with the hook inside the attention op
 * (48 cancellation points each for the memory's measurement, a step and an
 * evaluation: point 540 is in the middle of step 10's evaluation). */
START_TEST(a_cut_evaluation_keeps_its_step_row_with_the_checkpoint) {
    static const struct { const char *task, *log_every, *hook; } runs[] = {
        {"spirals --hidden 8 --batch 16 --points 50 --schedule constant --micro-batch 8", "0",
         "QKV_TEST_SIGNAL_AT_POLL=22"},
        {"spirals --hidden 8 --batch 16 --points 50 --schedule constant --micro-batch 8", "7",
         "QKV_TEST_SIGNAL_AT_POLL=22"},
        {"points --points 16 --test-size 8 --batch 4 --width 16 --heads 2 --layers 1 --inducing 4", "7",
         "QKV_TEST_SIGNAL_IN_OP=540"},
    };
    for (int i = 0; i < 3; i++) {
        scratch_dir_create();
        char args[1024], line[512], ck[64], csv[64], base[512];
        long points;
        snprintf(ck, sizeof ck, "%s", scratch_file("ck.safetensors"));
        snprintf(csv, sizeof csv, "%s", scratch_file("log.csv"));
        snprintf(base, sizeof base, "train %s --warmup 0 --target 0 --threads 1 --quiet --eval-every 10 --log-every %s "
                 "--steps 30 --save %s --csv %s", runs[i].task, runs[i].log_every, ck, csv);
        ck_assert_int_eq(run_qkv(base, line, sizeof line), 0);
        char *uninterrupted = without_seconds(csv);
        qkv_safetensors a;
        ck_assert_int_eq(qkv_safetensors_load(ck, &a), 0);
        remove(ck);
        ck_assert_int_eq(run_with_hook(base, runs[i].hook, line, sizeof line, &points), 130);
        ck_assert_msg(strstr(line, "stopped by SIGINT after step 10 of 30"), "%s: %s", runs[i].hook, line);
        ck_assert_int_eq(checkpoint_step(ck), 10);
        snprintf(args, sizeof args, "%s --resume %s", base, ck);
        ck_assert_int_eq(run_qkv(args, line, sizeof line), 0);
        char *resumed = without_seconds(csv);
        ck_assert_msg(strcmp(uninterrupted, resumed) == 0, "run %d: the histories differ:\n%s\n%s", i, uninterrupted,
                      resumed);
        qkv_safetensors b;
        ck_assert_int_eq(qkv_safetensors_load(ck, &b), 0);
        ck_assert_str_eq(qkv_safetensors_meta(&a, "history"), qkv_safetensors_meta(&b, "history"));
        qkv_safetensors_free(&a);
        qkv_safetensors_free(&b);
        free(uninterrupted);
        free(resumed);
        scratch_dir_remove();
    }
}
END_TEST


Suite *suite_interrupt(void) {
    Suite *s = suite_create("interrupt");
    TCase *tc = tcase_create("interrupt");
    tcase_set_timeout(tc, 0);
    tcase_add_test(tc, a_signal_stops_after_the_step_and_keeps_the_work);
    tcase_add_test(tc, a_second_sigint_exits_at_once_without_a_partial_file);
    tcase_add_test(tc, a_closed_stdout_stops_the_run_like_a_signal);
    tcase_add_test(tc, stale_temporary_files_are_removed_at_the_next_save);
    tcase_add_test(tc, saving_to_a_symlink_writes_through_it);
    tcase_add_test(tc, the_final_checkpoint_is_written_once);
    tcase_add_test(tc, changed_settings_on_resume_are_named);
    tcase_add_test(tc, a_signal_inside_a_step_drops_the_step);
    tcase_add_test(tc, a_signal_during_an_evaluation_stops_it_at_the_next_chunk);
    tcase_add_test(tc, a_signal_while_the_memory_is_measured_ends_the_run_before_it_starts);
    tcase_add_test(tc, large_sets_make_small_units_of_work);
    tcase_add_test(tc, a_signal_inside_attention_never_reaches_a_lengthgen_record);
    tcase_add_test(tc, a_cut_evaluation_keeps_its_step_row_with_the_checkpoint);
    suite_add_tcase(s, tc);
    return s;
}
