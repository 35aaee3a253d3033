/* lengthgen_report.h — what a lengthgen run reports (lengthgen_report.c): the
 * tables, the summaries, the MRR, the CSV and the plot; above the distance
 * analysis it prints (lengthgen_distance.h; the line is in lengthgen_runs.h). */
#ifndef QKV_LENGTHGEN_REPORT_H
#define QKV_LENGTHGEN_REPORT_H

#include "train/experiments/lengthgen_distance.h"

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
/* Over seeds: the mean of a seed's exact match averaged over lengths [from, to)
 * (0-based), and the half-width of its 95% t-interval (NAN for one seed). */
void qkv_lg_range_summary(const qkv_lengthgen *g, int task, int scheme, int from, int to, double *mean,
                          double *half);

#endif
