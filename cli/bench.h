/* bench.h — a run of `qkv bench` (bench.c), what cli/cmd_bench.c drives: begin
 * (bench_table.h) gives the table; print the header lines; run sections (one of
 * qkv_bench_section_names: all = matmul, attention and train; long only when
 * named), each row printed as it is measured; write the JSON (atomically; -1
 * with qkv_last_error()). The sections are bench.c's matmul and
 * bench_models.h's; the files form a line, bench.c -> bench_models -> bench_table.
 */
#ifndef QKV_BENCH_H
#define QKV_BENCH_H

#include "cli/bench_models.h"

extern const char *const qkv_bench_section_names[]; /* "all", ..., NULL */
void qkv_bench_print_header(const qkv_bench_table *t);
void qkv_bench_run_section(qkv_bench_table *t, const char *section);
int qkv_bench_write_json(const char *path, const qkv_bench_table *t);

#endif
