/* cmd_gradcheck.c — `qkv gradcheck`: runs every registered gradient-check case,
 * prints one line per case with its max error, and exits 1 if any fails. */
#include <stdio.h>
#include <string.h>

#include "core/attention.h"
#include "core/boxes.h"
#include "core/gradcheck.h"
#include "core/positions.h"
#include "layers/checks.h"
#include "train/cli/args.h"
#include "train/cli/commands.h"

static const qkv_gradcheck_group *const all_groups[] = {
    &qkv_checks_elementwise, &qkv_checks_reduce, &qkv_checks_matmul, &qkv_checks_affine, &qkv_checks_softmax,
    &qkv_checks_norm, &qkv_checks_shape, &qkv_checks_attention, &qkv_checks_position,
    &qkv_checks_linear, &qkv_checks_attention_layers, &qkv_checks_sets,
    &qkv_checks_box, &qkv_checks_set_loss,
    &qkv_checks_image, &qkv_checks_queries,
};

int qkv_cmd_gradcheck(int argc, char **argv) {
    const char *filter = NULL;
    int seed = 1234;
    const qkv_arg args[] = {
        QKV_ARG_STRING_ROW("--filter", &filter, "only cases whose name contains this"),
        QKV_ARG_INT_ROW("--seed", &seed, 0, 2147483647, "seed for inputs and weights"),
    };
    int parsed = qkv_args_parse("gradcheck", argc, argv, args, 2);
    if (parsed != 0) return parsed > 0 ? 0 : 2;

    int run = 0, failed = 0;
    double worst = 0.0;
    for (size_t g = 0; g < sizeof all_groups / sizeof all_groups[0]; g++) {
        const qkv_gradcheck_group *group = all_groups[g];
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
    if (run == 0) fprintf(stderr, "qkv gradcheck: no case matches '%s'\n", filter ? filter : "");
    return run == 0 ? 2 : failed ? 1 : 0;
}
