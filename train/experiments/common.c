/* common.c — what both experiments share: the check of their output paths.
 * See experiments.h. */
#include <string.h>

#include "core/error.h"
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
