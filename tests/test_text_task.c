/* test_text_task.c — the text task and `qkv sample` end to end, on files generated
 * here: a tiny model's validation loss falls, training windows are a pure
 * function of (seed, step), generation with the K/V cache equals recomputing the
 * whole window token by token (also across the sliding window), sampling with a
 * seed is reproducible and the same on 1 and 2 threads, every bad input gives one
 * line, exit 2 and no file, and --resume is bitwise. */
#include "tests/test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "train/tasks/registry.h"
#include "train/tasks/text.h"

#define SMALL "--context 16 --layers 1 --dim 32 --heads 2 --ff 64 --batch 8 --val-windows 16 --sample-tokens 0"

/* A text with structure to learn: "abcd efgh ..." words of a fixed cycle, 6000 bytes. */
static const char *write_text(const char *name) {
    char text[6001];
    const char *words[] = {"abc", "de", "fgh", "ij", "klm", "nop", "q"};
    size_t at = 0;
    for (int i = 0; at < 6000; i++) {
        const char *w = words[(i * 3 + i / 7) % 7];
        for (size_t k = 0; w[k] && at < 6000; k++) text[at++] = w[k];
        if (at < 6000) text[at++] = i % 11 == 10 ? '\n' : ' ';
    }
    const char *path = scratch_file(name);
    write_file_bytes(path, text, 6000);
    return path;
}

static qkv_text_config *small_config(const char *data) {
    qkv_text_config *c = qkv_task_config_new(&qkv_task_kind_text);
    c->data = data;
    c->context = 16, c->layers = 1, c->dim = 32, c->heads = 2, c->ff = 64, c->batch = 8, c->val_windows = 16;
    c->sample_tokens = 0;
    return c;
}

static double val_loss(qkv_task *task) {
    qkv_tape *tape = qkv_tape_create_inference(1);
    qkv_metrics m = {0};
    task->evaluate(task->self, tape, &m);
    qkv_tape_free(tape);
    return *qkv_metrics_get(&m, "val_loss");
}

START_TEST(a_tiny_model_learns_a_generated_text) {
    qkv_text_config *c = small_config(write_text("t.txt"));
    qkv_task *task = qkv_task_kind_text.create(c, 0);
    ck_assert_ptr_nonnull(task);
    double before = val_loss(task);
    qkv_trainer_config t = {.steps = 150, .log_every = 0, .quiet = 1, .clip = 1.0f, .seed = 1,
                            .optim = {.kind = QKV_OPT_ADAMW, .lr = 3e-3f}};
    qkv_train_result result;
    ck_assert_int_eq(train_with(&t, task, &result), 0);
    double after = *qkv_metrics_get(&result.metrics, "val_loss");
    ck_assert_msg(after < 0.6 * before, "val_loss %.3f -> %.3f", before, after);
    const double *bpb = qkv_metrics_get(&result.metrics, "val_bpb");
    ck_assert_double_eq_tol(*bpb, after / log(2.0), 1e-9);   /* bytes: one byte per token */
    qkv_task_kind_text.destroy(task);
    free(c);
}
END_TEST

START_TEST(training_windows_are_a_function_of_seed_and_step) {
    qkv_text_config *c = small_config(write_text("t.txt"));
    qkv_task *a = qkv_task_kind_text.create(c, 0), *b = qkv_task_kind_text.create(c, 0);
    qkv_tape *tape = qkv_tape_create(1);
    float a3 = a->loss(a->self, tape, 3)->data[0];
    qkv_tape_reset(tape);
    float b3 = b->loss(b->self, tape, 3)->data[0];
    qkv_tape_reset(tape);
    float a4 = a->loss(a->self, tape, 4)->data[0];
    ck_assert(a3 == b3);
    ck_assert(a3 != a4);
    qkv_tape_free(tape);
    qkv_task_kind_text.destroy(a);
    qkv_task_kind_text.destroy(b);
    free(c);
}
END_TEST

typedef struct collected {
    int32_t tokens[256];
    int n;
} collected;

static void collect(void *ctx, int32_t token) {
    collected *c = ctx;
    c->tokens[c->n++] = token;
}

/* Greedy generation with the cache against the argmax of a full forward over the
 * window generate keeps (text.h): the prompt's last context tokens, and after a
 * full window the last context/2 - 1 tokens and the new one. */
START_TEST(cached_generation_equals_recomputing_the_window) {
    qkv_text_config *c = small_config(write_text("t.txt"));
    qkv_task *task = qkv_task_kind_text.create(c, 0);
    const qkv_text_model *m = task->self;   /* the task starts with its model */
    int context = m->config.context, vocab = m->config.vocab;
    int32_t prompt[3] = {1, 2, 3};
    qkv_sampling greedy = {0, 0, 1.0f};
    qkv_rng rng = qkv_rng_make(5);
    qkv_tape *tape = qkv_tape_create_inference(1);
    collected got = {.n = 0};
    qkv_text_generate(m, tape, prompt, 3, 40, &greedy, &rng, collect, &got);   /* 3 + 40 > 2 windows of 16 */
    ck_assert_int_eq(got.n, 40);
    int32_t window[64];
    int len = 3;
    memcpy(window, prompt, sizeof prompt);
    for (int i = 0; i < 40; i++) {
        qkv_tensor *logits = qkv_text_model_logits(tape, m, window, 1, len);
        int want = qkv_argmax(logits->data + (size_t)(len - 1) * vocab, vocab);
        ck_assert_msg(got.tokens[i] == want, "token %d: cached %d, recomputed %d", i, got.tokens[i], want);
        qkv_tape_reset(tape);
        if (len == context) {
            int keep = context / 2 - 1;
            memmove(window, window + len - keep, (size_t)keep * sizeof *window);
            len = keep;
        }
        window[len++] = got.tokens[i];
    }
    qkv_tape_free(tape);
    qkv_task_kind_text.destroy(task);
    free(c);
}
END_TEST

/* Runs ./qkv with args; its whole stdout into out (stderr to /dev/null). */
static int run_stdout(const char *args, char *out, size_t len) {
    char command[2048];
    snprintf(command, sizeof command, "%s %s 2>/dev/null", qkv_binary(), args);
    FILE *p = popen(command, "r");
    ck_assert_ptr_nonnull(p);
    size_t got = fread(out, 1, len - 1, p);
    out[got] = '\0';
    int status = pclose(p);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* Trains a small model into <scratch_dir>/m.safetensors; its path (a static copy:
 * scratch_file's buffers rotate). */
static const char *train_small(void) {
    static char path[256];
    char args[1024], line[512];
    const char *data = write_text("t.txt");
    snprintf(args, sizeof args, "train text --data %s " SMALL " --steps 30 --quiet --save %s", data,
             scratch_file("m.safetensors"));
    ck_assert_int_eq(run_qkv(args, line, sizeof line), 0);
    snprintf(path, sizeof path, "%s", scratch_file("m.safetensors"));
    return path;
}

START_TEST(sampling_is_reproducible_on_any_thread_count) {
    const char *ckpt = train_small();
    char args[1024], one[4096], two[4096], again[4096], other[4096];
    const char *flags = "--prompt abc --tokens 60 --temperature 0.9 --top-k 5 --top-p 0.9 --seed 3";
    snprintf(args, sizeof args, "sample %s %s --threads 1", ckpt, flags);
    ck_assert_int_eq(run_stdout(args, one, sizeof one), 0);
    ck_assert_int_eq(run_stdout(args, again, sizeof again), 0);
    snprintf(args, sizeof args, "sample %s %s --threads 2", ckpt, flags);
    ck_assert_int_eq(run_stdout(args, two, sizeof two), 0);
    snprintf(args, sizeof args, "sample %s --prompt abc --tokens 60 --temperature 0.9 --seed 4", ckpt);
    ck_assert_int_eq(run_stdout(args, other, sizeof other), 0);
    ck_assert_str_eq(one, again);
    ck_assert_str_eq(one, two);
    ck_assert_str_ne(one, other);
    ck_assert_msg(strncmp(one, "abc", 3) == 0 && strlen(one) >= 3 + 60 + 1, "%s", one);   /* the prompt, 60 bytes, \n */
    snprintf(args, sizeof args, "eval %s", ckpt);
    ck_assert_int_eq(run_stdout(args, one, sizeof one), 0);
    ck_assert_msg(strstr(one, "final: task=text checkpoint_step=30 val_loss=") && strstr(one, "val_bpb="), "%s", one);
    char says[600];   /* eval names the data it evaluated on */
    snprintf(says, sizeof says, "eval: %s: a text model at step 30, on %s\n", ckpt, scratch_file("t.txt"));
    ck_assert_msg(strstr(one, says), "%s lacks %s", one, says);
    /* Another text of the same alphabet with --data; the trained-on file changed: refused. */
    char other_text[256], line[512];
    snprintf(other_text, sizeof other_text, "%s", write_text("other.txt"));
    FILE *f = fopen(other_text, "a");
    fputs("abc de fgh ij\n", f);
    fclose(f);
    snprintf(args, sizeof args, "eval %s --data %s", ckpt, other_text);
    ck_assert_int_eq(run_stdout(args, one, sizeof one), 0);
    ck_assert_msg(strstr(one, "val_loss="), "%s", one);
    snprintf(says, sizeof says, ", on %s\n", other_text);
    ck_assert_msg(strstr(one, says), "%s lacks %s", one, says);
    f = fopen(scratch_file("t.txt"), "a");
    fputs("more\n", f);
    fclose(f);
    snprintf(args, sizeof args, "eval %s", ckpt);
    ck_assert_int_eq(run_qkv(args, line, sizeof line), 2);
    ck_assert_msg(strstr(line, "the data differs") && strstr(line, "trained on 6000 bytes"), "%s", line);
}
END_TEST

START_TEST(bad_input_is_one_line_exit_2_nothing_written) {
    const char *ckpt = train_small();
    write_file_bytes(scratch_file("empty.txt"), "", 0);
    write_file_bytes(scratch_file("short.txt"), "abcdefghij", 10);
    mkdir(scratch_file("nodir"), 0755);
    struct { const char *args, *expect; } bad[] = {
        {"train text --data %s/missing.txt", "missing.txt"},
        {"train text --data %s/empty.txt", "empty.txt"},
        {"train text --data %s/nodir", "nodir"},
        {"train text --data %s/short.txt", "--context"},
        {"train text --data %s/t.txt --context 1", "--context"},
        {"train text --data %s/t.txt --tokenizer bpe", "--vocab"},
        {"train text --data %s/t.txt --vocab 300", "--vocab"},
        {"train text --data %s/t.txt --tokenizer bpe --vocab 5000", "--vocab"},
        {"train text --data %s/t.txt --heads 3", "--heads"},
        {"sample %s/m.safetensors --temperature -1", "--temperature"},
        {"sample %s/m.safetensors --prompt Z", "0x5a"},
        {"sample %s/missing.safetensors", "missing.safetensors"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char args[1024], with_save[1200], line[512];
        snprintf(args, sizeof args, bad[i].args, scratch_dir);
        if (strncmp(args, "train text ", 11) == 0)   /* the bad flag last, so that it wins */
            snprintf(with_save, sizeof with_save, "train text " SMALL " --steps 2 --save %s %s",
                     scratch_file("out.safetensors"), args + 11);
        else
            snprintf(with_save, sizeof with_save, "%s", args);
        ck_assert_msg(run_qkv(with_save, line, sizeof line) == 2, "qkv %s: not exit 2", with_save);
        ck_assert_msg(strstr(line, bad[i].expect) && strchr(line, '\n') == strrchr(line, '\n'),
                      "qkv %s: \"%s\" lacks %s", with_save, line, bad[i].expect);
    }
    struct stat st;
    ck_assert_int_ne(stat(scratch_file("out.safetensors"), &st), 0);
    /* --unknown skip drops the byte; a checkpoint of another task is refused. */
    char args[1024], out[4096], line[512];
    snprintf(args, sizeof args, "sample %s --prompt Zab --unknown skip --tokens 5 --temperature 0", ckpt);
    ck_assert_int_eq(run_stdout(args, out, sizeof out), 0);
    char kept[4096];   /* the skipped byte is not echoed: the same text as the prompt without it */
    snprintf(args, sizeof args, "sample %s --prompt ab --tokens 5 --temperature 0", ckpt);
    ck_assert_int_eq(run_stdout(args, kept, sizeof kept), 0);
    ck_assert_str_eq(out, kept);
    ck_assert_msg(strncmp(out, "ab", 2) == 0, "%s", out);
    /* --top-p 0 keeps the likeliest token alone, as 0.0001 does and as greedy does (not all tokens, as 1 does) */
    const char *greedy_like[] = {"--top-p 0", "--top-p 0.0001"};
    for (int i = 0; i < 2; i++) {
        snprintf(args, sizeof args, "sample %s --prompt ab --tokens 5 --seed 7 %s", ckpt, greedy_like[i]);
        ck_assert_int_eq(run_stdout(args, out, sizeof out), 0);
        ck_assert_msg(strcmp(out, kept) == 0, "%s: \"%s\", greedy: \"%s\"", greedy_like[i], out, kept);
    }
    ck_assert_int_eq(run_qkv("sample ref/tasks/points.safetensors", line, sizeof line), 2);
    ck_assert_msg(strstr(line, "points") && strstr(line, "text"), "%s", line);
}
END_TEST

/* 10 steps, then 10 more from the checkpoint, equal 20 in one run (a constant
 * schedule: a cosine one depends on --steps). */
START_TEST(resuming_is_bitwise) {
    char args[1024], line[512], data[256];
    snprintf(data, sizeof data, "%s", write_text("t.txt"));   /* scratch_file's buffers rotate */
    const char *flags = SMALL " --dropout 0.1 --schedule constant --quiet";
    snprintf(args, sizeof args, "train text --data %s %s --steps 20 --save %s", data, flags, scratch_file("a.st"));
    ck_assert_int_eq(run_qkv(args, line, sizeof line), 0);
    snprintf(args, sizeof args, "train text --data %s %s --steps 10 --save %s", data, flags, scratch_file("h.st"));
    ck_assert_int_eq(run_qkv(args, line, sizeof line), 0);
    char resumed[256];
    snprintf(resumed, sizeof resumed, "%s", scratch_file("b.st"));
    snprintf(args, sizeof args, "train text --data %s %s --steps 20 --resume %s --save %s", data, flags,
             scratch_file("h.st"), resumed);
    ck_assert_int_eq(run_qkv(args, line, sizeof line), 0);
    size_t na, nb;
    unsigned char *a = read_file_bytes(scratch_file("a.st"), &na), *b = read_file_bytes(resumed, &nb);
    ck_assert(na == nb && memcmp(a, b, na) == 0);
    free(a);
    free(b);
}
END_TEST

Suite *suite_text_task(void) {
    Suite *s = suite_create("text_task");
    TCase *tc = tcase_create("text_task");
    tcase_set_timeout(tc, 0);
    tcase_add_checked_fixture(tc, scratch_dir_create, scratch_dir_remove);
    tcase_add_test(tc, a_tiny_model_learns_a_generated_text);
    tcase_add_test(tc, training_windows_are_a_function_of_seed_and_step);
    tcase_add_test(tc, cached_generation_equals_recomputing_the_window);
    tcase_add_test(tc, sampling_is_reproducible_on_any_thread_count);
    tcase_add_test(tc, bad_input_is_one_line_exit_2_nothing_written);
    tcase_add_test(tc, resuming_is_bitwise);
    suite_add_tcase(s, tc);
    return s;
}
