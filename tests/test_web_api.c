/* test_web_api.c — the page's C API (web/api.h), natively: every call answers
 * JSON; a refusal is the very line the command line prints for the same input;
 * the numbers are the library's (the attention step's worked example, a
 * training session's losses equal to qkv_train's to the bit, whatever views are
 * asked for between its steps); a library stop (a model too big for the memory)
 * is a refusal after which the module keeps working; a hostile checkpoint's
 * bytes are refused as `qkv attn` refuses the file. The WebAssembly module is
 * held to the native command line by web/test_api.mjs (make test-web-api). */
#include "tests/test_util.h"

#include <stdlib.h>
#include <string.h>

#include "core/io/json.h"
#include "train/session.h"
#include "train/tasks/train_run.h"
#include "web/api.h"

/* Whether answer is {"ok":true...}; ck-asserts that it is JSON. */
static int ok(const char *answer) {
    qkv_json doc;
    ck_assert_msg(qkv_json_parse(&doc, (const unsigned char *)answer, strlen(answer), 16) == 0, "not JSON: %.300s",
                  answer);
    qkv_json_free(&doc);
    return strncmp(answer, "{\"ok\":true", 10) == 0;
}

/* The "error" of a refusal (a static copy). */
static const char *error_of(const char *answer) {
    static char line[600];
    ck_assert_msg(!ok(answer), "expected a refusal: %.300s", answer);
    const char *at = strstr(answer, "\"error\":\"");
    ck_assert_ptr_nonnull(at);
    at += 9;
    size_t n = 0;
    for (size_t i = 0; at[i] && at[i] != '"' && n + 1 < sizeof line; i++) {   /* \" and \\ unescaped */
        if (at[i] == '\\' && (at[i + 1] == '"' || at[i + 1] == '\\')) i++;
        line[n++] = at[i];
    }
    line[n] = '\0';
    return line;
}

/* The number after "key": in text. */
static double number_after(const char *text, const char *key) {
    char quoted[64];
    snprintf(quoted, sizeof quoted, "\"%s\":", key);
    const char *at = strstr(text, quoted);
    ck_assert_msg(at != NULL, "no %s in %.200s", key, text);
    return strtod(at + strlen(quoted), NULL);
}

/* The command line's stderr line for args. */
static const char *cli_line(const char *args) {
    static char line[600];
    ck_assert_int_eq(run_qkv(args, line, sizeof line), 2);
    line[strcspn(line, "\n")] = '\0';
    return line;
}

START_TEST(attention_step_gives_the_libraries_numbers) {
    /* the worked example: scores 0, log 2, log 3 -> weights 1/6, 2/6, 3/6 */
    const char *a = qkv_web_attention("{\"q\":[[1]],\"k\":\"0; 0.693147181; 1.09861229\",\"v\":\"1,0;0,2;2,2\","
                                      "\"scale\":1,\"loss\":\"dot\",\"target\":\"1,2\"}");
    ck_assert_msg(ok(a), "%.300s", a);
    const char *p = strstr(a, "\"name\":\"P\"");
    ck_assert_ptr_nonnull(p);
    const char *data = strstr(p, "\"data\":[") + 8;
    double w[3];
    for (int i = 0; i < 3; i++) w[i] = strtod(data, (char **)&data), data++;
    ck_assert_close(w[0], 1.0 / 6, 1e-6);
    ck_assert_close(w[1], 2.0 / 6, 1e-6);
    ck_assert_close(w[2], 3.0 / 6, 1e-6);
    ck_assert_close(number_after(a, "loss"), 7.0 / 6 + 2 * 5.0 / 3, 1e-5);   /* O = [7/6, 5/3], L = O . [1, 2] */
    const char *c = qkv_web_attention_check("{\"q\":\"1,0;0,1\",\"k\":\"1,0;0,1;1,1\",\"v\":\"1,2;3,4;5,6\","
                                            "\"tensor\":\"k\",\"row\":2,\"col\":1}");
    ck_assert_msg(ok(c), "%.300s", c);
    ck_assert_close(number_after(c, "analytic"), number_after(c, "numeric"), 1e-2);
    /* K and V left out are the worked example's, as on the command line: the same P */
    const char *q_only = qkv_web_attention("{\"q\":[[1]],\"scale\":1}");
    ck_assert_msg(ok(q_only), "%.300s", q_only);
    const char *q_only_p = strstr(q_only, "\"name\":\"P\"");
    ck_assert_ptr_nonnull(q_only_p);
    q_only_p = strstr(q_only_p, "\"data\":[") + 8;
    for (int i = 0; i < 3; i++, q_only_p++) {
        double weight = strtod(q_only_p, (char **)&q_only_p);
        ck_assert_close(weight, (i + 1) / 6.0, 1e-6);
    }
    /* tokens: embedded and projected, every weight with its gradient */
    const char *t = qkv_web_attention("{\"tokens\":\"3 1 4\",\"pos\":\"learned\",\"heads\":2,\"width\":4}");
    ck_assert_msg(ok(t), "%.300s", t);
    ck_assert_ptr_nonnull(strstr(t, "\"name\":\"wq\",\"shape\":[4,4]"));
    ck_assert_ptr_nonnull(strstr(t, "\"name\":\"pos\",\"shape\":[3,4]"));
}
END_TEST

START_TEST(refusals_are_the_command_lines_lines) {
    ck_assert_str_eq(error_of(qkv_web_attention("{\"q\":\"1,x\",\"k\":\"1\",\"v\":\"1\"}")),
                     cli_line("explain attention --q 1,x --k 1 --v 1"));
    ck_assert_str_eq(error_of(qkv_web_attention("{\"q\":\"1\",\"k\":\"1\",\"v\":\"1\",\"mask\":\"casual\"}")),
                     cli_line("explain attention --q 1 --k 1 --v 1 --mask casual"));
    /* the scalar flags, read by the command's own rows (explain_fields.h) */
    ck_assert_str_eq(error_of(qkv_web_attention("{\"q\":\"1\",\"k\":\"1\",\"v\":\"1\",\"heads\":3}")),
                     cli_line("explain attention --q 1 --k 1 --v 1 --heads 3"));
    ck_assert_str_eq(error_of(qkv_web_attention("{\"q\":\"1\",\"k\":\"1\",\"v\":\"1\",\"pos\":\"t5\",\"t5_buckets\":2000}")),
                     cli_line("explain attention --q 1 --k 1 --v 1 --pos t5 --t5-buckets 2000"));
    ck_assert_str_eq(error_of(qkv_web_attention("{\"q\":\"1\",\"k\":\"1\",\"v\":\"1\",\"scale\":-1}")),
                     cli_line("explain attention --q 1 --k 1 --v 1 --scale -1"));
    ck_assert_str_eq(error_of(qkv_web_attention("{\"q\":\"1,0\",\"k\":\"1,0\",\"v\":\"1\",\"pos\":\"alibi\",\"slopes\":[0.5,0.25]}")),
                     cli_line("explain attention --q 1,0 --k 1,0 --v 1 --pos alibi --slopes 0.5,0.25"));
    ck_assert_str_eq(error_of(qkv_web_attention("{\"q\":\"1\",\"k\":\"1\",\"v\":\"1\",\"pos\":\"bogus\"}")),
                     cli_line("explain attention --q 1 --k 1 --v 1 --pos bogus"));
    ck_assert_str_eq(error_of(qkv_web_attention("{\"q\":\"1\",\"k\":\"1\",\"v\":\"1\",\"mask\":\"keep\"}")),
                     cli_line("explain attention --q 1 --k 1 --v 1 --mask keep"));
    ck_assert_str_eq(error_of(qkv_web_train_start("{\"task\":\"reverse\",\"args\":[\"--steps\",\"x\"]}")),
                     cli_line("train reverse --steps x"));
    ck_assert_str_eq(error_of(qkv_web_train_start("{\"task\":\"revers\"}")), cli_line("train revers"));
    ck_assert_str_eq(error_of(qkv_web_train_start("{\"task\":\"reverse\",\"flags\":{\"--heads\":3}}")),
                     cli_line("train reverse --heads 3"));
    /* the request itself */
    ck_assert_ptr_nonnull(strstr(error_of(qkv_web_info("[1")), "qkv web: info: not JSON"));
    ck_assert_str_eq(error_of(qkv_web_train_step("{\"steps\":\"ten\"}")),
                     "qkv web: train_step: \"steps\" must be an integer in [1, 1000000]");
    ck_assert_ptr_nonnull(strstr(error_of(qkv_web_train_step("{}")), "no training session"));
    ck_assert_ptr_nonnull(strstr(error_of(qkv_web_train_start("{\"task\":\"reverse\",\"flags\":{\"--save\":\"x\"}}")),
                                 "--save names a file"));
    qkv_web_reset();
}
END_TEST

/* A small reverse run through the library: its losses, step by step. */
static void library_losses(float *losses, int steps) {
    qkv_task_run r;
    qkv_task_run_begin(&r, &qkv_task_kind_reverse);
    char *argv[] = {"--steps", "6", "--len", "3", "--dim", "16", "--layers", "1", "--batch", "8", "--test-size", "16",
                    "--eval-every", "2", "--quiet"};
    ck_assert_int_eq(qkv_task_run_read(&r, 15, argv), 0);
    qkv_session_spec spec;
    qkv_task_run_spec(&r, 0, &spec);
    qkv_session s;
    ck_assert_int_eq(qkv_session_prepare(&s, &spec), 0);
    for (int i = 0; i < steps; i++) {
        ck_assert_int_eq(qkv_session_step(&s), 0);
        losses[i] = s.result.final_loss;
        if (qkv_session_evaluation_due(&s)) qkv_session_evaluate(&s);
    }
    qkv_session_close(&s);
    qkv_task_run_end(&r);
}

START_TEST(a_session_trains_as_the_library_does_whatever_is_viewed) {
    float expected[6];
    library_losses(expected, 6);
    const char *start = qkv_web_train_start("{\"task\":\"reverse\",\"args\":[\"--steps\",\"6\",\"--len\",\"3\",\"--dim\","
                                            "\"16\",\"--layers\",\"1\",\"--batch\",\"8\",\"--test-size\",\"16\","
                                            "\"--eval-every\",\"2\"]}");
    ck_assert_msg(ok(start), "%.300s", start);
    ck_assert(ok(qkv_web_train_step("{\"steps\":2}")));
    ck_assert(ok(qkv_web_tape("{}")));   /* the next step's tape, its gradients elsewhere */
    ck_assert(ok(qkv_web_tape_node("{\"id\":0}")));
    ck_assert(ok(qkv_web_train_maps("{}")));
    ck_assert(ok(qkv_web_train_lengths("{\"to\":3,\"test_size\":4}")));
    ck_assert(ok(qkv_web_train_evaluate("{}")));
    const char *rest = qkv_web_train_step("{\"steps\":10}");
    ck_assert_msg(ok(rest), "%.300s", rest);
    ck_assert_ptr_nonnull(strstr(rest, "\"done\":true"));
    char row[64];
    for (int i = 2; i < 6; i++) {
        snprintf(row, sizeof row, "[%d,%.9g]", i + 1, (double)expected[i]);
        ck_assert_msg(strstr(rest, row) != NULL, "step %d: %s not in %.400s", i + 1, row, rest);
    }
    qkv_web_reset();
}
END_TEST

START_TEST(a_stop_is_a_refusal_and_the_module_goes_on) {
    setenv("QKV_TEST_MEMORY", "256M", 1);   /* stands in for the heap's maximum */
    const char *big = qkv_web_train_start("{\"task\":\"reverse\",\"flags\":{\"--dim\":1024,\"--layers\":16}}");
    unsetenv("QKV_TEST_MEMORY");
    ck_assert_ptr_nonnull(strstr(big, "\"stopped\":true"));
    ck_assert_ptr_nonnull(strstr(error_of(big), "qkv: making the task takes more memory than"));
    ck_assert(ok(qkv_web_info("{}")));
    ck_assert(ok(qkv_web_train_start("{\"task\":\"reverse\",\"flags\":{\"--steps\":1,\"--dim\":16,\"--layers\":1}}")));
    qkv_web_reset();
}
END_TEST

/* The buffer filled with bytes, then opened under name. */
static const char *open_bytes(const void *bytes, size_t n, const char *name) {
    char request[160];
    snprintf(request, sizeof request, "{\"bytes\":%zu}", n);
    const char *b = qkv_web_buffer(request);
    ck_assert(ok(b));
    memcpy((void *)(uintptr_t)number_after(b, "pointer"), bytes, n);
    snprintf(request, sizeof request, "{\"name\":\"%s\"}", name);
    return qkv_web_model_open(request);
}

START_TEST(a_model_opens_from_its_bytes_and_a_hostile_one_is_refused) {
    /* a checkpoint the command line writes */
    char args[256], line[600];
    snprintf(args, sizeof args, "train reverse --steps 2 --len 3 --dim 16 --layers 1 --batch 8 --test-size 8 --quiet "
             "--save %s", scratch_file("r.safetensors"));
    ck_assert_int_eq(run_qkv(args, line, sizeof line), 0);
    size_t n;
    unsigned char *bytes = read_file_bytes(scratch_file("r.safetensors"), &n);
    const char *opened = open_bytes(bytes, n, "r.safetensors");
    ck_assert_msg(ok(opened), "%.300s", opened);
    ck_assert_ptr_nonnull(strstr(opened, "\"trained\":[3,3]"));
    const char *maps = qkv_web_model_attention("{\"input\":\"3 1 4\"}");
    ck_assert_msg(ok(maps), "%.300s", maps);
    ck_assert_ptr_nonnull(strstr(maps, "\"shape\":[4,3,3]"));
    /* the command line's refusals of the same input and of the same file cut short */
    snprintf(args, sizeof args, "attn %s --input 3,1,44", scratch_file("r.safetensors"));
    ck_assert_str_eq(error_of(qkv_web_model_attention("{\"input\":\"3,1,44\"}")), cli_line(args));
    write_file_bytes(scratch_file("cut.safetensors"), bytes, 300);
    snprintf(args, sizeof args, "attn %s --input 1", scratch_file("cut.safetensors"));
    char expected[600];   /* the command line's line, the folder taken off the path (the page has none) */
    snprintf(expected, sizeof expected, "%s", cli_line(args));
    char *folder = strstr(expected, scratch_dir);
    ck_assert_ptr_nonnull(folder);
    memmove(folder, folder + strlen(scratch_dir) + 1, strlen(folder + strlen(scratch_dir) + 1) + 1);
    ck_assert_str_eq(error_of(open_bytes(bytes, 300, "cut.safetensors")), expected);
    free(bytes);
    qkv_web_reset();
}
END_TEST

Suite *suite_web_api(void) {
    Suite *s = suite_create("web_api");
    TCase *tc = tcase_create("web_api");
    tcase_set_timeout(tc, 0);
    tcase_add_checked_fixture(tc, scratch_dir_create, scratch_dir_remove);
    tcase_add_test(tc, attention_step_gives_the_libraries_numbers);
    tcase_add_test(tc, refusals_are_the_command_lines_lines);
    tcase_add_test(tc, a_session_trains_as_the_library_does_whatever_is_viewed);
    tcase_add_test(tc, a_stop_is_a_refusal_and_the_module_goes_on);
    tcase_add_test(tc, a_model_opens_from_its_bytes_and_a_hostile_one_is_refused);
    suite_add_tcase(s, tc);
    return s;
}
