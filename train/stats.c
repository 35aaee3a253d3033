/* stats.c — means over seeds and their 95% t-intervals. See stats.h. */
#include "train/stats.h"

#include <math.h>

#include "core/error.h"

double qkv_t975(int df) {
    static const double t[] = {0, 12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
                               2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
                               2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042};
    return df < 1 ? NAN : df <= 30 ? t[df] : 1.96;
}

void qkv_mean_t95(const double *x, int n, double *mean, double *half) {
    QKV_CHECK(n >= 1, "mean_t95: n = %d values, need at least 1", n);
    double s = 0, ss = 0;
    for (int i = 0; i < n; i++) s += x[i];
    *mean = s / n;
    for (int i = 0; i < n; i++) {
        double d = x[i] - *mean;
        ss += d * d;
    }
    *half = n > 1 ? qkv_t975(n - 1) * sqrt(ss / (n - 1)) / sqrt((double)n) : NAN;
}
