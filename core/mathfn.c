/* mathfn.c — qkv's own exp, exp2, log, sin, cos and erf (mathfn.h). The constants are
 * the doubles nearest the values named (1/n! exactly rounded), and the split
 * constants have trailing zero bits so that k times the first part is exact. */
#include "core/mathfn.h"

#include <math.h>

#define LN2_HI 0.69314718055989033        /* ln 2 to 42 bits: k * LN2_HI exact for |k| < 2^11 */
#define LN2_LO 5.4979230187083712e-14     /* ln 2 - LN2_HI */
#define INV_LN2 1.4426950408889634
#define PIO2_1 1.5707963267341256         /* pi/2 to 33 bits */
#define PIO2_2 6.0771005063039660e-11     /* the next 33 bits */
#define PIO2_3 2.0222662487959506e-21     /* the rest */
#define INV_PIO2 0.63661977236758138
#define TWO_OVER_SQRT_PI 1.1283791670955126

/* 1/n!, n = 0 .. 21. */
static const double inv_fact[] = {
    1.0, 1.0, 0.5, 0.16666666666666666, 0.041666666666666664, 0.0083333333333333332,
    0.0013888888888888889, 0.00019841269841269841, 2.4801587301587302e-05, 2.7557319223985893e-06,
    2.7557319223985888e-07, 2.5052108385441720e-08, 2.0876756987868100e-09, 1.6059043836821613e-10,
    1.1470745597729725e-11, 7.6471637318198164e-13, 4.7794773323873853e-14, 2.8114572543455206e-15,
    1.5619206968586225e-16, 8.2206352466243295e-18, 4.1103176233121648e-19, 1.9572941063391263e-20,
};

/* exp(x) = 2^k e^r, x = k ln 2 + r, |r| <= ln2 / 2: e^r by Taylor to r^13
 * (truncation below 5e-18 relative), summed as 1 + (r + r^2 q) so the one
 * large term is exact. */
static double exp_reduced(double r, double k) {
    double q = inv_fact[13];
    for (int n = 12; n >= 2; n--) q = q * r + inv_fact[n];
    return ldexp(1.0 + (r + r * r * q), (int)k);
}

double qkv_math_exp(double x) {
    if (x != x) return x;
    if (x > 709.8) return INFINITY;
    if (x < -745.2) return 0.0;
    double k = floor(x * INV_LN2 + 0.5);
    return exp_reduced((x - k * LN2_HI) - k * LN2_LO, k);
}

/* 2^y = 2^k e^(f ln 2), y = k + f, |f| <= 1/2 (f exact): 2^k exactly for integer y. */
double qkv_math_exp2(double y) {
    if (y != y) return y;
    if (y > 1024.0) return INFINITY;
    if (y < -1076.0) return 0.0;
    double k = floor(y + 0.5), f = y - k;
    return exp_reduced(f * LN2_HI + f * LN2_LO, k);
}

/* log(x) = k ln 2 + log(1 + f), x = 2^k (1 + f), sqrt(1/2) <= 1 + f < sqrt(2).
 * With s = f / (2 + f): log(1 + f) = 2 atanh(s) = f - (f^2/2 - s (f^2/2 + R)),
 * R = 2 s^2/3 + 2 s^4/5 + ... to s^20 (s^2 < 0.03: truncation below 1e-18),
 * so f, exact, is the leading term. */
double qkv_math_log(double x) {
    if (x != x || x == INFINITY) return x;
    if (x == 0.0) return -INFINITY;
    if (x < 0.0) return NAN;
    int e;
    double m = frexp(x, &e); /* x = m 2^e, m in [1/2, 1) */
    if (m < 0.70710678118654752) {
        m *= 2.0;
        e -= 1;
    }
    double f = m - 1.0, k = e;
    double s = f / (2.0 + f), z = s * s, hfsq = 0.5 * f * f;
    double R = 2.0 / 21.0;
    for (int n = 9; n >= 1; n--) R = R * z + 2.0 / (2 * n + 1);
    R *= z;
    return k * LN2_HI + (f - (hfsq - (s * (hfsq + R) + k * LN2_LO)));
}

/* sin r and cos r for |r| <= pi/4 (plus a little): Taylor to r^21 and r^20. */
static double sin_kernel(double r) {
    double z = r * r, p = inv_fact[21];
    for (int n = 19; n >= 3; n -= 2) p = p * z + ((n / 2) % 2 ? -inv_fact[n] : inv_fact[n]);
    return r + r * z * p;
}

/* cos r = 1 - r^2/2 + r^4 q: w = 1 - r^2/2 rounded, and what that rounding lost
 * ((1 - w) - r^2/2, exact) added back with the small terms. */
static double cos_kernel(double r) {
    double z = r * r, q = inv_fact[20];
    for (int n = 18; n >= 4; n -= 2) q = q * z + ((n / 2) % 2 ? -inv_fact[n] : inv_fact[n]);
    double hz = 0.5 * z, w = 1.0 - hz;
    return w + (((1.0 - w) - hz) + z * z * q);
}

/* x = k pi/2 + r: k * PIO2_1 and k * PIO2_2 are exact for |k| < 2^20. */
static double reduce(double x, long *quadrant) {
    double k = floor(x * INV_PIO2 + 0.5);
    *quadrant = (long)fmod(k, 4.0);
    if (*quadrant < 0) *quadrant += 4;
    return ((x - k * PIO2_1) - k * PIO2_2) - k * PIO2_3;
}

double qkv_math_sin(double x) {
    if (!isfinite(x)) return x - x;
    if (x == 0.0) return x; /* sin(-0) = -0 */
    long n;
    double r = reduce(x, &n);
    switch (n) {
    case 0: return sin_kernel(r);
    case 1: return cos_kernel(r);
    case 2: return -sin_kernel(r);
    default: return -cos_kernel(r);
    }
}

double qkv_math_cos(double x) {
    if (!isfinite(x)) return x - x;
    long n;
    double r = reduce(x, &n);
    switch (n) {
    case 0: return cos_kernel(r);
    case 1: return -sin_kernel(r);
    case 2: return -cos_kernel(r);
    default: return sin_kernel(r);
    }
}

float qkv_math_expf(float x) { return (float)qkv_math_exp(x); }
float qkv_math_logf(float x) { return (float)qkv_math_log(x); }
float qkv_math_sinf(float x) { return (float)qkv_math_sin(x); }
float qkv_math_cosf(float x) { return (float)qkv_math_cos(x); }

/* erf(6) is 1 - 2e-17, 1 in double; below 2^-28, 2x/sqrt(pi) is erf(x) in double. */
float qkv_math_erff(float xf) {
    double x = xf, ax = fabs(x);
    if (x != x) return xf;
    if (ax >= 6.0) return x > 0 ? 1.0f : -1.0f;
    double x2 = x * x, term = 1.0, sum = 1.0;
    for (int n = 1; term > sum * 1e-17; n++) {
        term *= 2.0 * x2 / (2 * n + 1);
        sum += term;
    }
    return (float)(TWO_OVER_SQRT_PI * x * qkv_math_exp(-x2) * sum);
}
