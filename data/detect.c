/* detect.c — the synthetic detection images, the in-memory set and batches. See
 * detect.h; the files (writing, the annotation parser, loading) are in
 * detect_files.c. */
#include "data/detect.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "core/kernels/parallel.h"
#include "core/rng.h"
#include "data/image.h"

const char *const qkv_detect_class_names[] = {"square", "disk", "triangle", NULL};

/* Placement: attempts per shape before the whole image starts over, and restarts
 * before the config is declared too crowded. The side range shrinks to its minimum
 * over one shape's attempts, so crowded images still fit. */
#define PLACE_ATTEMPTS 200
#define MAX_RESTARTS 1000
#define BACKGROUND_MAX_BYTE 51 /* 0.2 * 255 */
#define SHAPE_MIN_PEAK_BYTE 153 /* 0.6 * 255 */

qkv_detect_config qkv_detect_config_default(void) {
    return (qkv_detect_config){.size = 32, .min_objects = 1, .max_objects = 4};
}

void qkv_detect_config_check(const qkv_detect_config *c) {
    QKV_CHECK(c->size >= QKV_DETECT_MIN_SIZE && c->size <= QKV_DETECT_MAX_SIZE,
              "detect: image size %d not in [%d, %d]", c->size, QKV_DETECT_MIN_SIZE, QKV_DETECT_MAX_SIZE);
    QKV_CHECK(c->min_objects >= 0 && c->min_objects <= c->max_objects && c->max_objects <= QKV_DETECT_MAX_GENERATED,
              "detect: objects %d..%d: need 0 <= min <= max <= %d", c->min_objects, c->max_objects,
              QKV_DETECT_MAX_GENERATED);
}

/* A pixel rectangle, columns x0..x1-1 and rows y0..y1-1. */
typedef struct rect {
    int x0, y0, x1, y1;
} rect;

/* r keeps at least one pixel of gap from every placed rectangle. */
static int is_free(rect r, const rect *placed, int n) {
    for (int k = 0; k < n; k++) {
        const rect *p = &placed[k];
        if (r.x0 <= p->x1 && p->x0 <= r.x1 && r.y0 <= p->y1 && p->y0 <= r.y1) return 0;
    }
    return 1;
}

/* Pixel (x, y) of an s x s cell is inside the shape: the disk inscribed in the
 * cell, the triangle with its apex at the top middle and its base on the bottom. */
static int inside(int cls, int x, int y, int s) {
    float u = ((float)x + 0.5f) / (float)s, v = ((float)y + 0.5f) / (float)s;
    switch (cls) {
    case 0: return 1;
    case 1: return (u - 0.5f) * (u - 0.5f) + (v - 0.5f) * (v - 0.5f) <= 0.25f;
    default: return 2.0f * fabsf(u - 0.5f) <= v;
    }
}

static float random_byte(qkv_rng *rng, int lo, int hi) {
    return qkv_image_unit((unsigned char)(lo + (int)qkv_rng_below(rng, (uint32_t)(hi - lo + 1))));
}

/* Draws n_objects cells (class, side, position) until they all fit. */
static void place(const qkv_detect_config *c, qkv_rng *rng, int n_objects, rect *cells, int32_t *classes) {
    int lo = c->size / 8 > 4 ? c->size / 8 : 4, hi = c->size / 3 > lo ? c->size / 3 : lo;
    for (int restart = 0;; restart++) {
        QKV_CHECK(restart < MAX_RESTARTS, "detect: cannot place %d shapes in a %dx%d image", n_objects, c->size,
                  c->size);
        int placed = 0;
        for (; placed < n_objects; placed++) {
            int attempt = 0;
            for (; attempt < PLACE_ATTEMPTS; attempt++) {
                int top = hi - (hi - lo) * attempt / PLACE_ATTEMPTS;
                int s = lo + (int)qkv_rng_below(rng, (uint32_t)(top - lo + 1));
                int x = (int)qkv_rng_below(rng, (uint32_t)(c->size - s + 1));
                int y = (int)qkv_rng_below(rng, (uint32_t)(c->size - s + 1));
                rect r = {x, y, x + s, y + s};
                if (is_free(r, cells, placed)) {
                    cells[placed] = r;
                    classes[placed] = (int32_t)qkv_rng_below(rng, QKV_DETECT_CLASSES);
                    break;
                }
            }
            if (attempt == PLACE_ATTEMPTS) break;
        }
        if (placed == n_objects) return;
    }
}

void qkv_detect_example_make(const qkv_detect_config *c, uint64_t seed, uint64_t index, float *pixels,
                             qkv_detect_example *ex) {
    qkv_detect_config_check(c);
    qkv_rng rng = qkv_rng_split_at(qkv_rng_make(seed), index);
    memset(ex, 0, sizeof *ex);
    int S = c->size;
    size_t plane = (size_t)S * (size_t)S;
    for (int k = 0; k < 3; k++) {
        ex->background[k] = random_byte(&rng, 0, BACKGROUND_MAX_BYTE);
        for (size_t p = 0; p < plane; p++) pixels[(size_t)k * plane + p] = ex->background[k];
    }
    ex->n_objects = c->min_objects + (int)qkv_rng_below(&rng, (uint32_t)(c->max_objects - c->min_objects + 1));
    rect cells[QKV_DETECT_MAX_GENERATED];
    place(c, &rng, ex->n_objects, cells, ex->classes);
    for (int o = 0; o < ex->n_objects; o++) {
        float *color = ex->colors[o];
        do { /* flat color with one bright channel: far from the dark background */
            for (int k = 0; k < 3; k++) color[k] = random_byte(&rng, 0, 255);
        } while (qkv_image_byte(fmaxf(color[0], fmaxf(color[1], color[2]))) < SHAPE_MIN_PEAK_BYTE);
        rect cell = cells[o], box = {S, S, 0, 0}; /* box: the drawn pixels' extent */
        int s = cell.x1 - cell.x0;
        for (int y = 0; y < s; y++)
            for (int x = 0; x < s; x++) {
                if (!inside(ex->classes[o], x, y, s)) continue;
                int px = cell.x0 + x, py = cell.y0 + y;
                for (int k = 0; k < 3; k++) pixels[(size_t)k * plane + (size_t)py * (size_t)S + (size_t)px] = color[k];
                box.x0 = px < box.x0 ? px : box.x0, box.x1 = px + 1 > box.x1 ? px + 1 : box.x1;
                box.y0 = py < box.y0 ? py : box.y0, box.y1 = py + 1 > box.y1 ? py + 1 : box.y1;
            }
        float *b = ex->boxes[o];
        b[0] = (float)(box.x0 + box.x1) * 0.5f / (float)S;
        b[1] = (float)(box.y0 + box.y1) * 0.5f / (float)S;
        b[2] = (float)(box.x1 - box.x0) / (float)S;
        b[3] = (float)(box.y1 - box.y0) / (float)S;
    }
}

/* ---- the in-memory set ------------------------------------------------------------ */

void qkv_detect_set_free(qkv_detect_set *set) {
    if (set->files)
        for (int i = 0; i < set->n; i++) free(set->files[i]);
    free(set->pixels);
    free(set->n_objects);
    free(set->classes);
    free(set->boxes);
    free(set->files);
    free(set->lines);
    memset(set, 0, sizeof *set);
}

int qkv_detect_piece(int size) {
    size_t pixels = (size_t)size * (size_t)size;
    return pixels >= QKV_DETECT_PIECE_PIXELS ? 1 : (int)(QKV_DETECT_PIECE_PIXELS / pixels);
}

/* One image's share: its pixels, n_objects and lines, classes and boxes, the name and its pointer. */
size_t qkv_detect_set_bytes(int size, long n) {
    size_t image = 3 * (size_t)size * (size_t)size * sizeof(float) + sizeof(int32_t) + sizeof(int) +
                   QKV_DETECT_MAX_OBJECTS * (sizeof(int32_t) + 4 * sizeof(float)) + sizeof(char *) + 32;
    return qkv_size_mul(image, (size_t)n);
}

typedef struct generate_piece {
    const qkv_detect_config *config;
    uint64_t seed, first;
    qkv_detect_set *set;
} generate_piece;

/* Images [from, from + n) of the set, in parallel. */
static void generate_images(void *ctx, long from, long n) {
    const generate_piece *g = ctx;
    qkv_detect_set *set = g->set;
    size_t image = 3 * (size_t)set->height * (size_t)set->width;
#pragma omp parallel for if (QKV_PARALLEL((size_t)n * image)) schedule(static)
    for (int i = (int)from; i < (int)(from + n); i++) {
        qkv_detect_example ex;
        qkv_detect_example_make(g->config, g->seed, g->first + (uint64_t)i, set->pixels + (size_t)i * image, &ex);
        set->n_objects[i] = ex.n_objects;
        int32_t *classes = set->classes + (size_t)i * QKV_DETECT_MAX_OBJECTS;
        for (int o = 0; o < QKV_DETECT_MAX_OBJECTS; o++) classes[o] = -1;
        memcpy(classes, ex.classes, sizeof(int32_t) * (size_t)ex.n_objects);
        memcpy(set->boxes + (size_t)i * QKV_DETECT_MAX_OBJECTS * 4, ex.boxes, sizeof(float) * 4 * (size_t)ex.n_objects);
        char name[32];
        snprintf(name, sizeof name, "img_%05llu.png", (unsigned long long)(g->first + (uint64_t)i));
        set->files[i] = qkv_strdup(name, "an image name");
    }
}

int qkv_detect_generate(const qkv_detect_config *c, uint64_t seed, uint64_t first, int n, qkv_detect_set *set,
                        qkv_data_stop stop) {
    qkv_detect_config_check(c);
    QKV_CHECK(n >= 1, "detect_generate: n %d < 1", n);
    size_t image = 3 * (size_t)c->size * (size_t)c->size, un = (size_t)n;
    *set = (qkv_detect_set){.n = n, .height = c->size, .width = c->size};
    set->pixels = qkv_try_malloc(qkv_size_mul(un * image, sizeof(float)), NULL, "the generated images");
    set->n_objects = qkv_try_malloc(qkv_size_mul(un, sizeof(int32_t)), NULL, "the generated targets");
    set->classes = qkv_try_malloc(qkv_size_mul(un * QKV_DETECT_MAX_OBJECTS, sizeof(int32_t)), NULL,
                                  "the generated targets");
    set->boxes = qkv_try_malloc(qkv_size_mul(un * QKV_DETECT_MAX_OBJECTS * 4, sizeof(float)), NULL,
                                "the generated targets");
    set->files = qkv_try_malloc(qkv_size_mul(un, sizeof(char *)), NULL, "the image names");
    if (set->files) memset(set->files, 0, un * sizeof(char *));   /* a failure below frees the names made */
    set->lines = qkv_try_malloc(qkv_size_mul(un, sizeof(int)), NULL, "the image names");
    int status = set->pixels && set->n_objects && set->classes && set->boxes && set->files && set->lines ? 0 : -1;
    if (status == 0) {
        memset(set->boxes, 0, un * QKV_DETECT_MAX_OBJECTS * 4 * sizeof(float));
        memset(set->lines, 0, un * sizeof(int));
        generate_piece g = {c, seed, first, set};
        status = qkv_data_pieces(n, qkv_detect_piece(c->size), generate_images, &g, stop);
    }
    if (status != 0) qkv_detect_set_free(set);   /* the names made so far too */
    return status;
}

void qkv_detect_batch(const qkv_detect_set *set, const int *idx, int n, float *pixels, int32_t *n_objects,
                      int32_t *classes, float *boxes) {
    size_t image = 3 * (size_t)set->height * (size_t)set->width;
    for (int b = 0; b < n; b++) {
        int i = idx[b];
        QKV_CHECK(i >= 0 && i < set->n, "detect_batch: index %d (batch row %d) not in [0, %d)", i, b, set->n);
        if (pixels) memcpy(pixels + (size_t)b * image, set->pixels + (size_t)i * image, image * sizeof(float));
        if (n_objects) n_objects[b] = set->n_objects[i];
        if (classes)
            memcpy(classes + (size_t)b * QKV_DETECT_MAX_OBJECTS, set->classes + (size_t)i * QKV_DETECT_MAX_OBJECTS,
                   QKV_DETECT_MAX_OBJECTS * sizeof(int32_t));
        if (boxes)
            memcpy(boxes + (size_t)b * QKV_DETECT_MAX_OBJECTS * 4, set->boxes + (size_t)i * QKV_DETECT_MAX_OBJECTS * 4,
                   QKV_DETECT_MAX_OBJECTS * 4 * sizeof(float));
    }
}
