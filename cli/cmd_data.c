/* cmd_data.c — `qkv data detect`: writes a synthetic detection set (data/detect.h)
 * to a new or empty directory. */
#include <stdio.h>
#include <string.h>

#include "core/error.h"
#include "core/kernels/parallel.h"
#include "data/detect.h"
#include "cli/args.h"
#include "cli/commands.h"
#include "cli/suggest.h"

static int data_detect(int argc, char **argv) {
    qkv_detect_config config = qkv_detect_config_default();
    const char *out = NULL;
    int n = 0, seed = 1, threads = 0;
    const qkv_arg args[] = {
        QKV_ARG_STRING_ROW("--out", &out, "directory to write (created if missing; must be empty)"),
        QKV_ARG_INT_ROW("--n", &n, 1, 1000000, "number of images"),
        QKV_ARG_INT_ROW("--size", &config.size, QKV_DETECT_MIN_SIZE, QKV_DETECT_MAX_SIZE, "image side in pixels"),
        QKV_ARG_INT_ROW("--min-objects", &config.min_objects, 0, QKV_DETECT_MAX_GENERATED, "fewest shapes per image"),
        QKV_ARG_INT_ROW("--max-objects", &config.max_objects, 0, QKV_DETECT_MAX_GENERATED, "most shapes per image"),
        QKV_ARG_INT_ROW("--seed", &seed, 0, 2147483647, "seed: image i depends on (seed, i) only"),
        QKV_ARG_INT_ROW("--threads", &threads, 0, 1024, QKV_THREADS_HELP),
    };
    int parsed = qkv_args_parse("data detect", argc, argv, args, (int)(sizeof args / sizeof args[0]));
    if (parsed != 0) return parsed > 0 ? 0 : 2;
    qkv_set_threads(threads);
    if (!out || !*out || n == 0) {
        fprintf(stderr, "qkv data detect: %s is required\n", !out || !*out ? "--out DIR" : "--n N");
        return 2;
    }
    if (config.min_objects > config.max_objects) {
        fprintf(stderr, "qkv data detect: --min-objects %d is more than --max-objects %d\n", config.min_objects,
                config.max_objects);
        return 2;
    }
    if (qkv_detect_check_out(out) != 0) { /* a path that cannot work: an input error, before any image */
        fprintf(stderr, "qkv data detect: %s\n", qkv_last_error());
        return 2;
    }
    if (qkv_detect_write(out, &config, (uint64_t)seed, n) != 0) { /* a failure while writing (a full disk): input, exit 2 */
        fprintf(stderr, "qkv data detect: %s\n", qkv_last_error());
        return 2;
    }
    printf("wrote %d images of %dx%d (%d to %d shapes: square, disk, triangle; seed %d) to %s/img_*.png, "
           "boxes in %s/%s\n",
           n, config.size, config.size, config.min_objects, config.max_objects, seed, out, out, QKV_DETECT_ANNOTATIONS);
    return 0;
}

int qkv_cmd_data(int argc, char **argv) {
    if (argc < 1 || strcmp(argv[0], "--help") == 0) {
        fputs("usage: qkv data <set> [flags]   (qkv data <set> --help lists the flags)\n"
              "sets: detect (synthetic shapes with boxes: PNG files + annotations.txt)\n",
              argc < 1 ? stderr : stdout);
        return argc < 1 ? 2 : 0;
    }
    if (strcmp(argv[0], "detect") == 0) return data_detect(argc - 1, argv + 1);
    static const char *const sets[] = {"detect", NULL};
    char hint[96];
    fprintf(stderr, "qkv data: unknown set '%s' (%sknown: detect)\n", argv[0],
            qkv_suggest_among(argv[0], sets, hint, sizeof hint));
    return 2;
}
