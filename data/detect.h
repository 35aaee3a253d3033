/* detect.h — the synthetic object-detection data set: small RGB images holding a
 * few non-overlapping shapes of three classes, their boxes, and the on-disk form
 * (PNG files plus annotations.txt) that qkv_detect_load reads back.
 *
 * Classes: 0 square, 1 disk, 2 triangle (apex up). Boxes are (cx, cy, w, h) in
 * [0, 1], relative to the image width and height, tight around the drawn pixels:
 * for pixel columns x0..x1-1 and rows y0..y1-1, cx = (x0 + x1) / 2 / W,
 * w = (x1 - x0) / W, and the same for y with H.
 *
 * Generation (qkv_detect_example). Image index of the set with seed s draws from
 * its own stream, qkv_rng_split_at(qkv_rng_make(s), index), so it is a pure
 * function of (config, s, index). The background is one dark color (channels in
 * [0, 0.2]); each shape is one flat color with a channel >= 0.6, so it differs
 * from the background by >= 0.4 in some channel. Shape sides are drawn in
 * [max(4, size/8), max(that, size/3)] pixels; shapes are placed by rejection with
 * a gap of at least one background pixel between their boxes, so boxes never
 * overlap and every pixel outside all boxes is background. All values are
 * multiples of 1/255 (qkv_image_unit), so a PNG round trip is exact.
 *
 * Annotation file (QKV_DETECT_ANNOTATIONS, "annotations.txt" in the set's directory):
 *     # comment lines start with '#'; blank lines are ignored
 *     img_00000.png square 0.40625 0.28125 0.1875 0.1875
 *     img_00000.png disk 0.75 0.6875 0.25 0.25
 *     img_00001.png                      (an image with no objects)
 * One object per line: <image file> <class name> <cx> <cy> <w> <h>, fields
 * separated by spaces or tabs. The lines of one image are consecutive; images
 * appear in the order of the set. File names are plain names in the set's
 * directory: no '/', '\', "..", no leading '.'. Each value is a finite number in
 * [0, 1], w and h > 0, and the box lies inside the image (cx - w/2 >= 0,
 * cx + w/2 <= 1, up to 1e-4, and the same for y). At most
 * QKV_DETECT_MAX_OBJECTS objects per image. A bad line is an input error
 * "<file>:<line>: <what>", lines counted from 1.
 *
 * Errors are input errors (-1 with a one-line qkv_last_error(), nothing left
 * allocated); a bad config passed to the generator is a programmer error.
 */
#ifndef QKV_DETECT_H
#define QKV_DETECT_H

#include <stddef.h>
#include <stdint.h>

#include "data/pieces.h"

#define QKV_DETECT_CLASSES 3
#define QKV_DETECT_MAX_OBJECTS 16     /* per image, in an annotation file */
#define QKV_DETECT_MAX_GENERATED 8    /* per image, for the generator */
#define QKV_DETECT_MIN_SIZE 24        /* generated image side, pixels */
#define QKV_DETECT_MAX_SIZE 512
#define QKV_DETECT_ANNOTATIONS "annotations.txt"
#define QKV_DETECT_MAX_ANNOTATION_BYTES ((size_t)256 << 20)

/* "square", "disk", "triangle", NULL (in class order). */
extern const char *const qkv_detect_class_names[];

typedef struct qkv_detect_config {
    int size;                     /* images are size x size, QKV_DETECT_MIN_SIZE..MAX_SIZE */
    int min_objects, max_objects; /* 0 <= min <= max <= QKV_DETECT_MAX_GENERATED */
} qkv_detect_config;

/* size 32, 1 to 4 objects. */
qkv_detect_config qkv_detect_config_default(void);

/* One generated image's targets, plus the colors used (for tests and drawing). */
typedef struct qkv_detect_example {
    int n_objects;
    int32_t classes[QKV_DETECT_MAX_GENERATED];
    float boxes[QKV_DETECT_MAX_GENERATED][4];  /* cx, cy, w, h */
    float colors[QKV_DETECT_MAX_GENERATED][3]; /* RGB of each shape */
    float background[3];
} qkv_detect_example;

/* Stops (a programmer error, naming the values) unless size is in
 * [QKV_DETECT_MIN_SIZE, QKV_DETECT_MAX_SIZE] and 0 <= min <= max objects <=
 * QKV_DETECT_MAX_GENERATED. The generators and the writer call it first. */
void qkv_detect_config_check(const qkv_detect_config *config);

/* Image index of the set (seed): pixels [3, size, size] and its objects. */
void qkv_detect_example_make(const qkv_detect_config *config, uint64_t seed, uint64_t index, float *pixels,
                             qkv_detect_example *example);

/* A data set in memory. Targets are padded to QKV_DETECT_MAX_OBJECTS per image:
 * classes -1 and boxes 0 past n_objects[i]. */
typedef struct qkv_detect_set {
    int n, height, width;
    float *pixels;      /* [n, 3, height, width]; NULL after annotations_parse alone */
    int32_t *n_objects; /* [n] */
    int32_t *classes;   /* [n, QKV_DETECT_MAX_OBJECTS] */
    float *boxes;       /* [n, QKV_DETECT_MAX_OBJECTS, 4] */
    char **files;       /* [n] image file names */
    int *lines;         /* [n] annotation line where image i first appears (0 if generated) */
} qkv_detect_set;

/* Frees and zeroes; safe on a zeroed set and twice. */
void qkv_detect_set_free(qkv_detect_set *set);

/* A generated set is made in pieces (data/pieces.h) of about this many pixels
 * (at least one image): a few tens of milliseconds on one core. */
#define QKV_DETECT_PIECE_PIXELS (1 << 20)
/* Images per piece for images of size x size. */
int qkv_detect_piece(int size);

/* The bytes qkv_detect_generate takes for n images of size x size: pixels,
 * targets and names. */
size_t qkv_detect_set_bytes(int size, long n);

/* Images first .. first+n-1 of the set (config, seed), in memory, named
 * img_%05d.png by index: made in parallel, one image per thread, a piece of
 * qkv_detect_piece(size) images at a time, with stop asked between two pieces.
 * 0; -1 with qkv_last_error() when the memory for them cannot be had ("out of
 * memory allocating N bytes for the generated images"); or stop's nonzero
 * answer. On either failure set is zeroed. */
int qkv_detect_generate(const qkv_detect_config *config, uint64_t seed, uint64_t first, int n, qkv_detect_set *set,
                        qkv_data_stop stop);

/* Whether dir can receive a data set: absent with an existing writable parent, or
 * an empty directory. 0, or -1 with qkv_last_error() naming dir. */
int qkv_detect_check_out(const char *dir);
/* Writes images 0..n-1 of (config, seed): img_00000.png ... and annotations.txt,
 * into "<dir>.tmp.<pid>", renamed to dir at the end, so a failed run (disk full)
 * leaves nothing behind and a rerun can start over. dir must pass
 * qkv_detect_check_out. 0 or -1. */
int qkv_detect_write(const char *dir, const qkv_detect_config *config, uint64_t seed, int n);

/* Parses an annotation file's text[0..len) (any bytes) into set's targets and file
 * names (pixels NULL, height = width = 0); name is used in messages. 0, or -1
 * with "<name>:<line>: <what>" and set zeroed. */
int qkv_detect_annotations_parse(const char *name, const char *text, size_t len, qkv_detect_set *set);

/* Reads dir/annotations.txt and every image it lists (converted to RGB); all
 * images must have the same size. 0, or -1 with set zeroed. */
int qkv_detect_load(const char *dir, qkv_detect_set *set);

/* What qkv_detect_load would hold for dir, from its annotations and its first
 * image (the others must have its size): 0 with *n images of *width x *height,
 * or -1 with the error the load would give. */
int qkv_detect_dir_size(const char *dir, int *n, int *width, int *height);

/* Copies images idx[0..n) into pixels [n, 3, height, width] and, for each
 * non-NULL target buffer, n_objects [n], classes [n, QKV_DETECT_MAX_OBJECTS] and
 * boxes [n, QKV_DETECT_MAX_OBJECTS, 4]. An index outside [0, set->n) stops. */
void qkv_detect_batch(const qkv_detect_set *set, const int *idx, int n, float *pixels, int32_t *n_objects,
                      int32_t *classes, float *boxes);

#endif
