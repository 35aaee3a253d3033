/* train_flags.c — the flags every train command shares. See train_flags.h. */
#include "train/cli/train_flags.h"

#include <stdio.h>
#include <string.h>

#include "core/error.h"
#include "core/kernels/parallel.h"
#include "train/dist.h"

/* Appends the shared flags to args; returns how many. */
int qkv_common_args(qkv_arg *args, qkv_common_flags *f) {
    qkv_trainer_config *t = &f->trainer;
    const qkv_arg shared[] = {
        QKV_ARG_INT_ROW("--steps", &t->steps, 1, 1e9, "training steps"),
        QKV_ARG_FLOAT_ROW("--lr", &t->optim.lr, 0, 10, "learning rate"),
        QKV_ARG_CHOICE_ROW("--optimizer", &f->optimizer, qkv_opt_kind_names, "optimizer"),
        QKV_ARG_FLOAT_ROW("--momentum", &t->optim.momentum, 0, 0.9999, "SGD momentum"),
        QKV_ARG_FLOAT_ROW("--weight-decay", &f->weight_decay, 0, 10, "weight decay (not on biases, norms, tables)"),
        QKV_ARG_CHOICE_ROW("--schedule", &f->schedule, qkv_schedule_kind_names, "learning-rate schedule"),
        QKV_ARG_INT_ROW("--warmup", &f->warmup, 0, 1e9, "cosine: linear warmup steps"),
        QKV_ARG_FLOAT_ROW("--clip", &t->clip, 0, 1e9, "clip gradients to this global norm; 0: off"),
        QKV_ARG_INT_ROW("--eval-every", &t->eval_every, 0, 1e9, "steps between evaluations; 0: only at the end"),
        QKV_ARG_INT_ROW("--log-every", &t->log_every, 0, 1e9, "steps between log lines; 0: none"),
        QKV_ARG_FLOAT_ROW("--target", &t->target, 0, 1e9, "stop early when the target metric reaches this"),
        QKV_ARG_STRING_ROW("--save", &t->save_path, "write a checkpoint (safetensors) here"),
        QKV_ARG_INT_ROW("--save-every", &t->save_every, 0, 1e9, "also checkpoint every N steps"),
        QKV_ARG_STRING_ROW("--resume", &t->resume_path, "continue from this checkpoint"),
        QKV_ARG_STRING_ROW("--json", &t->json_path, "write a JSON summary here"),
        QKV_ARG_STRING_ROW("--csv", &t->csv_path, "write one CSV row per logged step here"),
        QKV_ARG_INT_ROW("--threads", &f->threads, 0, 1024, QKV_THREADS_HELP),
        QKV_ARG_INT_ROW("--micro-batch", &t->micro_batch, 0, 1e9,
                        "examples per micro-batch, the unit of parallel work (divides the batch; 0: the task's)"),
        QKV_ARG_FLAG_ROW("--quiet", &t->quiet, "print only the final line"),
        QKV_ARG_FLAG_ROW("--print-tape", &t->print_tape, "print the tape of the first step"),
        QKV_ARG_STRING_ROW("--plot", &t->plot_path, "write the loss and metric curves here (PNG)"),
        QKV_ARG_STRING_ROW("--dot", &t->dot_path, "write the first step's tape here (Graphviz)"),
        QKV_ARG_FLAG_ROW("--detect-nan", &t->detect_nan, "anomaly mode: stop at the first op giving NaN/Inf"),
    };
    memcpy(args, shared, sizeof shared);
    return (int)(sizeof shared / sizeof shared[0]);
}

/* After parsing: the enums and derived settings. */
void qkv_common_finish(qkv_common_flags *f) {
    qkv_trainer_config *t = &f->trainer;
    t->optim.kind = (qkv_opt_kind)f->optimizer;
    t->optim.weight_decay = f->weight_decay;
    t->schedule.kind = (qkv_schedule_kind)f->schedule;
    t->schedule.warmup = f->warmup < t->steps ? f->warmup : 0;
    t->schedule.total = t->steps;
    if (t->schedule.step_size == 0) t->schedule.step_size = t->steps / 3 > 0 ? t->steps / 3 : 1;
    if (t->schedule.gamma == 0) t->schedule.gamma = 0.1f;
    f->threads = qkv_set_threads(qkv_dist_threads(f->threads));   /* MPI: cores per rank */
}

void qkv_print_final(const char *task, const qkv_train_result *r) {
    printf("final: task=%s steps=%ld loss=%.4f", task, r->steps_done, r->final_loss);
    for (int i = 0; i < r->metrics.n; i++) printf(" %s=%.4f", r->metrics.key[i], r->metrics.value[i]);
    printf(" seconds=%.2f steps_per_s=%.1f\n", r->seconds, r->steps_per_second);
}

int qkv_train_exit(int rc, const char *task, const qkv_train_result *result) {
    if (rc == 0) {
        if (task) qkv_print_final(task, result);
        return 0;
    }
    if (result->interrupted && qkv_dist_rank() != 0) return 128 + result->interrupted; /* rank 0 says it */
    fprintf(stderr, "qkv: %s\n", qkv_last_error());
    if (result->interrupted) return 128 + result->interrupted;
    return result->nonfinite ? 3 : 2;
}
