/* png.c — PNG encoding through stb_image_write, committed with the atomic writer. */
#include "core/io/png.h"

#include <stdint.h>
#include <stdlib.h>

#include <stb_image_write.h>

#include "core/fileio.h"

/* stb calls this with the encoded bytes; a failed write marks the file failed and
 * later writes and the commit return -1 (fileio's contract). */
static void write_to_atomic_file(void *context, void *data, int size) {
    qkv_atomic_write((qkv_atomic_file *)context, data, (size_t)size);
}

int qkv_png_write(const char *path, const unsigned char *pixels, int width, int height, int channels) {
    if (!path || !*path) return qkv_file_fail("png", "empty output path");
    if (!pixels || width <= 0 || height <= 0 || channels < 1 || channels > 4)
        return qkv_file_fail(path, "cannot write a %dx%d image with %d channels", width, height, channels);
    /* stb computes row sizes in int; refuse what would overflow it. */
    if ((int64_t)width * channels > INT32_MAX / 2 || (int64_t)width * height * channels > INT32_MAX / 2)
        return qkv_file_fail(path, "image of %dx%d is too large for PNG writing", width, height);
    qkv_atomic_file file;
    if (qkv_atomic_open(&file, path)) return -1;
    if (!stbi_write_png_to_func(write_to_atomic_file, &file, width, height, channels, pixels,
                                width * channels)) {
        qkv_atomic_abort(&file);
        return qkv_file_fail(path, "PNG encoding failed");
    }
    return qkv_atomic_commit(&file);
}
