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
#include <unistd.h>

#include "core/alloc.h"
#include "core/error.h"
#include "core/kernels/parallel.h"
#include "train/step.h"
#include "cli/args.h"
#include "cli/commands.h"
#include "cli/train_flags.h"
#include "cli/suggest.h"
#include "train/dist.h"
#include "train/interrupt.h"
#include "train/memory.h"
#include "train/tasks/registry.h"
#include "train/trainer_fields.h"

void qkv_print_task_list(FILE *out, const char *indent) {
    for (int i = 0; i < qkv_task_kind_count(); i++) {
        const qkv_task_kind *kind = qkv_task_kind_at(i);
        fprintf(out, "%s%-10s %s\n", indent, kind->name, kind->summary);
    }
}

/* The flags the command line gave: args[0..n) and given[] of qkv_args_parse_given. */
typedef struct given_flags {
    const qkv_arg *args;
    const unsigned char *given;
    int n;
} given_flags;

static int flag_given(const char *flag, const void *ctx) {
    const given_flags *g = ctx;
    for (int i = 0; i < g->n; i++)
        if (strcmp(g->args[i].flag, flag) == 0) return g->given[i];
    return 0;
}

/* --resume's checkpoint, opened once (rank 0 alone reads files: train/dist.h):
 * that it is one of this run (its task's config, checked before anything is
 * said about its settings); the run's settings the command line did not give
 * are then the checkpoint's, and those it changes are said on stderr.
 * 0, or -1 with qkv_last_error(); *opened tells whether ckpt is to be closed. */
static int open_resume(const char *command, qkv_task *task, qkv_trainer_config *trainer, qkv_checkpoint *ckpt,
                       int *opened, const given_flags *given) {
    *opened = 0;
    if (!trainer->resume_path || qkv_dist_rank() != 0) return 0;
    if (qkv_checkpoint_open(trainer->resume_path, ckpt) != 0) return -1;
    *opened = 1;
    qkv_config_kv *description = qkv_malloc(sizeof *description, "the task's description");
    description->n = 0;
    task->describe(task->self, description);
    int rc = qkv_trainer_check_resume(ckpt, description);
    free(description);
    if (rc != 0) return -1;
    trainer->resume = ckpt;
    if (qkv_trainer_adopt_settings(trainer, ckpt->settings, flag_given, given) != 0) return -1;
    char changes[512];
    qkv_trainer_settings_changes(trainer, ckpt->settings, changes, sizeof changes);
    if (changes[0]) /* allowed, but the run is then another one: say so */
        fprintf(stderr, "qkv %s: --resume with changed settings: %s; the run goes on with them and is no longer "
                "the uninterrupted one\n", command, changes);
    return 0;
}

/* Flags, checks, then one training run (or the task's own run). */
static int train_task(const qkv_task_kind *kind, void *config, const char *command, int argc, char **argv) {
    qkv_trainer_config trainer = kind->trainer;
    trainer.defaults = &kind->trainer;
    qkv_arg args[QKV_MAX_ARGS];
    int n = qkv_common_args(args, &trainer);
    QKV_CHECK(n + kind->n_fields <= QKV_MAX_ARGS, "%s: %d flags, more than %d", command, n + kind->n_fields,
              QKV_MAX_ARGS);
    n += qkv_args_from_fields(kind->fields, kind->n_fields, config, args + n);
    unsigned char given[QKV_MAX_ARGS];
    int parsed = qkv_args_parse_given(command, argc, argv, args, n, given);
    if (parsed != 0) return parsed > 0 ? 0 : 2;
    const given_flags flags = {args, given, n};
    size_t max_memory;
    if (qkv_fields_check_text(kind->fields, kind->n_fields, config) != 0 || kind->check(config, &trainer) != 0 ||
        qkv_trainer_check_outputs(&trainer) != 0 ||
        (trainer.max_memory && qkv_memory_parse_size(trainer.max_memory, &max_memory) != 0)) {
        fprintf(stderr, "qkv %s: %s\n", command, qkv_last_error());
        return 2;
    }
    trainer.seed = qkv_task_config_seed(kind, config);   /* the tape's dropout stream */
    qkv_common_finish(&trainer);
    int ran = kind->run ? kind->run(config, &trainer) : 1;
    if (ran <= 0) {
        if (ran < 0) fprintf(stderr, "qkv %s: %s\n", command, qkv_last_error());
        return ran < 0 ? 2 : 0;
    }
    /* From here a signal ends the run cleanly (the memory's measurement below can
     * take a while on a large model): Ctrl-C, SIGTERM, SIGHUP, a closed stdout. */
    qkv_interrupt_install();
    qkv_task *task = kind->create(config, 0);
    if (!task) {
        fprintf(stderr, "qkv %s: %s\n", command, qkv_last_error());
        return 2;
    }
    /* Before the banner; under MPI every rank finds it, and they agree (dist.h):
     * the micro-batch, and whether the run fits in this rank's memory (memory.h). */
    qkv_checkpoint resume;
    int opened = 0;
    qkv_memory_estimate memory;
    int unfit = qkv_step_check(task, trainer.micro_batch) != 0 || qkv_memory_check(&trainer, task, &memory) != 0;
    if (qkv_dist_any(unfit)) {
        int signal = qkv_dist_max(qkv_interrupt_signal()); /* a signal on any rank: one line, rank 0's */
        if (signal) qkv_memory_stopped(signal);
        else if (!unfit)
            qkv_set_error("rank %d: another rank could not start training", qkv_dist_rank());
        if (!signal || qkv_dist_rank() == 0) fprintf(stderr, "qkv %s: %s\n", command, qkv_last_error());
        kind->destroy(task);
        return signal ? 128 + signal : 2;
    }
    if (!trainer.micro_batch) trainer.micro_batch = qkv_step_default_micro_batch(task);   /* as the checkpoint says it */
    int bad = open_resume(command, task, &trainer, &resume, &opened, &flags) != 0;
    if (qkv_dist_any(bad)) {
        if (bad) fprintf(stderr, "qkv: %s\n", qkv_last_error());   /* as qkv_train's errors (train_flags.h) */
        if (opened) qkv_checkpoint_close(&resume);
        kind->destroy(task);
        return 2;
    }
    if (trainer.resume_path) qkv_trainer_share_settings(&trainer); /* rank 0 read them */
    if (!trainer.quiet) kind->banner(task, &trainer, trainer.threads);
    qkv_train_result result;
    int rc = qkv_train_exit(qkv_train(&trainer, task, &result), task->name, &result);
    if (opened) qkv_checkpoint_close(&resume);
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
    qkv_task_checkpoint ckpt;
    if (qkv_task_checkpoint_open(path, data_dir, &ckpt) != 0) {
        fprintf(stderr, "qkv eval: %s\n", qkv_last_error());
        return 2;
    }
    if (isatty(STDERR_FILENO))   /* a large test set takes a while: say what runs (Ctrl-C ends it at once) */
        fprintf(stderr, "qkv eval: %s: a %s model at step %ld: making its test set and evaluating...\n", path,
                ckpt.kind->name, ckpt.file.step);
    qkv_task *task = qkv_task_checkpoint_create(&ckpt, 1);
    if (!task) {
        fprintf(stderr, "qkv eval: %s\n", qkv_last_error());
        qkv_task_checkpoint_close(&ckpt);
        return 2;
    }
    qkv_tape *tape = qkv_tape_create_inference(qkv_task_config_seed(ckpt.kind, ckpt.config));
    qkv_metrics metrics = {0};
    task->evaluate(task->self, tape, &metrics);
    printf("final: task=%s checkpoint_step=%ld", task->name, ckpt.step);
    for (int i = 0; i < metrics.n; i++) printf(" %s=%.4f", metrics.key[i], metrics.value[i]);
    putchar('\n');
    qkv_tape_free(tape);
    ckpt.kind->destroy(task);
    qkv_task_checkpoint_close(&ckpt);
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
