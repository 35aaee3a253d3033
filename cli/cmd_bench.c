/* cmd_bench.c — `qkv bench [all|matmul|attention|train|long] [--json FILE]
 * [--clock wall|cpu] [--micro-batch N]`: parses the flags, then runs the sections
 * of cli/bench.c, which measure and print the table (cli/bench.h). An unknown
 * section or flag prints one line and returns 2, before anything is measured.
 */
#include "core/kernels/omp_shim.h"
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cli/bench.h"
#include "core/error.h"
#include "core/kernels/parallel.h"
#include "core/ops/params.h"
#include "cli/args.h"
#include "cli/commands.h"
#include "train/trainer.h"
#include "train/settings.h"

/* "all, matmul, ..." (sep ", ") or "all|matmul|..." (sep "|") into out. */
static const char *section_list(char *out, size_t size, const char *sep) {
    size_t at = 0;
    out[0] = '\0';
    for (int i = 0; qkv_bench_section_names[i] && at < size; i++)
        at += (size_t)snprintf(out + at, size - at, "%s%s", i ? sep : "", qkv_bench_section_names[i]);
    return out;
}

typedef struct bench_options {
    const char *json;
    int clock, micro_batch, threads;
} bench_options;

static const char *const clock_names[] = {"wall", "cpu", NULL};

#define T bench_options
static const qkv_field fields[] = {
    QKV_TEXT_FIELD("--json", NULL, T, json, NULL, "also write the table as JSON to this file"),
    QKV_CHOICE_FIELD("--clock", NULL, T, clock, clock_names, 0,
                     "wall time, or the process's CPU time (1-thread lines on a loaded machine)"),
    QKV_INT_FIELD("--micro-batch", NULL, T, micro_batch, 0, 65536, 0,
                  "train: examples per micro-batch of every line (0: each task's default)"),
    QKV_SETTING_FIELD_SAYING(QKV_FIELD_INT, QKV_SETTING_THREADS, T, threads, 0,
                             "threads of the many-thread column; 0: every core"),
};
#undef T

/* Its one positional argument is optional (a section; all by default). */
const qkv_command_spec qkv_command_bench = {
    "bench", "[SECTION]", 0, "speed on 1 thread and all threads: matmul, attention, train (all); long", fields,
    sizeof fields / sizeof *fields, NULL, NULL, qkv_cmd_bench};

int qkv_cmd_bench(int argc, char **argv) {
    const char *section = "all";
    if (argc > 0 && argv[0][0] != '-') {
        section = argv[0];
        argc--;
        argv++;
    }
    char list[96];
    int n_sections = 0;
    while (qkv_bench_section_names[n_sections]) n_sections++;
    if (qkv_name_lookup(section, qkv_bench_section_names, n_sections) < 0) {
        fprintf(stderr, "qkv bench: unknown section '%s' (available: %s)\n", section,
                section_list(list, sizeof list, ", "));
        return 2;
    }
    bench_options o;
    qkv_fields_defaults(fields, qkv_command_bench.n_fields, &o);
    int parsed = qkv_command_parse(&qkv_command_bench, "bench", argc, argv, &o);
    if (parsed != 0) return parsed > 0 ? 0 : 2;
    const char *json_path = o.json;
    int clock_kind = o.clock, micro_batch = o.micro_batch, threads = o.threads;
    if (json_path && qkv_check_output_path(json_path) != 0) { /* before measuring */
        fprintf(stderr, "qkv bench: --json: %s\n", qkv_last_error());
        return 2;
    }

    int previous_threads = omp_get_max_threads();
    qkv_bench_table *table = qkv_bench_begin(clock_kind == 1, micro_batch, threads);
    qkv_bench_print_header(table);
    qkv_bench_run_section(table, section);
    qkv_set_threads(previous_threads);
    char load[32] = "load unknown";
    double average = qkv_bench_load_average();
    if (isfinite(average)) snprintf(load, sizeof load, "load average %.2f", average);
    printf("threads: %d   peak RSS: %.1f MB   probes of the peak: %d   %s\n", table->threads,
           qkv_bench_peak_rss_mb(), table->n_probes, load);
    if (json_path && qkv_bench_write_json(json_path, table) != 0) {
        fprintf(stderr, "qkv bench: --json: %s\n", qkv_last_error());
        return 2;
    }
    return 0;
}
