/* cmd_train.c — `qkv train <task> [flags]` and `qkv eval CKPT`.
 *
 * Every train command shares the trainer's flags (steps, optimizer, schedule,
 * evaluation, output files, checkpoints, threads); each task adds its own. Flags
 * are all checked before anything runs: a bad one prints one line naming it and
 * the allowed values, exits 2, and writes nothing.
 */
#include <stdio.h>
#include <string.h>

#include "core/error.h"
#include "core/parallel.h"
#include "train/cli/args.h"
#include "train/checkpoint.h"
#include "train/cli/commands.h"
#include "train/cli/train_flags.h"
#include "train/tasks/sequence.h"
#include "train/tasks/spirals.h"

/* ---- sequence tasks ------------------------------------------------------------------ */

static int train_sequence(const char *name, int argc, char **argv) {
    qkv_seq_model_config config;
    qkv_seq_model_default_config(&config);
    config.data.task = (qkv_seq_task)qkv_seq_task_parse(name);
    qkv_common_flags f = {0};
    /* lr 0.02 and an evaluation every 50 steps: the reversal demo reaches the target
     * in 350 steps for seeds 1..6 (at 3e-3: 800-950, stopping at 1000); see
     * docs/performance.md. An evaluation costs about what a few training steps do. */
    f.trainer = (qkv_trainer_config){.steps = 3000, .eval_every = 50, .log_every = 100, .target_key = "seq_acc",
                                     .target = 0.998, .clip = 1.0f};
    f.trainer.optim.lr = 0.02f;
    f.optimizer = QKV_OPT_ADAMW;
    f.weight_decay = 0.01f;
    f.schedule = QKV_SCHED_COSINE;
    f.warmup = 100;
    int task = config.data.task, arch = config.data.arch, pos = config.pos, len = 0, seed = 1, epochs = 0;
    qkv_arg args[QKV_MAX_ARGS];
    int n = qkv_common_args(args, &f);
    const qkv_arg own[] = {
        QKV_ARG_CHOICE_ROW("--task", &task, qkv_seq_task_names, "what to learn"),
        QKV_ARG_CHOICE_ROW("--arch", &arch, qkv_seq_arch_names, "model"),
        QKV_ARG_CHOICE_ROW("--pos", &pos, qkv_pos_kind_names, "position scheme"),
        QKV_ARG_INT_ROW("--len", &len, 1, 4096, "sequence length (sets --min-len and --max-len)"),
        QKV_ARG_INT_ROW("--min-len", &config.data.min_len, 1, 4096, "shortest sequence"),
        QKV_ARG_INT_ROW("--max-len", &config.data.max_len, 1, 4096, "longest sequence"),
        QKV_ARG_INT_ROW("--vocab", &config.data.vocab, 2, 100000, "number of symbols"),
        QKV_ARG_INT_ROW("--layers", &config.layers, 1, 64, "layers per stack"),
        QKV_ARG_INT_ROW("--heads", &config.heads, 1, 1024, "attention heads"),
        QKV_ARG_INT_ROW("--dim", &config.dim, 1, 8192, "model width"),
        QKV_ARG_INT_ROW("--ff", &config.ff, 1, 65536, "feed-forward width"),
        QKV_ARG_INT_ROW("--max-pos", &config.max_pos, 0, 1e6, "rows of a learned position table; 0: the longest stream"),
        QKV_ARG_FLOAT_ROW("--dropout", &config.dropout, 0, 0.99, "residual dropout"),
        QKV_ARG_INT_ROW("--batch", &config.batch, 1, 1e6, "batch size"),
        QKV_ARG_INT_ROW("--test-size", &config.test_size, 1, 1e7, "held-out sequences"),
        QKV_ARG_INT_ROW("--train-size", &config.train_size, 0, 1e9, "fixed training set size; 0: fresh data every step"),
        QKV_ARG_INT_ROW("--epochs", &epochs, 0, 1e6, "with --train-size: passes over it (sets --steps)"),
        QKV_ARG_INT_ROW("--seed", &seed, 0, 2147483647, "seed for data, init and dropout"),
    };
    memcpy(args + n, own, sizeof own);
    n += (int)(sizeof own / sizeof own[0]);
    char command[32];
    snprintf(command, sizeof command, "train %s", name);
    int parsed = qkv_args_parse(command, argc, argv, args, n);
    if (parsed != 0) return parsed > 0 ? 0 : 2;

    config.data.task = (qkv_seq_task)task;
    config.data.arch = (qkv_seq_arch)arch;
    config.pos = (qkv_pos_kind)pos;
    config.seed = (unsigned long long)seed;
    if (len) config.data.min_len = config.data.max_len = len;
    if (epochs) {
        if (!config.train_size) {
            fprintf(stderr, "qkv %s: --epochs needs --train-size\n", command);
            return 2;
        }
        long long steps = ((long long)epochs * config.train_size + config.batch - 1) / config.batch;
        if (steps > 1000000000LL) {
            fprintf(stderr, "qkv %s: --epochs %d x --train-size %d / --batch %d is %lld steps (at most 1e9)\n",
                    command, epochs, config.train_size, config.batch, steps);
            return 2;
        }
        f.trainer.steps = (int)steps;
    }
    if (qkv_seq_model_check(&config) != 0) {
        fprintf(stderr, "qkv %s: %s\n", command, qkv_last_error());
        return 2;
    }
    f.trainer.seed = config.seed;
    qkv_common_finish(&f);

    qkv_seq_model model;
    qkv_seq_model_init(&model, &config);
    if (!f.trainer.quiet)
        printf("%s: %s, %s positions, %d layers x %d heads, dim %d, %zu parameters, %s lr %g, batch %d, "
               "%d steps, %d thread%s\n",
               qkv_seq_task_name(config.data.task), qkv_seq_arch_name(config.data.arch), qkv_pos_kind_name(config.pos),
               config.layers, config.heads, config.dim, qkv_params_count(&model.params),
               qkv_opt_kind_name(f.trainer.optim.kind), f.trainer.optim.lr, config.batch, f.trainer.steps, f.threads, f.threads == 1 ? "" : "s");
    qkv_train_result result;
    int rc = qkv_train_exit(qkv_train(&f.trainer, &model.task, &result), model.task.name, &result);
    qkv_seq_model_free(&model);
    return rc;
}

/* ---- spirals (the MLP demo) ----------------------------------------------------------- */

int qkv_cmd_train_spirals(int argc, char **argv) {
    qkv_spirals_config config;
    qkv_spirals_default_config(&config);
    qkv_common_flags f = {0};
    f.trainer = (qkv_trainer_config){.steps = 2000, .log_every = 200, .target_key = "test_acc"};
    f.trainer.optim.lr = 0.1f;
    f.trainer.optim.momentum = 0.9f;
    f.optimizer = QKV_OPT_SGD;
    f.schedule = QKV_SCHED_CONSTANT;
    qkv_arg args[QKV_MAX_ARGS];
    int n = qkv_common_args(args, &f);
    const qkv_arg own[] = {
        QKV_ARG_INT_ROW("--batch", &config.batch, 1, 65536, "minibatch size"),
        QKV_ARG_INT_ROW("--hidden", &config.hidden, 1, 4096, "hidden width of the 3-layer MLP"),
        QKV_ARG_INT_ROW("--points", &config.n_per_class, 2, 1e6, "points per spiral"),
        QKV_ARG_FLOAT_ROW("--noise", &config.noise, 0, 10, "angular noise of the spirals"),
        QKV_ARG_INT_ROW("--seed", &config.seed, 0, 2147483647, "seed for data, init and batches"),
    };
    memcpy(args + n, own, sizeof own);
    n += (int)(sizeof own / sizeof own[0]);
    int parsed = qkv_args_parse("train spirals", argc, argv, args, n);
    if (parsed != 0) return parsed > 0 ? 0 : 2;
    f.trainer.seed = (unsigned long long)config.seed;
    qkv_common_finish(&f);
    qkv_spirals_task model;
    qkv_spirals_task_init(&model, &config);
    if (!f.trainer.quiet)
        printf("two spirals: MLP 2-%d-%d-2, %s lr %g momentum %g, batch %d, %d steps, %d thread%s\n", config.hidden,
               config.hidden, qkv_opt_kind_name(f.trainer.optim.kind), f.trainer.optim.lr, f.trainer.optim.momentum,
               config.batch, f.trainer.steps, f.threads, f.threads == 1 ? "" : "s");
    qkv_train_result result;
    int rc = qkv_train_exit(qkv_train(&f.trainer, &model.task, &result), "spirals", &result);
    qkv_spirals_task_free(&model);
    return rc;
}

/* ---- dispatch ----------------------------------------------------------------------- */

int qkv_cmd_train(int argc, char **argv) {
    if (argc < 1 || strcmp(argv[0], "--help") == 0) {
        fputs("usage: qkv train <task> [flags]   (qkv train <task> --help lists the flags)\n"
              "tasks: reverse, copy, sort (sequence tasks), points (point clouds), maxreg (max of a set),\n"
              "       spirals (MLP demo), detect (boxes of shapes in images)\n",
              argc < 1 ? stderr : stdout);
        return argc < 1 ? 2 : 0;
    }
    if (strcmp(argv[0], "spirals") == 0) return qkv_cmd_train_spirals(argc - 1, argv + 1);
    if (strcmp(argv[0], "points") == 0) return qkv_cmd_train_points(argc - 1, argv + 1);
    if (strcmp(argv[0], "maxreg") == 0) return qkv_cmd_train_maxreg(argc - 1, argv + 1);
    if (strcmp(argv[0], "detect") == 0) return qkv_cmd_train_detect(argc - 1, argv + 1);
    if (qkv_seq_task_parse(argv[0]) >= 0) return train_sequence(argv[0], argc - 1, argv + 1);
    fprintf(stderr, "qkv train: unknown task '%s' (known: reverse, copy, sort, points, maxreg, spirals, detect)\n", argv[0]);
    return 2;
}

/* ---- eval ----------------------------------------------------------------------------- */

int qkv_cmd_eval(int argc, char **argv) {
    int threads = 0;
    const char *data_dir = NULL;
    const qkv_arg args[] = {
        QKV_ARG_INT_ROW("--threads", &threads, 0, 1024, QKV_THREADS_HELP),
        QKV_ARG_STRING_ROW("--data", &data_dir, "detect: evaluate on this set instead of the one the checkpoint names"),
    };
    if (argc < 1 || argv[0][0] == '-') {
        if (argc >= 1 && strcmp(argv[0], "--help") == 0) {
            puts("usage: qkv eval CHECKPOINT [--threads N] [--data DIR]: re-evaluate a saved model on its task's "
                 "test set\n  --data DIR       a detect model: evaluate on DIR (DIR/test, or its last images) "
                 "instead of the set it was trained on");
            return 0;
        }
        fputs("qkv eval: name a checkpoint: qkv eval CHECKPOINT\n", stderr);
        return 2;
    }
    int parsed = qkv_args_parse("eval", argc - 1, argv + 1, args, 2);
    if (parsed != 0) return parsed > 0 ? 0 : 2;
    qkv_set_threads(threads);
    qkv_config_kv description;
    if (qkv_checkpoint_read_config(argv[0], &description) != 0) {
        fprintf(stderr, "qkv eval: %s\n", qkv_last_error());
        return 2;
    }
    const char *task = qkv_config_get(&description, "task");
    if (task && strcmp(task, "detect") == 0) return qkv_eval_detect(argv[0], &description, data_dir);
    if (data_dir) {
        fprintf(stderr, "qkv eval: --data: %s is a %s model; only detect models are evaluated on another set\n",
                argv[0], task ? task : "(unknown)");
        return 2;
    }
    qkv_seq_model model;
    long step = 0;
    if (qkv_seq_model_load(&model, argv[0], &step) != 0) {
        const char *error = qkv_last_error();
        fprintf(stderr, "qkv eval: %s%s\n", error,
                strstr(error, "not one of the sequence tasks") ? "; use --resume with --steps equal to its step "
                                                                 "to evaluate other tasks" : "");
        return 2;
    }
    qkv_tape *tape = qkv_tape_create(model.config.seed);
    qkv_tape_set_grad(tape, 0);
    qkv_tape_set_training(tape, 0);
    qkv_metrics metrics = {0};
    model.task.evaluate(&model, tape, &metrics);
    printf("final: task=%s checkpoint_step=%ld", model.task.name, step);
    for (int i = 0; i < metrics.n; i++) printf(" %s=%.4f", metrics.key[i], metrics.value[i]);
    putchar('\n');
    qkv_tape_free(tape);
    qkv_seq_model_free(&model);
    return 0;
}
