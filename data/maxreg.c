/* maxreg.c — the max-regression toy. See maxreg.h for the contract. */
#include "data/maxreg.h"

#include <math.h>

#include "core/error.h"
#include "core/rng.h"

/* Sizes above this would make a padded row of max_size floats absurd. */
#define MAX_SET_SIZE (1 << 24)

qkv_maxreg_config qkv_maxreg_config_default(void) {
    qkv_maxreg_config config = {1, 10, 0.0f, 100.0f};
    return config;
}

static void check_config(const char *fn, const qkv_maxreg_config *config) {
    QKV_CHECK(config != NULL, "%s: config is NULL", fn);
    QKV_CHECK(config->min_size >= 1, "%s: min_size %d: must be >= 1", fn, config->min_size);
    QKV_CHECK(config->min_size <= config->max_size, "%s: min_size %d > max_size %d", fn,
              config->min_size, config->max_size);
    QKV_CHECK(config->max_size <= MAX_SET_SIZE, "%s: max_size %d: must be <= %d", fn,
              config->max_size, MAX_SET_SIZE);
    QKV_CHECK(isfinite(config->lo) && isfinite(config->hi) && config->lo < config->hi,
              "%s: range [%g, %g): need finite lo < hi", fn, (double)config->lo,
              (double)config->hi);
}

/* Draws the set into x[0..size), zeros x[size..max_size); returns size. */
static int draw_example(const qkv_maxreg_config *config, uint64_t seed, uint64_t index, float *x,
                        float *target) {
    qkv_rng rng = qkv_rng_split_at(qkv_rng_make(seed), index);
    uint32_t choices = (uint32_t)(config->max_size - config->min_size + 1);
    int size = config->min_size + (int)qkv_rng_below(&rng, choices);
    float width = config->hi - config->lo, best = -INFINITY;
    for (int i = 0; i < size; i++) {
        float v = config->lo + width * qkv_rng_uniform(&rng);
        if (v >= config->hi) v = nextafterf(config->hi, config->lo); /* rounding */
        x[i] = v;
        best = fmaxf(best, v);
    }
    for (int i = size; i < config->max_size; i++) x[i] = 0.0f;
    *target = best;
    return size;
}

int qkv_maxreg_example(const qkv_maxreg_config *config, uint64_t seed, uint64_t index, float *x,
                       float *target) {
    check_config("qkv_maxreg_example", config);
    QKV_CHECK(x != NULL && target != NULL, "qkv_maxreg_example: x or target is NULL");
    return draw_example(config, seed, index, x, target);
}

void qkv_maxreg_batch(const qkv_maxreg_config *config, uint64_t seed, uint64_t first, int n,
                      float *x, float *mask, float *targets, int32_t *sizes) {
    check_config("qkv_maxreg_batch", config);
    QKV_CHECK(n >= 1, "qkv_maxreg_batch: n %d: must be >= 1", n);
    QKV_CHECK(x != NULL && mask != NULL && targets != NULL,
              "qkv_maxreg_batch: x, mask or targets is NULL");
    int width = config->max_size;
    for (int b = 0; b < n; b++) {
        float *row = x + (size_t)b * width, *mask_row = mask + (size_t)b * width;
        int size = draw_example(config, seed, first + (uint64_t)b, row, &targets[b]);
        for (int i = 0; i < width; i++) mask_row[i] = i < size ? 1.0f : 0.0f;
        if (sizes) sizes[b] = size;
    }
}
