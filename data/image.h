/* image.h — images in and out: PNG, JPEG, BMP and TGA decoded by stb_image into
 * float tensors, and float tensors saved as 8-bit PNG.
 *
 * Layout: an owned tensor [C, H, W] (channel planes, rows top to bottom), values
 * byte / 255 in [0, 1] (qkv_image_unit). channels 0 keeps the file's own channels
 * (1 gray, 2 gray+alpha, 3 RGB, 4 RGBA); 1..4 converts (stb's rules: gray =
 * weighted RGB, a missing alpha is opaque). 16-bit files are reduced to 8 bits.
 *
 * Only these four: stb's other readers (GIF, PSD, PIC, PGM/PPM, HDR) are refused
 * by signature, "x.gif: GIF data; qkv reads PNG, JPEG, BMP and TGA images".
 *
 * Limits, checked before decoding: at most QKV_IMAGE_MAX_BYTES of file,
 * QKV_IMAGE_MAX_SIDE pixels per side (stb's header parse, stbi_info_from_memory),
 * and at most QKV_IMAGE_MAX_PIXELS_PER_BYTE pixels per byte of file. The last is
 * the densest a PNG packs: deflate expands at most 1032:1, over 1-bit pixels
 * about 8256 pixels a byte (a run-length TGA or BMP packs at most 128 or 255
 * pixels in 2 bytes; a progressive JPEG's runs of empty blocks could go beyond
 * the limit, and such a file is refused). Without it a few bytes could ask for
 * gigabytes: stb makes the whole image before it finds the data missing, and a
 * 23-byte run-length TGA for 8192 x 8192 RGBA cost 1 GB and 2.7 s.
 *
 * Errors are input errors: NULL / -1 with qkv_last_error() = one line naming the
 * file, and for undecodable bytes stb's reason, e.g.
 *     "shots/a.png: not a supported image: unknown image type"
 * A channels value outside 0..4 is a programmer error (qkv_fatal).
 */
#ifndef QKV_IMAGE_H
#define QKV_IMAGE_H

#include <stddef.h>

#include "core/ops/tensor.h"

#define QKV_IMAGE_MAX_BYTES ((size_t)64 << 20)
#define QKV_IMAGE_MAX_SIDE 8192
#define QKV_IMAGE_MAX_PIXELS_PER_BYTE 8256

/* The float an 8-bit value loads as; generators use it too, so that their pixels
 * survive a PNG round trip bit for bit. */
static inline float qkv_image_unit(unsigned char byte) { return (float)byte / 255.0f; }

/* The byte a float saves as: clamped to [0, 1] (NaN -> 0), rounded to nearest. */
static inline unsigned char qkv_image_byte(float v) {
    if (!(v > 0.0f)) return 0;
    if (v >= 1.0f) return 255;
    return (unsigned char)(v * 255.0f + 0.5f);
}

/* The image file at path as an owned [C, H, W] tensor (free with qkv_tensor_free). */
qkv_tensor *qkv_image_load(const char *path, int channels);

/* The same from bytes[0..len) (any bytes); name is used in messages only. */
qkv_tensor *qkv_image_decode(const char *name, const unsigned char *bytes, size_t len, int channels);

/* Saves chw [C, H, W] (C 1..4) as an 8-bit PNG, atomically (core/io/png.h).
 * 0, or -1 with qkv_last_error() naming path (also for a tensor of another shape). */
int qkv_image_save_png(const char *path, const qkv_tensor *chw);

#endif
