/* fastmath.h — exp and tanh as straight-line float code the compiler vectorizes.
 *
 * Plain multiplies and adds, no fused multiply-add: qkv is built with
 * -ffp-contract=off, so each line below is the same float operations whatever
 * vector width a loop around it is compiled for (core/kernels/simd.h), and a run gives the
 * same bits on every instruction-set path.
 *
 * libm's expf and tanhf are calls the vectorizer cannot inline; in a transformer
 * step the GELU's tanh alone took half the time. These are accurate to a few ulp
 * (tested in tests/test_elementwise.c against libm in double) and give the same
 * result whether an element lands in a vector body or a scalar tail, so results
 * stay independent of how loops are split across threads.
 */
#ifndef QKV_FASTMATH_H
#define QKV_FASTMATH_H

#include <math.h>
#include <stdint.h>
#include <string.h>

/* exp(x) for x <= 0 or -inf, within 1e-7 relative of expf where the result is a
 * normal float, exactly 1 at 0 and exactly 0 at -inf; NaN for NaN and +inf, and
 * no undefined behavior for any x. Cephes' polynomial for
 * exp(r) on [-ln2/2, ln2/2] after the range reduction x = n ln2 + r. */
static inline float qkv_fast_exp_nonpositive(float x) {
    const float magic = 12582912.0f;                        /* 1.5 * 2^23: x + magic - magic rounds x */
    float xc = x < -110.0f ? -110.0f : x;                   /* exp(-110) rounds to 0 anyway */
    float n = xc * 1.44269504088896341f + magic - magic;  /* round(x / ln 2), in [-159, 0] */
    float r = xc - n * 0.693359375f;                      /* r = x - n ln 2 (ln 2 in two parts) */
    r = r + n * 2.12194440e-4f;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * r * r + r + 1.0f;
    /* n in [-159, 0] before the integer conversion, whatever x was: NaN (p is NaN,
     * and so is the result) and x > 0 outside the contract (+Inf gives r, p and the
     * result NaN) must not reach a float-to-int conversion out of range or a shift
     * of a negative value, both undefined. Two selects, not one nested: GCC 12
     * does not vectorize the nested form (the loops around this were scalar). */
    float n_safe = n == n ? n : 0.0f;
    n_safe = n_safe > 0.0f ? 0.0f : n_safe;
    uint32_t bits = (uint32_t)((int32_t)n_safe + 126 + 127) << 23; /* 2^(n + 126): a normal float */
    float two_pow;
    memcpy(&two_pow, &bits, sizeof two_pow);
    return (p * two_pow) * 1.17549435e-38f;                 /* * 2^-126, one rounding (to 0 if tiny) */
}

/* tanh(x) within 3e-7 relative for every float x: the odd rational minimax
 * approximation p(x)/q(x) of degrees 13/6 used by Eigen, on x clamped to
 * +-7.905 (where tanh rounds to +-1), and x itself below 4e-4. NaN stays NaN. */
static inline float qkv_fast_tanhf(float x) {
    const float limit = 7.90531110763549805f;
    float xc = x > limit ? limit : (x < -limit ? -limit : x);
    float x2 = xc * xc;
    float p = -2.76076847742355e-16f;
    p = p * x2 + 2.00018790482477e-13f;
    p = p * x2 - 8.60467152213735e-11f;
    p = p * x2 + 5.12229709037114e-08f;
    p = p * x2 + 1.48572235717979e-05f;
    p = p * x2 + 6.37261928875436e-04f;
    p = p * x2 + 4.89352455891786e-03f;
    float q = 1.19825839466702e-06f;
    q = q * x2 + 1.18534705686654e-04f;
    q = q * x2 + 2.26843463243900e-03f;
    q = q * x2 + 4.89352518554385e-03f;
    float r = (p * xc) / q;
    return fabsf(x) < 4e-4f ? x : r;
}

#endif
