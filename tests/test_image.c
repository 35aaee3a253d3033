/* test_image.c — data/image.c: PNG (gray, gray+alpha, RGB, RGBA), BMP, TGA and
 * JPEG files written by stb_image_write load as [C,H,W] floats in [0,1]; channel
 * conversion; missing, truncated, empty and non-image files are one-line errors
 * naming the path; PNG save/load round trip. */
#include <stb_image_write.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "tests/test_util.h"

enum { W = 5, H = 3 };

/* Interleaved test pixels: byte (y, x, c) = 40 y + 7 x + 60 c + 3 (all distinct). */
static void make_pixels(unsigned char *px, int channels) {
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++)
            for (int c = 0; c < channels; c++)
                px[(y * W + x) * channels + c] = (unsigned char)(40 * y + 7 * x + 60 * c + 3);
}

/* t is [channels, H, W] and t[c, y, x] = px(y, x, c) / 255 within tol. */
static void expect_image(const qkv_tensor *t, const unsigned char *px, int channels, double tol) {
    ck_assert_ptr_nonnull(t);
    assert_shape(t, 3, (int[]){channels, H, W});
    for (int c = 0; c < channels; c++)
        for (int y = 0; y < H; y++)
            for (int x = 0; x < W; x++) {
                float got = qkv_at(t, c, y, x, 0), want = px[(y * W + x) * channels + c] / 255.0f;
                ck_assert_msg(got >= 0.0f && got <= 1.0f && fabs(got - want) <= tol,
                              "[%d,%d,%d] = %g, expected %g", c, y, x, (double)got, (double)want);
            }
}

START_TEST(png_of_every_channel_count) {
    scratch_dir_create();
    for (int channels = 1; channels <= 4; channels++) {
        unsigned char px[W * H * 4];
        make_pixels(px, channels);
        char name[32];
        snprintf(name, sizeof name, "c%d.png", channels);
        const char *path = scratch_file(name);
        ck_assert(stbi_write_png(path, W, H, channels, px, W * channels));
        qkv_tensor *t = qkv_image_load(path, 0);
        expect_image(t, px, channels, 0.0);
        qkv_tensor_free(t);
    }
    scratch_dir_remove();
}
END_TEST

START_TEST(bmp_tga_and_jpeg) {
    scratch_dir_create();
    unsigned char rgb[W * H * 3], rgba[W * H * 4];
    make_pixels(rgb, 3);
    make_pixels(rgba, 4);
    ck_assert(stbi_write_bmp(scratch_file("a.bmp"), W, H, 3, rgb));
    ck_assert(stbi_write_tga(scratch_file("a.tga"), W, H, 4, rgba));
    qkv_tensor *t = qkv_image_load(scratch_file("a.bmp"), 0);
    expect_image(t, rgb, 3, 0.0);
    qkv_tensor_free(t);
    t = qkv_image_load(scratch_file("a.tga"), 0);
    expect_image(t, rgba, 4, 0.0);
    qkv_tensor_free(t);
    /* JPEG is lossy: a flat color comes back within a few levels. */
    unsigned char flat[W * H * 3];
    for (int i = 0; i < W * H; i++) flat[3 * i] = 200, flat[3 * i + 1] = 60, flat[3 * i + 2] = 120;
    ck_assert(stbi_write_jpg(scratch_file("a.jpg"), W, H, 3, flat, 95));
    t = qkv_image_load(scratch_file("a.jpg"), 0);
    expect_image(t, flat, 3, 6.0 / 255);
    qkv_tensor_free(t);
    scratch_dir_remove();
}
END_TEST

START_TEST(channel_conversion) {
    scratch_dir_create();
    unsigned char rgb[W * H * 3], gray[W * H];
    make_pixels(rgb, 3);
    make_pixels(gray, 1);
    ck_assert(stbi_write_png(scratch_file("rgb.png"), W, H, 3, rgb, W * 3));
    ck_assert(stbi_write_png(scratch_file("gray.png"), W, H, 1, gray, W));
    qkv_tensor *t = qkv_image_load(scratch_file("rgb.png"), 4); /* alpha added, opaque */
    assert_shape(t, 3, (int[]){4, H, W});
    for (int p = 0; p < W * H; p++) ck_assert_float_eq(t->data[3 * W * H + p], 1.0f);
    ck_assert_float_eq(t->data[W * H + 1], rgb[3 + 1] / 255.0f); /* G of pixel (0,1) */
    qkv_tensor_free(t);
    t = qkv_image_load(scratch_file("rgb.png"), 1);
    assert_shape(t, 3, (int[]){1, H, W});
    qkv_tensor_free(t);
    t = qkv_image_load(scratch_file("gray.png"), 3); /* gray copied to R, G and B */
    assert_shape(t, 3, (int[]){3, H, W});
    for (int c = 0; c < 3; c++)
        for (int p = 0; p < W * H; p++) ck_assert_float_eq(t->data[c * W * H + p], gray[p] / 255.0f);
    qkv_tensor_free(t);
    EXPECT_FATAL(qkv_image_load(scratch_file("rgb.png"), 5), "channels 5");
    scratch_dir_remove();
}
END_TEST

START_TEST(bad_files_name_the_path) {
    scratch_dir_create();
    unsigned char px[W * H * 3];
    make_pixels(px, 3);
    const char *png = scratch_file("good.png");
    ck_assert(stbi_write_png(png, W, H, 3, px, W * 3));
    size_t len = 0;
    unsigned char *bytes = read_file_bytes(png, &len);
    write_file_bytes(scratch_file("cut.png"), bytes, len / 2);
    write_file_bytes(scratch_file("notes.png"), "just some text\n", 15);
    write_file_bytes(scratch_file("empty.png"), "", 0);
    const char *cases[][2] = {{"cut.png", "cannot decode image: "}, {"notes.png", "unknown image type"},
                              {"empty.png", "empty"}, {"missing.png", "missing.png"}};
    for (int k = 0; k < 4; k++) {
        ck_assert_ptr_null(qkv_image_load(scratch_file(cases[k][0]), 0));
        expect_last_error(scratch_file(cases[k][0]), cases[k][1]);
    }
    /* Every prefix of a valid PNG, decoded from memory: an image or an error, never a crash. */
    for (size_t n = 0; n < len; n++) {
        qkv_tensor *t = qkv_image_decode("prefix", bytes, n, 3);
        if (!t) expect_last_error("prefix", "prefix: ");
        qkv_tensor_free(t);
    }
    free(bytes);
    scratch_dir_remove();
}
END_TEST

/* Formats stb reads but qkv does not (its PGM reader read past a 29-byte buffer
 * under the image fuzzer) are refused by signature, naming the format. */
START_TEST(other_formats_are_refused) {
    const char *cases[][2] = {{"fuzz/image/regression-segv-pgm-16bit", "PGM data"},
                              {"fuzz/image/gray.pgm", "PGM data"},
                              {"fuzz/image/rgb.gif", "GIF data"}};
    for (int k = 0; k < 3; k++) {
        size_t len = 0;
        unsigned char *bytes = read_file_bytes(cases[k][0], &len);
        ck_assert_ptr_nonnull(bytes);
        ck_assert_ptr_null(qkv_image_decode("x.img", bytes, len, 0));
        ck_assert_ptr_nonnull(strstr(qkv_last_error(), cases[k][1]));
        ck_assert_ptr_nonnull(strstr(qkv_last_error(), "qkv reads PNG, JPEG, BMP and TGA"));
        free(bytes);
    }
    ck_assert_ptr_null(qkv_image_decode("x.hdr", (const unsigned char *)"#?RADIANCE\n", 11, 0));
    ck_assert_ptr_nonnull(strstr(qkv_last_error(), "x.hdr: HDR data"));
}
END_TEST

/* A PNG chunk that claims 1.5 GB in an 85-byte file (found by the image fuzzer:
 * stb grew its buffer to 2 GB before noticing) is refused before stb runs. */
START_TEST(png_chunk_longer_than_the_file) {
    size_t len = 0;
    unsigned char *bytes = read_file_bytes("fuzz/image/regression-oom-png-chunk-length", &len);
    ck_assert_ptr_nonnull(bytes);
    ck_assert_ptr_null(qkv_image_decode("lying.png", bytes, len, 0));
    ck_assert_ptr_nonnull(strstr(qkv_last_error(), "lying.png: truncated or corrupt PNG"));
    /* The same file cut right after its first IDAT chunk is an ordinary truncation. */
    ck_assert_ptr_null(qkv_image_decode("cut.png", bytes, 56, 0));
    ck_assert_ptr_nonnull(strstr(qkv_last_error(), "cut.png"));
    free(bytes);
}
END_TEST

START_TEST(save_load_round_trip) {
    scratch_dir_create();
    for (int channels = 1; channels <= 4; channels++) {
        qkv_tensor *t = random_uniform_tensor(3, (int[]){channels, 4, 6}, 7 + (uint64_t)channels, -0.2f, 1.2f, 0);
        ck_assert_int_eq(qkv_image_save_png(scratch_file("rt.png"), t), 0);
        qkv_tensor *back = qkv_image_load(scratch_file("rt.png"), 0);
        assert_shape(back, 3, t->shape);
        for (size_t i = 0; i < t->size; i++) { /* clamped, then within half a level */
            float want = fminf(1.0f, fmaxf(0.0f, t->data[i]));
            ck_assert_msg(fabsf(back->data[i] - want) <= 0.5f / 255 + 1e-6f, "%zu: %g vs %g", i,
                          (double)back->data[i], (double)want);
        }
        /* Values that are already k/255 come back bit for bit. */
        ck_assert_int_eq(qkv_image_save_png(scratch_file("rt2.png"), back), 0);
        qkv_tensor *again = qkv_image_load(scratch_file("rt2.png"), 0);
        ck_assert_int_eq(memcmp(again->data, back->data, back->size * sizeof(float)), 0);
        qkv_tensor_free(t);
        qkv_tensor_free(back);
        qkv_tensor_free(again);
    }
    qkv_tensor *bad = qkv_tensor_create(NULL, 2, (int[]){4, 4}, 0);
    ck_assert_int_eq(qkv_image_save_png(scratch_file("bad.png"), bad), -1);
    expect_last_error("bad.png", "[4,4]");
    ck_assert_int_eq(access(scratch_file("bad.png"), F_OK), -1);
    qkv_tensor_free(bad);
    scratch_dir_remove();
}
END_TEST

Suite *suite_image(void) {
    Suite *s = suite_create("image");
    TCase *tc = tcase_create("image");
    tcase_add_test(tc, png_of_every_channel_count);
    tcase_add_test(tc, bmp_tga_and_jpeg);
    tcase_add_test(tc, channel_conversion);
    tcase_add_test(tc, bad_files_name_the_path);
    tcase_add_test(tc, save_load_round_trip);
    tcase_add_test(tc, png_chunk_longer_than_the_file);
    tcase_add_test(tc, other_formats_are_refused);
    suite_add_tcase(s, tc);
    return s;
}
