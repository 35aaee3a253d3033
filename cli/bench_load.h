/* bench_load.h — how busy the machine is while `qkv bench` measures, and what a
 * row's fraction of the FLOP floor may claim because of it (bench_load.c); the
 * bottom of the bench files' line (bench.c -> bench_models -> bench_table -> this).
 *
 * The load of a stretch of time is the CPU the OTHER processes used during it,
 * in cores: (busy time of every CPU in /proc/stat) - (this process's user +
 * system time, getrusage), over the wall time. 0 is an idle machine, 1.9 means
 * nearly two cores' worth of other work. It is chosen over /proc/loadavg's
 * 1-minute average (printed in the header too) because that one counts qkv's
 * own threads, lags a minute behind and counts waiting tasks, not time taken;
 * the CPU-time difference covers exactly the row, at the kernel's clock tick
 * (10 ms per CPU), good to a few hundredths of a core over a row of a second.
 * Without /proc (macOS, the WebAssembly build) every load is NAN: "load unknown".
 */
#ifndef QKV_BENCH_LOAD_H
#define QKV_BENCH_LOAD_H

#include <stddef.h>

/* A change of the others' load by more than this many cores between the peak's
 * probe and a row re-probes the peak. Half a core: the probe is one thread, and
 * while the others leave a core free it gets one to itself and reads the same;
 * a half core more of other work is where, on a machine of a few cores, the
 * scheduler starts to share the probe's core and its reading falls. Smaller
 * changes are within the probe's own scatter on a shared machine (~5%). */
#define QKV_BENCH_LOAD_CHANGE 0.5

typedef struct qkv_bench_mark {
    double wall;  /* CLOCK_MONOTONIC, s */
    double busy;  /* every CPU's non-idle time since boot, s (/proc/stat); NAN unknown */
    double self;  /* this process's user + system time, s (getrusage) */
} qkv_bench_mark;

qkv_bench_mark qkv_bench_mark_now(void);
/* The others' load between two marks, in cores (>= 0); NAN when unknown or
 * the marks are less than 50 ms apart (the tick is too coarse for that). */
double qkv_bench_load_between(const qkv_bench_mark *from, const qkv_bench_mark *to);
/* /proc/loadavg's 1-minute average; NAN when unreadable. */
double qkv_bench_load_average(void);
/* "load 1.9" or "load unknown". */
void qkv_bench_format_load(char *out, size_t size, double load);
/* 1 when both loads are known and differ by more than QKV_BENCH_LOAD_CHANGE. */
int qkv_bench_load_changed(double probe_load, double row_load);

/* The peak a row's fraction uses, and its note, once the row measured a
 * fraction above 1 with `peak` (probed under probe_load; the row ran under
 * row_load) and the peak was probed again (`reprobed`, NAN if it was not):
 * the higher of the two readings (a probe only reads low: a shared core or a
 * lower clock slows it, nothing speeds it up). With the fraction at or below 1
 * then, the note says the peak was re-probed; still above 1, it names the cause:
 * the probe shared its core (it ran under a load more than QKV_BENCH_LOAD_CHANGE
 * above the row's), or, the loads alike, the clock (turbo) or the row's FLOP
 * count; a load unknown, it says so and names both suspects. A fraction at or
 * below 1 (or NAN) keeps the peak, no note. */
double qkv_bench_settle_peak(double fraction, double peak, double probe_load, double row_load,
                             double reprobed, char *note, size_t size);

#endif
