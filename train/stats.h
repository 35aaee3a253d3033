/* stats.h — the summary of a result repeated over seeds: the mean of n values
 * and the half-width of its 95% Student t-interval,
 *   mean = (1/n) sum x_i,   half = t_{0.975, n-1} s / sqrt(n),
 *   s^2 = sum (x_i - mean)^2 / (n - 1)   (the sample variance),
 * so the interval is [mean - half, mean + half]; half is NAN for n = 1 (one run
 * says nothing of its spread). The lengthgen lab's seed tables
 * (train/experiments/) and `qkv train maxreg --compare` (train/tasks/) report it.
 */
#ifndef QKV_TRAIN_STATS_H
#define QKV_TRAIN_STATS_H

/* Student's t quantile t_{0.975, df}, the two-sided 95% factor: the table's value
 * for df <= 30, the normal's 1.96 above; NAN for df < 1. */
double qkv_t975(int df);

/* The mean of x[0..n) (n >= 1) and its 95% t-interval's half-width (NAN for n = 1). */
void qkv_mean_t95(const double *x, int n, double *mean, double *half);

#endif
