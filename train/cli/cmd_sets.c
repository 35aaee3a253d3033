/* cmd_sets.c — `qkv train points` and `qkv train maxreg [--compare]`. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/error.h"
#include "core/fileio.h"
#include "core/json.h"
#include "train/cli/commands.h"
#include "train/dist.h"
#include "train/tasks/sets.h"
#include "train/cli/train_flags.h"

static const char *rotation_names[] = {"none", "so3", "z", NULL}; /* enum qkv_points_rotation */

/* Rows for the set model's shape, shared by both commands. */
static int model_args(qkv_arg *args, qkv_set_model_config *m, int *kind) {
    const qkv_arg rows[] = {
        QKV_ARG_CHOICE_ROW("--model", kind, qkv_set_model_kind_names, "set model"),
        QKV_ARG_INT_ROW("--width", &m->width, 1, 8192, "model width"),
        QKV_ARG_INT_ROW("--heads", &m->n_heads, 1, 1024, "attention heads"),
        QKV_ARG_INT_ROW("--layers", &m->n_layers, 1, QKV_SET_MODEL_MAX_LAYERS, "SAB/ISAB layers"),
        QKV_ARG_INT_ROW("--inducing", &m->n_inducing, 1, 4096, "ISAB inducing points"),
        QKV_ARG_INT_ROW("--layer-norm", &m->layer_norm, 0, 1, "layer norm inside every MAB: 1 on, 0 off"),
    };
    memcpy(args, rows, sizeof rows);
    return (int)(sizeof rows / sizeof rows[0]);
}

static int check_model(const char *command, const qkv_set_model_config *m) {
    if (m->width % m->n_heads != 0) {
        fprintf(stderr, "qkv %s: --heads %d does not divide --width %d\n", command, m->n_heads, m->width);
        return -1;
    }
    return 0;
}

int qkv_cmd_train_points(int argc, char **argv) {
    qkv_points_task_config config;
    qkv_points_task_default_config(&config);
    qkv_common_flags f = {0};
    f.trainer = (qkv_trainer_config){.steps = 1800, .eval_every = 600, .log_every = 100, .target_key = "test_acc",
                                     .target = 0.99f, .clip = 1.0f};
    f.trainer.optim.lr = 3e-3f;
    config.model.layer_norm = 1;
    f.optimizer = QKV_OPT_ADAM;
    f.schedule = QKV_SCHED_COSINE;
    f.warmup = 100;
    int kind = config.model.kind, seed = 1, classes = config.data.classes;
    qkv_arg args[QKV_MAX_ARGS];
    int n = qkv_common_args(args, &f);
    n += model_args(args + n, &config.model, &kind);
    const qkv_arg own[] = {
        QKV_ARG_INT_ROW("--points", &config.data.n_points, 1, 1 << 20, "points per cloud"),
        QKV_ARG_INT_ROW("--classes", &classes, 2, qkv_points_class_count_max(), "synthetic shape classes"),
        QKV_ARG_CHOICE_ROW("--rotate", &config.data.rotate, rotation_names, "random rotation of synthetic clouds"),
        QKV_ARG_STRING_ROW("--data", &config.data_dir, "a ModelNet directory: CLASS/train/*.off, CLASS/test/*.off"),
        QKV_ARG_FLAG_ROW("--skip-bad", &config.skip_bad, "skip (and count) malformed OFF files"),
        QKV_ARG_INT_ROW("--batch", &config.batch, 1, 1 << 20, "clouds per batch"),
        QKV_ARG_INT_ROW("--test-size", &config.test_size, 1, 1 << 24, "held-out synthetic clouds"),
        QKV_ARG_INT_ROW("--seed", &seed, 0, 2147483647, "seed for data, init and batches"),
    };
    memcpy(args + n, own, sizeof own);
    n += (int)(sizeof own / sizeof own[0]);
    int parsed = qkv_args_parse("train points", argc, argv, args, n);
    if (parsed != 0) return parsed > 0 ? 0 : 2;
    config.model.kind = (qkv_set_model_kind)kind;
    config.data.classes = classes;
    config.seed = (unsigned long long)seed;
    if (check_model("train points", &config.model) != 0) return 2;
    if (qkv_trainer_check_outputs(&f.trainer) != 0) {
        fprintf(stderr, "qkv train points: %s\n", qkv_last_error());
        return 2;
    }
    f.trainer.seed = config.seed;
    qkv_common_finish(&f);

    qkv_points_task task;
    int skipped = 0;
    char first_skipped[256] = "";
    if (qkv_points_task_init(&task, &config, &skipped, first_skipped, sizeof first_skipped) != 0) {
        fprintf(stderr, "qkv train points: %s\n", qkv_last_error());
        return 2;
    }
    if (skipped) printf("skipped %d bad files (first: %s)\n", skipped, first_skipped);
    if (!f.trainer.quiet)
        printf("points: %s, %d classes, %d points, %s width %d, %d heads, %zu parameters, %s lr %g, batch %d, "
               "%d steps, %d thread%s\n",
               config.data_dir ? config.data_dir : "synthetic shapes", task.config.model.n_outputs,
               config.data.n_points, qkv_set_model_kind_name(config.model.kind), config.model.width,
               config.model.n_heads, qkv_params_count(&task.params), qkv_opt_kind_name(f.trainer.optim.kind),
               f.trainer.optim.lr, config.batch, f.trainer.steps, f.threads, f.threads == 1 ? "" : "s");
    qkv_train_result result;
    int rc = qkv_train_exit(qkv_train(&f.trainer, &task.task, &result), "points", &result);
    qkv_points_task_free(&task);
    return rc;
}

/* ---- maxreg ----------------------------------------------------------------------------- */

/* The paper's test MAE (Lee et al. 2019, table 1), for --compare. */
static const struct { qkv_set_model_kind kind; const char *label; double paper; } baselines[] = {
    {QKV_SET_MODEL_DEEPSETS_MEAN, "rFF + mean pooling", 2.133},
    {QKV_SET_MODEL_DEEPSETS_SUM, "rFF + sum pooling", 1.902},
    {QKV_SET_MODEL_DEEPSETS_MAX, "rFF + max pooling", 0.1355},
    {QKV_SET_MODEL_SAB, "SAB + PMA", 0.2085},
};
#define N_BASELINES ((int)(sizeof baselines / sizeof baselines[0]))

static int run_maxreg(const qkv_maxreg_task_config *config, const qkv_trainer_config *trainer,
                      qkv_train_result *result) {
    qkv_maxreg_task task;
    qkv_maxreg_task_init(&task, config);
    int rc = qkv_train(trainer, &task.task, result);
    qkv_maxreg_task_free(&task);
    return rc;
}

static int write_compare_json(const char *path, const double *mae, const double *seconds) {
    qkv_json_out out = {0};
    qkv_json_out_text(&out, "{\"task\": \"maxreg\", \"models\": [");
    for (int i = 0; i < N_BASELINES; i++) {
        char numbers[160];
        qkv_json_out_text(&out, i ? ", {\"model\": " : "{\"model\": ");
        qkv_json_out_string(&out, qkv_set_model_kind_name(baselines[i].kind));
        snprintf(numbers, sizeof numbers, ", \"test_mae\": %.6g, \"paper_mae\": %.6g, \"seconds\": %.3f}", mae[i],
                 baselines[i].paper, seconds[i]);
        qkv_json_out_text(&out, numbers);
    }
    qkv_json_out_text(&out, "]}\n");
    int rc = out.failed ? -1 : qkv_write_file_atomic(path, out.data, out.len);
    qkv_json_out_free(&out);
    return rc;
}

static int compare_maxreg(const qkv_maxreg_task_config *base, qkv_trainer_config trainer) {
    const char *json_path = trainer.json_path;
    trainer.json_path = NULL;
    trainer.quiet = 1;
    double mae[N_BASELINES], seconds[N_BASELINES];
    for (int i = 0; i < N_BASELINES; i++) {
        qkv_maxreg_task_config config = *base;
        config.model.kind = baselines[i].kind;
        qkv_train_result result;
        if (run_maxreg(&config, &trainer, &result) != 0) {
            fprintf(stderr, "qkv: %s\n", qkv_last_error());
            return 2; /* even for a NaN/Inf stop: one of the four models failed */
        }
        const double *test_mae = qkv_metrics_get(&result.metrics, "test_mae");
        mae[i] = test_mae ? *test_mae : NAN;   /* MPI: only rank 0 evaluates */
        seconds[i] = result.seconds;
        printf("%-20s trained: test MAE %.4f in %.1f s\n", baselines[i].label, mae[i], seconds[i]);
        fflush(stdout);
    }
    printf("\nmax regression, %d steps of batch %d, test MAE (lower is better):\n", trainer.steps, base->batch);
    printf("%-20s | %10s | %10s\n", "model", "qkv", "paper");
    for (int i = 0; i < N_BASELINES; i++) printf("%-20s | %10.4f | %10.4f\n", baselines[i].label, mae[i], baselines[i].paper);
    printf("final: task=maxreg steps=%d mean_mae=%.4f sum_mae=%.4f max_mae=%.4f sab_pma_mae=%.4f\n", trainer.steps,
           mae[0], mae[1], mae[2], mae[3]);
    if (json_path && qkv_dist_rank() == 0 && write_compare_json(json_path, mae, seconds) != 0) {
        fprintf(stderr, "qkv: %s\n", qkv_last_error());
        return 2;
    }
    return 0;
}

int qkv_cmd_train_maxreg(int argc, char **argv) {
    qkv_maxreg_task_config config;
    qkv_maxreg_task_default_config(&config);
    qkv_common_flags f = {0};
    f.trainer = (qkv_trainer_config){.steps = 20000, .eval_every = 2000, .log_every = 1000, .target_key = "test_mae",
                                     .lower_is_better = 1};
    f.trainer.optim.lr = 1e-3f;
    f.optimizer = QKV_OPT_ADAM;
    f.schedule = QKV_SCHED_CONSTANT;
    int kind = config.model.kind, seed = 1, compare = 0;
    qkv_arg args[QKV_MAX_ARGS];
    int n = qkv_common_args(args, &f);
    n += model_args(args + n, &config.model, &kind);
    const qkv_arg own[] = {
        QKV_ARG_INT_ROW("--min-size", &config.data.min_size, 1, 1 << 20, "smallest set"),
        QKV_ARG_INT_ROW("--max-size", &config.data.max_size, 1, 1 << 20, "largest set"),
        QKV_ARG_INT_ROW("--batch", &config.batch, 1, 1 << 20, "sets per batch"),
        QKV_ARG_INT_ROW("--test-size", &config.test_size, 1, 1 << 24, "held-out sets"),
        QKV_ARG_INT_ROW("--seed", &seed, 0, 2147483647, "seed for data, init and batches"),
        QKV_ARG_FLAG_ROW("--compare", &compare, "train mean, sum, max pooling and SAB+PMA; print a table"),
    };
    memcpy(args + n, own, sizeof own);
    n += (int)(sizeof own / sizeof own[0]);
    int parsed = qkv_args_parse("train maxreg", argc, argv, args, n);
    if (parsed != 0) return parsed > 0 ? 0 : 2;
    config.model.kind = (qkv_set_model_kind)kind;
    config.seed = (unsigned long long)seed;
    if (check_model("train maxreg", &config.model) != 0) return 2;
    if (config.data.min_size > config.data.max_size) {
        fprintf(stderr, "qkv train maxreg: --min-size %d exceeds --max-size %d\n", config.data.min_size,
                config.data.max_size);
        return 2;
    }
    if (compare && (f.trainer.save_path || f.trainer.resume_path || f.trainer.csv_path)) {
        fputs("qkv train maxreg: --compare trains four models: --save, --resume and --csv do not apply\n", stderr);
        return 2;
    }
    if (qkv_trainer_check_outputs(&f.trainer) != 0) {
        fprintf(stderr, "qkv train maxreg: %s\n", qkv_last_error());
        return 2;
    }
    f.trainer.seed = config.seed;
    qkv_common_finish(&f);
    if (compare) return compare_maxreg(&config, f.trainer);
    if (!f.trainer.quiet)
        printf("maxreg: sets of %d..%d reals, %s width %d, %d heads, %s lr %g, batch %d, %d steps, %d thread%s\n",
               config.data.min_size, config.data.max_size, qkv_set_model_kind_name(config.model.kind),
               config.model.width, config.model.n_heads, qkv_opt_kind_name(f.trainer.optim.kind), f.trainer.optim.lr,
               config.batch, f.trainer.steps, f.threads, f.threads == 1 ? "" : "s");
    qkv_train_result result;
    return qkv_train_exit(run_maxreg(&config, &f.trainer, &result), "maxreg", &result);
}
