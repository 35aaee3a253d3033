/* png.h — writing 8-bit PNG files, the one picture format qkv writes (attention
 * maps, curves, predicted boxes, synthetic data sets).
 *
 * qkv_png_write encodes height rows of width pixels, each pixel `channels` bytes
 * (1 gray, 2 gray+alpha, 3 RGB, 4 RGBA), rows stored top to bottom without
 * padding, with stb_image_write, and writes the file atomically (core/fileio.h):
 * a failure leaves any previous file at path untouched. Returns 0, or -1 with
 * qkv_last_error() = "<path>: <what was wrong>". Bad arguments (a size <= 0,
 * channels outside 1..4, NULL pixels) are input errors too, not aborts.
 */
#ifndef QKV_PNG_H
#define QKV_PNG_H

int qkv_png_write(const char *path, const unsigned char *pixels, int width, int height, int channels);

#endif
