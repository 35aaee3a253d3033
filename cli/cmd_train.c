/* cmd_train.c — `qkv train <task> [flags]` and `qkv eval CKPT`, for every task
 * of the registry (train/tasks/registry.h).
 *
 * A task's flags are the trainer's (train_flags.h), with the task's defaults,
 * then its field table's. Then a session is prepared (train/session.h): every
 * check, the task's data and model, --resume, the micro-batch and the memory; a
 * bad flag, a bad combination, an unwritable output, a checkpoint of another run
 * or a run too large prints one line naming it, exits 2 and writes nothing (a
 * signal during the memory's measurement: 128 + the signal). Then the task's
 * banner, and the run. `qkv eval` reopens any task's checkpoint by the name in its
 * description and re-evaluates it on the task's held-out data.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/alloc.h"
#include "core/error.h"
#include "core/kernels/parallel.h"
#include "cli/args.h"
#include "cli/commands.h"
#include "cli/train_flags.h"
#include "core/suggest.h"
#include "train/session.h"
#include "train/tasks/registry.h"
#include "train/tasks/train_run.h"
#include "train/settings.h"

void qkv_print_task_list(FILE *out, const char *indent) {
    for (int i = 0; i < qkv_task_kind_count(); i++) {
        const qkv_task_kind *kind = qkv_task_kind_at(i);
        fprintf(out, "%s%-10s %s\n", indent, kind->name, kind->summary);
    }
}

/* Flags, a session prepared (every check: one line, exit 2, nothing written),
 * the banner, the run (train/tasks/train_run.h: the flags and the session's spec). */
static int train_task(const qkv_task_kind *kind, int argc, char **argv) {
    qkv_task_run r;
    qkv_task_run_begin(&r, kind);
    const qkv_command_spec command_spec = {kind->name, "", 0, kind->summary, NULL, 0, NULL, NULL, NULL};
    int parsed = qkv_command_parse_args(&command_spec, r.command, argc, argv, r.args, r.n, r.given);
    if (parsed != 0) {
        qkv_task_run_end(&r);
        return parsed > 0 ? 0 : 2;
    }
    qkv_session_spec session_spec;
    qkv_task_run_spec(&r, 1, &session_spec);
    qkv_session session;
    int prepared = qkv_session_prepare(&session, &session_spec);
    if (prepared != 0) {
        if (prepared < 0 && !session.silent) fprintf(stderr, "qkv %s: %s\n", r.command, qkv_last_error());
        qkv_task_run_end(&r);
        return prepared < 0 ? session.status : 0;
    }
    if (!session.config.quiet) kind->banner(session.task, &session.config, session.config.threads);
    qkv_train_result result;
    int rc = qkv_train_exit(qkv_train(&session, &result), session.task->name, &result);
    qkv_session_close(&session);
    qkv_task_run_end(&r);
    return rc;
}

/* Its flags are the trainer's and the task's (qkv_task_kind: name, summary, fields). */
const qkv_command_spec qkv_command_train = {"train", "TASK", 1, "train a model on one of these tasks:", NULL, 0, NULL, NULL, qkv_cmd_train};

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
    return train_task(kind, argc - 1, argv + 1);
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

typedef struct eval_options {
    int threads;
    const char *data;
} eval_options;

static const qkv_field eval_fields[] = {
    QKV_SETTING_FIELD(QKV_FIELD_INT, QKV_SETTING_THREADS, eval_options, threads, 0),
    QKV_TEXT_FIELD("--data", NULL, eval_options, data, NULL,
                   "a model trained on a data set (points, detect, text): evaluate on this set instead of the one "
                   "the checkpoint names"),
};

const qkv_command_spec qkv_command_eval = {
    "eval", "CKPT", 1, "re-evaluate a saved checkpoint on its task's test set", eval_fields,
    sizeof eval_fields / sizeof *eval_fields, NULL, NULL, qkv_cmd_eval};

int qkv_cmd_eval(int argc, char **argv) {
    eval_options o;
    qkv_fields_defaults(eval_fields, qkv_command_eval.n_fields, &o);
    int parsed = qkv_command_parse(&qkv_command_eval, "eval", argc, argv, &o);
    if (parsed != 0) return parsed > 0 ? 0 : 2;
    qkv_set_threads(o.threads);
    return evaluate_checkpoint(argv[0], o.data);
}
