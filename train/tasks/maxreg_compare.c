/* maxreg_compare.c — `qkv train maxreg --compare`: the Set Transformer paper's
 * max-regression table (Lee et al. 2019, table 1), as a result over seeds.
 *
 * Each of the four models (mean, sum and max pooling, SAB+PMA) is trained with
 * seeds --seed .. --seed + --seeds - 1 (the seed draws init, data and batches;
 * the held-out sets are the seed's own, as for a single `train maxreg`) with the
 * same recipe. Per model the table gives the mean test MAE over seeds, its 95%
 * Student t-interval (train/stats.h, the lengthgen lab's) and every seed's value,
 * then judges the paper's ordering on them (the bounds column below):
 *   holds         every bound holds between the intervals' far ends:
 *                 upper(SAB+PMA) <= bound x lower(other);
 *   means only    every bound holds between the means, not between the ends;
 *   fails         some bound fails between the means.
 *
 * Runs are spread as lengthgen's models are: in rounds of ranks x --jobs, rank r
 * trains the round's runs r*jobs .. r*jobs + jobs - 1 in solo mode
 * (qkv_dist_solo), each job on one thread when jobs > 1; then each run's record
 * (nonzero on the one rank that trained it) is summed over ranks. A run's bits
 * do not depend on the thread count or on which rank trained it, so one process,
 * any --jobs and any number of ranks print the same table.
 *
 * --json writes {"task": "maxreg", "seeds": n, "ordering": "holds" | "means only"
 * | "fails", "models": [{"model", "test_mae" (the mean over seeds), "half_95"
 * (0 for one seed), "paper_mae", "runs": [{"test_mae", "seconds"} per seed]}]}.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/fileio.h"
#include "core/io/json.h"
#include "train/dist.h"
#include "train/session.h"
#include "train/stats.h"
#include "train/tasks/maxreg.h"
#include "train/tasks/registry.h"

/* The paper's test MAE, and the ordering it shows: SAB+PMA's mean MAE at most
 * `bound` times this model's (issue: half of sum pooling's, a third of mean
 * pooling's, twice max pooling's; 0: SAB+PMA itself). */
static const struct {
    qkv_set_model_kind kind;
    const char *label, *key;
    double paper, bound;
    const char *bound_text;
} models[] = {
    {QKV_SET_MODEL_DEEPSETS_MEAN, "rFF + mean pooling", "mean_mae", 2.133, 1.0 / 3.0, "1/3"},
    {QKV_SET_MODEL_DEEPSETS_SUM, "rFF + sum pooling", "sum_mae", 1.902, 0.5, "1/2"},
    {QKV_SET_MODEL_DEEPSETS_MAX, "rFF + max pooling", "max_mae", 0.1355, 2.0, "2"},
    {QKV_SET_MODEL_SAB, "SAB + PMA", "sab_pma_mae", 0.2085, 0, NULL},
};
#define N_MODELS ((int)(sizeof models / sizeof models[0]))
#define SAB_PMA (N_MODELS - 1)

static const char *const verdict_names[] = {"holds", "means only", "fails"};
enum { HOLDS, MEANS_ONLY, FAILS };

/* Every run's record: [model * seeds + seed_index]; zeros until its run finished. */
typedef struct compare_runs {
    const qkv_task_kind *kind; /* maxreg's, which makes and frees each run's task */
    int seeds, n_runs;
    double *mae, *seconds, *done;
    double mean[N_MODELS], half[N_MODELS];
} compare_runs;

/* Trains run r: 0, or -1 with qkv_last_error() (a signal's stop included). */
static int train_run(const qkv_maxreg_task_config *base, qkv_trainer_config trainer, compare_runs *runs, int r) {
    qkv_maxreg_task_config config = *base;
    config.model.kind = models[r / runs->seeds].kind;
    config.seed = base->seed + (unsigned long long)(r % runs->seeds);
    trainer.seed = config.seed;
    qkv_train_result result = {0};
    qkv_task *task = runs->kind->create(&config, 0);
    int rc = task ? 0 : -1;
    qkv_session session;
    if (rc == 0) rc = qkv_session_prepare(&session, &(qkv_session_spec){.config = trainer, .task = task});
    if (rc == 0) {
        rc = qkv_train(&session, &result);
        qkv_session_close(&session);
    }
    if (task) runs->kind->destroy(task);
    const double *test_mae = rc == 0 ? qkv_metrics_get(&result.metrics, "test_mae") : NULL;
    if (rc == 0 && !test_mae) rc = -1, qkv_set_error("maxreg --compare: the run reported no test_mae");
    if (rc != 0) return -1;
    runs->mae[r] = *test_mae;
    runs->seconds[r] = result.seconds;
    runs->done[r] = 1;
    return 0;
}

/* One slot of a round: run r. */
typedef struct {
    const qkv_maxreg_task_config *base;
    const qkv_trainer_config *trainer;
    compare_runs *runs;
} round_jobs;

static int train_slot(void *ctx, int r) {
    round_jobs *jobs = ctx;
    return train_run(jobs->base, *jobs->trainer, jobs->runs, r);
}

/* Trains every run in rounds of ranks x jobs (qkv_dist_jobs_round); every rank
 * ends with every record. 0, or -1 with qkv_last_error() (one rank's failure is
 * every rank's). */
static int train_runs(const qkv_maxreg_task_config *base, const qkv_trainer_config *trainer, compare_runs *runs) {
    int jobs = base->jobs > 1 ? base->jobs : 1, per_round = qkv_dist_size() * jobs;
    round_jobs round = {base, trainer, runs};
    for (int first = 0; first < runs->n_runs; first += per_round) {
        int rc = qkv_dist_jobs_round(first, runs->n_runs, jobs, train_slot, &round, NULL);
        for (int r = first; r < first + per_round && r < runs->n_runs; r++) {
            qkv_dist_sum_doubles(runs->mae + r, 1);
            qkv_dist_sum_doubles(runs->seconds + r, 1);
            qkv_dist_sum_doubles(runs->done + r, 1);
            if (runs->done[r])
                printf("%-20s seed %llu: test MAE %.4f in %.1f s\n", models[r / runs->seeds].label,
                       base->seed + (unsigned long long)(r % runs->seeds), runs->mae[r], runs->seconds[r]);
        }
        fflush(stdout);
        if (rc != 0) return -1;
    }
    return 0;
}

/* The verdict of one bound: SAB+PMA's MAE at most bound x model m's. */
static int judge(const compare_runs *runs, int m) {
    double sab = runs->mean[SAB_PMA], other = runs->mean[m], bound = models[m].bound;
    if (!(sab <= bound * other)) return FAILS;
    double sab_upper = sab + runs->half[SAB_PMA], other_lower = other - runs->half[m];
    return sab_upper <= bound * other_lower ? HOLDS : MEANS_ONLY; /* NAN (one seed): means only */
}

/* The whole table's verdict: its worst bound's. */
static int verdict(const compare_runs *runs) {
    int worst = HOLDS;
    for (int m = 0; m < SAB_PMA; m++) worst = judge(runs, m) > worst ? judge(runs, m) : worst;
    return worst;
}

void qkv_maxreg_compare_recipe(const qkv_maxreg_task_config *c, const qkv_trainer_config *t, char *out, size_t len) {
    char to_floor[32] = "";
    if (t->schedule.kind == QKV_SCHED_COSINE) snprintf(to_floor, sizeof to_floor, " to %gx", (double)t->schedule.min_factor);
    int seeds = c->seeds > 0 ? c->seeds : 1;
    snprintf(out, len,
             "max regression: %d steps of batch %d, %s lr %g, %s schedule%s; test MAE on %d held-out sets (lower is "
             "better), %d seed%s per model (%llu..%llu), mean with its 95%% t-interval over seeds:",
             t->steps, c->batch, qkv_opt_kind_name(t->optim.kind), (double)t->optim.lr,
             qkv_schedule_kind_names[t->schedule.kind], to_floor, c->test_size, seeds, seeds == 1 ? "" : "s", c->seed,
             c->seed + (unsigned long long)seeds - 1);
}

static void print_table(const qkv_maxreg_task_config *c, const qkv_trainer_config *t, const compare_runs *runs) {
    char recipe[512];
    qkv_maxreg_compare_recipe(c, t, recipe, sizeof recipe);
    printf("\n%s\n", recipe);
    printf("%-20s | %9s | %-19s | %-7s | per seed\n", "model", "mean", "95% interval", "paper");
    for (int m = 0; m < N_MODELS; m++) {
        char interval[40] = "-";
        if (isfinite(runs->half[m]))
            snprintf(interval, sizeof interval, "%.4f .. %.4f", runs->mean[m] - runs->half[m],
                     runs->mean[m] + runs->half[m]);
        printf("%-20s | %9.4f | %-19s | %-7g |", models[m].label, runs->mean[m], interval, models[m].paper);
        for (int k = 0; k < runs->seeds; k++) printf(" %.4f", runs->mae[m * runs->seeds + k]);
        printf("\n");
    }
    printf("ordering (the paper's: SAB+PMA's MAE at most the bound times the other's; 'holds' between the "
           "intervals' far ends):\n");
    for (int m = 0; m < SAB_PMA; m++)
        printf("  SAB + PMA <= %-3s x %-20s %-10s (means %.4f vs %.4f)\n", models[m].bound_text, models[m].label,
               verdict_names[judge(runs, m)], runs->mean[SAB_PMA], models[m].bound * runs->mean[m]);
    printf("verdict: the paper's ordering %s\n",
           verdict(runs) == HOLDS        ? "holds beyond the 95% intervals"
           : verdict(runs) == MEANS_ONLY ? "holds between the means, not beyond the 95% intervals"
                                         : "does not hold");
    printf("final: task=maxreg steps=%d seeds=%d", t->steps, runs->seeds);
    for (int m = 0; m < N_MODELS; m++) printf(" %s=%.4f", models[m].key, runs->mean[m]);
    printf(" ordering=%s\n", verdict(runs) == MEANS_ONLY ? "means-only" : verdict_names[verdict(runs)]);
}

static int write_json(const char *path, const compare_runs *runs) {
    qkv_json_out out = {0};
    char number[160];
    snprintf(number, sizeof number, "{\"task\": \"maxreg\", \"seeds\": %d, \"ordering\": ", runs->seeds);
    qkv_json_out_text(&out, number);
    qkv_json_out_string(&out, verdict_names[verdict(runs)]);
    qkv_json_out_text(&out, ", \"models\": [");
    for (int m = 0; m < N_MODELS; m++) {
        qkv_json_out_text(&out, m ? ", {\"model\": " : "{\"model\": ");
        qkv_json_out_string(&out, qkv_set_model_kind_name(models[m].kind));
        snprintf(number, sizeof number, ", \"test_mae\": %.6g, \"half_95\": %.6g, \"paper_mae\": %.6g, \"runs\": [",
                 runs->mean[m], isfinite(runs->half[m]) ? runs->half[m] : 0.0, models[m].paper);
        qkv_json_out_text(&out, number);
        for (int k = 0; k < runs->seeds; k++) {
            int r = m * runs->seeds + k;
            snprintf(number, sizeof number, "%s{\"test_mae\": %.6g, \"seconds\": %.3f}", k ? ", " : "", runs->mae[r],
                     runs->seconds[r]);
            qkv_json_out_text(&out, number);
        }
        qkv_json_out_text(&out, "]}");
    }
    qkv_json_out_text(&out, "]}\n");
    int rc = out.failed ? -1 : qkv_write_file_atomic(path, out.data, out.len);
    qkv_json_out_free(&out);
    return rc;
}

int qkv_maxreg_compare(const qkv_task_kind *kind, const qkv_maxreg_task_config *base, qkv_trainer_config trainer) {
    const char *json_path = trainer.json_path;
    trainer.json_path = NULL;
    trainer.quiet = 1;
    compare_runs runs = {.kind = kind, .seeds = base->seeds > 0 ? base->seeds : 1};
    runs.n_runs = N_MODELS * runs.seeds;
    runs.mae = calloc((size_t)runs.n_runs * 3, sizeof(double));
    if (!runs.mae) return qkv_set_error("maxreg --compare: out of memory"), -1;
    runs.seconds = runs.mae + runs.n_runs;
    runs.done = runs.seconds + runs.n_runs;
    int rc = train_runs(base, &trainer, &runs);
    if (rc == 0) {
        for (int m = 0; m < N_MODELS; m++)
            qkv_mean_t95(runs.mae + m * runs.seeds, runs.seeds, &runs.mean[m], &runs.half[m]);
        print_table(base, &trainer, &runs);
        if (json_path && qkv_dist_rank() == 0 && write_json(json_path, &runs) != 0) rc = -1;
    }
    free(runs.mae);
    return rc;
}
