/* spirals.h — the interleaved-spirals classification set (the demo's data).
 *
 * Class c of n_classes has n_per_class points along the arm
 *     r = t,  theta = 4 t + 2 pi c / n_classes + noise,   t uniform in (0, 1],
 * i.e. (r cos theta, r sin theta). Deterministic in the seed.
 */
#ifndef QKV_SPIRALS_H
#define QKV_SPIRALS_H

#include <stdint.h>

#include "data/pieces.h"

/* A piece of a set (data/pieces.h): this many rows drawn, or shuffled. */
#define QKV_SPIRALS_PIECE_ROWS (1 << 18)

/* x gets n_per_class * n_classes rows of 2 floats; y the class of each row.
 * Rows are shuffled. */
void qkv_spirals_make(int n_per_class, int n_classes, float noise, uint64_t seed, float *x,
                      int32_t *y);
/* The same, with stop asked between two pieces of QKV_SPIRALS_PIECE_ROWS rows
 * (one stream runs through the set: the pieces are of its loops, and the bits
 * are qkv_spirals_make's): 0, or stop's nonzero answer. */
int qkv_spirals_make_pieces(int n_per_class, int n_classes, float noise, uint64_t seed, float *x, int32_t *y,
                            qkv_data_stop stop);

#endif
