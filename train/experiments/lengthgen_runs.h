/* lengthgen_runs.h — the state of one `qkv experiment lengthgen` run, at the
 * bottom of its files, which form a line (each includes the header below it):
 *   lengthgen.c           options, presets, checks, training and testing the
 *                         models, the loop over them (ranks, jobs, signals);
 *   lengthgen_record.c    the JSON record: written, and read back for --resume;
 *   lengthgen_report.c    the tables, the summaries, the MRR, the CSV and the plot;
 *   lengthgen_distance.c  the attention-distance analysis (table, JSON, PNG);
 *   lengthgen_runs.c      the runs' records: their index, which finished, and the
 *                         exact decimals they are written in.
 * Not part of the public API (experiments.h is).
 *
 * A model is a run: (task, scheme, seed), index qkv_lg_run_at. Each finished run
 * leaves its record in the arrays below (all zeros until then, which is what
 * the MPI exchange needs: one rank holds each record, the others zeros, and a sum
 * over ranks gives everyone the record bit for bit).
 */
#ifndef QKV_LENGTHGEN_RUNS_H
#define QKV_LENGTHGEN_RUNS_H

#include "core/io/json.h"
#include "train/experiments/experiments.h"
#include "train/tasks/sequence.h"

/* The test sequences' seed (xor the model's seed). */
#define QKV_LG_TEST_SEED 0x1e96e11ULL
/* Attention distance: measured at the trained length L and the extrapolated K,
 * on the first QKV_LG_DISTANCE_INPUTS test inputs of each length. */
#define QKV_LG_DISTANCE_AT 2
#define QKV_LG_DISTANCE_INPUTS 8

/* A scheme: a position kind, with randomized positions or not. */
typedef struct qkv_lg_scheme {
    qkv_pos_kind kind;
    int randomized;
    char name[24]; /* "rope", "rope-rand" */
} qkv_lg_scheme;

typedef struct qkv_lengthgen {
    const qkv_lengthgen_options *o;
    int n_tasks, n_schemes, randomize; /* randomize: the M of the -rand schemes */
    int tasks[QKV_LENGTHGEN_MAX_TASKS];
    qkv_lg_scheme schemes[QKV_LENGTHGEN_MAX_SCHEMES];
    int n_runs;
    int bins; /* distance histogram bins: [d, d+1) for d = 0..2K */
    /* per run: */
    double *exact, *token;              /* [run][K], lengths 1..K */
    double *train_seconds, *train_loss; /* [run] */
    double *distance;                   /* [run][QKV_LG_DISTANCE_AT][bins]: share of the (input, layer, head,
                                         * query) attention-weighted mean distances in each bin */
    double *distance_mean;              /* [run][QKV_LG_DISTANCE_AT]: their mean */
    double *done;                       /* [run]: 1 once finished (a double, exchanged as the rest) */
    /* provenance: of the run that started the experiment (kept by --resume) */
    char version[32], isa[16], date[40];
    char *command; /* malloc'd */
} qkv_lengthgen;

size_t qkv_lg_run_at(const qkv_lengthgen *g, int task, int scheme, int seed_index);
int qkv_lg_finished(const qkv_lengthgen *g);
/* Whether every seed of (task, scheme) has finished. */
int qkv_lg_complete(const qkv_lengthgen *g, int task, int scheme);

/* Appends v as the shortest decimal that reads back as the same double (JSON
 * null when not finite): a record written and read back is the same bits. */
void qkv_lg_json_exact(qkv_json_out *out, double v);

#endif
