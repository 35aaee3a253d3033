/* schedule.c — learning-rate schedules; see optimizer.h.
 *
 * Contract: qkv_schedule_factor(schedule, s) is the factor for step s >= 0,
 * computed in double and rounded to float once:
 *   constant  1
 *   cosine    (s+1)/warmup for s < warmup (linear warmup, reaching 1 at warmup-1),
 *             then min + (1-min) (1 + cos(pi (s-warmup)/(total-warmup))) / 2, which is
 *             1 at s = warmup and min at s = total, and min after total
 *   step      gamma^floor(s / step_size)
 * A negative step or a schedule that cannot be evaluated (cosine: warmup < 0,
 * total <= warmup, min_factor outside [0, 1]; step: step_size < 1, gamma <= 0)
 * stops through qkv_fatal naming the field.
 */
#include "optim/optimizer.h"

#include <math.h>
#include <string.h>

#include "core/mathfn.h"
#include "core/error.h"

const char *const qkv_schedule_kind_names[] = {"constant", "cosine", "step", NULL};
#define N_SCHEDULES ((int)(sizeof qkv_schedule_kind_names / sizeof qkv_schedule_kind_names[0]) - 1)

int qkv_schedule_kind_parse(const char *name) { return qkv_name_lookup(name, qkv_schedule_kind_names, N_SCHEDULES); }

static double cosine_factor(const qkv_schedule *c, long s) {
    QKV_CHECK(c->warmup >= 0, "schedule cosine: warmup = %ld must be >= 0", c->warmup);
    QKV_CHECK(c->total > c->warmup, "schedule cosine: total = %ld must exceed warmup = %ld", c->total,
              c->warmup);
    QKV_CHECK(c->min_factor >= 0.0f && c->min_factor <= 1.0f,
              "schedule cosine: min_factor = %g must be in [0, 1]", (double)c->min_factor);
    double min = c->min_factor;
    if (s < c->warmup) return (double)(s + 1) / (double)c->warmup;
    if (s >= c->total) return min;
    double progress = (double)(s - c->warmup) / (double)(c->total - c->warmup);
    return min + (1.0 - min) * 0.5 * (1.0 + qkv_math_cos(M_PI * progress));
}

static double step_factor(const qkv_schedule *c, long s) {
    QKV_CHECK(c->step_size >= 1, "schedule step: step_size = %ld must be >= 1", c->step_size);
    QKV_CHECK(c->gamma > 0.0f && isfinite(c->gamma), "schedule step: gamma = %g must be finite and > 0",
              (double)c->gamma);
    return pow((double)c->gamma, (double)(s / c->step_size));
}

float qkv_schedule_factor(const qkv_schedule *schedule, long step) {
    QKV_CHECK(step >= 0, "schedule: step %ld must be >= 0", step);
    switch (schedule->kind) {
    case QKV_SCHED_CONSTANT: return 1.0f;
    case QKV_SCHED_COSINE: return (float)cosine_factor(schedule, step);
    case QKV_SCHED_STEP: return (float)step_factor(schedule, step);
    }
    qkv_fatal("schedule: unknown kind %d", (int)schedule->kind);
}
