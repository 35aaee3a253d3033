/* bench_load.c — the machine's load while `qkv bench` measures, and the note a
 * row's fraction of the FLOP floor gets from it (bench_load.h). */
#include "cli/bench_load.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

/* Every CPU's non-idle time since boot, s: the first ("cpu") line of /proc/stat,
 * user nice system idle iowait irq softirq steal ... in clock ticks; busy is all
 * but idle and iowait (steal counts: another guest had the core). guest time is
 * already inside user. NAN without /proc. */
static double busy_seconds(void) {
    FILE *f = fopen("/proc/stat", "r");
    if (!f) return NAN;
    unsigned long long v[8] = {0};
    int n = fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5],
                   &v[6], &v[7]);
    fclose(f);
    long hz = sysconf(_SC_CLK_TCK);
    if (n < 4 || hz <= 0) return NAN;
    unsigned long long busy = v[0] + v[1] + v[2] + v[5] + v[6] + v[7];
    return (double)busy / (double)hz;
}

qkv_bench_mark qkv_bench_mark_now(void) {
    qkv_bench_mark m;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    m.wall = (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
    m.busy = busy_seconds();
    struct rusage usage;
    getrusage(RUSAGE_SELF, &usage);
    m.self = (double)usage.ru_utime.tv_sec + 1e-6 * (double)usage.ru_utime.tv_usec +
             (double)usage.ru_stime.tv_sec + 1e-6 * (double)usage.ru_stime.tv_usec;
    return m;
}

double qkv_bench_load_between(const qkv_bench_mark *from, const qkv_bench_mark *to) {
    double wall = to->wall - from->wall;
    /* under 50 ms the clock tick (10 ms of each CPU) is too coarse to tell */
    if (!isfinite(from->busy) || !isfinite(to->busy) || !(wall >= 0.05)) return NAN;
    double others = (to->busy - from->busy) - (to->self - from->self);
    return others > 0 ? others / wall : 0.0; /* the tick's rounding can make it a hair negative */
}

double qkv_bench_load_average(void) {
    FILE *f = fopen("/proc/loadavg", "r");
    if (!f) return NAN;
    double one = NAN;
    if (fscanf(f, "%lf", &one) != 1) one = NAN;
    fclose(f);
    return one;
}

void qkv_bench_format_load(char *out, size_t size, double load) {
    if (isfinite(load))
        snprintf(out, size, "load %.1f", load);
    else
        snprintf(out, size, "load unknown");
}

int qkv_bench_load_changed(double probe_load, double row_load) {
    return isfinite(probe_load) && isfinite(row_load) && fabs(row_load - probe_load) > QKV_BENCH_LOAD_CHANGE;
}

double qkv_bench_settle_peak(double fraction, double peak, double probe_load, double row_load,
                             double reprobed, char *note, size_t size) {
    note[0] = '\0';
    if (!(fraction > 1)) return peak;
    double settled = isfinite(reprobed) && reprobed > peak ? reprobed : peak;
    char probe_at[32], again[48] = "";
    qkv_bench_format_load(probe_at, sizeof probe_at, probe_load);
    if (isfinite(reprobed)) snprintf(again, sizeof again, "; re-probed %.0f", reprobed);
    if (fraction * peak / settled <= 1) {
        snprintf(note, size, "peak re-probed: %.0f -> %.0f GFLOP/s (the first under %s)", peak, settled,
                 probe_at);
        return settled;
    }
    /* still above 1: name the cause */
    if (!isfinite(probe_load) || !isfinite(row_load)) {
        snprintf(note, size, "above 1: the probe read %.0f GFLOP/s%s; load unknown: turbo, or a probe that "
                 "shared its core", peak, again);
        return settled;
    }
    const char *cause = probe_load > row_load + QKV_BENCH_LOAD_CHANGE ? "the probe shared its core"
                                                                      : "the clock (turbo) or the FLOP count";
    snprintf(note, size, "above 1: the probe read %.0f GFLOP/s under %s (row %.1f)%s: %s", peak, probe_at,
             row_load, again, cause);
    return settled;
}
