/* cmd_detect.c — `qkv train detect`, `qkv detect CKPT IMAGE` and the detection
 * branch of `qkv eval CKPT`.
 *
 * Data for training (train/tasks/detect_model.h has the model and the metrics):
 *   no --data      the synthetic set, generated in memory (data/detect.h):
 *                  --train images of seed --seed, --test images of another seed;
 *                  bitwise the pixels `qkv data detect` writes to PNG and the
 *                  loaders read back.
 *   --data DIR     DIR/train and DIR/test, each with its annotations.txt, when
 *                  DIR/train/annotations.txt exists (--train N keeps the first N
 *                  training images; the whole test directory is the test set);
 *                  otherwise DIR/annotations.txt, whose last --test images are the
 *                  test set and the others (or the first --train of them) train.
 * Images must be square and all of one size, which sets the model's.
 * `qkv eval` reloads the test set the same way from the checkpoint's config:
 * regenerated in memory (bitwise what the loader read: PNG round trips are exact)
 * or reread from the directory.
 */
#include <limits.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/alloc.h"
#include "core/error.h"
#include "core/parallel.h"
#include "data/image.h"
#include "train/viz/canvas.h"
#include "train/checkpoint.h"
#include "train/cli/commands.h"
#include "train/tasks/detect_model.h"
#include "train/cli/train_flags.h"

#define TEST_SEED_OFFSET 0x7e57ULL /* the generated test set's seed: seed ^ this */

/* ---- data ------------------------------------------------------------------------------- */

/* dst = images [first, first + n) of src (targets and pixels; no file names). */
static void take_range(const qkv_detect_set *src, int first, int n, qkv_detect_set *dst) {
    memset(dst, 0, sizeof *dst);
    int *idx = qkv_malloc((size_t)n * sizeof *idx, "detect data: image indices");
    dst->n = n;
    dst->height = src->height;
    dst->width = src->width;
    dst->pixels = qkv_malloc(qkv_size_mul((size_t)n * 3 * src->height * src->width, sizeof(float)), "detect data: pixels");
    dst->n_objects = qkv_malloc((size_t)n * sizeof(int32_t), "detect data: object counts");
    dst->classes = qkv_malloc((size_t)n * QKV_DETECT_MAX_OBJECTS * sizeof(int32_t), "detect data: classes");
    dst->boxes = qkv_malloc((size_t)n * QKV_DETECT_MAX_OBJECTS * 4 * sizeof(float), "detect data: boxes");
    for (int i = 0; i < n; i++) idx[i] = first + i;
    qkv_detect_batch(src, idx, n, dst->pixels, dst->n_objects, dst->classes, dst->boxes);
    free(idx);
}

static int is_file(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* Loads dir as the top of this file says; n_train 0 means all. train may be NULL
 * (only the test set is wanted). 0, or -1 with qkv_last_error(). */
static int load_dir(const char *dir, int n_train, int n_test, qkv_detect_set *train, qkv_detect_set *test) {
    char path[4096];
    qkv_detect_set all = {0}, rest = {0};
    snprintf(path, sizeof path, "%s/train/%s", dir, QKV_DETECT_ANNOTATIONS);
    if (is_file(path)) {
        snprintf(path, sizeof path, "%s/test", dir);
        if (qkv_detect_load(path, test) != 0) return -1;
        if (!train) return 0;
        snprintf(path, sizeof path, "%s/train", dir);
        if (qkv_detect_load(path, &rest) != 0) {
            qkv_detect_set_free(test);
            return -1;
        }
        if (rest.width != test->width || rest.height != test->height) {
            qkv_set_error("%s/train: %dx%d images, but %s/test holds %dx%d", dir, rest.width, rest.height, dir,
                          test->width, test->height);
            qkv_detect_set_free(&rest);
            qkv_detect_set_free(test);
            return -1;
        }
    } else {
        if (qkv_detect_load(dir, &all) != 0) return -1;
        if (all.n <= n_test) {
            qkv_set_error("%s: %d images; --test %d leaves none to train on", dir, all.n, n_test);
            qkv_detect_set_free(&all);
            return -1;
        }
        take_range(&all, all.n - n_test, n_test, test);
        if (train) take_range(&all, 0, all.n - n_test, &rest);
        qkv_detect_set_free(&all);
        if (!train) return 0;
    }
    if (n_train > 0 && n_train < rest.n) {
        take_range(&rest, 0, n_train, train);
        qkv_detect_set_free(&rest);
    } else {
        *train = rest;
    }
    return 0;
}

static int max_objects_of(const qkv_detect_set *set) {
    int most = 0;
    for (int i = 0; i < set->n; i++) most = set->n_objects[i] > most ? set->n_objects[i] : most;
    return most;
}

/* ---- qkv train detect --------------------------------------------------------------------- */

int qkv_cmd_train_detect(int argc, char **argv) {
    qkv_detect_task_config config = {0};
    qkv_detect_model_default_config(&config.model);
    qkv_detect_config data = qkv_detect_config_default();
    config.batch = 32;
    config.flip = 1;
    config.eos_coef = 0.3f; /* DETR's 0.1 is for 100 queries; with 8, 0.3 reaches F1 0.9 in 3/4 of the steps */
    config.n_train = 8000;
    config.n_test = 500;
    qkv_common_flags f = {0};
    f.trainer = (qkv_trainer_config){.steps = 7000, .eval_every = 500, .log_every = 100, .target_key = "f1",
                                     .target = 0.9f, .clip = 0.1f};
    /* Constant 1e-3 (as DETR): F1 0.9 at step 4000 (seed 1) and 5000 (seed 2). 2e-3 with
     * warmup and cosine decay was faster for seeds 1 and 3 (3000, 2500) but never got
     * there for seed 2 (0.85 at 6000). */
    f.trainer.optim.lr = 1e-3f;
    f.optimizer = QKV_OPT_ADAMW;
    f.weight_decay = 1e-4f;
    f.schedule = QKV_SCHED_CONSTANT;
    f.warmup = 0;
    const char *data_dir = NULL;
    int seed = 1;
    qkv_arg args[QKV_MAX_ARGS];
    int n = qkv_common_args(args, &f);
    const qkv_arg own[] = {
        QKV_ARG_STRING_ROW("--data", &data_dir,
                           "a detection set: DIR/train + DIR/test, or DIR whose last --test images are held out"),
        QKV_ARG_INT_ROW("--train", &config.n_train, 0, 10000000,
                        "training images to generate (with --data: use the first N; 0: all)"),
        QKV_ARG_INT_ROW("--test", &config.n_test, 1, 1000000, "held-out images"),
        QKV_ARG_INT_ROW("--size", &data.size, QKV_DETECT_MIN_SIZE, QKV_DETECT_MAX_SIZE, "generated image side in pixels"),
        QKV_ARG_INT_ROW("--min-objects", &data.min_objects, 0, QKV_DETECT_MAX_GENERATED,
                        "generated: fewest shapes per image"),
        QKV_ARG_INT_ROW("--max-objects", &data.max_objects, 0, QKV_DETECT_MAX_GENERATED,
                        "generated: most shapes per image"),
        QKV_ARG_INT_ROW("--patch", &config.model.patch, 1, QKV_DETECT_MAX_SIZE, "patch side in pixels"),
        QKV_ARG_INT_ROW("--width", &config.model.width, 4, 8192, "model width"),
        QKV_ARG_INT_ROW("--heads", &config.model.heads, 1, 1024, "attention heads"),
        QKV_ARG_INT_ROW("--ff", &config.model.ff, 1, 65536, "feed-forward width"),
        QKV_ARG_INT_ROW("--enc-layers", &config.model.enc_layers, 0, 64, "encoder layers"),
        QKV_ARG_INT_ROW("--dec-layers", &config.model.dec_layers, 1, QKV_DETR_MAX_LAYERS, "decoder layers"),
        QKV_ARG_INT_ROW("--queries", &config.model.queries, 1, 4096, "object queries"),
        QKV_ARG_FLOAT_ROW("--dropout", &config.model.dropout, 0, 0.99, "residual dropout"),
        QKV_ARG_INT_ROW("--batch", &config.batch, 1, 1 << 16, "images per batch"),
        QKV_ARG_FLOAT_ROW("--eos-coef", &config.eos_coef, 0, 1, "set loss: weight of the no-object class"),
        QKV_ARG_INT_ROW("--flip", &config.flip, 0, 1, "random left-right flips of training images: 1 on, 0 off"),
        QKV_ARG_INT_ROW("--seed", &seed, 0, 2147483647, "seed for data, init and batches"),
    };
    memcpy(args + n, own, sizeof own);
    n += (int)(sizeof own / sizeof own[0]);
    int parsed = qkv_args_parse("train detect", argc, argv, args, n);
    if (parsed != 0) return parsed > 0 ? 0 : 2;
    config.seed = (unsigned long long)seed;
    if (data.min_objects > data.max_objects) {
        fprintf(stderr, "qkv train detect: --min-objects %d is more than --max-objects %d\n", data.min_objects,
                data.max_objects);
        return 2;
    }
    if (!data_dir && config.n_train < 1) {
        fputs("qkv train detect: --train 0 needs --data (it means all of the directory's images)\n", stderr);
        return 2;
    }
    if (!data_dir && data.max_objects > config.model.queries) {
        fprintf(stderr, "qkv train detect: --max-objects %d is more than --queries %d (one query per object)\n",
                data.max_objects, config.model.queries);
        return 2;
    }
    if (qkv_trainer_check_outputs(&f.trainer) != 0) {
        fprintf(stderr, "qkv train detect: %s\n", qkv_last_error());
        return 2;
    }
    f.trainer.seed = config.seed;
    qkv_common_finish(&f);

    qkv_detect_set train = {0}, test = {0};
    double data_start = omp_get_wtime();
    if (!data_dir) { /* the same pixels `qkv data detect` writes: PNG round trips are exact */
        qkv_detect_generate(&data, config.seed, 0, config.n_train, &train);
        qkv_detect_generate(&data, config.seed ^ TEST_SEED_OFFSET, 0, config.n_test, &test);
    } else if (load_dir(data_dir, config.n_train, config.n_test, &train, &test) != 0) {
        fprintf(stderr, "qkv train detect: %s\n", qkv_last_error());
        return 2;
    }
    config.model.image_size = test.width;
    /* The directory's absolute path, so that eval finds it from any directory
     * (and a directory called "generated" is not taken for a generated set). */
    char absolute[PATH_MAX];
    snprintf(config.data, sizeof config.data, "%s",
             !data_dir ? "generated" : realpath(data_dir, absolute) ? absolute : data_dir);
    config.n_train = train.n;
    config.n_test = test.n;
    config.min_objects = data_dir ? 0 : data.min_objects;
    config.max_objects = data_dir ? max_objects_of(&train) : data.max_objects;
    const char *problem = NULL;
    if (test.width != test.height) problem = "images must be square";
    else if (qkv_detect_model_check(&config.model) != 0) problem = qkv_last_error();
    else if (max_objects_of(&train) > config.model.queries) problem = "an image has more objects than --queries";
    if (problem) {
        fprintf(stderr, "qkv train detect: %s (%dx%d images, up to %d objects): %s\n", config.data, test.width,
                test.height, max_objects_of(&train), problem);
        qkv_detect_set_free(&train);
        qkv_detect_set_free(&test);
        return 2;
    }
    qkv_detect_task task;
    qkv_detect_task_init(&task, &config, &train, &test);
    if (!f.trainer.quiet)
        printf("detect: %s, %d train / %d test images of %dx%d (%s in %.1f s), patch %d, width %d, %d heads, ff %d, "
               "%d+%d layers, %d queries, %zu parameters, %s lr %g, clip %g, batch %d, %d steps, %d thread%s\n",
               config.data, config.n_train, config.n_test, config.model.image_size, config.model.image_size,
               data_dir ? "loaded" : "generated", omp_get_wtime() - data_start, config.model.patch,
               config.model.width, config.model.heads, config.model.ff,
               config.model.enc_layers, config.model.dec_layers, config.model.queries,
               qkv_params_count(&task.model.params), qkv_opt_kind_name(f.trainer.optim.kind), f.trainer.optim.lr,
               f.trainer.clip, config.batch, f.trainer.steps, f.threads, f.threads == 1 ? "" : "s");
    qkv_train_result result;
    int rc = qkv_train_exit(qkv_train(&f.trainer, &task.task, &result), "detect", &result);
    qkv_detect_task_free(&task);
    return rc;
}

/* ---- qkv eval CKPT (a detect checkpoint) ---------------------------------------------------- */

int qkv_eval_detect(const char *path, const qkv_config_kv *description, const char *data_dir) {
    qkv_detect_task_config config = {0};
    long long n_train, n_test, seed, min_objects, max_objects, batch, flip;
    if (qkv_detect_model_config_from(description, &config.model) != 0 ||
        qkv_config_get_int(description, "train", 1, 1000000, &n_train) ||
        qkv_config_get_int(description, "test", 1, 1000000, &n_test) ||
        qkv_config_get_int(description, "seed", 0, 0x7fffffffffffffffLL, &seed) ||
        qkv_config_get_int(description, "min_objects", 0, QKV_DETECT_MAX_OBJECTS, &min_objects) ||
        qkv_config_get_int(description, "max_objects", 0, QKV_DETECT_MAX_OBJECTS, &max_objects) ||
        qkv_config_get_int(description, "batch", 1, 1 << 20, &batch) ||
        qkv_config_get_int(description, "flip", 0, 1, &flip)) {
        fprintf(stderr, "qkv eval: %s: %s\n", path, qkv_last_error());
        return 2;
    }
    const char *data = data_dir ? data_dir : qkv_config_get(description, "data");
    snprintf(config.data, sizeof config.data, "%s", data ? data : "");
    config.n_train = (int)n_train;
    config.n_test = (int)n_test;
    config.seed = (unsigned long long)seed;
    config.batch = (int)batch;
    config.flip = (int)flip;
    qkv_detect_set train = {0}, test = {0};
    if (!data_dir && strcmp(config.data, "generated") == 0) {
        qkv_detect_config gen = {config.model.image_size, (int)min_objects, (int)max_objects};
        if (min_objects > max_objects || max_objects > QKV_DETECT_MAX_GENERATED) {
            fprintf(stderr, "qkv eval: %s: a generated set's config is out of range\n", path);
            return 2;
        }
        qkv_detect_generate(&gen, config.seed ^ TEST_SEED_OFFSET, 0, (int)n_test, &test);
    } else if (load_dir(config.data, 0, (int)n_test, NULL, &test) != 0) {
        fprintf(stderr, "qkv eval: %s: its data: %s\n", path, qkv_last_error());
        return 2;
    }
    if (test.width != config.model.image_size || test.height != config.model.image_size) {
        fprintf(stderr, "qkv eval: %s: %s holds %dx%d images, the model takes %dx%d\n", path, config.data,
                test.width, test.height, config.model.image_size, config.model.image_size);
        qkv_detect_set_free(&test);
        return 2;
    }
    qkv_detect_task task;
    qkv_detect_task_init(&task, &config, &train, &test);
    long step = 0;
    int rc = 2;
    if (qkv_checkpoint_load(path, &task.model.params, NULL, &step, NULL) != 0) {
        fprintf(stderr, "qkv eval: %s\n", qkv_last_error());
    } else {
        qkv_tape *tape = qkv_tape_create(config.seed);
        qkv_tape_set_grad(tape, 0);
        qkv_tape_set_training(tape, 0);
        qkv_metrics metrics = {0};
        task.task.evaluate(&task, tape, &metrics);
        printf("final: task=detect checkpoint_step=%ld", step);
        for (int i = 0; i < metrics.n; i++) printf(" %s=%.4f", metrics.key[i], metrics.value[i]);
        putchar('\n');
        qkv_tape_free(tape);
        rc = 0;
    }
    qkv_detect_task_free(&task);
    return rc;
}

/* ---- qkv detect CKPT IMAGE ------------------------------------------------------------------ */

/* The image scaled up (nearest pixel) with each detection's box and label. */
static int draw_detections(const char *out, const qkv_tensor *image, const qkv_detection *det, int n, int scale) {
    int h = image->shape[1], w = image->shape[2];
    qkv_canvas canvas;
    if (qkv_canvas_init(&canvas, w * scale, h * scale, (qkv_rgb){0, 0, 0}) != 0) return -1;
    for (int y = 0; y < h * scale; y++)
        for (int x = 0; x < w * scale; x++) {
            size_t at = (size_t)(y / scale) * w + (size_t)(x / scale), plane = (size_t)h * w;
            qkv_rgb c = {qkv_image_byte(image->data[at]), qkv_image_byte(image->data[plane + at]),
                         qkv_image_byte(image->data[2 * plane + at])};
            qkv_canvas_pixel(&canvas, x, y, c);
        }
    for (int i = n - 1; i >= 0; i--) { /* the best-scoring box drawn last, on top */
        qkv_rgb color = qkv_palette(det[i].cls);
        int x0 = (int)((det[i].box[0] - det[i].box[2] / 2) * w * scale + 0.5f);
        int y0 = (int)((det[i].box[1] - det[i].box[3] / 2) * h * scale + 0.5f);
        int bw = (int)(det[i].box[2] * w * scale + 0.5f), bh = (int)(det[i].box[3] * h * scale + 0.5f);
        qkv_canvas_rect(&canvas, x0, y0, bw, bh, color);
        qkv_canvas_rect(&canvas, x0 + 1, y0 + 1, bw - 2, bh - 2, color);
        char label[48];
        snprintf(label, sizeof label, "%s %.2f", qkv_detect_class_names[det[i].cls], det[i].score);
        int ty = y0 >= QKV_FONT_H + 1 ? y0 - QKV_FONT_H - 1 : y0 + 2, tw = qkv_text_width(label, 1) + 2;
        int tx = x0 + tw > w * scale ? w * scale - tw : x0; /* keep the label inside the picture */
        tx = tx < 0 ? 0 : tx;
        qkv_canvas_fill_rect(&canvas, tx, ty, tw, QKV_FONT_H, color);
        qkv_canvas_text(&canvas, tx + 1, ty, label, (qkv_rgb){255, 255, 255}, 1);
    }
    int rc = qkv_canvas_write_png(&canvas, out);
    qkv_canvas_free(&canvas);
    return rc;
}

int qkv_cmd_detect(int argc, char **argv) {
    const char *out = NULL;
    float threshold = 0.5f;
    int scale = 8, threads = 0;
    const qkv_arg args[] = {
        QKV_ARG_STRING_ROW("--out", &out, "write the image with the predicted boxes here (PNG)"),
        QKV_ARG_FLOAT_ROW("--threshold", &threshold, 0, 1, "keep queries whose no-object probability is below this"),
        QKV_ARG_INT_ROW("--scale", &scale, 1, 64, "the drawing's pixels per image pixel"),
        QKV_ARG_INT_ROW("--threads", &threads, 0, 1024, QKV_THREADS_HELP),
    };
    if (argc >= 1 && strcmp(argv[0], "--help") == 0) {
        puts("usage: qkv detect CHECKPOINT IMAGE [--out boxes.png] [--threshold 0.5] [--scale 8] [--threads N]: predicted boxes "
             "of a `qkv train detect` model");
        return qkv_args_parse("detect", argc, argv, args, 4) > 0 ? 0 : 2;
    }
    if (argc < 2 || argv[0][0] == '-' || argv[1][0] == '-') {
        fputs("qkv detect: name a checkpoint and an image: qkv detect CHECKPOINT IMAGE [--out boxes.png]\n", stderr);
        return 2;
    }
    int parsed = qkv_args_parse("detect", argc - 2, argv + 2, args, 4);
    if (parsed != 0) return parsed > 0 ? 0 : 2;
    if (out && qkv_check_output_path(out) != 0) {
        fprintf(stderr, "qkv detect: --out %s\n", qkv_last_error());
        return 2;
    }
    qkv_set_threads(threads);
    qkv_config_kv description;
    qkv_detect_model_config mc;
    if (qkv_checkpoint_read_config(argv[0], &description) != 0) {
        fprintf(stderr, "qkv detect: %s\n", qkv_last_error());
        return 2;
    }
    const char *task = qkv_config_get(&description, "task");
    if (!task || strcmp(task, "detect") != 0) {
        fprintf(stderr, "qkv detect: %s: a %.20s checkpoint, not one of qkv train detect\n", argv[0],
                task ? task : "task-less");
        return 2;
    }
    if (qkv_detect_model_config_from(&description, &mc) != 0) {
        fprintf(stderr, "qkv detect: %s: %s\n", argv[0], qkv_last_error());
        return 2;
    }
    qkv_tensor *image = qkv_image_load(argv[1], 3);
    if (!image) {
        fprintf(stderr, "qkv detect: %s\n", qkv_last_error());
        return 2;
    }
    if (image->shape[1] != mc.image_size || image->shape[2] != mc.image_size) {
        fprintf(stderr, "qkv detect: %s: %dx%d pixels, but the model takes %dx%d images\n", argv[1],
                image->shape[2], image->shape[1], mc.image_size, mc.image_size);
        qkv_tensor_free(image);
        return 2;
    }
    qkv_detect_model model;
    qkv_detect_model_init(&model, &mc, 0);
    int rc = 2;
    if (qkv_checkpoint_load(argv[0], &model.params, NULL, NULL, NULL) != 0) {
        fprintf(stderr, "qkv detect: %s\n", qkv_last_error());
    } else {
        qkv_tape *tape = qkv_tape_create(0);
        qkv_tape_set_grad(tape, 0);
        qkv_tape_set_training(tape, 0);
        int s = mc.image_size;
        qkv_detr_out o = qkv_detect_model_forward(tape, &model, qkv_tape_view(tape, 4, (int[]){1, 3, s, s}, image->data));
        qkv_detection *det = qkv_malloc((size_t)mc.queries * sizeof *det, "detect: decoded boxes");
        int n = qkv_detect_decode(o.logits[o.n_layers - 1]->data, o.boxes[o.n_layers - 1]->data, mc.queries,
                                  QKV_DETECT_CLASSES, threshold, det);
        printf("%s: %d box%s (pixels)\n%-8s  %5s  %6s %6s %6s %6s\n", argv[1], n, n == 1 ? "" : "es", "class",
               "score", "cx", "cy", "w", "h");
        for (int i = 0; i < n; i++)
            printf("%-8s  %5.3f  %6.2f %6.2f %6.2f %6.2f\n", qkv_detect_class_names[det[i].cls], det[i].score,
                   det[i].box[0] * s, det[i].box[1] * s, det[i].box[2] * s, det[i].box[3] * s);
        rc = 0;
        if (out && draw_detections(out, image, det, n, scale) != 0) {
            fprintf(stderr, "qkv detect: %s\n", qkv_last_error());
            rc = 2;
        } else if (out) {
            printf("wrote %s (%dx%d)\n", out, s * scale, s * scale);
        }
        free(det);
        qkv_tape_free(tape);
    }
    qkv_detect_model_free(&model);
    qkv_tensor_free(image);
    return rc;
}
