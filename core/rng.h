/* rng.h — one seeded, counter-based random number generator.
 *
 * The n-th number of a stream is a pure function of (seed, n): a SplitMix64
 * finalizer applied to seed + n * golden-ratio increment. So the same seed gives
 * the same numbers on every machine, and a parallel loop can draw element i's
 * number as qkv_rng_at(seed, base + i) without sharing state between threads.
 */
#ifndef QKV_RNG_H
#define QKV_RNG_H

#include <stddef.h>
#include <stdint.h>

typedef struct qkv_rng {
    uint64_t seed;
    uint64_t counter;
} qkv_rng;

qkv_rng qkv_rng_make(uint64_t seed);
/* A new independent stream derived from this one (for a sub-task). */
qkv_rng qkv_rng_split(qkv_rng *rng);
/* The index-th stream split off parent, whatever parent's counter: data sets give
 * example i its own stream, qkv_rng_split_at(qkv_rng_make(seed), i), so that an
 * example never depends on which batch it lands in. */
qkv_rng qkv_rng_split_at(qkv_rng parent, uint64_t index);

uint64_t qkv_rng_at(uint64_t seed, uint64_t n);           /* the stateless core */
uint64_t qkv_rng_u64(qkv_rng *rng);
float qkv_rng_uniform(qkv_rng *rng);                       /* [0, 1) */
float qkv_rng_normal(qkv_rng *rng);                        /* mean 0, std 1 */
uint32_t qkv_rng_below(qkv_rng *rng, uint32_t n);          /* uniform in [0, n) */

/* Reserves count consecutive counter values and returns the first, for
 * parallel loops that use qkv_rng_at(rng->seed, first + i). */
uint64_t qkv_rng_reserve(qkv_rng *rng, uint64_t count);

/* Convert one 64-bit draw to a float in [0, 1) (24 random bits). */
static inline float qkv_u64_to_unit(uint64_t bits) {
    return (float)(bits >> 40) * (1.0f / 16777216.0f);
}

/* Fill n floats: normal(mean, std) or uniform [lo, hi). Deterministic in the seed. */
void qkv_fill_normal(float *x, size_t n, qkv_rng *rng, float mean, float std);
void qkv_fill_uniform(float *x, size_t n, qkv_rng *rng, float lo, float hi);

#endif
