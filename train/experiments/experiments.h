/* experiments.h — the seeds' claims about attention made measurable: runs of
 * models with a verdict, as a C API. `qkv experiment permutation` and
 * `qkv experiment lengthgen` (cli/cmd_experiment.c) are these calls behind
 * a flag table.
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
 *
 * Options: each experiment's options struct is one field table (train/fields.h),
 * qkv_perm_fields and qkv_lengthgen_fields: the command's flags, their --help,
 * the defaults and the config at the head of the --json record come from it.
 *
 * Errors: the _check functions and the _run functions return -1 with a one-line
 * qkv_last_error() naming the option by its flag ("--heads 3: ..."), so the
 * command prints it as it is. Both runs print their tables to stdout and leave
 * the thread count to the caller (qkv_set_threads).
 */
#ifndef QKV_EXPERIMENTS_H
#define QKV_EXPERIMENTS_H

#include <stddef.h>

#include "train/fields.h"

/* ---- permutation ----------------------------------------------------------------- */

#define QKV_PERM_HOLDS 1e-4
#define QKV_PERM_BROKEN 1e-2
#define QKV_PERM_MAX_ROWS 16

typedef struct qkv_perm_options {
    int seeds, perms;       /* models per configuration, permutations per model */
    int tokens, dim, heads; /* set size N (= T), width, heads (divides dim, even head width) */
    unsigned long long seed;
    const char *json, *csv; /* qkv_perm_run's outputs, NULL: none */
    int threads;            /* the command's --threads; the run leaves threads to its caller */
} qkv_perm_options;

extern const qkv_field qkv_perm_fields[];
extern const int qkv_perm_n_fields;

/* What the theory says of one measure. */
typedef enum { QKV_EXPECT_NA, QKV_EXPECT_HOLDS, QKV_EXPECT_BROKEN } qkv_perm_expect;

typedef struct qkv_perm_row {
    const char *config;          /* "encoder, no positions" */
    const char *theory;          /* "equivariant", "invariant" or "neither" */
    qkv_perm_expect expect_equivariance, expect_invariance;
    double equivariance, invariance;  /* worst relative error; < 0 when not applicable */
    int agrees;                  /* no measure on the wrong side of the thresholds */
    int inconclusive;            /* agrees, but a measure fell between them ("unclear") */
} qkv_perm_row;

/* The table's defaults: 3 seeds x 5 permutations, 8 tokens, dim 16, 4 heads,
 * seed 1, no outputs. */
void qkv_perm_default_options(qkv_perm_options *options);
/* 0, or -1 with qkv_last_error(): seeds, perms < 1, tokens < 2, heads not
 * dividing dim into even head widths (or above 64), an unwritable or repeated
 * output path. */
int qkv_perm_check(const qkv_perm_options *options);
/* Runs every configuration; fills rows (QKV_PERM_MAX_ROWS of room) and returns
 * how many, or -1 with qkv_last_error() when a signal reached the measurement
 * (core/cancel.h: a cut op's output is meaningless; the rows are dropped).
 * Options that fail qkv_perm_check stop through qkv_fatal. */
int qkv_permutation_experiment(const qkv_perm_options *options, qkv_perm_row *rows);
/* The whole experiment: checks the options, runs it, prints the table and the
 * verdict, writes --json and --csv. 0 and *all_agree (whether no measurement
 * disagrees with the theory: an inconclusive one, between the thresholds, is not
 * a disagreement), or -1 with qkv_last_error(). */
int qkv_perm_run(const qkv_perm_options *options, int *all_agree);
/* "holds", "broken", "unclear" for a measured error, "n/a" for err < 0. */
const char *qkv_perm_measured(double err);

/* ---- lengthgen ------------------------------------------------------------------- */

/* What the plot shows: greedy exact match or token accuracy against length. */
typedef enum { QKV_LENGTHGEN_EXACT, QKV_LENGTHGEN_TOKEN } qkv_lengthgen_metric;
extern const char *const qkv_lengthgen_metric_names[];  /* "exact", "token": enum order, NULL-terminated */

#define QKV_LENGTHGEN_MAX_SCHEMES 12  /* each scheme (kind, or kind-rand) at most once */
#define QKV_LENGTHGEN_MAX_TASKS 3     /* each of reverse, copy, sort at most once */

typedef struct qkv_lengthgen_options {
    int task;                     /* qkv_seq_task (data/sequence.h), when tasks is NULL */
    const char *tasks;            /* comma-separated tasks "copy,reverse", or NULL: task */
    int randomize;                /* M of the "-rand" schemes; 0: 2 (2K+1), twice the longest test stream */
    int train_max, test_max;      /* train on lengths 1..L, test at 1..K, K >= L */
    int seeds, seed;              /* models per scheme, seeded seed, seed + 1, ... */
    int steps, batch, warmup;     /* per model; warmup steps of the cosine schedule */
    float lr;                     /* AdamW */
    float weight_decay, clip;     /* AdamW's decay (not on biases, norms, tables); global-norm clip, 0: off */
    int schedule;                 /* qkv_schedule_kind (optim/optimizer.h); step: x0.1 every steps/3 */
    int dim, heads, layers, ff, vocab;
    int test_size;                /* test sequences per length */
    const char *schemes;          /* comma-separated position schemes: "none,rope", and
                                   * "learned-rand", "sinusoidal-rand", "rope-rand": the same
                                   * with randomized positions from [0, randomize) */
    int quiet;                    /* print only the tables */
    int jobs;                     /* models trained at once, one thread each; <= 1: one at a time */
    const char *csv, *json, *plot;  /* outputs, NULL: none */
    const char *distance_plot;    /* PNG of the attention-distance histograms, NULL: none */
    int plot_metric;              /* qkv_lengthgen_metric */
    int threads;                  /* the command's --threads (default 1); the run leaves threads to its caller */
    const char *preset;           /* the preset the command applied first (qkv_lengthgen_preset), or NULL */
    int resume;                   /* continue the experiment whose finished models json holds */
    const char *command;          /* provenance: the command line (NULL: "(C API)") */
    const char *date;             /* provenance: when the experiment started (NULL: now, UTC ISO 8601) */
} qkv_lengthgen_options;

extern const qkv_field qkv_lengthgen_fields[];
extern const int qkv_lengthgen_n_fields;

/* reverse, lengths 1..8 tested to 16, 1 seed (1), 2000 steps of batch 64, AdamW
 * lr 3e-3 after 100 warmup steps, 2 layers x 4 heads, dim 64, ff 256, vocab 10,
 * 200 test sequences per length, all five schemes, plot "lengthgen.png" of the
 * exact match, one model at a time (jobs 1): the table's defaults. */
void qkv_lengthgen_default_options(qkv_lengthgen_options *options);
/* Sets the options of a named preset (the other fields stay): "kazemnejad", the
 * setup of Kazemnejad et al. 2023 at qkv's scale (docs/lengthgen.md): copy and
 * reverse, lengths 1..20 tested to 40, none, t5, alibi, rope, sinusoidal,
 * learned and the three randomized variants, 3 seeds, with the steps, size and
 * lr of the sweep recorded there. 0, or -1 with qkv_last_error() naming --preset. */
int qkv_lengthgen_preset(qkv_lengthgen_options *options, const char *name);
extern const char *const qkv_lengthgen_preset_names[];   /* NULL-terminated */

/* The mean reciprocal rank of Kazemnejad et al.: per task the schemes are ranked
 * by exact match averaged over the extrapolation lengths (1 = best, ties share
 * the mean of their ranks); a scheme's MRR is the mean over tasks of 1/rank.
 * score [task * n_schemes + scheme] -> mrr [scheme]. */
void qkv_lengthgen_mrr(const double *score, int n_tasks, int n_schemes, double *mrr);

/* A scheme fits a task when its exact match averaged over the trained lengths
 * 1..L (mean over seeds) reaches this: the bar; below it an extrapolation
 * score measures under-training, not the scheme. */
#define QKV_LENGTHGEN_FIT 0.99
/* The MRR among the schemes that fit: on each task only the schemes whose
 * trained[task * n_schemes + scheme] >= QKV_LENGTHGEN_FIT are ranked (among
 * themselves); a scheme that does not fit every task gets no MRR: mrr[s] = NAN
 * (it is left out, never ranked last). */
void qkv_lengthgen_mrr_fitted(const double *score, const double *trained, int n_tasks, int n_schemes, double *mrr);

/* 0, or -1 with qkv_last_error(): an unknown or repeated scheme in schemes,
 * test_max < train_max, a model config qkv_seq_model_check refuses, an
 * unwritable or repeated output path. */
int qkv_lengthgen_check(const qkv_lengthgen_options *options);
/* Checks the options, trains every (task, scheme, seed) model, prints its line
 * (unless quiet), then per task the two tables by length and the summary (exact
 * match over the extrapolation lengths L+1..K with a 95% t-interval over seeds,
 * and over the trained lengths), the attention distances, then the MRR among the
 * schemes that fit next to the paper's, and writes csv, json, plot and
 * distance_plot. csv and json are rewritten (atomically) after every finished
 * model (with jobs > 1 or MPI ranks: after every round of models trained at
 * once), so they always hold every finished model; options->resume reads json
 * back and trains only the models it lacks (the same final bytes as one run).
 * A model whose test or distance measurement a signal reached is not finished:
 * its record is dropped whole (core/cancel.h), so a record never holds a cut
 * result and --resume tests it again.
 * Under mpirun (train/dist.h) the models are spread over the ranks and rank 0
 * writes. Returns 0; -1 with qkv_last_error() (a training run's error included);
 * or, stopped by a signal (train/interrupt.h; the caller installs the handler),
 * that signal's number, after writing the finished models, with
 * qkv_last_error() saying how to resume. */
int qkv_lengthgen_run(const qkv_lengthgen_options *options);

/* ---- shared ---------------------------------------------------------------------- */

/* Checks that the n output paths (NULLs skipped) are writable and distinct (0, or
 * -1 with qkv_last_error() naming the path). */
int qkv_exp_check_outputs(const char *const *paths, int n);

#endif
