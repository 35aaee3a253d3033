/* experiments.h — `qkv experiment permutation` and `qkv experiment lengthgen`:
 * the seeds' claims about attention made measurable, one command each.
 *
 * permutation (permutation.c): random, untrained models of every kind in the
 * library are fed a random input X and a permuted copy PX (row i of PX is row
 * pi(i) of X). Per configuration, over seeds x permutations, the worst
 *     equivariance error  max|f(PX) - P f(X)| / max|f(X)|
 *     invariance error    max|g(PX) - g(X)|   / max|g(X)|
 * where g is the model's own pooled output (PMA, DeepSets, cross-attention with
 * the context permuted) or, for models with one output row per input row, the
 * mean of f over the rows. The verdict compares each measure with the theory:
 * a symmetry that should hold must measure below QKV_PERM_HOLDS (float32
 * rounding), one that should break must measure above QKV_PERM_BROKEN.
 *
 * lengthgen (lengthgen.c): trains one decoder-only model per position scheme
 * and seed on lengths 1..L and measures greedy exact-match and token accuracy at
 * every length 1..K (docs/lengthgen.md).
 */
#ifndef QKV_EXPERIMENTS_H
#define QKV_EXPERIMENTS_H

#include <stddef.h>

#define QKV_PERM_HOLDS 1e-4
#define QKV_PERM_BROKEN 1e-2
#define QKV_PERM_MAX_ROWS 16

typedef struct qkv_perm_options {
    int seeds, perms;       /* models per configuration, permutations per model */
    int tokens, dim, heads; /* set size N (= T), width, heads (divides dim, even head width) */
    unsigned long long seed;
} qkv_perm_options;

/* What the theory says of one measure. */
typedef enum { QKV_EXPECT_NA, QKV_EXPECT_HOLDS, QKV_EXPECT_BROKEN } qkv_perm_expect;

typedef struct qkv_perm_row {
    const char *config;          /* "encoder, no positions" */
    const char *theory;          /* "equivariant", "invariant" or "neither" */
    qkv_perm_expect expect_equivariance, expect_invariance;
    double equivariance, invariance;  /* worst relative error; < 0 when not applicable */
    int agrees;                  /* both measures on the theory's side of the thresholds */
} qkv_perm_row;

void qkv_perm_default_options(qkv_perm_options *options);
/* Runs every configuration; fills rows (QKV_PERM_MAX_ROWS of room) and returns
 * how many. Bad options (tokens < 2, heads not dividing dim, ...) stop through
 * qkv_fatal: the command checks them first. */
int qkv_permutation_experiment(const qkv_perm_options *options, qkv_perm_row *rows);
/* "holds", "broken", "unclear" for a measured error, "n/a" for err < 0. */
const char *qkv_perm_measured(double err);

/* Subcommands (dispatch in common.c through qkv_cmd_experiment). */
int qkv_cmd_experiment_permutation(int argc, char **argv);
int qkv_cmd_experiment_lengthgen(int argc, char **argv);

/* Shared by the experiments: checks that the n output paths (NULLs skipped) are
 * writable and distinct (0, or -1 with qkv_last_error() naming the path). */
int qkv_exp_check_outputs(const char *const *paths, int n);

#endif
