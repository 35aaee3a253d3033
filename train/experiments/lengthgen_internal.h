/* lengthgen_internal.h — the state of one `qkv experiment lengthgen` run, shared by
 * its files (not part of the public API; experiments.h is):
 *   lengthgen.c           options, presets, checks, training and testing the
 *                         models, the loop over them (ranks, jobs, signals);
 *   lengthgen_report.c    the tables, the summaries, the MRR, the CSV and the plot;
 *   lengthgen_record.c    the JSON record: written, and read back for --resume;
 *   lengthgen_distance.c  the attention-distance analysis (table, JSON, PNG).
 *
 * A model is a run: (task, scheme, seed), index qkv_lg_run_at. Each finished run
 * leaves its record in the arrays below (all zeros until then, which is what
 * the MPI exchange needs: one rank holds each record, the others zeros, and a sum
 * over ranks gives everyone the record bit for bit).
 */
#ifndef QKV_LENGTHGEN_INTERNAL_H
#define QKV_LENGTHGEN_INTERNAL_H

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

/* lengthgen_report.c */
void qkv_lg_print_results(const qkv_lengthgen *g);
int qkv_lg_write_csv(const qkv_lengthgen *g);
int qkv_lg_write_plot(const qkv_lengthgen *g);
/* The MRRs among the schemes that fit (NAN: left out): of the paper's five
 * (qkv_lg_paper_count() of room; when all five are in the run, else returns 0)
 * and of all the run's schemes. */
int qkv_lg_mrr(const qkv_lengthgen *g, double *mrr_paper, double *mrr_all);
int qkv_lg_paper_count(void);
qkv_pos_kind qkv_lg_paper_kind(int p);
double qkv_lg_paper_mrr(int p);
/* Whether scheme does not fit some task; why: the tasks and their trained exact match. */
int qkv_lg_left_out_reason(const qkv_lengthgen *g, int scheme, char *why, size_t len);

/* lengthgen_record.c */
int qkv_lg_write_json(const qkv_lengthgen *g);
/* Appends v as the shortest decimal that reads back as the same double (JSON
 * null when not finite): a record written and read back is the same bits. */
void qkv_lg_json_exact(qkv_json_out *out, double v);
/* Over seeds: the mean of a seed's exact match averaged over lengths [from, to)
 * (0-based), and the half-width of its 95% t-interval (NAN for one seed). */
void qkv_lg_range_summary(const qkv_lengthgen *g, int task, int scheme, int from, int to, double *mean,
                          double *half);

/* lengthgen_record.c: reads options->json back into g's records (provenance
 * included), after checking that it is this experiment (same qkv version, same
 * settings); 0, or -1 with a one-line qkv_last_error() naming --resume. */
int qkv_lg_resume(qkv_lengthgen *g);

/* lengthgen_distance.c */
/* Measures a trained model's attention distances into run's record; a signal ends it at
 * the next input (the caller drops the record: lengthgen.c). */
void qkv_lg_measure_distance(qkv_lengthgen *g, qkv_seq_model *model, size_t run);
/* Per task and scheme, pooled over seeds: mean, median, 90th percentile and the
 * share farther than 2L (what no training stream had). */
void qkv_lg_print_distance(const qkv_lengthgen *g);
/* The "attention_distance" member of a complete scheme's JSON entry. */
void qkv_lg_json_distance(const qkv_lengthgen *g, int task, int scheme, qkv_json_out *out);
int qkv_lg_write_distance_plot(const qkv_lengthgen *g);
/* The lengths the distances are measured at: L and K. */
int qkv_lg_distance_length(const qkv_lengthgen *g, int which);

#endif
