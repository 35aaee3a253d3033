/* test_memory.c — the memory budget (train/memory.h, issue 29's finding 3):
 *  - --max-memory sizes parse strictly;
 *  - a run estimated to need more than the memory available is refused before
 *    anything is allocated for it or written: one line with the estimate and the
 *    limit, exit 2, no banner, no file (also `points --batch 100000`, whose
 *    micro-batch gradient buffers alone would take tens of GiB);
 *  - the estimate of a default run is within a sane factor of the peak resident
 *    memory the same run measures (ru_maxrss of the child);
 *  - every task's default run fits this machine (is not refused);
 *  - the tape arenas grow within their budget (tape.h): a chunk is cut down to
 *    what is left, and an allocation past it stops with a message.
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/test_util.h"
#include "train/memory.h"
#include "train/step.h"
#include "train/tasks/registry.h"

START_TEST(max_memory_sizes_parse_strictly) {
    const struct { const char *text; size_t bytes; } good[] = {
        {"0", 0}, {"1048576", 1048576}, {"64k", 64 << 10}, {"512M", (size_t)512 << 20}, {"2G", (size_t)2 << 30},
        {"1t", (size_t)1 << 40},
    };
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        size_t bytes = 1;
        ck_assert_msg(qkv_memory_parse_size(good[i].text, &bytes) == 0, "%s: %s", good[i].text, qkv_last_error());
        ck_assert_msg(bytes == good[i].bytes, "%s: %zu bytes", good[i].text, bytes);
    }
    const char *bad[] = {"", "G", "2GB", "1.5G", " 5", "+3", "-1", "5 ", "0x10", "99999999999999999999",
                         "20000000000000T"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        size_t bytes;
        ck_assert_msg(qkv_memory_parse_size(bad[i], &bytes) != 0, "'%s' accepted", bad[i]);
        expect_last_error("--max-memory", "not a size");
    }
}
END_TEST

/* Runs `qkv args` with its outputs in the scratch directory; asserts exit 2, no
 * stdout (no banner), nothing written but its stderr, and returns that one line. */
static void expect_refused(const char *args, char *line, size_t len) {
    char full[1024], err[256];
    snprintf(err, sizeof err, "%s", scratch_file("stderr"));
    snprintf(full, sizeof full, "%s --save %s", args, scratch_file("ck.safetensors"));
    snprintf(full + strlen(full), sizeof full - strlen(full), " --json %s", scratch_file("run.json"));
    FILE *out;
    pid_t pid = spawn_qkv_piped(full, err, &out);
    char printed[256];
    ck_assert_msg(!fgets(printed, sizeof printed, out), "%s printed: %s", args, printed);
    fclose(out);
    int status = wait_qkv(pid);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 2, "%s: status %d", args, status);
    first_line(err, line, len);
    ck_assert_int_eq(count_dir_entries(scratch_dir), 1); /* stderr alone */
}

START_TEST(a_run_over_the_budget_is_refused_in_one_line) {
    char line[1024];
    expect_refused("train reverse --max-memory 1M", line, sizeof line);
    ck_assert_msg(strncmp(line, "qkv train reverse: this run needs about ", 40) == 0, "%s", line);
    ck_assert_msg(strstr(line, "more than the 1.0 MiB available (--max-memory 1M)"), "%s", line);
    ck_assert_msg(strstr(line, "activations ") && strstr(line, "per micro-batch and packed weights ") && strstr(line, "optimizer ") &&
                  strstr(line, "gradients ") && strstr(line, "evaluation "), "%s", line);
    /* The finding: micro-batch gradient buffers of 25000 micro-batches, judged before they are taken. */
    expect_refused("train points --batch 100000 --max-memory 4G", line, sizeof line);
    ck_assert_msg(strstr(line, "GiB for 25000 micro-batches") && strstr(line, "(--max-memory 4G)"), "%s", line);
    expect_refused("train spirals --max-memory 2GB", line, sizeof line);
    ck_assert_msg(strstr(line, "qkv train spirals: --max-memory '2GB': not a size"), "%s", line);
}
END_TEST

/* The estimate `qkv args --max-memory 1` states in its refusal, in bytes. */
static double stated_estimate(const char *args) {
    char full[512], line[1024], unit[8];
    snprintf(full, sizeof full, "%s --max-memory 1", args);
    ck_assert_int_eq(run_qkv(full, line, sizeof line), 2);
    const char *at = strstr(line, "needs about ");
    double value;
    ck_assert_msg(at && sscanf(at, "needs about %lf %3s", &value, unit) == 2, "%s", line);
    double scale = strcmp(unit, "GiB") == 0 ? 1 << 30 : strcmp(unit, "MiB") == 0 ? 1 << 20 : 1 << 10;
    return value * scale;
}

/* This process's resident bytes now. */
static double resident_bytes(void) {
    FILE *f = fopen("/proc/self/statm", "r");
    unsigned long long size = 0, resident = 0;
    ck_assert(f && fscanf(f, "%llu %llu", &size, &resident) == 2);
    fclose(f);
    return (double)resident * (double)sysconf(_SC_PAGESIZE);
}

/* The child's ru_maxrss counts the pages it shared with this process when it was
 * forked (Linux keeps the larger of the peaks before and after exec): the suite
 * runs early, while the runner is small. A runner too large for the peak to mean
 * anything (the ASan and valgrind builds: shadow memory, a runner under valgrind)
 * skips the comparison, saying so; the plain build of `make test` makes it. */
START_TEST(the_estimate_is_near_the_measured_peak) {
    const char *run = "train reverse --steps 2 --quiet --threads 1";
    double estimate = stated_estimate(run), runner = resident_bytes();
    pid_t pid = spawn_qkv(run, NULL, 0, NULL);
    int status;
    struct rusage usage;
    ck_assert_int_eq(wait4(pid, &status, 0, &usage), pid);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "%s: status %d", run, status);
    double peak = (double)usage.ru_maxrss * 1024; /* Linux: KiB */
    if (runner >= peak / 2) {
        fprintf(stderr, "memory: skipped the peak comparison: the test runner (%.1f MiB resident) is too large to "
                        "measure a peak of %.1f MiB (a sanitizer or valgrind build)\n", runner / (1 << 20), peak / (1 << 20));
        return;
    }
    ck_assert_msg(estimate >= 0.75 * peak && estimate <= 2 * peak, "%s: estimate %.1f MiB, peak resident %.1f MiB", run,
                  estimate / (1 << 20), peak / (1 << 20));
}
END_TEST

START_TEST(every_default_run_fits_this_machine) {
    for (int k = 0; k < qkv_task_kind_count(); k++) {
        const qkv_task_kind *kind = qkv_task_kind_at(k);
        void *config = qkv_task_config_new(kind);
        qkv_trainer_config trainer = kind->trainer;
        ck_assert_msg(kind->check(config, &trainer) == 0, "%s: %s", kind->name, qkv_last_error());
        qkv_task *task = kind->create(config, 0);
        ck_assert_msg(task, "%s: %s", kind->name, qkv_last_error());
        qkv_memory_estimate estimate;
        trainer.micro_batch = qkv_step_settle(task, trainer.micro_batch);
        ck_assert_msg(qkv_memory_check(&trainer, 0, task, &estimate) == 0, "%s refused: %s", kind->name, qkv_last_error());
        ck_assert_msg(estimate.available > 0 && estimate.activations > 0 && estimate.tapes >= 1 &&
                      estimate.total > estimate.now, "%s: an empty estimate", kind->name);
        kind->destroy(task);
        free(config);
    }
}
END_TEST

START_TEST(tape_arenas_grow_within_their_budget) {
    size_t before = qkv_tape_arena_chunk_bytes();
    qkv_tape *tape = qkv_tape_create(1);
    size_t base = qkv_tape_arena_chunk_bytes();
    ck_assert(base == before + QKV_TAPE_MIN_CHUNK);
    size_t previous = qkv_tape_set_arena_budget(base + ((size_t)6 << 20));
    qkv_tape_alloc(tape, QKV_TAPE_MIN_CHUNK);      /* fills the first chunk */
    qkv_tape_alloc(tape, (size_t)1 << 20);         /* a doubled chunk (8 MiB) cut down to the 6 MiB left */
    ck_assert(qkv_tape_arena_chunk_bytes() == base + ((size_t)6 << 20));
    EXPECT_FATAL(qkv_tape_alloc(tape, (size_t)6 << 20), "the memory budget is exhausted");
    qkv_tape_set_arena_budget(previous);
    qkv_tape_reset(tape);                           /* merged into one chunk: no budget now */
    ck_assert_int_eq(qkv_tape_n_chunks(tape), 1);
    qkv_tape_free(tape);
    ck_assert(qkv_tape_arena_chunk_bytes() == before);
}
END_TEST

Suite *suite_memory(void) {
    Suite *s = suite_create("memory");
    TCase *tc = tcase_create("memory");
    tcase_set_timeout(tc, 0);
    tcase_add_checked_fixture(tc, scratch_dir_create, scratch_dir_remove);
    tcase_add_test(tc, max_memory_sizes_parse_strictly);
    tcase_add_test(tc, a_run_over_the_budget_is_refused_in_one_line);
    tcase_add_test(tc, the_estimate_is_near_the_measured_peak);
    tcase_add_test(tc, every_default_run_fits_this_machine);
    tcase_add_test(tc, tape_arenas_grow_within_their_budget);
    suite_add_tcase(s, tc);
    return s;
}
