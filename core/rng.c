/* rng.c — SplitMix64 as a counter-based generator. See rng.h. */
#include "core/rng.h"

#include "core/mathfn.h"
#include <math.h>

#define GOLDEN_GAMMA 0x9e3779b97f4a7c15ULL

uint64_t qkv_rng_at(uint64_t seed, uint64_t n) {
    uint64_t z = seed + (n + 1) * GOLDEN_GAMMA;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

qkv_rng qkv_rng_make(uint64_t seed) {
    /* Mix the user's seed so that seeds 0, 1, 2 give unrelated streams. */
    qkv_rng rng = { qkv_rng_at(seed, 0x5eedULL), 0 };
    return rng;
}

qkv_rng qkv_rng_split(qkv_rng *rng) {
    qkv_rng child = { qkv_rng_u64(rng), 0 };
    return child;
}

qkv_rng qkv_rng_split_at(qkv_rng parent, uint64_t index) {
    parent.counter = index;
    return qkv_rng_split(&parent);
}

uint64_t qkv_rng_u64(qkv_rng *rng) { return qkv_rng_at(rng->seed, rng->counter++); }

uint64_t qkv_rng_reserve(qkv_rng *rng, uint64_t count) {
    uint64_t first = rng->counter;
    rng->counter += count;
    return first;
}

float qkv_rng_uniform(qkv_rng *rng) { return qkv_u64_to_unit(qkv_rng_u64(rng)); }

/* Box-Muller from two uniforms; u1 is kept away from 0 so log stays finite. */
float qkv_rng_normal(qkv_rng *rng) {
    uint64_t bits = qkv_rng_u64(rng);
    double u1 = ((double)(bits >> 11) + 1.0) * (1.0 / 9007199254740993.0);
    double u2 = (double)(qkv_rng_u64(rng) >> 11) * (1.0 / 9007199254740992.0);
    return (float)(sqrt(-2.0 * qkv_math_log(u1)) * qkv_math_cos(6.283185307179586 * u2));
}

/* Lemire's multiply-shift; the bias for n < 2^32 is below 2^-32, ignored. */
uint32_t qkv_rng_below(qkv_rng *rng, uint32_t n) {
    return (uint32_t)(((qkv_rng_u64(rng) >> 32) * (uint64_t)n) >> 32);
}

void qkv_fill_normal(float *x, size_t n, qkv_rng *rng, float mean, float std) {
    for (size_t i = 0; i < n; i++) x[i] = mean + std * qkv_rng_normal(rng);
}

void qkv_fill_uniform(float *x, size_t n, qkv_rng *rng, float lo, float hi) {
    for (size_t i = 0; i < n; i++) x[i] = lo + (hi - lo) * qkv_rng_uniform(rng);
}
