/* maxreg.h — the max-regression toy of the Set Transformer paper (Lee et al. 2019):
 * a set of 1 to 10 reals drawn uniformly from [0, 100); the target is its maximum.
 *
 * Example index of a data set with seed s is a pure function of (config, s, index):
 * it draws from its own stream (the index-th split of the data set's stream, as in
 * data/sequence.c). The first draw is the set size, uniform in [min_size, max_size],
 * then one uniform value per element. So batches can be generated on the fly for
 * any training step, and train and test sets built from different seeds are
 * disjoint streams. A larger max_size at test time (length generalization) keeps
 * the stream layout; only the size distribution changes.
 *
 * A batch is padded to max_size: x [B, max_size, 1] (0 at padding), mask
 * [B, max_size] (1 = real element, 0 = padding: the attention mask convention),
 * targets [B] = the maximum over the real elements, and optionally sizes [B].
 *
 * Invalid configs and arguments are programmer errors (qkv_fatal naming the field).
 */
#ifndef QKV_DATA_MAXREG_H
#define QKV_DATA_MAXREG_H

#include <stdint.h>

typedef struct qkv_maxreg_config {
    int min_size, max_size; /* 1 <= min_size <= max_size */
    float lo, hi;           /* values uniform in [lo, hi), lo < hi, both finite */
} qkv_maxreg_config;

/* The paper's setting: sizes 1..10, values in [0, 100). */
qkv_maxreg_config qkv_maxreg_config_default(void);

/* Example index: writes its values into x [max_size] (0 after the set), its maximum
 * into *target, and returns its size. */
int qkv_maxreg_example(const qkv_maxreg_config *config, uint64_t seed, uint64_t index, float *x,
                       float *target);

/* Examples first .. first+n-1: x [n, max_size, 1], mask [n, max_size], targets [n];
 * sizes [n] may be NULL. */
void qkv_maxreg_batch(const qkv_maxreg_config *config, uint64_t seed, uint64_t first, int n,
                      float *x, float *mask, float *targets, int32_t *sizes);

#endif
