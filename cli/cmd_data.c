/* cmd_data.c — `qkv data detect`: writes a synthetic detection set (data/detect.h)
 * to a new or empty directory. */
#include <stdio.h>
#include <string.h>

#include "core/error.h"
#include "core/kernels/parallel.h"
#include "data/detect.h"
#include "cli/args.h"
#include "cli/commands.h"
#include "train/settings.h"

typedef struct detect_set_options {
    qkv_detect_config config;
    const char *out;
    int n, seed, threads;
} detect_set_options;

/* --size, --min-objects and --max-objects take qkv_detect_config_default()'s values. */
#define T detect_set_options
static const qkv_field detect_fields[] = {
    QKV_TEXT_FIELD("--out", NULL, T, out, NULL, "directory to write (created if missing; must be empty)"),
    QKV_INT_FIELD("--n", NULL, T, n, 1, 1000000, 0, "number of images"),
    QKV_INT_FIELD("--size", NULL, T, config.size, QKV_DETECT_MIN_SIZE, QKV_DETECT_MAX_SIZE, 0, "image side in pixels"),
    QKV_INT_FIELD("--min-objects", NULL, T, config.min_objects, 0, QKV_DETECT_MAX_GENERATED, 0, "fewest shapes per image"),
    QKV_INT_FIELD("--max-objects", NULL, T, config.max_objects, 0, QKV_DETECT_MAX_GENERATED, 0, "most shapes per image"),
    QKV_SETTING_FIELD_SAYING(QKV_FIELD_INT, QKV_SETTING_SEED, T, seed, 1, "seed: image i depends on (seed, i) only"),
    QKV_SETTING_FIELD(QKV_FIELD_INT, QKV_SETTING_THREADS, T, threads, 0),
};
#undef T

static int data_detect(int argc, char **argv);
static const qkv_command_spec detect_set = {
    "detect", "", 0, "synthetic shapes with boxes: --out DIR --n N (PNG files + annotations.txt)", detect_fields,
    sizeof detect_fields / sizeof *detect_fields, NULL, NULL, data_detect};

static int data_detect(int argc, char **argv) {
    detect_set_options o;
    qkv_fields_defaults(detect_fields, detect_set.n_fields, &o);
    o.config = qkv_detect_config_default();
    int parsed = qkv_command_parse(&detect_set, "data detect", argc, argv, &o);
    if (parsed != 0) return parsed > 0 ? 0 : 2;
    qkv_detect_config config = o.config;
    const char *out = o.out;
    int n = o.n, seed = o.seed, threads = o.threads;
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

/* The sets, in the order of the usage. */
static const qkv_command_spec *const sets[] = {&detect_set, NULL};

const qkv_command_spec qkv_command_data = {"data", "SET", 1, "write a data set:", NULL, 0, sets, "set", qkv_cmd_data};

int qkv_cmd_data(int argc, char **argv) { return qkv_command_dispatch(&qkv_command_data, argc, argv); }
