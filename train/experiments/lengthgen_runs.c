/* lengthgen_runs.c — the runs of a lengthgen experiment (lengthgen_runs.h):
 * where each (task, scheme, seed) keeps its record, which have finished, and the
 * exact decimals records are written in. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "train/experiments/lengthgen_runs.h"

typedef qkv_lengthgen lengthgen;

size_t qkv_lg_run_at(const lengthgen *g, int task, int scheme, int seed_index) {
    return ((size_t)task * g->n_schemes + scheme) * g->o->seeds + seed_index;
}

int qkv_lg_finished(const lengthgen *g) {
    int n = 0;
    for (int r = 0; r < g->n_runs; r++) n += g->done[r] != 0;
    return n;
}

int qkv_lg_complete(const lengthgen *g, int task, int scheme) {
    for (int k = 0; k < g->o->seeds; k++)
        if (!g->done[qkv_lg_run_at(g, task, scheme, k)]) return 0;
    return 1;
}

void qkv_lg_json_exact(qkv_json_out *out, double v) {
    char text[40];
    if (!isfinite(v)) {
        qkv_json_out_text(out, "null");
        return;
    }
    static const int digits[] = {6, 9, 12, 15, 17};
    for (int i = 0; i < 5; i++) {
        snprintf(text, sizeof text, "%.*g", digits[i], v);
        if (strtod(text, NULL) == v) break;
    }
    qkv_json_out_text(out, text);
}
