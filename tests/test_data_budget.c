/* test_data_budget.c — a task's data set is inside the memory budget and the
 * signal's reach (issue 36, finding 1):
 *  - its estimate is judged before anything is made: a set that does not fit
 *    --max-memory is one line naming the estimate, exit 2, no banner, nothing
 *    written, and no piece of it made (the test hook's first poll never comes)
 *    or read (a directory's estimate comes from its listing);
 *  - it is made in pieces (data/pieces.h) that poll between them, the same bits
 *    as made at once: the pieces' sizes and poll counts are checked, not times;
 *  - a signal while it is made (points' clouds, detect's images, BPE training)
 *    ends the run at the next piece: exit 130, one line, nothing written;
 *  - an allocation failure while it is made is exit 2 with the estimate, never
 *    the exit 1 of a stop.
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/test_util.h"
#include "data/detect.h"
#include "data/pieces.h"
#include "data/points.h"
#include "data/spirals.h"
#include "data/tokenizer.h"

/* ---- pieces ---------------------------------------------------------------------- */

static int polls, stop_at;
static long made_upto;

static int counting_stop(void) { return ++polls == stop_at ? 7 : 0; }

static void make_in_order(void *ctx, long first, long n) {
    (void)ctx;
    ck_assert_int_eq(first, made_upto);   /* in order, each item once */
    made_upto = first + n;
}

/* Polls come between pieces only: none for one piece, pieces - 1 in all; a stop
 * ends the making at that poll, and its answer is returned. */
START_TEST(pieces_poll_between_them_and_stop_there) {
    const long counts[] = {0, 1, 3, 10, 12};
    for (int i = 0; i < 5; i++) {
        polls = stop_at = 0;
        made_upto = 0;
        ck_assert_int_eq(qkv_data_pieces(counts[i], 3, make_in_order, NULL, counting_stop), 0);
        ck_assert_int_eq(made_upto, counts[i]);
        long pieces = qkv_data_piece_count(counts[i], 3);
        ck_assert_int_eq(polls, pieces > 0 ? pieces - 1 : 0);
    }
    polls = 0, stop_at = 2, made_upto = 0;
    ck_assert_int_eq(qkv_data_pieces(10, 3, make_in_order, NULL, counting_stop), 7);
    ck_assert_int_eq(made_upto, 6);   /* two pieces made, the third asked for and refused */
}
END_TEST

/* A piece of clouds holds at most QKV_POINTS_PIECE_POINTS points (or one cloud);
 * a set made in pieces, with its polls, is bitwise the one qkv_points_batch makes. */
START_TEST(points_are_made_in_small_pieces_with_the_same_bits) {
    const int sizes[] = {1, 256, 4096, 100000, 1 << 18, 1 << 20};
    for (int i = 0; i < 6; i++) {
        int piece = qkv_points_piece(sizes[i]);
        ck_assert_int_ge(piece, 1);
        ck_assert((long)piece * sizes[i] <= QKV_POINTS_PIECE_POINTS || piece == 1);
        ck_assert((long)(piece + 1) * sizes[i] > QKV_POINTS_PIECE_POINTS);   /* not smaller than it need be */
    }
    qkv_points_config config = qkv_points_config_default(10, 4096);
    int n = 2 * qkv_points_piece(4096) + 5;   /* three pieces */
    float *whole = malloc((size_t)n * 4096 * 3 * sizeof(float)), *pieces = malloc((size_t)n * 4096 * 3 * sizeof(float));
    int32_t *whole_labels = malloc((size_t)n * sizeof(int32_t)), *piece_labels = malloc((size_t)n * sizeof(int32_t));
    qkv_points_batch(&config, 11, 0, n, whole, whole_labels);
    polls = stop_at = 0;
    ck_assert_int_eq(qkv_points_make_set(&config, 11, n, pieces, piece_labels, counting_stop), 0);
    ck_assert_int_eq(polls, 2);
    ck_assert(memcmp(whole, pieces, (size_t)n * 4096 * 3 * sizeof(float)) == 0);
    ck_assert(memcmp(whole_labels, piece_labels, (size_t)n * sizeof(int32_t)) == 0);
    free(whole), free(pieces), free(whole_labels), free(piece_labels);
}
END_TEST

/* A piece of images holds at most QKV_DETECT_PIECE_PIXELS pixels (or one image);
 * a generated set made in pieces equals its images made one by one. */
START_TEST(detect_images_are_made_in_small_pieces_with_the_same_bits) {
    for (int size = QKV_DETECT_MIN_SIZE; size <= QKV_DETECT_MAX_SIZE; size *= 2) {
        long piece = qkv_detect_piece(size), pixels = (long)size * size;
        ck_assert(piece * pixels <= QKV_DETECT_PIECE_PIXELS || piece == 1);
        ck_assert((piece + 1) * pixels > QKV_DETECT_PIECE_PIXELS);
    }
    qkv_detect_config c = {256, 1, 4};
    int n = 2 * qkv_detect_piece(256) + 1;
    qkv_detect_set set;
    polls = stop_at = 0;
    ck_assert_int_eq(qkv_detect_generate(&c, 3, 5, n, &set, counting_stop), 0);
    ck_assert_int_eq(polls, 2);
    size_t image = 3 * 256 * 256;
    float *pixels = malloc(image * sizeof(float));
    for (int i = 0; i < n; i += n / 4) {
        qkv_detect_example ex;
        qkv_detect_example_make(&c, 3, 5 + (uint64_t)i, pixels, &ex);
        ck_assert(memcmp(pixels, set.pixels + (size_t)i * image, image * sizeof(float)) == 0);
        ck_assert_int_eq(ex.n_objects, set.n_objects[i]);
    }
    free(pixels);
    qkv_detect_set_free(&set);
    polls = 0, stop_at = 1;   /* stopped: the answer, and the set freed and zeroed */
    ck_assert_int_eq(qkv_detect_generate(&c, 3, 5, n, &set, counting_stop), 7);
    ck_assert(set.n == 0 && set.pixels == NULL && set.files == NULL);
}
END_TEST

/* The spirals' one stream is cut into pieces of QKV_SPIRALS_PIECE_ROWS rows drawn
 * or shuffled: 2 x P rows poll at P (drawing) and at 2P and 3P (shuffling), the
 * same bits as made at once. */
START_TEST(spirals_are_made_in_pieces_with_the_same_bits) {
    int per_class = QKV_SPIRALS_PIECE_ROWS, n = 2 * per_class;
    float *x = malloc((size_t)n * 2 * sizeof(float)), *x2 = malloc((size_t)n * 2 * sizeof(float));
    int32_t *y = malloc((size_t)n * sizeof(int32_t)), *y2 = malloc((size_t)n * sizeof(int32_t));
    qkv_spirals_make(per_class, 2, 0.1f, 5, x, y);
    polls = stop_at = 0;
    ck_assert_int_eq(qkv_spirals_make_pieces(per_class, 2, 0.1f, 5, x2, y2, counting_stop), 0);
    ck_assert_int_eq(polls, 3);
    ck_assert(memcmp(x, x2, (size_t)n * 2 * sizeof(float)) == 0 && memcmp(y, y2, (size_t)n * sizeof(int32_t)) == 0);
    free(x), free(x2), free(y), free(y2);
}
END_TEST

/* BPE training and encoding poll between merges (a text this short is one piece
 * a pass): merges - 1 polls; the tokenizer and the tokens are the ones made without. */
START_TEST(bpe_training_and_encoding_poll_between_merges) {
    size_t n = 20000;
    uint8_t *text = malloc(n);
    for (size_t i = 0; i < n; i++) text[i] = (uint8_t)"the cat sat on the mat, then the dog ran\n"[(i * 7 + i / 41) % 41];
    qkv_tokenizer *plain = malloc(sizeof *plain), *polled = malloc(sizeof *polled);
    ck_assert_int_eq(qkv_tokenizer_train_bpe(plain, text, n, 120), 0);
    polls = stop_at = 0;
    ck_assert_int_eq(qkv_tokenizer_train_bpe_pieces(polled, text, n, 120, counting_stop), 0);
    ck_assert_int_gt(plain->n_merges, 10);
    ck_assert_int_eq(polls, plain->n_merges - 1);
    ck_assert(memcmp(plain, polled, sizeof *plain) == 0);
    int32_t *a = malloc(n * sizeof(int32_t)), *b = malloc(n * sizeof(int32_t));
    long count = qkv_tokenizer_encode(plain, text, n, 0, a), polled_count = -1;
    polls = 0;
    ck_assert_int_eq(qkv_tokenizer_encode_pieces(plain, text, n, 0, b, &polled_count, counting_stop), 0);
    ck_assert_int_eq(count, polled_count);
    ck_assert_int_le(polls, plain->n_merges - 1);
    ck_assert_int_gt(polls, 0);
    ck_assert(memcmp(a, b, (size_t)count * sizeof(int32_t)) == 0);
    polls = 0, stop_at = 3;
    ck_assert_int_eq(qkv_tokenizer_train_bpe_pieces(polled, text, n, 120, counting_stop), 7);
    ck_assert_int_eq(polled->n_merges, 3);   /* the merges learned before the stop */
    free(a), free(b), free(plain), free(polled), free(text);
}
END_TEST

/* ---- the command line ------------------------------------------------------------ */

/* Runs `qkv args` with env; its exit status, and its stderr's first line from qkv
 * in line (ASan's build says first that an allocation failed: "==PID==WARNING"). */
static int run_with(const char *args, const char *env, size_t as_limit, char *line, size_t len) {
    char err[64];
    snprintf(err, sizeof err, "%s", scratch_file("err"));
    int status = wait_qkv(spawn_qkv(args, env, as_limit, err));
    FILE *f = fopen(err, "r");
    ck_assert_ptr_nonnull(f);
    line[0] = '\0';
    while (fgets(line, (int)len, f) && strncmp(line, "qkv", 3) != 0) line[0] = '\0';
    fclose(f);
    ck_assert_msg(WIFEXITED(status), "%s: status %d", args, status);
    return WEXITSTATUS(status);
}

/* Directories whose sets are over --max-memory: scratch/mn, a ModelNet tree of
 * 4 .off files, and scratch/dd, a detection set of 10 images of 512x512 whose
 * first alone exists; none of their files is a valid mesh or on disk, so a
 * refusal naming the estimate shows that nothing was read. */
static void write_directory_sets(void) {
    const char *dirs[] = {"mn", "mn/a", "mn/a/train", "mn/a/test", "mn/b", "mn/b/train", "mn/b/test", "dd"};
    for (int i = 0; i < 8; i++) ck_assert_int_eq(mkdir(scratch_file(dirs[i]), 0755), 0);
    const char *meshes[] = {"mn/a/train/1.off", "mn/a/test/2.off", "mn/b/train/3.off", "mn/b/test/4.off"};
    for (int i = 0; i < 4; i++) write_file_bytes(scratch_file(meshes[i]), "not a mesh", 10);
    char annotations[1024] = "";
    for (int i = 0; i < 10; i++)
        snprintf(annotations + strlen(annotations), sizeof annotations - strlen(annotations),
                 "img_%05d.png square 0.5 0.5 0.25 0.25\n", i);
    write_file_bytes(scratch_file("dd/annotations.txt"), annotations, strlen(annotations));
    unsigned char *pixels = calloc(512 * 512 * 3, 1);
    ck_assert_int_eq(qkv_png_write(scratch_file("dd/img_00000.png"), pixels, 512, 512, 3), 0);
    free(pixels);
}

/* A set over --max-memory is refused before it is made: one line naming it and
 * its estimate, exit 2, no checkpoint. The test hook raises SIGINT at the first
 * poll, and making a set of many pieces polls after its first: exit 2 rather
 * than 130 shows that not one piece was made past the first (the 36 s of issue
 * 36 were 1,000 pieces). The same for every task that makes a set. */
START_TEST(a_data_set_over_the_budget_is_refused_before_it_is_made) {
    scratch_dir_create();
    write_sparse_file(scratch_file("big.txt"), "ab", 2, (size_t)1 << 30);   /* a 1 GiB corpus, costing nothing */
    write_directory_sets();
    char big[96];
    snprintf(big, sizeof big, "%s", scratch_dir);
    const struct { const char *args, *estimate; } runs[] = {
        {"train points --points 100000 --test-size 2000 --max-memory 1G --steps 1",
         "the data set (2000 test clouds of 100000 points) needs about 2.2 GiB"},
        {"train detect --train 20000 --size 512 --max-memory 4G --steps 1",
         "the data set (20500 generated images of 512x512) needs about 60.1 GiB"},
        {"train spirals --points 1000000 --max-memory 40M --steps 1", "the data set (2 x 2000000 points) needs about"},
        {"train reverse --batch 1000000 --max-len 4096 --max-memory 4G --steps 1",
         "the data set (a batch of 1000000 sequences of up to 4096 tokens) needs about 76.3 GiB"},
        {"train text --data BIG/big.txt --max-memory 1G --steps 1",
         ": 1073741824 bytes and their tokens) needs about 5.0 GiB"},
        {"train points --data BIG/mn --points 1048576 --max-memory 32M --steps 1",
         "the data set (4 clouds of 1048576 points from "},
        {"train detect --data BIG/dd --test 2 --max-memory 32M --steps 1",
         "the data set (20 images of 512x512 from "},
    };
    for (int i = 0; i < 7; i++) {
        char args[512], line[512], ck[64];
        snprintf(ck, sizeof ck, "%s", scratch_file("ck.safetensors"));
        const char *at = strstr(runs[i].args, "BIG");
        if (at) snprintf(args, sizeof args, "%.*s%s%s --save %s", (int)(at - runs[i].args), runs[i].args, big, at + 3, ck);
        else snprintf(args, sizeof args, "%s --save %s", runs[i].args, ck);
        ck_assert_int_eq(run_with(args, "QKV_TEST_SIGNAL_AT_POLL=1", 0, line, sizeof line), 2);
        ck_assert_msg(strstr(line, runs[i].estimate) && strstr(line, "more than the") &&
                      strstr(line, "available (--max-memory); nothing was made"), "%s", line);
        ck_assert(!path_exists(ck));
    }
    scratch_dir_remove();
}
END_TEST

/* The run with the hook raising SIGINT at poll `poll`: exit 130, the line says the
 * data set was being made, no poll came after the hook's, no checkpoint. */
static void expect_stopped_while_making(const char *args, int poll, const char *what) {
    char env[64], line[512], ck[64], full[1024], hook[96];
    snprintf(ck, sizeof ck, "%s", scratch_file("ck.safetensors"));
    snprintf(full, sizeof full, "%s --save %s", args, ck);
    snprintf(env, sizeof env, "QKV_TEST_SIGNAL_AT_POLL=%d", poll);
    ck_assert_int_eq(run_with(full, env, 0, line, sizeof line), 130);
    ck_assert_msg(strstr(line, "stopped by SIGINT while making the data set (") && strstr(line, what) &&
                  strstr(line, "before the first step; nothing was saved"), "%s", line);
    size_t len = 0;
    char *text = (char *)read_file_bytes(scratch_file("err"), &len);
    text[len] = '\0';
    snprintf(hook, sizeof hook, "test hook: SIGINT at poll %d, 0 polls after it", poll);
    ck_assert_msg(strstr(text, hook), "%s", text);
    free(text);
    ck_assert(!path_exists(ck));
}

/* A signal while the set is made ends the run at the next piece (the hook's poll
 * 2: points' 1000 pieces, detect's 125, the spirals' 15, BPE's merges), not
 * after the whole set. */
START_TEST(a_signal_while_a_data_set_is_made_ends_the_run_at_the_next_piece) {
    scratch_dir_create();
    expect_stopped_while_making("train points --points 100000 --test-size 2000 --steps 1 --threads 1", 2,
                                "2000 test clouds of 100000 points");
    expect_stopped_while_making("train detect --train 400 --test 100 --size 512 --steps 1 --threads 1", 2,
                                "500 generated images of 512x512");
    expect_stopped_while_making("train spirals --points 1000000 --steps 1 --threads 1", 2, "2 x 2000000 points");
    size_t n = 40000;
    char *corpus = malloc(n);
    for (size_t i = 0; i < n; i++) corpus[i] = "the quick brown fox jumps over the lazy dog\n"[(i * 7 + i / 44) % 44];
    write_file_bytes(scratch_file("corpus.txt"), corpus, n);
    free(corpus);
    char args[512];
    snprintf(args, sizeof args, "train text --data %s --tokenizer bpe --vocab 200 --steps 1 --threads 1",
             scratch_file("corpus.txt"));
    expect_stopped_while_making(args, 2, "corpus.txt: 40000 bytes and their tokens");
    scratch_dir_remove();
}
END_TEST

/* Memory that cannot be had for the set is exit 2 with the estimate, not exit 1:
 * 192 TiB of clouds (more than an x86-64 address space; the budget set above
 * them) and, where the kernel refuses what it cannot back (overcommit 0 or 2;
 * ASan returns NULL past 1 TiB), 28 TiB of images. */
START_TEST(an_allocation_failure_while_a_set_is_made_is_exit_2_with_the_estimate) {
    scratch_dir_create();
    char line[512];
    ck_assert_int_eq(run_with("train points --points 1048576 --test-size 16777216 --max-memory 1000T --steps 1",
                              NULL, 0, line, sizeof line), 2);
    ck_assert_msg(strstr(line, "out of memory allocating 211106232532992 bytes for the test clouds; the data set "
                               "(16777216 test clouds of 1048576 points) needs about"), "%s", line);
    FILE *f = fopen("/proc/sys/vm/overcommit_memory", "r");
    int mode = f && fscanf(f, "%d", &mode) == 1 ? mode : 1;
    if (f) fclose(f);
    if (mode != 1) {
        ck_assert_int_eq(run_with("train detect --train 10000000 --size 512 --max-memory 1000T --steps 1", NULL, 0,
                                  line, sizeof line), 2);
        ck_assert_msg(strstr(line, "out of memory allocating ") && strstr(line, "; the data set (10000500 generated "
                                                                                 "images of 512x512) needs about"),
                      "%s", line);
    }
    scratch_dir_remove();
}
END_TEST

/* A model a flag makes too big for the machine is refused while it is made, in one
 * line with exit 2, before the kernel would kill the process for touching it
 * (core/alloc.h's budget): here a 256 MiB machine (QKV_TEST_MEMORY) and a 3 GB
 * model, of which at most the budget is ever taken; the same machine takes the
 * default model. */
START_TEST(a_model_too_big_for_the_machine_is_refused_while_it_is_made) {
    scratch_dir_create();
    char line[512];
    ck_assert_int_eq(run_with("train reverse --dim 4096 --layers 12 --steps 1 --quiet", "QKV_TEST_MEMORY=256M", 0, line,
                              sizeof line), 2);
    ck_assert_msg(strstr(line, "making the task takes more memory than the ") &&
                  strstr(line, " of QKV_TEST_MEMORY left (") && strstr(line, "; nothing was made"), "%s", line);
    ck_assert_int_eq(run_with("train reverse --steps 1 --quiet --test-size 20", "QKV_TEST_MEMORY=256M", 0, line,
                              sizeof line), 0);
    scratch_dir_remove();
}
END_TEST

Suite *suite_data_budget(void) {
    Suite *s = suite_create("data_budget");
    TCase *tc = tcase_create("data_budget");
    tcase_set_timeout(tc, 0);
    tcase_add_test(tc, pieces_poll_between_them_and_stop_there);
    tcase_add_test(tc, points_are_made_in_small_pieces_with_the_same_bits);
    tcase_add_test(tc, detect_images_are_made_in_small_pieces_with_the_same_bits);
    tcase_add_test(tc, spirals_are_made_in_pieces_with_the_same_bits);
    tcase_add_test(tc, bpe_training_and_encoding_poll_between_merges);
    tcase_add_test(tc, a_data_set_over_the_budget_is_refused_before_it_is_made);
    tcase_add_test(tc, a_signal_while_a_data_set_is_made_ends_the_run_at_the_next_piece);
    tcase_add_test(tc, an_allocation_failure_while_a_set_is_made_is_exit_2_with_the_estimate);
    tcase_add_test(tc, a_model_too_big_for_the_machine_is_refused_while_it_is_made);
    suite_add_tcase(s, tc);
    return s;
}
