/* train_run.c — see train_run.h. */
#include "train/tasks/train_run.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "train/trainer_fields.h"

void qkv_task_run_begin(qkv_task_run *r, const qkv_task_kind *kind) {
    memset(r, 0, sizeof *r);
    r->kind = kind;
    r->config = qkv_task_config_new(kind);
    r->trainer = kind->trainer;
    r->trainer.defaults = &kind->trainer;
    snprintf(r->command, sizeof r->command, "train %s", kind->name);
    r->n = qkv_args_from_fields(qkv_trainer_fields, qkv_trainer_n_fields, &r->trainer, r->args);
    QKV_CHECK(r->n + kind->n_fields <= QKV_MAX_COMMAND_FLAGS, "%s: %d flags, more than %d", r->command,
              r->n + kind->n_fields, QKV_MAX_COMMAND_FLAGS);
    r->n += qkv_args_from_fields(kind->fields, kind->n_fields, r->config, r->args + r->n);
}

int qkv_task_run_read(qkv_task_run *r, int argc, char **argv) {
    return qkv_args_read(r->command, argc, argv, r->args, r->n, r->given);
}

static int flag_given(const char *flag, const void *ctx) {
    const qkv_task_run *r = ctx;
    for (int i = 0; i < r->n; i++)
        if (strcmp(r->args[i].flag, flag) == 0) return r->given[i];
    return 0;
}

static int task_check(void *ctx, qkv_trainer_config *trainer) {
    qkv_task_run *r = ctx;
    if (qkv_fields_check_text(r->kind->fields, r->kind->n_fields, r->config) != 0 ||
        r->kind->check(r->config, trainer) != 0)
        return -1;
    trainer->seed = qkv_task_config_seed(r->kind, r->config);   /* the tape's dropout stream */
    return 0;
}

static int task_run(void *ctx, const qkv_trainer_config *trainer) {
    qkv_task_run *r = ctx;
    return r->kind->run ? r->kind->run(r->config, trainer) : 1;
}

static qkv_task *task_create(void *ctx, size_t max_memory) {
    qkv_task_run *r = ctx;
    return qkv_task_create(r->kind, r->config, 0, max_memory); /* its data set judged first */
}

static void task_destroy(void *ctx, qkv_task *task) { ((qkv_task_run *)ctx)->kind->destroy(task); }

void qkv_task_run_spec(qkv_task_run *r, int owns_process, qkv_session_spec *spec) {
    *spec = (qkv_session_spec){.name = r->command, .config = r->trainer, .ctx = r, .check = task_check,
                               .run = task_run, .create = task_create, .destroy = task_destroy,
                               .given = flag_given, .given_ctx = r, .owns_process = owns_process};
}

void qkv_task_run_end(qkv_task_run *r) {
    free(r->config);
    r->config = NULL;
}
