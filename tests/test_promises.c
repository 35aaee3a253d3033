/* test_promises.c — the input promises of docs/reliability.md that issue 29's
 * adversarial user found broken (finding 4), and the memory budget (finding 3):
 *  - a flag given twice is refused, numbers are parsed strictly;
 *  - output paths in /proc (or any place a file cannot be created) are refused
 *    before training, and `data detect` says so with exit 2;
 *  - a /proc file given as data is named a special file, not "empty";
 *  - a 0x0 or 20000x20000 PNG says its size, not "unknown image type";
 *  - data that cannot teach anything (an OFF tree of one class, a text of one
 *    distinct byte) is refused with exit 2;
 *  - a run whose estimated peak memory does not fit the budget is refused before
 *    anything is allocated, in one line with the estimate and the limit.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "data/image.h"
#include "tests/test_util.h"
#include "cli/args.h"

START_TEST(a_flag_given_twice_is_refused) {
    char line[512];
    ck_assert_int_eq(run_qkv("train spirals --steps 2 --lr 0.1 --steps 3", line, sizeof line), 2);
    ck_assert_msg(strstr(line, "qkv train spirals: --steps given twice"), "%s", line);
    ck_assert_int_eq(run_qkv("train spirals --steps 2 --quiet --quiet", line, sizeof line), 2);
    ck_assert_msg(strstr(line, "--quiet given twice"), "%s", line);
}
END_TEST

/* Returns qkv_args_parse's result for "--n TEXT" (an INT row) or "--x TEXT" (a FLOAT row). */
static int parse_one(const char *flag, const char *text) {
    int n = 0;
    float x = 0;
    const qkv_arg args[] = {QKV_ARG_INT_ROW("--n", &n, -10, 1e9, "an int"),
                            QKV_ARG_FLOAT_ROW("--x", &x, -10, 1e9, "a float")};
    char *argv[] = {(char *)flag, (char *)text};
    FILE *saved = stderr;
    stderr = fopen("/dev/null", "w"); /* the refusals print their line */
    int rc = qkv_args_parse("test", 2, argv, args, 2);
    fclose(stderr);
    stderr = saved;
    return rc;
}

START_TEST(numbers_are_parsed_strictly) {
    const char *refused_int[] = {" 5", "+3", "5 ", "0x10", "1e3", "3.0", "", "-", "--2", "5x", "04", "-04", "00"};
    for (size_t i = 0; i < sizeof refused_int / sizeof refused_int[0]; i++)
        ck_assert_msg(parse_one("--n", refused_int[i]) == -1, "--n '%s' accepted", refused_int[i]);
    const char *refused_float[] = {" 0.5", "+0.5", "0x1p3", "inf", "nan", ".", "1e", "1.5.", "e3", "00.5", "01"};
    for (size_t i = 0; i < sizeof refused_float / sizeof refused_float[0]; i++)
        ck_assert_msg(parse_one("--x", refused_float[i]) == -1, "--x '%s' accepted", refused_float[i]);
    const char *accepted_float[] = {"0.5", ".5", "-2", "1e-3", "1E+3", "7", "3.", "0", "-0.25", "1e-05"};
    for (size_t i = 0; i < sizeof accepted_float / sizeof accepted_float[0]; i++)
        ck_assert_msg(parse_one("--x", accepted_float[i]) == 0, "--x '%s' refused", accepted_float[i]);
    ck_assert_int_eq(parse_one("--n", "-7"), 0);
    ck_assert_int_eq(parse_one("--n", "12"), 0);
    ck_assert_int_eq(parse_one("--n", "0"), 0);
}
END_TEST

/* --save /proc/version used to be refused only after training ("cannot create
 * temporary file"): now before it, naming the directory. */
START_TEST(outputs_in_proc_are_refused_before_training) {
    char line[512];
    const char *runs[] = {"train spirals --steps 2 --save /proc/version", "train spirals --steps 2 --csv /proc/x.csv",
                          "train spirals --steps 2 --json /proc/x.json", "train spirals --steps 2 --plot /proc/x.png"};
    for (size_t i = 0; i < sizeof runs / sizeof runs[0]; i++) {
        ck_assert_int_eq(run_qkv(runs[i], line, sizeof line), 2);
        ck_assert_msg(strstr(line, "cannot write in /proc"), "qkv %s: %s", runs[i], line);
    }
    ck_assert_int_eq(run_qkv("data detect --out /proc/dd --n 2", line, sizeof line), 2);
    ck_assert_msg(strstr(line, "/proc/dd: cannot write in /proc"), "%s", line);
}
END_TEST

START_TEST(a_proc_file_as_data_is_named_a_special_file) {
    char line[512];
    ck_assert_int_eq(run_qkv("train text --data /proc/self/status --steps 1", line, sizeof line), 2);
    ck_assert_msg(strstr(line, "/proc/self/status: a special file"), "%s", line);
    ck_assert_int_eq(run_qkv("eval /proc/self/status", line, sizeof line), 2);
    ck_assert_msg(strstr(line, "/proc/self/status: a special file"), "%s", line);
}
END_TEST

/* PNG's CRC-32 (polynomial 0xEDB88320) of n bytes. */
static uint32_t crc32_of(const unsigned char *p, size_t n) {
    uint32_t crc = 0xFFFFFFFFu;
    for (size_t i = 0; i < n; i++) {
        crc ^= p[i];
        for (int k = 0; k < 8; k++) crc = crc & 1 ? (crc >> 1) ^ 0xEDB88320u : crc >> 1;
    }
    return crc ^ 0xFFFFFFFFu;
}

/* A PNG of w x h with an empty IDAT: enough for the header checks. */
static size_t png_of_size(unsigned char *out, unsigned w, unsigned h) {
    static const unsigned char signature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    size_t at = 0;
    memcpy(out, signature, 8);
    at = 8;
    unsigned char ihdr[13] = {w >> 24, w >> 16, w >> 8, w, h >> 24, h >> 16, h >> 8, h, 8, 2, 0, 0, 0};
    const struct { const char *type; const unsigned char *data; unsigned len; } chunks[] = {
        {"IHDR", ihdr, 13}, {"IDAT", (const unsigned char *)"\x78\x9c\x03\x00\x00\x00\x00\x01", 8}, {"IEND", NULL, 0}};
    for (int c = 0; c < 3; c++) {
        unsigned len = chunks[c].len;
        unsigned char *p = out + at;
        p[0] = len >> 24, p[1] = len >> 16, p[2] = len >> 8, p[3] = len;
        memcpy(p + 4, chunks[c].type, 4);
        if (len) memcpy(p + 8, chunks[c].data, len);
        uint32_t crc = crc32_of(p + 4, 4 + len);
        p[8 + len] = crc >> 24, p[9 + len] = crc >> 16, p[10 + len] = crc >> 8, p[11 + len] = crc;
        at += 12 + len;
    }
    return at;
}

START_TEST(a_png_of_no_or_too_many_pixels_says_its_size) {
    unsigned char png[128];
    size_t len = png_of_size(png, 0, 0);
    ck_assert_ptr_null(qkv_image_decode("zero.png", png, len, 3));
    expect_last_error("zero.png", "image of 0x0 pixels");
    len = png_of_size(png, 20000, 20000);
    ck_assert_ptr_null(qkv_image_decode("huge.png", png, len, 3));
    expect_last_error("huge.png", "image of 20000x20000 pixels (at most 8192 per side)");
}
END_TEST

/* A run-length TGA header for 8192 x 8192 RGBA and one pixel: stb would make the
 * whole 1 GB image out of nothing before any size check of a caller. */
START_TEST(a_few_bytes_cannot_ask_for_a_huge_image) {
    static const unsigned char tga[] = {0, 0, 10, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x00, 0x20, 0x00, 0x20, 32, 8,
                                        0xff, 0, 0, 0, 0};
    ck_assert_ptr_null(qkv_image_decode("runs.tga", tga, sizeof tga, 0));
    expect_last_error("runs.tga", "image of 8192x8192 pixels cannot be in 23 bytes (at most 8256 pixels a byte)");
    /* a real run-length file, 64 x 64 of one color in 32 runs of 128 (23 pixels a byte), decodes */
    unsigned char runs[18 + 32 * 5] = {0, 0, 10, 0, 0, 0, 0, 0, 0, 0, 0, 0, 64, 0, 64, 0, 32, 8};
    for (int r = 0; r < 32; r++) memcpy(runs + 18 + 5 * r, "\xff\x10\x20\x30\xff", 5); /* BGRA */
    qkv_tensor *t = qkv_image_decode("solid.tga", runs, sizeof runs, 0);
    ck_assert_ptr_nonnull(t);
    ck_assert_int_eq(t->shape[0], 4);
    ck_assert_int_eq(t->shape[1], 64);
    ck_assert_int_eq(t->shape[2], 64);
    ck_assert(t->data[0] == qkv_image_unit(0x30) && t->data[64 * 64 * 2 + 4095] == qkv_image_unit(0x10));
    qkv_tensor_free(t);
}
END_TEST

static void make_dir(const char *path) { ck_assert_msg(mkdir(path, 0755) == 0, "mkdir %s", path); }

START_TEST(data_that_cannot_teach_is_refused) {
    scratch_dir_create();
    char args[512], line[512], path[128];
    static const char cube[] = "OFF\n4 1 0\n0 0 0\n1 0 0\n0 1 0\n0 0 1\n3 0 1 2\n";
    snprintf(path, sizeof path, "%s", scratch_file("tree"));
    make_dir(path);
    snprintf(path, sizeof path, "%s", scratch_file("tree/chair"));
    make_dir(path);
    const char *splits[] = {"tree/chair/train", "tree/chair/test"};
    for (int s = 0; s < 2; s++) {
        snprintf(path, sizeof path, "%s", scratch_file(splits[s]));
        make_dir(path);
        snprintf(path + strlen(path), sizeof path - strlen(path), "/a.off");
        write_file_bytes(path, cube, sizeof cube - 1);
    }
    snprintf(args, sizeof args, "train points --data %s --steps 1", scratch_file("tree"));
    ck_assert_int_eq(run_qkv(args, line, sizeof line), 2);
    ck_assert_msg(strstr(line, "one class subdirectory (chair): a classifier needs at least 2"), "%s", line);
    char zeros[4096] = {0};
    write_file_bytes(scratch_file("zeros.txt"), zeros, sizeof zeros);
    snprintf(args, sizeof args, "train text --data %s --steps 1", scratch_file("zeros.txt"));
    ck_assert_int_eq(run_qkv(args, line, sizeof line), 2);
    ck_assert_msg(strstr(line, "every one of its 4096 bytes is 0x00"), "%s", line);
    scratch_dir_remove();
}
END_TEST

/* Runs qkv args with files capped at limit bytes (RLIMIT_FSIZE, SIGXFSZ ignored:
 * a write past it fails with EFBIG, as one on a full disk fails with ENOSPC);
 * returns the exit status, the first line of stderr in line. */
static int run_qkv_with_file_limit(const char *args, rlim_t limit, char *line, size_t len) {
    char err[512], copy[2048], *argv[64];
    snprintf(err, sizeof err, "%s", scratch_file("limit.err"));
    snprintf(copy, sizeof copy, "%s", args);
    int argc = 0;
    argv[argc++] = (char *)qkv_binary();
    for (char *save = NULL, *word = strtok_r(copy, " ", &save); word && argc < 63; word = strtok_r(NULL, " ", &save))
        argv[argc++] = word;
    argv[argc] = NULL;
    fflush(NULL);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        struct rlimit cap = {limit, limit};
        signal(SIGXFSZ, SIG_IGN);
        int fd = open(err, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd < 0 || dup2(fd, 2) < 0 || !freopen("/dev/null", "w", stdout) || setrlimit(RLIMIT_FSIZE, &cap) != 0)
            _exit(127);
        execv(argv[0], argv);
        _exit(127);
    }
    int status = 0;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert_msg(WIFEXITED(status), "qkv %s: killed by signal %d", args, WIFSIGNALED(status) ? WTERMSIG(status) : 0);
    size_t n = 0;
    unsigned char *text = read_file_bytes(err, &n);
    size_t end = strcspn((const char *)text, "\n");
    snprintf(line, len, "%.*s", (int)end, (const char *)text);
    free(text);
    return WEXITSTATUS(status);
}

static size_t file_size(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 ? (size_t)st.st_size : 0;
}

/* Issue 36, finding 6: on a full disk --csv and --json were written and then
 * --plot failed, leaving the outputs of a failed run. Now the three are written
 * together: a write that fails leaves none of the run's files (a previous run's
 * stay as they were) and no temporary file. */
START_TEST(the_outputs_of_a_failed_run_are_all_or_nothing) {
    scratch_dir_create();
    char args[2048], line[512], paths[3][512];
    const char *names[3] = {"run.csv", "run.json", "run.png"};
    for (int i = 0; i < 3; i++) snprintf(paths[i], sizeof paths[i], "%s", scratch_file(names[i]));
    snprintf(args, sizeof args, SMALL_SPIRALS " --steps 2 --csv %s --json %s --plot %s", paths[0], paths[1], paths[2]);
    ck_assert_int_eq(run_qkv(args, line, sizeof line), 0);
    size_t sizes[3];
    unsigned char *before[3];
    for (int i = 0; i < 3; i++) before[i] = read_file_bytes(paths[i], &sizes[i]);
    /* A cap the CSV and the JSON fit under and the plot does not: the plot's write fails last. */
    size_t small = sizes[0] > sizes[1] ? sizes[0] : sizes[1];
    ck_assert_uint_gt(sizes[2], 2 * small + 1024);
    rlim_t limit = (rlim_t)(small + 1024);
    for (int pass = 0; pass < 2; pass++) {   /* over the previous run's files, then in an empty directory */
        ck_assert_int_eq(run_qkv_with_file_limit(args, limit, line, sizeof line), 2);
        ck_assert_msg(strstr(line, "run.png") && strstr(line, "File too large"), "%s", line);
        for (int i = 0; i < 3; i++) {
            if (pass == 0) {
                size_t n;
                unsigned char *now = read_file_bytes(paths[i], &n);
                ck_assert_msg(n == sizes[i] && memcmp(now, before[i], n) == 0, "%s changed", names[i]);
                free(now);
                ck_assert_int_eq(remove(paths[i]), 0);
            } else {
                ck_assert_msg(!path_exists(paths[i]), "%s of the failed run is left (%zu bytes)", names[i],
                              file_size(paths[i]));
            }
        }
    }
    DIR *dir = opendir(scratch_dir);
    for (struct dirent *e; (e = readdir(dir));) ck_assert_msg(!strstr(e->d_name, ".tmp."), "%s left", e->d_name);
    closedir(dir);
    for (int i = 0; i < 3; i++) free(before[i]);
    scratch_dir_remove();
}
END_TEST

/* `--data /etc` failed on a dangling symlink ("cannot open") while the message
 * of a directory without text says symlinks are skipped: the data set's identity
 * (data/identity.h) skips a symlink to nothing, as the loader does. */
START_TEST(a_dangling_symlink_in_a_data_directory_is_skipped) {
    scratch_dir_create();
    char dir[512], link[600], args[700], line[512];
    snprintf(dir, sizeof dir, "%s", scratch_file("texts"));
    make_dir(dir);
    snprintf(link, sizeof link, "%s/gone.txt", dir);
    ck_assert_int_eq(symlink("/nonexistent/qkv-test", link), 0);
    snprintf(args, sizeof args, "train text --data %s --steps 1", dir);
    ck_assert_int_eq(run_qkv(args, line, sizeof line), 2);
    ck_assert_msg(strstr(line, "no file to read in the directory (hidden files, symlinks and .dat files are skipped)"),
                  "%s", line);
    scratch_dir_remove();
}
END_TEST

Suite *suite_promises(void) {
    Suite *s = suite_create("promises");
    TCase *tc = tcase_create("promises");
    tcase_set_timeout(tc, 0);
    tcase_add_test(tc, a_flag_given_twice_is_refused);
    tcase_add_test(tc, numbers_are_parsed_strictly);
    tcase_add_test(tc, outputs_in_proc_are_refused_before_training);
    tcase_add_test(tc, a_proc_file_as_data_is_named_a_special_file);
    tcase_add_test(tc, a_png_of_no_or_too_many_pixels_says_its_size);
    tcase_add_test(tc, a_few_bytes_cannot_ask_for_a_huge_image);
    tcase_add_test(tc, data_that_cannot_teach_is_refused);
    tcase_add_test(tc, the_outputs_of_a_failed_run_are_all_or_nothing);
    tcase_add_test(tc, a_dangling_symlink_in_a_data_directory_is_skipped);
    suite_add_tcase(s, tc);
    return s;
}
