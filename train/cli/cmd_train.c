/* cmd_train.c — `qkv train <task> [flags]` and `qkv eval CKPT`, for every task
 * of the registry (train/tasks/registry.h).
 *
 * A task's flags are the trainer's (train_flags.h), with the task's defaults,
 * then its field table's. Everything is checked before anything runs: a bad
 * flag, a bad combination (the task's check) or an unwritable output prints one
 * line naming it, exits 2 and writes nothing. Then the task loads its data and
 * builds its model (an error there: one line, exit 2), prints its banner, and
 * the trainer runs. `qkv eval` reopens any task's checkpoint by the name in its
 * description and re-evaluates it on the task's held-out data.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "core/kernels/parallel.h"
#include "train/step.h"
#include "train/cli/args.h"
#include "train/cli/commands.h"
#include "train/cli/train_flags.h"
#include "train/cli/suggest.h"
#include "train/dist.h"
#include "train/interrupt.h"
#include "train/tasks/registry.h"

#define MAX_SEEDS 4

void qkv_print_task_list(FILE *out, const char *indent) {
    for (int i = 0; i < qkv_task_kind_count(); i++) {
        const qkv_task_kind *kind = qkv_task_kind_at(i);
        fprintf(out, "%s%-10s %s\n", indent, kind->name, kind->summary);
    }
}

/* The flag rows of a task's fields, targets in config. The flags of SEED fields
 * are ints (0..2^31-1) in seeds[], copied back by seeds_back. */
static int field_args(const qkv_task_kind *kind, void *config, qkv_arg *args, int *seeds) {
    int n = 0, n_seeds = 0;
    for (int i = 0; i < kind->n_fields; i++) {
        const qkv_field *f = &kind->fields[i];
        if (!f->flag) continue;
        void *target = (char *)config + f->offset;
        switch (f->kind) {
        case QKV_FIELD_INT: args[n++] = (qkv_arg)QKV_ARG_INT_ROW(f->flag, target, f->min, f->max, f->help); break;
        case QKV_FIELD_FLOAT: args[n++] = (qkv_arg)QKV_ARG_FLOAT_ROW(f->flag, target, f->min, f->max, f->help); break;
        case QKV_FIELD_CHOICE: args[n++] = (qkv_arg)QKV_ARG_CHOICE_ROW(f->flag, target, f->choices, f->help); break;
        case QKV_FIELD_FLAG: args[n++] = (qkv_arg)QKV_ARG_FLAG_ROW(f->flag, target, f->help); break;
        case QKV_FIELD_TEXT: args[n++] = (qkv_arg)QKV_ARG_STRING_ROW(f->flag, target, f->help); break;
        case QKV_FIELD_SEED:
            QKV_CHECK(n_seeds < MAX_SEEDS, "train %s: more than %d seed fields", kind->name, MAX_SEEDS);
            seeds[n_seeds] = (int)*(unsigned long long *)target;
            args[n++] = (qkv_arg)QKV_ARG_INT_ROW(f->flag, &seeds[n_seeds], f->min, f->max, f->help);
            n_seeds++;
            break;
        }
    }
    return n;
}

static void seeds_back(const qkv_task_kind *kind, void *config, const int *seeds) {
    for (int i = 0, s = 0; i < kind->n_fields; i++)
        if (kind->fields[i].flag && kind->fields[i].kind == QKV_FIELD_SEED)
            *(unsigned long long *)((char *)config + kind->fields[i].offset) = (unsigned long long)seeds[s++];
}

/* The trainer's flags with the task's defaults. */
static qkv_common_flags task_defaults(const qkv_task_kind *kind) {
    qkv_common_flags f = {.trainer = kind->trainer};
    f.optimizer = kind->trainer.optim.kind;
    f.weight_decay = kind->trainer.optim.weight_decay;
    f.schedule = kind->trainer.schedule.kind;
    f.warmup = kind->trainer.schedule.warmup;
    return f;
}

/* Flags, checks, then one training run (or the task's own run). */
static int train_task(const qkv_task_kind *kind, void *config, const char *command, int argc, char **argv) {
    qkv_common_flags f = task_defaults(kind);
    qkv_arg args[QKV_MAX_ARGS];
    int seeds[MAX_SEEDS];
    int n = qkv_common_args(args, &f);
    QKV_CHECK(n + kind->n_fields <= QKV_MAX_ARGS, "%s: %d flags, more than %d", command, n + kind->n_fields,
              QKV_MAX_ARGS);
    n += field_args(kind, config, args + n, seeds);
    int parsed = qkv_args_parse(command, argc, argv, args, n);
    if (parsed != 0) return parsed > 0 ? 0 : 2;
    seeds_back(kind, config, seeds);
    if (qkv_fields_check_text(kind->fields, kind->n_fields, config) != 0 || kind->check(config, &f.trainer) != 0 ||
        qkv_trainer_check_outputs(&f.trainer) != 0) {
        fprintf(stderr, "qkv %s: %s\n", command, qkv_last_error());
        return 2;
    }
    f.trainer.seed = qkv_task_config_seed(kind, config);   /* the tape's dropout stream */
    qkv_common_finish(&f);
    int ran = kind->run ? kind->run(config, &f.trainer) : 1;
    if (ran <= 0) {
        if (ran < 0) fprintf(stderr, "qkv %s: %s\n", command, qkv_last_error());
        return ran < 0 ? 2 : 0;
    }
    qkv_task *task = kind->create(config, 0);
    if (!task) {
        fprintf(stderr, "qkv %s: %s\n", command, qkv_last_error());
        return 2;
    }
    /* Before the banner; under MPI every rank finds it, and they agree (dist.h). */
    if (qkv_dist_any(qkv_step_check(task, f.trainer.micro_batch) != 0)) {
        fprintf(stderr, "qkv %s: %s\n", command, qkv_last_error());
        kind->destroy(task);
        return 2;
    }
    if (!f.trainer.quiet) kind->banner(task, &f.trainer, f.threads);
    char changes[512];
    qkv_trainer_settings_changes(&f.trainer, changes, sizeof changes);
    if (changes[0] && qkv_dist_rank() == 0) /* allowed, but the run is then another one: say so */
        fprintf(stderr, "qkv %s: --resume with changed settings: %s; the run goes on with them and is no longer "
                "the uninterrupted one\n", command, changes);
    qkv_train_result result;
    qkv_interrupt_install(); /* Ctrl-C, SIGTERM, SIGHUP, a closed stdout: the run ends after its step */
    int rc = qkv_train_exit(qkv_train(&f.trainer, task, &result), task->name, &result);
    kind->destroy(task);
    return rc;
}

int qkv_cmd_train(int argc, char **argv) {
    if (argc < 1 || strcmp(argv[0], "--help") == 0) {
        FILE *out = argc < 1 ? stderr : stdout;
        fputs("usage: qkv train <task> [flags]   (qkv train <task> --help lists the flags)\ntasks:\n", out);
        qkv_print_task_list(out, "  ");
        return argc < 1 ? 2 : 0;
    }
    const qkv_task_kind *kind = qkv_task_kind_find(argv[0]);
    if (!kind) {
        char hint[96];
        qkv_suggestion near = qkv_suggestion_begin(argv[0]);
        for (int i = 0; i < qkv_task_kind_count(); i++) qkv_suggestion_consider(&near, qkv_task_kind_at(i)->name);
        fprintf(stderr, "qkv train: unknown task '%s' (%sknown: %s)\n", argv[0],
                qkv_suggestion_hint(&near, hint, sizeof hint), qkv_task_kind_names());
        return 2;
    }
    char command[64];
    snprintf(command, sizeof command, "train %s", kind->name);
    void *config = qkv_task_config_new(kind);
    int rc = train_task(kind, config, command, argc - 1, argv + 1);
    free(config);
    return rc;
}

/* ---- eval ----------------------------------------------------------------------------- */

static int evaluate_checkpoint(const char *path, const char *data_dir) {
    qkv_task_checkpoint *ckpt = qkv_malloc(sizeof *ckpt, "a checkpoint's description");
    qkv_task *task = NULL;
    if (qkv_task_checkpoint_read(path, data_dir, ckpt) != 0 || !(task = qkv_task_checkpoint_open(path, ckpt, 1))) {
        fprintf(stderr, "qkv eval: %s\n", qkv_last_error());
        if (ckpt->config) qkv_task_checkpoint_free(ckpt);
        free(ckpt);
        return 2;
    }
    qkv_tape *tape = qkv_tape_create_inference(qkv_task_config_seed(ckpt->kind, ckpt->config));
    qkv_metrics metrics = {0};
    task->evaluate(task->self, tape, &metrics);
    printf("final: task=%s checkpoint_step=%ld", task->name, ckpt->step);
    for (int i = 0; i < metrics.n; i++) printf(" %s=%.4f", metrics.key[i], metrics.value[i]);
    putchar('\n');
    qkv_tape_free(tape);
    ckpt->kind->destroy(task);
    qkv_task_checkpoint_free(ckpt);
    free(ckpt);
    return 0;
}

int qkv_cmd_eval(int argc, char **argv) {
    int threads = 0;
    const char *data_dir = NULL;
    const qkv_arg args[] = {
        QKV_ARG_INT_ROW("--threads", &threads, 0, 1024, QKV_THREADS_HELP),
        QKV_ARG_STRING_ROW("--data", &data_dir, "evaluate on this set instead of the one the checkpoint names"),
    };
    if (argc < 1 || argv[0][0] == '-') {
        if (argc >= 1 && strcmp(argv[0], "--help") == 0) {
            puts("usage: qkv eval CHECKPOINT [--threads N] [--data DIR]: re-evaluate a saved model of any task on "
                 "its test set\n  --data DIR       a model trained on a data set (points, detect, text): evaluate on DIR "
                 "instead of the set it was trained on");
            return 0;
        }
        fputs("qkv eval: name a checkpoint: qkv eval CHECKPOINT\n", stderr);
        return 2;
    }
    int parsed = qkv_args_parse("eval", argc - 1, argv + 1, args, 2);
    if (parsed != 0) return parsed > 0 ? 0 : 2;
    qkv_set_threads(threads);
    return evaluate_checkpoint(argv[0], data_dir);
}
