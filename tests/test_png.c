/* test_png.c — PNG writing (core/io/png.c): round trip through stb_image, bad
 * arguments and unwritable paths are one-line errors that leave no file. */
#include <stb_image.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "tests/test_util.h"

START_TEST(round_trip_rgb_and_gray) {
    scratch_dir_create();
    const char *dir = scratch_dir;
    char path[512];
    const unsigned char rgb[2 * 3 * 3] = {255, 0, 0, 0, 255, 0, 0, 0, 255, 1, 2, 3, 4, 5, 6, 7, 8, 9};
    snprintf(path, sizeof path, "%s/rgb.png", dir);
    ck_assert_int_eq(qkv_png_write(path, rgb, 3, 2, 3), 0);
    int w = 0, h = 0, c = 0;
    unsigned char *back = stbi_load(path, &w, &h, &c, 0);
    ck_assert_ptr_nonnull(back);
    ck_assert_int_eq(w, 3);
    ck_assert_int_eq(h, 2);
    ck_assert_int_eq(c, 3);
    ck_assert_int_eq(memcmp(back, rgb, sizeof rgb), 0);
    stbi_image_free(back);

    const unsigned char gray[4] = {0, 85, 170, 255};
    snprintf(path, sizeof path, "%s/gray.png", dir);
    ck_assert_int_eq(qkv_png_write(path, gray, 2, 2, 1), 0);
    back = stbi_load(path, &w, &h, &c, 0);
    ck_assert_ptr_nonnull(back);
    ck_assert_int_eq(c, 1);
    ck_assert_int_eq(memcmp(back, gray, sizeof gray), 0);
    stbi_image_free(back);
    scratch_dir_remove();
}
END_TEST

START_TEST(bad_arguments_and_paths_are_errors) {
    scratch_dir_create();
    const char *dir = scratch_dir;
    char path[512];
    const unsigned char px[4] = {0};
    snprintf(path, sizeof path, "%s/x.png", dir);
    ck_assert_int_eq(qkv_png_write(path, px, 0, 2, 1), -1);
    ck_assert_ptr_nonnull(strstr(qkv_last_error(), "x.png"));
    ck_assert_int_eq(qkv_png_write(path, px, 2, 2, 5), -1);
    ck_assert_int_eq(qkv_png_write(path, NULL, 2, 2, 1), -1);
    ck_assert_int_eq(access(path, F_OK), -1); /* nothing was written */
    snprintf(path, sizeof path, "%s/missing/x.png", dir);
    ck_assert_int_eq(qkv_png_write(path, px, 2, 2, 1), -1);
    ck_assert_ptr_nonnull(strstr(qkv_last_error(), "missing/x.png"));
    scratch_dir_remove();
}
END_TEST

Suite *suite_png(void) {
    Suite *s = suite_create("png");
    TCase *tc = tcase_create("png");
    tcase_add_test(tc, round_trip_rgb_and_gray);
    tcase_add_test(tc, bad_arguments_and_paths_are_errors);
    suite_add_tcase(s, tc);
    return s;
}
