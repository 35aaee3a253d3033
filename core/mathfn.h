/* mathfn.h — qkv's own elementary functions, so that a result does not depend on
 * the C library (glibc natively, musl in the WebAssembly build: their sin, log or
 * erf differ in the last bits, and a last bit moves a checkpoint). pow stays
 * libm's: both compute it correctly rounded in practice, and an own one as good
 * needs double-double arithmetic.
 *
 * Each is plain double arithmetic (no fused multiply-add, no table, nothing the
 * platform decides), within about 1 ulp of the exact value in double: range
 * reduction with constants split so the products are exact, then a Taylor
 * polynomial long enough that its truncation is below 0.05 ulp. The float forms
 * compute in double and round once, so they are the correctly rounded float in
 * all but the rare cases where the exact value lies within a double ulp or two
 * of a midpoint between floats (tests/test_mathfn.c sweeps each against libm and
 * counts the floats that differ). sqrt, fabs, floor, frexp and ldexp are exact
 * in every C library and stay libm's.
 *
 * Special values follow C: NaN in, NaN out; log(0) = -inf, log(x < 0) = NaN;
 * exp(+-inf) = inf, 0; sin and cos of +-inf are NaN. sin and cos reduce the
 * argument by pi/2 in three parts: accurate for |x| < 2^19 pi/2 (about 8e5;
 * qkv's angles are positions times frequencies at most 1, and 2 pi u), less so
 * beyond.
 */
#ifndef QKV_MATHFN_H
#define QKV_MATHFN_H

double qkv_math_exp(double x);
double qkv_math_exp2(double x);
double qkv_math_log(double x);
double qkv_math_sin(double x);
double qkv_math_cos(double x);

float qkv_math_expf(float x);
float qkv_math_logf(float x);
float qkv_math_sinf(float x);
float qkv_math_cosf(float x);
/* erf of a float: 2/sqrt(pi) x exp(-x^2) sum_n (2x^2)^n / (1 3 5 ... (2n+1)), a
 * series of positive terms (no cancellation; x^2 is exact in double). */
float qkv_math_erff(float x);

#endif
