/* trainer_checks.c — the run's settings checked before it starts (trainer.h):
 * the output paths, the target against the task's metric, and the config of a
 * rank (only rank 0 writes files). Split from trainer.c, which runs the loop. */
#include "train/trainer.h"

#include <errno.h>
#include <libgen.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/alloc.h"
#include "core/error.h"
#include "core/fileio.h"
#include "train/dist.h"

qkv_trainer_config qkv_trainer_rank_config(const qkv_trainer_config *shared) {
    qkv_trainer_config own = *shared;
    if (qkv_dist_rank() != 0)
        own.save_path = own.json_path = own.csv_path = own.resume_path = own.plot_path = own.dot_path = NULL;
    return own;
}

int qkv_check_output_path(const char *path) {
    struct stat st;
    if (!*path) {
        qkv_set_error("an output path is empty");
        return -1;
    }
    if (path[strlen(path) - 1] == '/') { /* dirname("newdir/") is ".": check it here */
        qkv_set_error("%s: names a directory (ends with '/'); an output is a file", path);
        return -1;
    }
    if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
        qkv_set_error("%s: exists and is not a regular file (%s)", path, S_ISDIR(st.st_mode) ? "a directory" : "a device, FIFO or socket");
        return -1;
    }
    char *copy = qkv_strdup(path, "a path");
    const char *dir = dirname(copy);
    int ok = stat(dir, &st) == 0 && S_ISDIR(st.st_mode);
    int writable = ok && access(dir, W_OK | X_OK) == 0;
    if (!writable) qkv_set_error("%s: cannot write here: directory %s %s", path, dir,
                                 ok ? "is not writable" : "does not exist");
    else writable = qkv_probe_directory(path, dir) == 0; /* /proc, a read-only mount (core/fileio.h) */
    free(copy);
    return writable ? 0 : -1;
}

int qkv_check_png_path(const char *path) {
    size_t n = strlen(path);
    if (n < 4 || strcasecmp(path + n - 4, ".png") != 0) {
        qkv_set_error("%s: qkv writes pictures as PNG: give a name ending in .png", path);
        return -1;
    }
    return qkv_check_output_path(path);
}

int qkv_trainer_check_outputs(const qkv_trainer_config *config) {
    if (config->plot_path && qkv_check_png_path(config->plot_path) != 0) return -1;
    const char *outputs[] = {config->json_path, config->csv_path, config->save_path, config->plot_path,
                             config->dot_path};
    for (int i = 0; i < 5; i++) {
        if (outputs[i] && qkv_check_output_path(outputs[i]) != 0) return -1;
        for (int j = 0; j < i; j++)
            if (outputs[i] && outputs[j] && strcmp(outputs[i], outputs[j]) == 0) {
                qkv_set_error("%s: given for two outputs (--json, --csv, --save, --plot, --dot)", outputs[i]);
                return -1;
            }
    }
    return 0;
}

/* A higher-is-better metric (an accuracy, F1) lies in [0, 1]: a target above 1 is
 * never reached, so the run would never stop early. An error (MAE, a loss) has no
 * upper bound: any target >= 0 is one it can reach. */
int qkv_trainer_check_target(const qkv_trainer_config *config) {
    if (config->target_key && !config->lower_is_better && config->target > 1.0f) {
        qkv_set_error("--target %g: %s is at most 1, so the run would never reach it (0: no target)",
                      (double)config->target, config->target_key);
        return -1;
    }
    return 0;
}
