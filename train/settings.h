/* settings.h — the settings several configs share, each written once: its flag,
 * its key in a description, its widest range, its choices and its help. The
 * tasks' field tables, the trainer's, the experiments' and the command line's
 * (cli/) embed them as rows (train/fields.h) instead of writing them again.
 *
 * A setting is an argument list (flag, key, lo, hi, choices, help); a row of it
 * is QKV_SETTING_FIELD(kind, setting, T, member, default): the kind is the
 * member's C type (an int or a long holds the same integer setting). Where a
 * consumer accepts less than the widest range, its row narrows it
 * (QKV_SETTING_FIELD_IN: ALiBi's slopes exist for at most 64 heads, so lengthgen
 * and permutation take --heads 1..64); a row never widens it, and
 * tests/test_config_checks.c fails for a row with a shared flag whose key, help
 * or range is not its setting's, and for a shared flag written anywhere else.
 *
 * The blocks at the end are the runs of rows that several tables hold in the
 * same order (the shape of a transformer stack).
 */
#ifndef QKV_SETTINGS_H
#define QKV_SETTINGS_H

#include "core/kernels/parallel.h"   /* QKV_THREADS_HELP */
#include "optim/optimizer.h"         /* qkv_schedule_kind_names */
#include "train/fields.h"

/* ---- the settings: flag, key, lo, hi, choices, help --------------------------------- */

/* model shape */
#define QKV_SETTING_LAYERS "--layers", "layers", 1, 64, NULL, "layers"
#define QKV_SETTING_HEADS "--heads", "heads", 1, 1024, NULL, "attention heads"
#define QKV_SETTING_DIM "--dim", "dim", 1, 8192, NULL, "model width"
#define QKV_SETTING_WIDTH "--width", "width", 1, 8192, NULL, "model width"
#define QKV_SETTING_FF "--ff", "ff", 1, 65536, NULL, "feed-forward width"
#define QKV_SETTING_DROPOUT "--dropout", "dropout", 0, 0.99, NULL, "residual dropout"
/* training */
#define QKV_SETTING_STEPS "--steps", "steps", 1, 1e9, NULL, "training steps"
#define QKV_SETTING_LR "--lr", "lr", 0, 10, NULL, "learning rate"
#define QKV_SETTING_WEIGHT_DECAY "--weight-decay", "weight_decay", 0, 10, NULL, \
    "weight decay (not on biases, norms, tables)"
#define QKV_SETTING_CLIP "--clip", "clip", 0, 1e9, NULL, "clip gradients to this global norm; 0: off"
#define QKV_SETTING_SCHEDULE "--schedule", "schedule", 0, 0, qkv_schedule_kind_names, \
    "learning-rate schedule (step: x0.1 every steps/3)"
#define QKV_SETTING_WARMUP "--warmup", "warmup", 0, 1e9, NULL, "cosine: linear warmup steps"
/* the seed of a run (its help says what it seeds, row by row) */
#define QKV_SETTING_SEED "--seed", "seed", 0, 2147483647, NULL, "seed"
/* threads (never in a description: results do not depend on them) */
#define QKV_SETTING_THREADS "--threads", NULL, 0, 1024, NULL, QKV_THREADS_HELP

/* Every shared setting, for the test that holds the rows to them. */
#define QKV_SHARED_SETTINGS(X) \
    X(LAYERS) X(HEADS) X(DIM) X(WIDTH) X(FF) X(DROPOUT) X(STEPS) X(LR) X(WEIGHT_DECAY) X(CLIP) X(SCHEDULE) \
    X(WARMUP) X(SEED) X(THREADS)

/* ---- rows of them ------------------------------------------------------------------- */

/* The row of setting S for member M of T, of kind K (QKV_FIELD_INT, _LONG, _FLOAT,
 * _CHOICE), with default def. */
#define QKV_SETTING_FIELD(K, S, T, M, def) QKV_SETTING_ROW_(S, K, T, M, def)
/* The same, accepting only [lo, hi] of the setting's range. */
#define QKV_SETTING_FIELD_IN(K, S, T, M, def, lo, hi) QKV_SETTING_ROW_IN_(S, K, T, M, def, lo, hi)
/* The same, with QKV_FIELD_* options and a place key_at in the description's order
 * (fields.h: the trainer's keys have an order of their own). */
#define QKV_SETTING_FIELD_AT(K, S, T, M, def, options, key_at) QKV_SETTING_ROW_AT_(S, K, T, M, def, options, key_at)
/* The same, without its key: a flag of this table that is not in its description
 * (the trainer's --steps: a checkpoint records the step it reached instead). */
#define QKV_SETTING_FIELD_UNKEYED(K, S, T, M, def) QKV_SETTING_ROW_UNKEYED_(S, K, T, M, def)
/* The same, its help saying what the setting means in this one place (bench's
 * --threads: the many-thread column's). */
#define QKV_SETTING_FIELD_SAYING(K, S, T, M, def, help) QKV_SETTING_ROW_SAYING_(S, K, T, M, def, help)

/* A task's --seed: a SEED member (a description holds any 64-bit value; the flag
 * takes 0 .. 2^31-1), default 1, help saying what it seeds. */
#define QKV_SEED_FIELD(T, M, help) QKV_SETTING_FIELD_SAYING(QKV_FIELD_SEED, QKV_SETTING_SEED, T, M, 1, help)

/* (the macros above expand S into its parts first, then these take them) */
#define QKV_SETTING_ROW_(flag, key, lo, hi, choices, help, K, T, M, def) \
    {flag, key, K, offsetof(T, M), lo, hi, def, choices, NULL, help, 0, 0, NULL}
#define QKV_SETTING_ROW_IN_(flag, key, lo_, hi_, choices, help, K, T, M, def, lo, hi) \
    {flag, key, K, offsetof(T, M), lo, hi, def, choices, NULL, help, 0, 0, NULL}
#define QKV_SETTING_ROW_AT_(flag, key, lo, hi, choices, help, K, T, M, def, options, key_at) \
    {flag, key, K, offsetof(T, M), lo, hi, def, choices, NULL, help, options, key_at, NULL}
#define QKV_SETTING_ROW_UNKEYED_(flag, key, lo, hi, choices, help, K, T, M, def) \
    {flag, NULL, K, offsetof(T, M), lo, hi, def, choices, NULL, help, 0, 0, NULL}
#define QKV_SETTING_ROW_SAYING_(flag, key, lo, hi, choices, help_, K, T, M, def, help) \
    {flag, key, K, offsetof(T, M), lo, hi, def, choices, NULL, help, 0, 0, NULL}

/* ---- blocks ------------------------------------------------------------------------- */

/* A transformer stack's shape, --layers --heads --dim --ff in this order (the
 * description's), for members P layers, P heads, P dim, P ff of T (P: a member
 * path ending in '.', or nothing), with their defaults. */
#define QKV_STACK_SHAPE_FIELDS(T, P, LAYERS, HEADS, DIM, FF)          \
    QKV_SETTING_FIELD(QKV_FIELD_INT, QKV_SETTING_LAYERS, T, P layers, LAYERS), \
    QKV_SETTING_FIELD(QKV_FIELD_INT, QKV_SETTING_HEADS, T, P heads, HEADS),    \
    QKV_SETTING_FIELD(QKV_FIELD_INT, QKV_SETTING_DIM, T, P dim, DIM),          \
    QKV_SETTING_FIELD(QKV_FIELD_INT, QKV_SETTING_FF, T, P ff, FF)

#endif
