/* cmd_detect.c — `qkv detect CKPT IMAGE`: the boxes a `qkv train detect` model
 * (train/tasks/detect.h) predicts on one image, printed and drawn. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "core/kernels/parallel.h"
#include "data/image.h"
#include "train/viz/canvas.h"
#include "train/checkpoint.h"
#include "cli/args.h"
#include "cli/commands.h"
#include "train/tasks/detect.h"
#include "train/tasks/registry.h"
#include "train/settings.h"

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

/* IMAGE as a [3, S, S] tensor for a model of S x S images: the tensor, or NULL with
 * qkv_last_error(). */
static qkv_tensor *load_image_for(const char *path, int size) {
    qkv_tensor *image = qkv_image_load(path, 3);
    if (image && (image->shape[1] != size || image->shape[2] != size)) {
        qkv_set_error("%s: %dx%d pixels, but the model takes %dx%d images", path, image->shape[2], image->shape[1],
                      size, size);
        qkv_tensor_free(image);
        return NULL;
    }
    return image;
}

/* The last decoder layer's detections for one image (det holds `queries` entries); how many. */
static int predict(const qkv_detect_model *model, const qkv_tensor *image, float threshold, qkv_detection *det) {
    qkv_tape *tape = qkv_tape_create_inference(0);
    int s = model->cfg.image_size;
    qkv_detr_out o = qkv_detect_model_forward(tape, model, qkv_tape_view(tape, 4, (int[]){1, 3, s, s}, image->data));
    int n = qkv_detect_decode(o.logits[o.n_layers - 1]->data, o.boxes[o.n_layers - 1]->data, model->cfg.queries,
                              QKV_DETECT_CLASSES, threshold, det);
    qkv_tape_free(tape);
    return n;
}

static void print_detections(const char *image_path, const qkv_detection *det, int n, int s) {
    printf("%s: %d box%s (pixels)\n%-8s  %5s  %6s %6s %6s %6s\n", image_path, n, n == 1 ? "" : "es", "class", "score",
           "cx", "cy", "w", "h");
    for (int i = 0; i < n; i++)
        printf("%-8s  %5.3f  %6.2f %6.2f %6.2f %6.2f\n", qkv_detect_class_names[det[i].cls], det[i].score,
               det[i].box[0] * s, det[i].box[1] * s, det[i].box[2] * s, det[i].box[3] * s);
}

/* Predicts, prints and draws (out, if not NULL): 0, or -1 with qkv_last_error(). */
static int detect_image(const char *path, const char *image_path, const char *out, float threshold, int scale) {
    qkv_task_checkpoint ckpt;
    if (qkv_task_checkpoint_open(path, NULL, &ckpt) != 0) return -1;
    if (qkv_task_checkpoint_of(&ckpt, &qkv_task_kind_detect, "detect") != 0) {
        qkv_task_checkpoint_close(&ckpt);
        return -1;
    }
    qkv_detect_model_config mc = ((const qkv_detect_task_config *)ckpt.config)->model;
    qkv_tensor *image = load_image_for(image_path, mc.image_size);
    int rc = -1;
    if (image) {
        qkv_detect_model model;
        qkv_detect_model_init(&model, &mc, 0);
        rc = qkv_checkpoint_restore(&ckpt.file, &model.params, NULL, NULL, NULL);
        if (rc == 0) {
            qkv_detection *det = qkv_malloc((size_t)mc.queries * sizeof *det, "detect: decoded boxes");
            int n = predict(&model, image, threshold, det);
            print_detections(image_path, det, n, mc.image_size);
            if (out && (rc = draw_detections(out, image, det, n, scale)) == 0)
                printf("wrote %s (%dx%d)\n", out, mc.image_size * scale, mc.image_size * scale);
            free(det);
        }
        qkv_detect_model_free(&model);
        qkv_tensor_free(image);
    }
    qkv_task_checkpoint_close(&ckpt);
    return rc;
}

typedef struct detect_options {
    const char *out;
    float threshold;
    int scale, threads;
} detect_options;

#define T detect_options
static const qkv_field fields[] = {
    QKV_TEXT_FIELD("--out", NULL, T, out, NULL, "write the image with the predicted boxes here (PNG)"),
    QKV_FLOAT_FIELD("--threshold", NULL, T, threshold, 0, 1, 0.5, "keep queries whose no-object probability is below this"),
    QKV_INT_FIELD("--scale", NULL, T, scale, 1, 64, 8, "the drawing's pixels per image pixel"),
    QKV_SETTING_FIELD(QKV_FIELD_INT, QKV_SETTING_THREADS, T, threads, 0),
};
#undef T

const qkv_command_spec qkv_command_detect = {
    "detect", "CKPT IMG", 2, "print and draw (--out boxes.png) the boxes a detect checkpoint predicts", fields,
    sizeof fields / sizeof *fields, NULL, NULL, qkv_cmd_detect};

int qkv_cmd_detect(int argc, char **argv) {
    detect_options o;
    qkv_fields_defaults(fields, qkv_command_detect.n_fields, &o);
    int parsed = qkv_command_parse(&qkv_command_detect, "detect", argc, argv, &o);
    if (parsed != 0) return parsed > 0 ? 0 : 2;
    const char *out = o.out;
    float threshold = o.threshold;
    int scale = o.scale, threads = o.threads;
    if (out && qkv_check_png_path(out) != 0) {
        fprintf(stderr, "qkv detect: --out %s\n", qkv_last_error());
        return 2;
    }
    qkv_set_threads(threads);
    if (detect_image(argv[0], argv[1], out, threshold, scale) != 0) {
        fprintf(stderr, "qkv detect: %s\n", qkv_last_error());
        return 2;
    }
    return 0;
}
