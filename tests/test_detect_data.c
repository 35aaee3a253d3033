/* test_detect_data.c — data/detect.c and detect_files.c: the generator is
 * deterministic and draws what its boxes say (non-overlapping, tight, background
 * outside); annotation lines are parsed strictly with file:line errors; a set
 * written to disk loads back equal to the in-memory generation; `qkv data detect`
 * end to end. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "tests/test_util.h"

static int same_color(const float *pixels, size_t plane, size_t p, const float *rgb) {
    return pixels[p] == rgb[0] && pixels[plane + p] == rgb[1] && pixels[2 * plane + p] == rgb[2];
}

/* Every property the header promises for one generated image. */
static void check_example(const qkv_detect_config *c, const float *pixels, const qkv_detect_example *ex) {
    int S = c->size;
    size_t plane = (size_t)S * (size_t)S;
    ck_assert_int_ge(ex->n_objects, c->min_objects);
    ck_assert_int_le(ex->n_objects, c->max_objects);
    int px[QKV_DETECT_MAX_GENERATED][4]; /* x0, y0, x1, y1 in pixels */
    for (int o = 0; o < ex->n_objects; o++) {
        ck_assert(ex->classes[o] >= 0 && ex->classes[o] < QKV_DETECT_CLASSES);
        const float *b = ex->boxes[o];
        px[o][0] = (int)lroundf((b[0] - b[2] / 2) * S), px[o][1] = (int)lroundf((b[1] - b[3] / 2) * S);
        px[o][2] = (int)lroundf((b[0] + b[2] / 2) * S), px[o][3] = (int)lroundf((b[1] + b[3] / 2) * S);
        ck_assert(px[o][0] >= 0 && px[o][1] >= 0 && px[o][2] <= S && px[o][3] <= S);
        ck_assert(px[o][0] < px[o][2] && px[o][1] < px[o][3]);
        float peak = fmaxf(ex->colors[o][0], fmaxf(ex->colors[o][1], ex->colors[o][2]));
        ck_assert_msg(peak - fmaxf(ex->background[0], fmaxf(ex->background[1], ex->background[2])) >= 0.39f,
                      "shape color too close to the background");
        for (int q = 0; q < o; q++) /* disjoint pixel rectangles */
            ck_assert(px[o][2] <= px[q][0] || px[q][2] <= px[o][0] || px[o][3] <= px[q][1] || px[q][3] <= px[o][1]);
    }
    for (int y = 0; y < S; y++)
        for (int x = 0; x < S; x++) {
            size_t p = (size_t)y * (size_t)S + (size_t)x;
            int owner = -1;
            for (int o = 0; o < ex->n_objects; o++)
                if (x >= px[o][0] && x < px[o][2] && y >= px[o][1] && y < px[o][3]) owner = o;
            if (owner < 0)
                ck_assert_msg(same_color(pixels, plane, p, ex->background), "pixel (%d,%d) outside boxes", x, y);
            else
                ck_assert_msg(same_color(pixels, plane, p, ex->background) ||
                                  same_color(pixels, plane, p, ex->colors[owner]),
                              "pixel (%d,%d) in box %d is neither shape nor background", x, y, owner);
        }
    /* Tight: each box's four edge lines hold a pixel of its shape's color. */
    for (int o = 0; o < ex->n_objects; o++) {
        int edges[4] = {0};
        for (int y = px[o][1]; y < px[o][3]; y++)
            for (int x = px[o][0]; x < px[o][2]; x++)
                if (same_color(pixels, plane, (size_t)y * (size_t)S + (size_t)x, ex->colors[o])) {
                    edges[0] |= x == px[o][0], edges[1] |= y == px[o][1];
                    edges[2] |= x == px[o][2] - 1, edges[3] |= y == px[o][3] - 1;
                }
        ck_assert_msg(edges[0] && edges[1] && edges[2] && edges[3], "box %d is not tight", o);
        /* The class decides the fill: a square fills its box, a disk leaves the four
         * corners as background, a triangle (apex up) the two top corners only. */
        int x0 = px[o][0], y0 = px[o][1], x1 = px[o][2] - 1, y1 = px[o][3] - 1, filled = 0;
        for (int y = y0; y <= y1; y++)
            for (int x = x0; x <= x1; x++)
                filled += same_color(pixels, plane, (size_t)y * (size_t)S + (size_t)x, ex->colors[o]);
        int corners[4] = {(y0 * S + x0), (y0 * S + x1), (y1 * S + x0), (y1 * S + x1)}, shape_corners[4];
        for (int k = 0; k < 4; k++) shape_corners[k] = same_color(pixels, plane, (size_t)corners[k], ex->colors[o]);
        if (ex->classes[o] == 0) ck_assert_int_eq(filled, (x1 - x0 + 1) * (y1 - y0 + 1));
        int want_bottom = ex->classes[o] == 2; /* the triangle's base spans the box */
        if (ex->classes[o] != 0)
            ck_assert_msg(!shape_corners[0] && !shape_corners[1] && shape_corners[2] == want_bottom &&
                              shape_corners[3] == want_bottom,
                          "class %d: corners %d %d %d %d", ex->classes[o], shape_corners[0], shape_corners[1],
                          shape_corners[2], shape_corners[3]);
    }
}

START_TEST(generator_draws_what_the_boxes_say) {
    const qkv_detect_config configs[] = {{32, 1, 4}, {48, 1, 4}, {24, 0, 8}};
    int per_class[QKV_DETECT_CLASSES] = {0}, empty = 0;
    for (int k = 0; k < 3; k++) {
        const qkv_detect_config *c = &configs[k];
        float *pixels = malloc(3 * sizeof(float) * (size_t)(c->size * c->size));
        for (int i = 0; i < 150; i++) {
            qkv_detect_example ex;
            qkv_detect_example_make(c, 11, (uint64_t)i, pixels, &ex);
            check_example(c, pixels, &ex);
            for (int o = 0; o < ex.n_objects; o++) per_class[ex.classes[o]]++;
            empty += ex.n_objects == 0;
        }
        free(pixels);
    }
    for (int k = 0; k < QKV_DETECT_CLASSES; k++) ck_assert_int_gt(per_class[k], 100);
    ck_assert_int_gt(empty, 0); /* the 0..8 config made some empty images */
}
END_TEST

static qkv_detect_config small = {32, 1, 4};

static void generate_into(float *out, void *ctx) {
    (void)ctx;
    qkv_detect_set set;
    ck_assert_int_eq(qkv_detect_generate(&small, 5, 10, 48, &set, NULL), 0); /* enough work to run on 2 threads */
    size_t n = (size_t)set.n * 3 * 32 * 32;
    memcpy(out, set.pixels, n * sizeof(float));
    memcpy(out + n, set.boxes, (size_t)set.n * QKV_DETECT_MAX_OBJECTS * 4 * sizeof(float));
    qkv_detect_set_free(&set);
}

START_TEST(generator_is_deterministic) {
    size_t image = 3 * 32 * 32;
    float *a = malloc(image * sizeof(float)), *b = malloc(image * sizeof(float));
    qkv_detect_example ea, eb;
    qkv_detect_example_make(&small, 5, 12, a, &ea);
    qkv_detect_example_make(&small, 5, 12, b, &eb);
    ck_assert_int_eq(memcmp(a, b, image * sizeof(float)), 0);
    ck_assert_int_eq(memcmp(&ea, &eb, sizeof ea), 0);
    /* The set's image 2 (first 10) is example 12, whatever else is generated. */
    qkv_detect_set set;
    ck_assert_int_eq(qkv_detect_generate(&small, 5, 10, 3, &set, NULL), 0);
    ck_assert_int_eq(memcmp(set.pixels + 2 * image, a, image * sizeof(float)), 0);
    ck_assert_int_eq(set.n_objects[2], ea.n_objects);
    ck_assert_int_eq(
        memcmp(set.boxes + 2 * QKV_DETECT_MAX_OBJECTS * 4, ea.boxes, sizeof(float) * 4 * (size_t)ea.n_objects), 0);
    ck_assert_int_eq(set.classes[2 * QKV_DETECT_MAX_OBJECTS + ea.n_objects], -1);
    ck_assert_str_eq(set.files[2], "img_00012.png");
    qkv_detect_set_free(&set);
    qkv_detect_example_make(&small, 6, 12, b, &eb);
    ck_assert_int_ne(memcmp(a, b, image * sizeof(float)), 0);
    expect_same_for_1_and_2_threads(generate_into, NULL, 48 * (image + QKV_DETECT_MAX_OBJECTS * 4), "detect_generate");
    EXPECT_FATAL(qkv_detect_example_make(&(qkv_detect_config){32, 3, 2}, 1, 0, a, &ea), "objects 3..2");
    free(a);
    free(b);
}
END_TEST

START_TEST(annotations_parse_good_text) {
    const char *text = "# header\n\n  # indented comment\r\n"
                       "a.png square 0.5 0.5 0.25 0.5\r\n"
                       "a.png\tdisk  0.125 0.125 0.25 0.25\n"
                       "b.png\n"
                       "c.png triangle 1e-1 0.9 0.2 0.2"; /* no final newline */
    qkv_detect_set set;
    ck_assert_int_eq(qkv_detect_annotations_parse("ann", text, strlen(text), &set), 0);
    ck_assert_int_eq(set.n, 3);
    ck_assert_ptr_null(set.pixels);
    ck_assert_str_eq(set.files[0], "a.png");
    ck_assert_str_eq(set.files[1], "b.png");
    ck_assert_int_eq(set.n_objects[0], 2);
    ck_assert_int_eq(set.n_objects[1], 0);
    ck_assert_int_eq(set.n_objects[2], 1);
    ck_assert_int_eq(set.classes[0], 0);
    ck_assert_int_eq(set.classes[1], 1);
    ck_assert_int_eq(set.classes[2], -1);
    ck_assert_int_eq(set.classes[2 * QKV_DETECT_MAX_OBJECTS], 2);
    ck_assert_int_eq(set.lines[0], 4);
    ck_assert_int_eq(set.lines[2], 7);
    const float box1[4] = {0.125f, 0.125f, 0.25f, 0.25f};
    assert_floats_near(set.boxes + 4, box1, 4, 0);
    ck_assert_float_eq(set.boxes[2 * QKV_DETECT_MAX_OBJECTS * 4], 0.1f);
    qkv_detect_set_free(&set);
    qkv_detect_set_free(&set); /* twice is safe */
}
END_TEST

START_TEST(annotations_parse_errors_name_the_line) {
    char many[2048] = "# many\n";
    for (int k = 0; k <= QKV_DETECT_MAX_OBJECTS; k++) strcat(many, "m.png disk 0.5 0.5 0.1 0.1\n");
    const char *cases[][2] = {
        {"a.png square 0.5 0.5 0.2 0.2\na.png circle 0.5 0.5 0.2 0.2\n", "ann:2: unknown class 'circle'"},
        {"# c\n\na.png square 0.5 zero 0.2 0.2\n", "ann:3: cy 'zero' is not a number"},
        {"a.png square 0.5 0.5 0.2 1.5\n", "ann:1: h 1.5 is outside [0, 1]"},
        {"a.png square 0.5 0.5 0 0.2\n", "ann:1: box size 0 x 0.2 is not positive"},
        {"a.png square 0.9 0.5 0.4 0.2\n", "ann:1: box (0.9, 0.5, 0.4, 0.2) reaches outside"},
        {"a.png square 0.5 nan 0.2 0.2\n", "ann:1: cy 'nan' is not a number"},
        {"a.png square 0.5 0.5 0.2\n", "ann:1: 5 fields"},
        {"a.png square 0.5 0.5 0.2 0.2 x\n", "ann:1: 7 fields"},
        {"x\n../a.png\n", "ann:2: image file name '../a.png' must be a plain name"},
        {"sub/a.png\n", "ann:1: image file name 'sub/a.png' must be a plain name"},
        {".hidden.png\n", "ann:1: image file name '.hidden.png' must not start with '.'"},
        {"a..png\n", "ann:1: image file name 'a..png' must not start"},
        {"a.png\nb.png\na.png disk 0.5 0.5 0.1 0.1\n", "ann:3: a.png was listed before, at line 1"},
        {"# only comments\n\n", "ann: no images listed"},
        {"", "ann: no images listed"},
        {many, "ann:18: m.png has more than 16 objects"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        qkv_detect_set set;
        memset(&set, 0xff, sizeof set);
        ck_assert_int_eq(qkv_detect_annotations_parse("ann", cases[k][0], strlen(cases[k][0]), &set), -1);
        expect_last_error("ann", cases[k][1]);
        ck_assert_int_eq(set.n, 0); /* zeroed */
        ck_assert_ptr_null(set.files);
    }
    /* Bytes that are not text never read past len: a NUL inside a number. */
    const char nul[] = "a.png disk 0.5\0 0.5 0.1 0.1\n";
    qkv_detect_set set;
    ck_assert_int_eq(qkv_detect_annotations_parse("ann", nul, sizeof nul - 1, &set), -1);
    expect_last_error("ann:1", "is not a number");
}
END_TEST

START_TEST(write_then_load_equals_generation) {
    scratch_dir_create();
    qkv_detect_config c = {32, 0, 3};
    const char *dir = scratch_file("set");
    char path[256];
    snprintf(path, sizeof path, "%s", dir);
    ck_assert_int_eq(qkv_detect_write(path, &c, 9, 12), 0);
    ck_assert_int_eq(count_dir_entries(path), 13);
    qkv_detect_set loaded, made;
    ck_assert_int_eq(qkv_detect_load(path, &loaded), 0);
    ck_assert_int_eq(qkv_detect_generate(&c, 9, 0, 12, &made, NULL), 0);
    ck_assert_int_eq(loaded.n, 12);
    ck_assert_int_eq(loaded.height, 32);
    ck_assert_int_eq(loaded.width, 32);
    ck_assert_int_eq(memcmp(loaded.pixels, made.pixels, 12 * 3 * 32 * 32 * sizeof(float)), 0);
    ck_assert_int_eq(memcmp(loaded.n_objects, made.n_objects, 12 * sizeof(int32_t)), 0);
    ck_assert_int_eq(memcmp(loaded.classes, made.classes, 12 * QKV_DETECT_MAX_OBJECTS * sizeof(int32_t)), 0);
    ck_assert_int_eq(memcmp(loaded.boxes, made.boxes, 12 * QKV_DETECT_MAX_OBJECTS * 4 * sizeof(float)), 0);
    for (int i = 0; i < 12; i++) ck_assert_str_eq(loaded.files[i], made.files[i]);

    /* The batch helper copies the chosen images and their padded targets. */
    const int idx[2] = {7, 2};
    size_t image = 3 * 32 * 32;
    float *pixels = malloc(2 * image * sizeof(float)), boxes[2 * QKV_DETECT_MAX_OBJECTS * 4];
    int32_t counts[2], classes[2 * QKV_DETECT_MAX_OBJECTS];
    qkv_detect_batch(&loaded, idx, 2, pixels, counts, classes, boxes);
    ck_assert_int_eq(memcmp(pixels + image, made.pixels + 2 * image, image * sizeof(float)), 0);
    ck_assert_int_eq(counts[0], made.n_objects[7]);
    ck_assert_int_eq(
        memcmp(classes, made.classes + 7 * QKV_DETECT_MAX_OBJECTS, sizeof(int32_t) * QKV_DETECT_MAX_OBJECTS), 0);
    ck_assert_int_eq(memcmp(boxes + QKV_DETECT_MAX_OBJECTS * 4, made.boxes + 2 * QKV_DETECT_MAX_OBJECTS * 4,
                            sizeof(float) * 4 * QKV_DETECT_MAX_OBJECTS), 0);
    EXPECT_FATAL(qkv_detect_batch(&loaded, (int[]){12}, 1, pixels, NULL, NULL, NULL), "index 12");
    free(pixels);
    qkv_detect_set_free(&loaded);
    qkv_detect_set_free(&made);

    /* A second write into the same directory is refused and changes nothing. */
    ck_assert_int_eq(qkv_detect_write(path, &c, 10, 3), -1);
    expect_last_error(path, "not empty");
    ck_assert_int_eq(count_dir_entries(path), 13);

    /* A missing image names the annotation line; an image of another size too. */
    char image_path[300];
    snprintf(image_path, sizeof image_path, "%s/img_00004.png", path);
    qkv_tensor *big = qkv_tensor_create(NULL, 3, (int[]){3, 8, 9}, 0);
    ck_assert_int_eq(qkv_image_save_png(image_path, big), 0);
    ck_assert_int_eq(qkv_detect_load(path, &loaded), -1);
    expect_last_error("annotations.txt:", "img_00004.png is 9x8 but img_00000.png is 32x32");
    ck_assert_int_eq(loaded.n, 0);
    ck_assert_ptr_null(loaded.pixels);
    unlink(image_path);
    ck_assert_int_eq(qkv_detect_load(path, &loaded), -1);
    expect_last_error("annotations.txt:", "img_00004.png: cannot open");
    qkv_tensor_free(big);
    ck_assert_int_eq(qkv_detect_load(scratch_file("nowhere"), &loaded), -1);
    expect_last_error("nowhere/annotations.txt", "cannot open");
    scratch_dir_remove();
}
END_TEST

START_TEST(command_writes_a_set) {
    scratch_dir_create();
    char args[512], line[512], dir[256];
    snprintf(dir, sizeof dir, "%s/out", scratch_dir);
    snprintf(args, sizeof args, "data detect --out %s --n 6 --size 48 --max-objects 2 --seed 3", dir);
    ck_assert_int_eq(run_qkv(args, line, sizeof line), 0);
    ck_assert_int_eq(count_dir_entries(dir), 7);
    qkv_detect_set set, made;
    ck_assert_int_eq(qkv_detect_load(dir, &set), 0);
    ck_assert_int_eq(qkv_detect_generate(&(qkv_detect_config){48, 1, 2}, 3, 0, 6, &made, NULL), 0);
    ck_assert_int_eq(set.width, 48);
    ck_assert_int_eq(memcmp(set.pixels, made.pixels, 6 * 3 * 48 * 48 * sizeof(float)), 0);
    qkv_detect_set_free(&set);
    qkv_detect_set_free(&made);
    ck_assert_int_eq(run_qkv(args, line, sizeof line), 2); /* the directory now holds files: an input error */
    ck_assert_ptr_nonnull(strstr(line, "not empty"));
    ck_assert_int_eq(count_dir_entries(dir), 7);
    ck_assert_int_eq(run_qkv("data detect --n 3", line, sizeof line), 2);
    ck_assert_ptr_nonnull(strstr(line, "--out"));
    snprintf(args, sizeof args, "data detect --out %s/x --n 3 --min-objects 3 --max-objects 2", scratch_dir);
    ck_assert_int_eq(run_qkv(args, line, sizeof line), 2);
    ck_assert_ptr_nonnull(strstr(line, "--min-objects"));
    ck_assert_int_eq(run_qkv("data detect --out x --n 3 --size 7", line, sizeof line), 2);
    ck_assert_ptr_nonnull(strstr(line, "--size"));
    scratch_dir_remove();
}
END_TEST

Suite *suite_detect_data(void) {
    Suite *s = suite_create("detect_data");
    TCase *tc = tcase_create("detect_data");
    tcase_add_test(tc, generator_draws_what_the_boxes_say);
    tcase_add_test(tc, generator_is_deterministic);
    tcase_add_test(tc, annotations_parse_good_text);
    tcase_add_test(tc, annotations_parse_errors_name_the_line);
    tcase_add_test(tc, write_then_load_equals_generation);
    tcase_add_test(tc, command_writes_a_set);
    suite_add_tcase(s, tc);
    return s;
}
