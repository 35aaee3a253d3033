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
#include "train/args.h"
#include "train/checkpoint.h"
#include "train/commands.h"
#include "train/seq_model.h"
#include "train/spirals_task.h"

#define MAX_ARGS 64

/* ---- flags shared by every train command ---------------------------------------- */

typedef struct common_flags {
    qkv_trainer_config trainer;
    int optimizer, schedule, threads, warmup;
    float weight_decay;
} common_flags;

static const char *optimizer_names[] = {"sgd", "adam", "adamw", NULL};
static const char *schedule_names[] = {"constant", "cosine", "step", NULL};

/* Appends the shared flags to args; returns how many. */
static int common_args(qkv_arg *args, common_flags *f) {
    qkv_trainer_config *t = &f->trainer;
    const qkv_arg shared[] = {
        QKV_ARG_INT_ROW("--steps", &t->steps, 1, 1e9, "training steps"),
        QKV_ARG_FLOAT_ROW("--lr", &t->optim.lr, 0, 10, "learning rate"),
        QKV_ARG_CHOICE_ROW("--optimizer", &f->optimizer, optimizer_names, "optimizer"),
        QKV_ARG_FLOAT_ROW("--momentum", &t->optim.momentum, 0, 0.9999, "SGD momentum"),
        QKV_ARG_FLOAT_ROW("--weight-decay", &f->weight_decay, 0, 10, "weight decay (not on biases, norms, tables)"),
        QKV_ARG_CHOICE_ROW("--schedule", &f->schedule, schedule_names, "learning-rate schedule"),
        QKV_ARG_INT_ROW("--warmup", &f->warmup, 0, 1e9, "cosine: linear warmup steps"),
        QKV_ARG_FLOAT_ROW("--clip", &t->clip, 0, 1e9, "clip gradients to this global norm (0: off)"),
        QKV_ARG_INT_ROW("--eval-every", &t->eval_every, 0, 1e9, "steps between evaluations (0: at the end)"),
        QKV_ARG_INT_ROW("--log-every", &t->log_every, 0, 1e9, "steps between log lines"),
        QKV_ARG_FLOAT_ROW("--target", &t->target, 0, 1e9, "stop early when the target metric reaches this"),
        QKV_ARG_STRING_ROW("--save", &t->save_path, "write a checkpoint (safetensors) here"),
        QKV_ARG_INT_ROW("--save-every", &t->save_every, 0, 1e9, "also checkpoint every N steps"),
        QKV_ARG_STRING_ROW("--resume", &t->resume_path, "continue from this checkpoint"),
        QKV_ARG_STRING_ROW("--json", &t->json_path, "write a JSON summary here"),
        QKV_ARG_STRING_ROW("--csv", &t->csv_path, "write one CSV row per logged step here"),
        QKV_ARG_INT_ROW("--threads", &f->threads, 0, 1024, "OpenMP threads (0: all cores)"),
        QKV_ARG_FLAG_ROW("--quiet", &t->quiet, "print only the final line"),
        QKV_ARG_FLAG_ROW("--print-tape", &t->print_tape, "print the tape of the first step"),
    };
    memcpy(args, shared, sizeof shared);
    return (int)(sizeof shared / sizeof shared[0]);
}

/* After parsing: the enums and derived settings. */
static void finish_common(common_flags *f) {
    qkv_trainer_config *t = &f->trainer;
    t->optim.kind = (qkv_opt_kind)f->optimizer;
    t->optim.weight_decay = f->weight_decay;
    t->schedule.kind = (qkv_schedule_kind)f->schedule;
    t->schedule.warmup = f->warmup < t->steps ? f->warmup : 0;
    t->schedule.total = t->steps;
    if (t->schedule.step_size == 0) t->schedule.step_size = t->steps / 3 > 0 ? t->steps / 3 : 1;
    if (t->schedule.gamma == 0) t->schedule.gamma = 0.1f;
    f->threads = qkv_set_threads(f->threads);
}

static void print_final(const char *task, const qkv_train_result *r) {
    printf("final: task=%s steps=%ld loss=%.4f", task, r->steps_done, r->final_loss);
    for (int i = 0; i < r->metrics.n; i++) printf(" %s=%.4f", r->metrics.key[i], r->metrics.value[i]);
    printf(" seconds=%.2f steps_per_s=%.1f\n", r->seconds, r->steps_per_second);
}

/* ---- sequence tasks ------------------------------------------------------------------ */

static int train_sequence(const char *name, int argc, char **argv) {
    qkv_seq_model_config config;
    qkv_seq_model_default_config(&config);
    config.data.task = (qkv_seq_task)qkv_seq_task_parse(name);
    common_flags f = {0};
    f.trainer = (qkv_trainer_config){.steps = 3000, .eval_every = 250, .log_every = 100, .target_key = "seq_acc",
                                     .target = 0.998, .clip = 1.0f};
    f.trainer.optim.lr = 3e-3f;
    f.optimizer = QKV_OPT_ADAMW;
    f.weight_decay = 0.01f;
    f.schedule = QKV_SCHED_COSINE;
    f.warmup = 100;
    int task = config.data.task, arch = config.data.arch, pos = config.pos, len = 0, seed = 1, epochs = 0;
    const char *tasks[] = {"reverse", "copy", "sort", NULL}, *archs[] = {"encoder", "seq2seq", "decoder", NULL};
    const char *positions[] = {"none", "learned", "sinusoidal", "rope", "alibi", NULL};
    qkv_arg args[MAX_ARGS];
    int n = common_args(args, &f);
    const qkv_arg own[] = {
        QKV_ARG_CHOICE_ROW("--task", &task, tasks, "what to learn"),
        QKV_ARG_CHOICE_ROW("--arch", &arch, archs, "model"),
        QKV_ARG_CHOICE_ROW("--pos", &pos, positions, "position scheme"),
        QKV_ARG_INT_ROW("--len", &len, 1, 4096, "sequence length (sets --min-len and --max-len)"),
        QKV_ARG_INT_ROW("--min-len", &config.data.min_len, 1, 4096, "shortest sequence (16)"),
        QKV_ARG_INT_ROW("--max-len", &config.data.max_len, 1, 4096, "longest sequence (16)"),
        QKV_ARG_INT_ROW("--vocab", &config.data.vocab, 2, 100000, "number of symbols (10)"),
        QKV_ARG_INT_ROW("--layers", &config.layers, 1, 64, "layers per stack (2)"),
        QKV_ARG_INT_ROW("--heads", &config.heads, 1, 1024, "attention heads (4)"),
        QKV_ARG_INT_ROW("--dim", &config.dim, 1, 8192, "model width (64)"),
        QKV_ARG_INT_ROW("--ff", &config.ff, 1, 65536, "feed-forward width (256)"),
        QKV_ARG_INT_ROW("--max-pos", &config.max_pos, 0, 1e6, "rows of a learned position table (0: longest stream)"),
        QKV_ARG_FLOAT_ROW("--dropout", &config.dropout, 0, 0.99, "residual dropout (0)"),
        QKV_ARG_INT_ROW("--batch", &config.batch, 1, 1e6, "batch size (64)"),
        QKV_ARG_INT_ROW("--test-size", &config.test_size, 1, 1e7, "held-out sequences (1000)"),
        QKV_ARG_INT_ROW("--train-size", &config.train_size, 0, 1e9, "fixed training set size (0: fresh data)"),
        QKV_ARG_INT_ROW("--epochs", &epochs, 0, 1e6, "with --train-size: passes over it (sets --steps)"),
        QKV_ARG_INT_ROW("--seed", &seed, 0, 2147483647, "seed for data, init and dropout (1)"),
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
        f.trainer.steps = ((long)epochs * config.train_size + config.batch - 1) / config.batch;
    }
    if (qkv_seq_model_check(&config) != 0) {
        fprintf(stderr, "qkv %s: %s\n", command, qkv_last_error());
        return 2;
    }
    f.trainer.seed = config.seed;
    finish_common(&f);

    qkv_seq_model model;
    qkv_seq_model_init(&model, &config);
    if (!f.trainer.quiet)
        printf("%s: %s, %s positions, %d layers x %d heads, dim %d, %zu parameters, %s lr %g, batch %d, "
               "%d steps, %d threads\n",
               qkv_seq_task_name(config.data.task), qkv_seq_arch_name(config.data.arch), qkv_pos_kind_name(config.pos),
               config.layers, config.heads, config.dim, qkv_params_count(&model.params),
               qkv_opt_kind_name(f.trainer.optim.kind), f.trainer.optim.lr, config.batch, f.trainer.steps, f.threads);
    qkv_train_result result;
    int rc = qkv_train(&f.trainer, &model.task, &result);
    if (rc == 0) print_final(model.task.name, &result);
    qkv_seq_model_free(&model);
    return rc;
}

/* ---- spirals (the MLP demo) ----------------------------------------------------------- */

int qkv_cmd_train_spirals(int argc, char **argv) {
    qkv_spirals_config config;
    qkv_spirals_default_config(&config);
    common_flags f = {0};
    f.trainer = (qkv_trainer_config){.steps = 2000, .log_every = 200, .target_key = "test_acc"};
    f.trainer.optim.lr = 0.1f;
    f.trainer.optim.momentum = 0.9f;
    f.optimizer = QKV_OPT_SGD;
    f.schedule = QKV_SCHED_CONSTANT;
    qkv_arg args[MAX_ARGS];
    int n = common_args(args, &f);
    const qkv_arg own[] = {
        QKV_ARG_INT_ROW("--batch", &config.batch, 1, 65536, "minibatch size (128)"),
        QKV_ARG_INT_ROW("--hidden", &config.hidden, 1, 4096, "hidden width of the 3-layer MLP (64)"),
        QKV_ARG_INT_ROW("--points", &config.n_per_class, 2, 1e6, "points per spiral (500)"),
        QKV_ARG_FLOAT_ROW("--noise", &config.noise, 0, 10, "angular noise of the spirals (0.1)"),
        QKV_ARG_INT_ROW("--seed", &config.seed, 0, 2147483647, "seed for data, init and batches (1)"),
    };
    memcpy(args + n, own, sizeof own);
    n += (int)(sizeof own / sizeof own[0]);
    int parsed = qkv_args_parse("train spirals", argc, argv, args, n);
    if (parsed != 0) return parsed > 0 ? 0 : 2;
    f.trainer.seed = (unsigned long long)config.seed;
    finish_common(&f);
    qkv_spirals_task model;
    qkv_spirals_task_init(&model, &config);
    if (!f.trainer.quiet)
        printf("two spirals: MLP 2-%d-%d-2, %s lr %g momentum %g, batch %d, %d steps, %d threads\n", config.hidden,
               config.hidden, qkv_opt_kind_name(f.trainer.optim.kind), f.trainer.optim.lr, f.trainer.optim.momentum,
               config.batch, f.trainer.steps, f.threads);
    qkv_train_result result;
    int rc = qkv_train(&f.trainer, &model.task, &result);
    if (rc == 0) print_final("spirals", &result);
    qkv_spirals_task_free(&model);
    return rc;
}

/* ---- dispatch ----------------------------------------------------------------------- */

int qkv_cmd_train(int argc, char **argv) {
    if (argc < 1 || strcmp(argv[0], "--help") == 0) {
        fputs("usage: qkv train <task> [flags]   (qkv train <task> --help lists the flags)\n"
              "tasks: reverse, copy, sort (sequence tasks), spirals (MLP demo)\n",
              argc < 1 ? stderr : stdout);
        return argc < 1 ? 2 : 0;
    }
    if (strcmp(argv[0], "spirals") == 0) return qkv_cmd_train_spirals(argc - 1, argv + 1);
    if (qkv_seq_task_parse(argv[0]) >= 0) return train_sequence(argv[0], argc - 1, argv + 1);
    fprintf(stderr, "qkv train: unknown task '%s' (known: reverse, copy, sort, spirals)\n", argv[0]);
    return 2;
}

/* ---- eval ----------------------------------------------------------------------------- */

int qkv_cmd_eval(int argc, char **argv) {
    int threads = 0;
    const qkv_arg args[] = {QKV_ARG_INT_ROW("--threads", &threads, 0, 1024, "OpenMP threads (0: all cores)")};
    if (argc < 1 || argv[0][0] == '-') {
        if (argc >= 1 && strcmp(argv[0], "--help") == 0) {
            puts("usage: qkv eval CHECKPOINT [--threads N]: re-evaluate a saved model on its task's test set");
            return 0;
        }
        fputs("qkv eval: name a checkpoint: qkv eval CHECKPOINT\n", stderr);
        return 2;
    }
    int parsed = qkv_args_parse("eval", argc - 1, argv + 1, args, 1);
    if (parsed != 0) return parsed > 0 ? 0 : 2;
    qkv_set_threads(threads);
    qkv_config_kv description;
    qkv_seq_model_config config;
    if (qkv_checkpoint_read_config(argv[0], &description) != 0) {
        fprintf(stderr, "qkv eval: %s\n", qkv_last_error());
        return 2;
    }
    if (qkv_seq_model_config_from(&description, &config) != 0) {
        fprintf(stderr, "qkv eval: %s: %s\n", argv[0], qkv_last_error());
        return 2;
    }
    qkv_seq_model model;
    qkv_seq_model_init(&model, &config);
    int rc = 2;
    long step = 0;
    if (qkv_checkpoint_load(argv[0], &model.params, NULL, &step, NULL) != 0) {
        fprintf(stderr, "qkv eval: %s\n", qkv_last_error());
    } else {
        qkv_tape *tape = qkv_tape_create(config.seed);
        qkv_tape_set_grad(tape, 0);
        qkv_tape_set_training(tape, 0);
        qkv_metrics metrics = {0};
        model.task.evaluate(&model, tape, &metrics);
        printf("final: task=%s checkpoint_step=%ld", model.task.name, step);
        for (int i = 0; i < metrics.n; i++) printf(" %s=%.4f", metrics.key[i], metrics.value[i]);
        putchar('\n');
        qkv_tape_free(tape);
        rc = 0;
    }
    qkv_seq_model_free(&model);
    return rc;
}
