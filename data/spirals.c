/* spirals.c — see spirals.h. */
#include "data/spirals.h"

#include <math.h>

#include "core/mathfn.h"
#include "core/rng.h"

/* stop's answer when row `done` (> 0) starts a new piece, else 0. */
static int stop_at(long done, qkv_data_stop stop) {
    return stop && done > 0 && done % QKV_SPIRALS_PIECE_ROWS == 0 ? stop() : 0;
}

int qkv_spirals_make_pieces(int n_per_class, int n_classes, float noise, uint64_t seed, float *x, int32_t *y,
                            qkv_data_stop stop) {
    qkv_rng rng = qkv_rng_make(seed);
    int n = n_per_class * n_classes, stopped;
    for (int c = 0; c < n_classes; c++) {
        for (int i = 0; i < n_per_class; i++) {
            int row = c * n_per_class + i;
            if ((stopped = stop_at(row, stop))) return stopped;
            float t = (float)(i + 1) / (float)n_per_class;
            float theta = 4.0f * t + 6.2831853f * (float)c / (float)n_classes + noise * qkv_rng_normal(&rng);
            x[2 * row] = t * qkv_math_cosf(theta);
            x[2 * row + 1] = t * qkv_math_sinf(theta);
            y[row] = c;
        }
    }
    /* Fisher-Yates shuffle of the rows. */
    for (int i = n - 1; i > 0; i--) {
        if ((stopped = stop_at(n - 1 - i + n, stop))) return stopped;
        int j = (int)qkv_rng_below(&rng, (uint32_t)(i + 1));
        float x0 = x[2 * i], x1 = x[2 * i + 1];
        int32_t yi = y[i];
        x[2 * i] = x[2 * j]; x[2 * i + 1] = x[2 * j + 1]; y[i] = y[j];
        x[2 * j] = x0; x[2 * j + 1] = x1; y[j] = yi;
    }
    return 0;
}

void qkv_spirals_make(int n_per_class, int n_classes, float noise, uint64_t seed, float *x,
                      int32_t *y) {
    qkv_spirals_make_pieces(n_per_class, n_classes, noise, seed, x, y, NULL);
}
