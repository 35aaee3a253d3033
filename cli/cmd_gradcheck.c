/* cmd_gradcheck.c — `qkv gradcheck`: runs every case of every gradient-check group
 * (the list in layers/check/checks.h, in its order), prints one line per case with its
 * max error, and exits 1 if any fails. */
#include <stdio.h>
#include <string.h>

#include "core/check/gradcheck.h"
#include "core/error.h"
#include "core/kernels/parallel.h"
#include "layers/check/checks.h"
#include "cli/args.h"
#include "cli/commands.h"
#include "train/settings.h"

typedef struct gradcheck_options {
    const char *filter;
    int seed, threads;
} gradcheck_options;

#define T gradcheck_options
static const qkv_field fields[] = {
    QKV_TEXT_FIELD("--filter", NULL, T, filter, NULL, "only cases whose name contains this"),
    QKV_SETTING_FIELD_SAYING(QKV_FIELD_INT, QKV_SETTING_SEED, T, seed, 1234, "seed for inputs and weights"),
    QKV_SETTING_FIELD(QKV_FIELD_INT, QKV_SETTING_THREADS, T, threads, 0),
};
#undef T

const qkv_command_spec qkv_command_gradcheck = {
    "gradcheck", "", 0, "finite-difference check of every op and layer", fields, sizeof fields / sizeof *fields,
    NULL, NULL, qkv_cmd_gradcheck};

int qkv_cmd_gradcheck(int argc, char **argv) {
    gradcheck_options o;
    qkv_fields_defaults(fields, qkv_command_gradcheck.n_fields, &o);
    int parsed = qkv_command_parse(&qkv_command_gradcheck, "gradcheck", argc, argv, &o);
    if (parsed != 0) return parsed > 0 ? 0 : 2;
    const char *filter = o.filter;
    int seed = o.seed;
    qkv_set_threads(o.threads);

    int run = 0, failed = 0;
    double worst = 0.0;
    for (int g = 0; g < QKV_GRADCHECK_N_GROUPS; g++) {
        const qkv_gradcheck_group *group = qkv_gradcheck_groups[g];
        for (int i = 0; i < group->n_cases; i++) {
            const qkv_gradcheck_case *c = &group->cases[i];
            if (filter && !strstr(c->name, filter)) continue;
            qkv_gradcheck_result r = qkv_gradcheck_run_case(c, (uint64_t)seed + (uint64_t)i);
            int ok = r.n_checked > 0 && r.max_err <= qkv_gradcheck_tolerance(c);
            printf("%-4s %-12s %-48s max_err %.2e  (%zu elements)\n", ok ? "ok" : "FAIL", group->name,
                   c->name, r.max_err, r.n_checked);
            run++;
            failed += !ok;
            if (r.max_err > worst) worst = r.max_err;
        }
    }
    printf("gradcheck: %d cases, %d failed, largest error %.2e\n", run, failed, worst);
    if (run == 0) { /* through qkv_set_error: the filter's bytes come back escaped (core/error.h) */
        qkv_set_error("no case matches '%s'", filter ? filter : "");
        fprintf(stderr, "qkv gradcheck: %s\n", qkv_last_error());
    }
    return run == 0 ? 2 : failed ? 1 : 0;
}
