/* common.c — `qkv experiment <name>` dispatch and the output helpers both
 * experiments share. See experiments.h. */
#include <stdio.h>
#include <string.h>

#include "core/error.h"
#include "core/fileio.h"
#include "train/cli/commands.h"
#include "train/experiments/experiments.h"
#include "train/trainer.h"

int qkv_exp_check_outputs(const char *const *paths, int n) {
    for (int i = 0; i < n; i++) {
        if (!paths[i]) continue;
        if (qkv_check_output_path(paths[i]) != 0) return -1;
        for (int j = 0; j < i; j++)
            if (paths[j] && strcmp(paths[i], paths[j]) == 0) {
                qkv_set_error("%s: given for two outputs", paths[i]);
                return -1;
            }
    }
    return 0;
}

int qkv_cmd_experiment(int argc, char **argv) {
    static const char usage[] =
        "usage: qkv experiment <name> [flags]   (qkv experiment <name> --help lists the flags)\n"
        "  permutation   measure permutation equivariance and invariance of every model kind\n"
        "  lengthgen     train decoder-only models per position scheme, test on longer sequences\n";
    if (argc < 1 || strcmp(argv[0], "--help") == 0 || strcmp(argv[0], "-h") == 0) {
        fputs(usage, argc < 1 ? stderr : stdout);
        return argc < 1 ? 2 : 0;
    }
    if (strcmp(argv[0], "permutation") == 0) return qkv_cmd_experiment_permutation(argc - 1, argv + 1);
    if (strcmp(argv[0], "lengthgen") == 0) return qkv_cmd_experiment_lengthgen(argc - 1, argv + 1);
    fprintf(stderr, "qkv experiment: unknown experiment '%s' (known: permutation, lengthgen)\n", argv[0]);
    return 2;
}
