/* test_detect.c — `qkv train detect`, `qkv detect` and `qkv eval` of a detect
 * checkpoint, end to end on tiny sets written by `qkv data detect`; the
 * prediction decoding and the precision / recall / F1 / mIoU counting against
 * hand-made predictions; 1 vs 2 threads give bitwise the same checkpoint. */
#include "tests/test_util.h"

#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "train/checkpoint.h"
#include "train/tasks/detect.h"
#include "train/tasks/registry.h"

/* ---- metrics by hand ----------------------------------------------------------------- */

START_TEST(decode_keeps_objects_sorted_by_score) {
    const float logits[4][4] = {
        {3, 0, 0, 0},   /* class 0, score e^3 / (e^3 + 3) */
        {0, 0, 0, 5},   /* no object */
        {0, 2, 0, 0},   /* class 1, score e^2 / (e^2 + 3) */
        {0, 0, 0, 0},   /* p(no object) 0.25 < 0.5: kept, class 0 (first of the ties) */
    };
    float boxes[4][4];
    for (int q = 0; q < 4; q++)
        for (int k = 0; k < 4; k++) boxes[q][k] = 0.1f * (float)(q + 1) + 0.01f * (float)k;
    qkv_detection det[4];
    int n = qkv_detect_decode(&logits[0][0], &boxes[0][0], 4, 3, 0.5f, det);
    ck_assert_int_eq(n, 3);
    int queries[3] = {0, 2, 3}, classes[3] = {0, 1, 0};
    double e3 = exp(3.0), e2 = exp(2.0), scores[3] = {e3 / (e3 + 3), e2 / (e2 + 3), 0.25};
    for (int i = 0; i < 3; i++) {
        ck_assert_int_eq(det[i].query, queries[i]);
        ck_assert_int_eq(det[i].cls, classes[i]);
        ck_assert_close(det[i].score, scores[i], 1e-6);
        assert_floats_near(det[i].box, boxes[queries[i]], 4, 0);
    }
    /* A stricter threshold drops the uncertain query (p(no object) 0.25). */
    ck_assert_int_eq(qkv_detect_decode(&logits[0][0], &boxes[0][0], 4, 3, 0.2f, det), 2);
}
END_TEST

static qkv_detection pred(int cls, float score, float cx, float cy, float w, float h) {
    return (qkv_detection){.query = 0, .cls = cls, .score = score, .box = {cx, cy, w, h}};
}

START_TEST(count_matches_greedily_by_class_and_iou) {
    const int32_t classes[3] = {0, 1, 2};
    const float boxes[3][4] = {{0.25f, 0.25f, 0.2f, 0.2f}, {0.75f, 0.75f, 0.2f, 0.2f}, {0.5f, 0.5f, 0.1f, 0.1f}};
    const qkv_detection p[5] = {
        pred(0, 0.9f, 0.25f, 0.25f, 0.2f, 0.2f),  /* object 0 exactly: IoU 1 */
        pred(0, 0.8f, 0.25f, 0.25f, 0.2f, 0.2f),  /* its duplicate: a false positive */
        pred(1, 0.7f, 0.77f, 0.75f, 0.2f, 0.2f),  /* object 1 shifted: IoU 0.036 / 0.044 */
        pred(2, 0.6f, 0.75f, 0.75f, 0.2f, 0.2f),  /* on object 1 with the wrong class */
        pred(2, 0.5f, 0.56f, 0.5f, 0.1f, 0.1f),   /* object 2 shifted: IoU 0.004 / 0.016 < 0.5 */
    };
    qkv_detect_counts c = {0};
    qkv_detect_count(p, 5, classes, &boxes[0][0], 3, &c);
    ck_assert_int_eq(c.predictions, 5);
    ck_assert_int_eq(c.objects, 3);
    ck_assert_int_eq(c.matched, 2);
    double iou1 = 0.036 / 0.044;
    ck_assert_close(c.iou_sum, 1.0 + iou1, 1e-5);
    qkv_metrics m = {0};
    qkv_detect_counts_metrics(&c, &m);
    double precision = 2.0 / 5.0, recall = 2.0 / 3.0;
    ck_assert_close(*qkv_metrics_get(&m, "precision"), precision, 1e-12);
    ck_assert_close(*qkv_metrics_get(&m, "recall"), recall, 1e-12);
    ck_assert_close(*qkv_metrics_get(&m, "f1"), 0.5, 1e-12); /* 2PR / (P + R) */
    ck_assert_close(*qkv_metrics_get(&m, "miou"), (1.0 + iou1) / 2, 1e-5);

    /* Counts add up over images; a second image with no predictions only adds objects. */
    qkv_detect_count(NULL, 0, classes, &boxes[0][0], 1, &c);
    qkv_detect_counts_metrics(&c, &m);
    ck_assert_close(*qkv_metrics_get(&m, "recall"), 2.0 / 4.0, 1e-12);
    /* A prediction overlapping two objects of its class, both above the IoU
     * threshold (0.86 and 0.95), takes the one of higher IoU, listed second. */
    const int32_t same[2] = {1, 1};
    const float two[2][4] = {{0.48f, 0.5f, 0.2f, 0.2f}, {0.5f, 0.5f, 0.2f, 0.2f}};
    qkv_detection between = pred(1, 0.9f, 0.495f, 0.5f, 0.2f, 0.2f);
    ck_assert(qkv_box_iou(between.box, two[0]) > QKV_DETECT_IOU_MATCH);
    qkv_detect_counts d = {0};
    qkv_detect_count(&between, 1, same, &two[0][0], 2, &d);
    ck_assert_int_eq(d.matched, 1);
    ck_assert_close(d.iou_sum, qkv_box_iou(between.box, two[1]), 1e-12);
    /* Nothing predicted, nothing matched: every metric 0, no division by zero. */
    qkv_detect_counts none = {.objects = 3};
    qkv_metrics z = {0};
    qkv_detect_counts_metrics(&none, &z);
    ck_assert_double_eq(*qkv_metrics_get(&z, "precision") + *qkv_metrics_get(&z, "recall") +
                            *qkv_metrics_get(&z, "f1") + *qkv_metrics_get(&z, "miou"), 0.0);
}
END_TEST

START_TEST(model_config_round_trips_through_a_checkpoint_config) {
    const qkv_task_kind *kind = &qkv_task_kind_detect;
    qkv_detect_task_config c, back;
    qkv_detect_task_default_config(&c);
    c.model.width = 32;
    c.model.queries = 5;
    c.model.dropout = 0.25f;
    qkv_config_kv kv = {0};
    qkv_task_kind_describe(kind, &c, &kv);
    qkv_detect_task_default_config(&back);
    ck_assert_int_eq(qkv_fields_parse(kind->fields, kind->n_fields, &kv, &back), 0);
    ck_assert_int_eq(memcmp(&c.model, &back.model, sizeof c.model), 0);
    snprintf((char *)qkv_config_get(&kv, "width"), QKV_CONFIG_VALUE_LEN, "x64");
    ck_assert_int_eq(qkv_fields_parse(kind->fields, kind->n_fields, &kv, &back), -1);
    expect_last_error("width", "x64");
    c.model.heads = 3;
    ck_assert_int_eq(qkv_detect_model_check(&c.model), -1);
    expect_last_error("--heads", "--width");
}
END_TEST

/* ---- the commands ----------------------------------------------------------------------- */

#define TINY "--width 16 --heads 2 --ff 16 --batch 4 --quiet --threads 1"

/* Writes a set of n images with qkv data detect into scratch_dir/name. */
static const char *make_set(const char *name, int n, const char *extra) {
    static char dir[256];
    char args[512], line[512];
    snprintf(dir, sizeof dir, "%s/%s", scratch_dir, name);
    snprintf(args, sizeof args, "data detect --out %s --n %d %s", dir, n, extra);
    ck_assert_int_eq(run_qkv(args, line, sizeof line), 0);
    return dir;
}

START_TEST(train_eval_and_detect_end_to_end) {
    char args[8192], line[512];
    /* A path longer than 64 characters: eval must find it again from the checkpoint. */
    char set[PATH_MAX], canonical[PATH_MAX];
    snprintf(set, sizeof set, "%s", make_set("a-detection-set-in-a-directory-whose-path-is-longer-than-64-characters", 24, ""));
    ck_assert_ptr_nonnull(realpath(set, canonical));
    /* Given as DIR/./NAME: the checkpoint stores the canonical absolute path. */
    snprintf(args, sizeof args,
             "train detect %s --data %s/./a-detection-set-in-a-directory-whose-path-is-longer-than-64-characters "
             "--test 6 --steps 4 --eval-every 2 --json %s --save %s",
             TINY, scratch_dir, scratch_file("run.json"), scratch_file("model.safetensors"));
    ck_assert_msg(run_qkv(args, line, sizeof line) == 0, "%s", line);
    size_t len;
    char *json = (char *)read_file_bytes(scratch_file("run.json"), &len);
    json[len] = '\0';
    const char *keys[] = {"\"f1\"", "\"precision\"", "\"recall\"", "\"miou\"", "\"steps\": 4", "\"task\": \"detect\"",
                          "\"train\": \"18\"", "\"test\": \"6\""};
    for (int i = 0; i < 8; i++) ck_assert_msg(strstr(json, keys[i]), "%s lacks %s", json, keys[i]);
    free(json);
    /* The checkpoint rebuilds its model: eval reloads the test split, detect draws. */
    snprintf(args, sizeof args, "eval %s --threads 1", scratch_file("model.safetensors"));
    ck_assert_msg(run_qkv(args, line, sizeof line) == 0, "%s", line);
    qkv_config_kv stored;
    ck_assert_int_eq(qkv_checkpoint_read_config(scratch_file("model.safetensors"), &stored), 0);
    ck_assert_str_eq(qkv_config_get(&stored, "data"), canonical);
    /* eval --data: another set of the same image size, instead of the stored one. */
    snprintf(args, sizeof args, "eval %s --threads 1 --data %s", scratch_file("model.safetensors"),
             make_set("another", 8, ""));
    ck_assert_msg(run_qkv(args, line, sizeof line) == 0, "%s", line);
    snprintf(args, sizeof args, "detect %s %s/img_00000.png --out %s --scale 4 --threshold 0.9 --threads 1",
             scratch_file("model.safetensors"), set, scratch_file("boxes.png"));
    ck_assert_msg(run_qkv(args, line, sizeof line) == 0, "%s", line);
    qkv_tensor *drawn = qkv_image_load(scratch_file("boxes.png"), 0);
    ck_assert_ptr_nonnull(drawn);
    assert_shape(drawn, 3, (int[]){3, 128, 128});
    qkv_tensor_free(drawn);
    /* An image of another size is refused, naming both sizes. */
    const char *big = make_set("big", 8, "--size 48");
    snprintf(args, sizeof args, "detect %s %s/img_00000.png --out %s", scratch_file("model.safetensors"), big,
             scratch_file("big.png"));
    ck_assert_int_eq(run_qkv(args, line, sizeof line), 2);
    ck_assert_msg(strstr(line, "48x48") && strstr(line, "32x32") && strstr(line, "img_00000.png"), "%s", line);
    snprintf(args, sizeof args, "eval %s --data %s", scratch_file("model.safetensors"), big);
    ck_assert_int_eq(run_qkv(args, line, sizeof line), 2);
    ck_assert_msg(strstr(line, "48x48") && strstr(line, "32x32"), "%s", line);
    /* Not an image, not a detect checkpoint. */
    snprintf(args, sizeof args, "detect %s %s/annotations.txt", scratch_file("model.safetensors"), set);
    ck_assert_int_eq(run_qkv(args, line, sizeof line), 2);
    ck_assert_ptr_nonnull(strstr(line, "annotations.txt"));
    ck_assert_int_eq(run_qkv("detect", line, sizeof line), 2);
}
END_TEST

START_TEST(train_and_test_subdirectories_and_generated_sets) {
    char args[1024], line[512], dir[256];
    snprintf(dir, sizeof dir, "%s/split", scratch_dir);
    mkdir(dir, 0755);
    make_set("split/train", 10, "--seed 2");
    make_set("split/test", 3, "--seed 3");
    snprintf(args, sizeof args, "train detect %s --data %s --steps 2 --json %s", TINY, dir, scratch_file("split.json"));
    ck_assert_msg(run_qkv(args, line, sizeof line) == 0, "%s", line);
    size_t len;
    char *json = (char *)read_file_bytes(scratch_file("split.json"), &len);
    json[len] = '\0';
    ck_assert_msg(strstr(json, "\"train\": \"10\"") && strstr(json, "\"test\": \"3\""), "%s", json);
    free(json);
    /* Without --data the set is generated in memory: nothing lands in $TMPDIR. */
    char tmp[256];
    snprintf(tmp, sizeof tmp, "%s/tmp", scratch_dir);
    mkdir(tmp, 0755);
    const char *old = getenv("TMPDIR");
    char *saved = old ? strdup(old) : NULL;
    setenv("TMPDIR", tmp, 1);
    ck_assert_msg(run_qkv("train detect " TINY " --train 8 --test 2 --steps 2", line, sizeof line) == 0, "%s", line);
    if (saved) setenv("TMPDIR", saved, 1);
    else unsetenv("TMPDIR");
    free(saved);
    ck_assert_int_eq(count_dir_entries(tmp), 0);
    ck_assert_int_eq(run_qkv("train detect --max-objects 9", line, sizeof line), 2);
    ck_assert_ptr_nonnull(strstr(line, "--max-objects"));
    ck_assert_int_eq(run_qkv("train detect --train 8 --test 2 --max-objects 5 --queries 4", line, sizeof line), 2);
    ck_assert_ptr_nonnull(strstr(line, "--queries"));
}
END_TEST

START_TEST(malformed_annotation_names_file_and_line) {
    char args[1024], line[512], path[300];
    const char *set = make_set("bad", 12, "");
    snprintf(path, sizeof path, "%s/annotations.txt", set);
    size_t len;
    char *text = (char *)read_file_bytes(path, &len);
    int lines = 0;
    for (size_t i = 0; i < len; i++) lines += text[i] == '\n';
    const char bad[] = "img_00011.png hexagon 0.5 0.5 0.2 0.2\n"; /* the last image's objects stay together */
    char *grown = malloc(len + sizeof bad);
    memcpy(grown, text, len);
    memcpy(grown + len, bad, sizeof bad - 1);
    write_file_bytes(path, grown, len + sizeof bad - 1);
    free(text);
    free(grown);
    snprintf(args, sizeof args, "train detect %s --data %s --test 2 --steps 2", TINY, set);
    ck_assert_int_eq(run_qkv(args, line, sizeof line), 2);
    char where[64];
    snprintf(where, sizeof where, "annotations.txt:%d:", lines + 1);
    ck_assert_msg(strstr(line, where) && strstr(line, "hexagon"), "message \"%s\" lacks \"%s\"", line, where);
}
END_TEST

/* Three steps of the default-width model on 1 and on 2 threads: the same bytes. */
START_TEST(one_and_two_threads_train_the_same_model) {
    char args[1024], line[512];
    const char *set = make_set("set", 20, "");
    const char *paths[2] = {"t1.safetensors", "t2.safetensors"};
    for (int t = 0; t < 2; t++) {
        snprintf(args, sizeof args, "train detect --data %s --test 4 --steps 3 --batch 8 --quiet --threads %d --save %s",
                 set, t + 1, scratch_file(paths[t]));
        ck_assert_msg(run_qkv(args, line, sizeof line) == 0, "%s", line);
    }
    size_t n1, n2;
    unsigned char *a = read_file_bytes(scratch_file(paths[0]), &n1), *b = read_file_bytes(scratch_file(paths[1]), &n2);
    ck_assert_msg(n1 == n2 && memcmp(a, b, n1) == 0, "checkpoints of 1 and 2 threads differ");
    free(a);
    free(b);
}
END_TEST

/* Stopping at step 3 and resuming to 6 ends with the bytes of 6 steps in one go
 * (with a constant learning rate: a cosine schedule spans --steps, which differs). */
START_TEST(resume_is_bitwise_exact) {
    char args[1024], line[512];
    const char *set = make_set("set", 16, "");
    const char *runs[3][2] = {{"--steps 6", "whole.safetensors"}, {"--steps 3", "half.safetensors"},
                              {"--steps 6 --resume", "resumed.safetensors"}};
    for (int r = 0; r < 3; r++) {
        snprintf(args, sizeof args, "train detect %s --schedule constant --data %s --test 2 --eval-every 2 %s %s --save %s", TINY, set,
                 runs[r][0], r == 2 ? scratch_file("half.safetensors") : "", scratch_file(runs[r][1]));
        ck_assert_msg(run_qkv(args, line, sizeof line) == 0, "%s", line);
    }
    size_t n1, n2;
    unsigned char *a = read_file_bytes(scratch_file("whole.safetensors"), &n1);
    unsigned char *b = read_file_bytes(scratch_file("resumed.safetensors"), &n2);
    ck_assert_msg(n1 == n2 && memcmp(a, b, n1) == 0, "a resumed run differs from an uninterrupted one");
    free(a);
    free(b);
    /* Another model's checkpoint is refused, naming the setting. */
    snprintf(args, sizeof args, "train detect %s --data %s --test 2 --steps 6 --queries 6 --resume %s", TINY, set,
             scratch_file("half.safetensors"));
    ck_assert_int_eq(run_qkv(args, line, sizeof line), 2);
    ck_assert_msg(strstr(line, "queries"), "%s", line);
}
END_TEST

Suite *suite_detect(void) {
    Suite *s = suite_create("detect");
    TCase *tc = tcase_create("detect");
    tcase_set_timeout(tc, 0);
    tcase_add_checked_fixture(tc, scratch_dir_create, scratch_dir_remove);
    tcase_add_test(tc, decode_keeps_objects_sorted_by_score);
    tcase_add_test(tc, count_matches_greedily_by_class_and_iou);
    tcase_add_test(tc, model_config_round_trips_through_a_checkpoint_config);
    tcase_add_test(tc, train_eval_and_detect_end_to_end);
    tcase_add_test(tc, train_and_test_subdirectories_and_generated_sets);
    tcase_add_test(tc, malformed_annotation_names_file_and_line);
    tcase_add_test(tc, one_and_two_threads_train_the_same_model);
    tcase_add_test(tc, resume_is_bitwise_exact);
    suite_add_tcase(s, tc);
    return s;
}
