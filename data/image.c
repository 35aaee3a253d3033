/* image.c — stb_image decoding into [C, H, W] floats and PNG saving. See image.h.
 *
 * The implementation of stb_image lives in libstb (-lstb); this file only
 * includes the declarations. stb takes the buffer length as an int, so larger
 * buffers are refused before stb sees them. */
#include "data/image.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include <stb_image.h>

#include "core/alloc.h"
#include "core/error.h"
#include "core/fileio.h"
#include "core/io/png.h"

/* stb's last failure as text; stb leaves it NULL or empty for some truncated
 * streams. */
static const char *stb_reason(void) {
    const char *reason = stbi_failure_reason();
    return reason && *reason ? reason : "corrupt or truncated data";
}

/* A PNG whose chunks claim more bytes than the file holds makes stb grow its
 * buffers to the claimed size (up to 2 GB) before it notices the truncation, so
 * every chunk (length, type, data, CRC) must lie inside the buffer before stb runs.
 * Returns 0, or -1 with the error recorded. Other formats go straight to stb. */
static int png_chunks_fit(const char *name, const unsigned char *bytes, size_t len) {
    static const unsigned char signature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    if (len < 8 || memcmp(bytes, signature, 8) != 0) return 0;
    size_t at = 8;
    while (at + 12 <= len) {
        size_t chunk = (size_t)bytes[at] << 24 | (size_t)bytes[at + 1] << 16 | (size_t)bytes[at + 2] << 8 | bytes[at + 3];
        if (chunk > len - at - 12)
            return qkv_file_fail(name, "truncated or corrupt PNG: a chunk of %zu bytes at offset %zu runs past the "
                                       "end of the %zu-byte file", chunk, at, len);
        if (memcmp(bytes + at + 4, "IEND", 4) == 0) return 0;
        at += 12 + chunk;
    }
    return 0; /* no IEND: stb reports the truncation itself */
}

/* A PNG's size from its IHDR chunk (the first, bytes 16..23, big-endian), clamped
 * to INT_MAX: 1 if bytes start with one, else 0. */
static int png_header_size(const unsigned char *bytes, size_t len, int *width, int *height) {
    static const unsigned char start[16] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n', 0, 0, 0, 13, 'I', 'H', 'D', 'R'};
    if (len < 24 || memcmp(bytes, start, 16) != 0) return 0;
    unsigned long w = (unsigned long)bytes[16] << 24 | (unsigned long)bytes[17] << 16 | (unsigned long)bytes[18] << 8 | bytes[19];
    unsigned long h = (unsigned long)bytes[20] << 24 | (unsigned long)bytes[21] << 16 | (unsigned long)bytes[22] << 8 | bytes[23];
    *width = w > INT_MAX ? INT_MAX : (int)w;
    *height = h > INT_MAX ? INT_MAX : (int)h;
    return 1;
}

/* stb also decodes GIF, PSD, PIC, PNM and HDR, and its readers for those are the
 * ones fuzzing breaks (a 16-bit PGM of 29 bytes reads past its buffer inside
 * libstb). qkv reads the four formats it documents, so the others are refused by
 * their signatures before stb sees them. stb tries its readers in the order JPEG,
 * PNG, BMP, GIF, PSD, PIC, PNM, HDR, TGA; TGA has no signature, so anything that
 * passes here and that stb decodes is one of the four. Returns the refused
 * format's name, or NULL. */
static const char *refused_format(const unsigned char *bytes, size_t len) {
    static const struct { const char *magic; size_t n; const char *name; } refused[] = {
        {"GIF8", 4, "GIF"},        {"8BPS", 4, "PSD"},   {"\x53\x80\xF6\x34", 4, "PIC"},
        {"#?RADIANCE\n", 11, "HDR"}, {"#?RGBE\n", 7, "HDR"}, {"P5", 2, "PGM"}, {"P6", 2, "PPM"},
    };
    for (size_t k = 0; k < sizeof refused / sizeof refused[0]; k++)
        if (len >= refused[k].n && memcmp(bytes, refused[k].magic, refused[k].n) == 0) return refused[k].name;
    return NULL;
}

qkv_tensor *qkv_image_decode(const char *name, const unsigned char *bytes, size_t len, int channels) {
    QKV_CHECK(channels >= 0 && channels <= 4, "image_decode: %s: channels %d not in 0..4", name, channels);
    if (len == 0) return qkv_file_fail(name, "empty file, not an image"), NULL;
    if (len > QKV_IMAGE_MAX_BYTES || len > INT_MAX)
        return qkv_file_fail(name, "%zu bytes is more than the %zu an image may have", len, QKV_IMAGE_MAX_BYTES), NULL;
    const char *format = refused_format(bytes, len);
    if (format) return qkv_file_fail(name, "%s data; qkv reads PNG, JPEG, BMP and TGA images", format), NULL;
    if (png_chunks_fit(name, bytes, len) != 0) return NULL;
    int width = 0, height = 0, stored = 0;
    /* stb refuses a 0-pixel or huge PNG in its header and then says "unknown image type": say the size */
    int too_small_or_large = png_header_size(bytes, len, &width, &height) &&
                             (width < 1 || height < 1 || width > QKV_IMAGE_MAX_SIDE || height > QKV_IMAGE_MAX_SIDE);
    if (!too_small_or_large && !stbi_info_from_memory(bytes, (int)len, &width, &height, &stored))
        return qkv_file_fail(name, "not a supported image: %s", stb_reason()), NULL;
    if (width < 1 || height < 1 || width > QKV_IMAGE_MAX_SIDE || height > QKV_IMAGE_MAX_SIDE)
        return qkv_file_fail(name, "image of %dx%d pixels (at most %d per side)", width, height, QKV_IMAGE_MAX_SIDE),
               NULL;
    if ((double)width * height > (double)len * QKV_IMAGE_MAX_PIXELS_PER_BYTE)
        return qkv_file_fail(name, "image of %dx%d pixels cannot be in %zu bytes (at most %d pixels a byte): "
                             "the file is cut short or not an image", width, height, len,
                             QKV_IMAGE_MAX_PIXELS_PER_BYTE), NULL;
    int w = 0, h = 0, c = 0;
    unsigned char *pixels = stbi_load_from_memory(bytes, (int)len, &w, &h, &c, channels);
    if (!pixels) return qkv_file_fail(name, "cannot decode image: %s", stb_reason()), NULL;
    if (w != width || h != height) { /* a header that lies between the two parses */
        stbi_image_free(pixels);
        return qkv_file_fail(name, "image size changed while decoding"), NULL;
    }
    int C = channels ? channels : c;
    qkv_tensor *t = qkv_tensor_try_create(name, "image", 3, (int[]){C, h, w}, 0);
    if (!t) {
        stbi_image_free(pixels);
        return NULL;
    }
    size_t plane = (size_t)h * (size_t)w;
    /* Interleaved HWC bytes -> CHW planes. */
    for (size_t p = 0; p < plane; p++)
        for (int k = 0; k < C; k++) t->data[(size_t)k * plane + p] = qkv_image_unit(pixels[p * (size_t)C + (size_t)k]);
    stbi_image_free(pixels);
    return t;
}

qkv_tensor *qkv_image_load(const char *path, int channels) {
    QKV_CHECK(channels >= 0 && channels <= 4, "image_load: %s: channels %d not in 0..4", path, channels);
    size_t len = 0;
    unsigned char *bytes = qkv_read_file(path, QKV_IMAGE_MAX_BYTES, &len);
    if (!bytes) return NULL;
    qkv_tensor *t = qkv_image_decode(path, bytes, len, channels);
    free(bytes);
    return t;
}

int qkv_image_save_png(const char *path, const qkv_tensor *chw) {
    if (!chw || chw->ndim != 3 || chw->shape[0] < 1 || chw->shape[0] > 4) {
        char shape[QKV_SHAPE_STR_LEN];
        return qkv_file_fail(path, "cannot save a tensor of shape %s as an image (need [C,H,W], C 1..4)",
                             chw ? qkv_shape_str(chw, shape, sizeof shape) : "NULL");
    }
    int C = chw->shape[0], h = chw->shape[1], w = chw->shape[2];
    size_t plane = (size_t)h * (size_t)w;
    unsigned char *pixels = qkv_try_malloc(plane * (size_t)C, path, "the PNG's pixels");
    if (!pixels) return -1;
    for (size_t p = 0; p < plane; p++)
        for (int k = 0; k < C; k++)
            pixels[p * (size_t)C + (size_t)k] = qkv_image_byte(chw->data[(size_t)k * plane + p]);
    int rc = qkv_png_write(path, pixels, w, h, C);
    free(pixels);
    return rc;
}
