/* trainer.c — the shared training loop, one call at a time: the start (the
 * optimizer, tapes and buffers; --resume restored), one step, the evaluations,
 * logs and checkpoints between steps, and the end of a run; progress output.
 * The checks of its settings are trainer_checks.c's. The --csv, --plot and --json files
 * are trainer_outputs.c's. See trainer.h. */
#include "train/trainer.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include "core/kernels/omp_shim.h"
#include <stdlib.h>
#include <stdarg.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "train/checkpoint.h"
#include "core/alloc.h"
#include "core/cancel.h"
#include "core/error.h"
#include "core/fileio.h"
#include "core/kernels/parallel.h"
#include "train/dist.h"
#include "train/interrupt.h"
#include "train/step.h"
#include "train/trainer_fields.h"
#include "train/trainer_outputs.h"

/* ---- progress ---------------------------------------------------------------- */

typedef struct progress {
    int tty, quiet;
    double start;
    long first_step, steps;
    double per_step;             /* examples (or tokens) a step learns from; 0: unknown */
    const char *unit;            /* "examples/s" or "tokens/s" */
    long evaluated_at;           /* the step of the metrics on the progress bar (a terminal) */
} progress;

static progress progress_make(const qkv_trainer_config *config, const qkv_task *task, long start) {
    int tokens = task->tokens_per_example;
    return (progress){isatty(STDOUT_FILENO), config->quiet, omp_get_wtime(), start, config->steps,
                      (double)task->batch * (tokens > 0 ? tokens : 1), tokens > 0 ? "tokens/s" : "examples/s", -1};
}

/* "  key value" for each metric (the target's first), or only the target's. */
static void metrics_text(const qkv_trainer_config *config, const qkv_metrics *m, int all, char *out, size_t len) {
    size_t used = 0;
    out[0] = '\0';
    const double *target = config->target_key ? qkv_metrics_get(m, config->target_key) : NULL;
    if (target) used += (size_t)snprintf(out, len, "  %s %.4f", config->target_key, *target);
    for (int i = 0; i < m->n && used < len && (all || !used); i++)
        if (!target || strcmp(m->key[i], config->target_key) != 0)
            used += (size_t)snprintf(out + used, len - used, "  %s %.4f", m->key[i], m->value[i]);
}

/* A log line (a terminal: the progress bar). metrics: this step's evaluation, or
 * NULL; a line shows metrics only when they are fresh, and on a terminal the bar
 * keeps the last ones with the step they are from. */
static void report_progress(progress *p, const qkv_trainer_config *config, long step, float loss,
                            const qkv_metrics *metrics, const qkv_metrics *last, int final_line) {
    if (p->quiet) return;
    double elapsed = omp_get_wtime() - p->start;
    double rate = (double)(step - p->first_step) / (elapsed > 0 ? elapsed : 1e-9);
    double eta = rate > 0 ? (double)(p->steps - step) / rate : 0;
    char metric_text[256] = "", speed[64] = "";
    if (metrics) p->evaluated_at = step;
    if (p->per_step > 0) snprintf(speed, sizeof speed, "  %.0f %s", rate * p->per_step, p->unit);
    if (p->tty) {
        if (p->evaluated_at >= 0) {
            metrics_text(config, last, 0, metric_text, sizeof metric_text - 24);
            if (p->evaluated_at != step)
                snprintf(metric_text + strlen(metric_text), 24, " (step %ld)", p->evaluated_at);
        }
        const int width = 24;
        int filled = (int)((double)step / (double)p->steps * width);
        char bar[32];
        for (int i = 0; i < width; i++) bar[i] = i < filled ? '#' : '.';
        bar[width] = '\0';
        printf("\r[%s] step %ld/%ld  loss %.4f%s  %.0f steps/s%s  ETA %.0fs   ", bar, step, p->steps, loss,
               metric_text, rate, speed, eta);
        if (final_line) putchar('\n');
    } else {
        if (metrics) metrics_text(config, metrics, 1, metric_text, sizeof metric_text);
        printf("step %6ld  loss %.4f%s  %.0f steps/s%s\n", step, loss, metric_text, rate, speed);
    }
    fflush(stdout);
}

/* ---- a run ------------------------------------------------------------------------ */

/* What the phases of a run share: its start, one step, the work between steps, the end. */
struct qkv_run {
    qkv_trainer_config config;        /* this rank's (train/dist.h), as the session settled it */
    qkv_task *task;
    qkv_train_result *result;
    const qkv_config_kv *description; /* the task's config: checkpoint metadata, --json */
    qkv_checkpoint *resume;           /* the session's, opened and checked; or NULL */
    qkv_optimizer opt;
    qkv_tape *tape;                   /* evaluations, and the dropout stream between steps */
    qkv_step parallel;                /* the micro-batches' tapes and gradients (train/step.h) */
    long start, step;                 /* the step this run began at, and the steps done so far */
    const char *last_path;            /* the last good checkpoint (NULL: none yet) and its step */
    long last_saved;
    progress prog;
    qkv_metrics metrics;              /* the last evaluation's */
    float lr;                         /* the last step's learning rate */
    int pending, evaluated;           /* the last step's row is still to write; an evaluation came since */
    int over;                         /* 1: the target was met (the run is over before --steps) */
    int pending_checked;              /* a resumed step's cut evaluation was looked for (evaluate_pending) */
    qkv_history resumed;              /* the checkpoint's history, up to its step */
    double seconds_before;            /* resumed: the seconds the run took before (history.h); -1: unknown */
    qkv_train_outputs outputs;        /* --csv, --plot, --json */
    size_t arena_budget;              /* the tape arenas' budget before this run (restored at its end) */
};
typedef struct qkv_run train_run;

/* ---- setup and resume --------------------------------------------------------------- */

/* --resume: the parameters, optimizer state, step, dropout stream and history of
 * the session's checkpoint, which must be short of --steps. 0, or -1 with
 * qkv_last_error(). */
static int resume_from_checkpoint(train_run *run) {
    qkv_checkpoint *ckpt = run->resume;
    int rc = qkv_checkpoint_restore(ckpt, run->task->params, &run->opt, &run->start, &run->tape->rng);
    if (rc == 0 && ckpt->history) rc = qkv_history_parse(&run->resumed, ckpt->history, run->start, ckpt->path);
    if (rc == 0 && run->start >= run->config.steps) {
        qkv_set_error("%s: the checkpoint is at step %ld; --steps %d must be larger to resume", ckpt->path, run->start,
                      run->config.steps);
        rc = -1;
    }
    return rc;
}

qkv_run *qkv_run_start(const qkv_run_setup *setup, qkv_train_result *result) {
    memset(result, 0, sizeof *result);
    train_run *run = qkv_calloc(1, sizeof *run, "the run");
    *run = (train_run){.config = qkv_trainer_rank_config(setup->config), .task = setup->task, .result = result,
                       .description = setup->description, .resume = qkv_dist_rank() == 0 ? setup->resume : NULL};
    const qkv_trainer_config *config = &run->config;
    qkv_task *task = run->task;
    /* The tape arenas grow within what the rest of the session's estimate leaves them. */
    run->arena_budget = qkv_tape_set_arena_budget(setup->arena_budget);
    int bad = qkv_step_init(&run->parallel, task, config->micro_batch, config->detect_nan) != 0;
    qkv_optimizer_init(&run->opt, &config->optim, task->params);
    run->tape = qkv_tape_create(config->seed);
    if (!bad && run->resume && resume_from_checkpoint(run) != 0) bad = 1;
    if (qkv_dist_any(bad)) {
        if (!bad) qkv_set_error("rank %d: another rank could not start training", qkv_dist_rank());
        qkv_history_free(&run->resumed);
        qkv_step_free(&run->parallel);
        qkv_tape_free(run->tape);
        qkv_optimizer_free(&run->opt);
        qkv_tape_set_arena_budget(run->arena_budget);
        free(run);
        return NULL;
    }
    qkv_dist_share_state(task->params, &run->opt, &run->start, run->tape);
    run->step = run->last_saved = run->start;
    run->last_path = config->resume_path;
    qkv_train_outputs_open(&run->outputs, config->csv_path, config->plot_path, config->json_path,
                           config->log_every);
    run->outputs.history = run->resumed; /* the run so far, when resumed: the files cover all of it */
    memset(&run->resumed, 0, sizeof run->resumed);
    /* a checkpoint keeps no clock: the seconds before --resume come from the earlier --csv (history.h) */
    double before = run->resume && config->csv_path
                        ? qkv_history_adopt_csv_seconds(&run->outputs.history, config->csv_path, run->start) : NAN;
    run->seconds_before = isnan(before) ? -1 : before;
    const qkv_trainer_resume_note note = {run->resume ? run->resume->path : NULL, run->start,
                                          run->resume ? run->resume->settings : NULL, run->seconds_before};
    run->outputs.record = config->json_path ? qkv_trainer_record_json(config, run->resume ? &note : NULL) : NULL;
    run->prog = progress_make(config, task, run->start);
    return run;
}

/* Seconds since the run began: this part's, after those it took before --resume when known. */
static double run_seconds(const train_run *run) {
    return omp_get_wtime() - run->prog.start + (run->seconds_before > 0 ? run->seconds_before : 0);
}

/* ---- one step ------------------------------------------------------------------------- */

/* A NaN/Inf in the coming step stops the run: the error says where, and which
 * checkpoint is the last good one. Always -1. */
static int stop_nonfinite(train_run *run, const char *what) {
    char saved[160] = "";
    if (run->last_path)
        snprintf(saved, sizeof saved, "; %s (step %ld) is the last good checkpoint", run->last_path, run->last_saved);
    else if (run->config.save_path)
        snprintf(saved, sizeof saved, "; no checkpoint was saved");
    qkv_set_error("step %ld: %s; training stopped%s", run->step + 1, what, saved);
    run->result->nonfinite = 1;
    return -1;
}

/* After backward: --detect-nan's first anomaly (the first micro-batch's), then the
 * loss itself. Under MPI both checks are collective, so every rank stops at the
 * same step. */
static int check_finite(train_run *run, const char *anomaly, float loss) {
    if (run->config.detect_nan && qkv_dist_any(anomaly[0] != 0)) {
        char what[360];
        snprintf(what, sizeof what, "--detect-nan: %s", anomaly[0] ? anomaly : "on another rank");
        return stop_nonfinite(run, what);
    }
    if (!isfinite(loss)) {
        char what[96];
        snprintf(what, sizeof what, "the loss is %s (try a smaller --lr, --clip, or --detect-nan to find the op)",
                 isnan(loss) ? "NaN" : "Inf");
        return stop_nonfinite(run, what);
    }
    return 0;
}

/* The values of the run's state that are NaN/Inf: every parameter, then every
 * optimizer buffer, counted per tensor in parallel; *first names the first
 * tensor (in that order) holding one. */
static size_t count_nonfinite_state(const train_run *run, char first[QKV_NAME_MAX + 8]) {
    const qkv_params *params = run->task->params;
    const qkv_optimizer *opt = &run->opt;
    int n = params->n * (1 + opt->n_slots); /* tensor t: slot t / n_params - 1 (-1: the parameter) */
    size_t *bad = qkv_calloc((size_t)(n > 0 ? n : 1), sizeof *bad, "the non-finite counts"), total = 0;
    QKV_FOR(QKV_PARALLEL(qkv_params_count(params) * (size_t)(1 + opt->n_slots)), schedule(dynamic, 1),
            (int t = 0; t < n; t++), {
        int i = t % params->n, slot = t / params->n - 1;
        const float *x = slot < 0 ? params->items[i]->data : opt->state[slot * opt->n_params + i];
        bad[t] = qkv_count_nonfinite(x, params->items[i]->size);
    });
    first[0] = '\0';
    for (int t = 0; t < n; t++) {
        int i = t % params->n, slot = t / params->n - 1;
        if (bad[t] && !total) {
            if (slot < 0) snprintf(first, QKV_NAME_MAX + 8, "%s", params->items[i]->name);
            else snprintf(first, QKV_NAME_MAX + 8, "optim.%s.%s", qkv_optimizer_slot_name(opt, slot),
                          params->items[i]->name);
        }
        total += bad[t];
    }
    free(bad);
    return total;
}

/* After the update, the fused check: every parameter and optimizer value finite,
 * counted by the optimizer's step on each piece it updated (updated_bad; a NaN/Inf
 * gradient shows up there too, through the update); only when some are not does a
 * pass over the state find the first tensor to name. Every rank holds the same
 * state, so every rank stops at the same step. grad_norm: the norm clipping
 * measured, or < 0 when it did not run. 0, or -1 with the error naming what went
 * non-finite first: the gradients or the update. */
static int check_updated_state(train_run *run, float loss, double grad_norm, size_t updated_bad) {
    char first[QKV_NAME_MAX + 8], what[400];
    if (!updated_bad) return 0;
    size_t bad = count_nonfinite_state(run, first);
    if (grad_norm < 0) grad_norm = qkv_grad_norm(run->task->params);
    if (!isfinite(grad_norm))
        snprintf(what, sizeof what, "the gradient norm is %s with a finite loss %g (try --clip, a smaller --lr or "
                 "--detect-nan to find the op)", isnan(grad_norm) ? "NaN" : "Inf", loss);
    else
        snprintf(what, sizeof what, "the update left %zu NaN/Inf values, first in %s (loss %g, gradient norm %g: try a "
                 "smaller --lr or --clip)", bad, first, loss, grad_norm);
    return stop_nonfinite(run, what);
}

/* --print-tape and --dot show the first step's tape: micro-batch 0's, after its
 * backward (train/step.h). 0, or -1 if --dot fails. */
static int show_first_tape(void *ctx, qkv_tape *tape) {
    const train_run *run = ctx;
    const qkv_trainer_config *config = &run->config;
    if (config->print_tape) {
        printf("tape of step %ld (%d nodes; micro-batch 1 of %d):\n", run->step + 1, tape->n_nodes,
               run->parallel.micro_batches);
        qkv_tape_print(tape, stdout);
    }
    return config->dot_path ? qkv_tape_write_dot(tape, config->dot_path) : 0;
}


/* Step run->step at learning rate lr: the batch's gradient and loss (train/step.h:
 * every micro-batch, on every thread and rank), the NaN/Inf checks, clipping, the
 * optimizer step. 0, 2 when a signal dropped the step (train/interrupt.h), or -1
 * with qkv_last_error(); the parameters are not updated unless 0. */
static int train_step(train_run *run, float lr) {
    qkv_task *task = run->task;
    const qkv_trainer_config *config = &run->config;
    int show = run->step == run->start && (config->print_tape || config->dot_path);
    qkv_step_result step;
    if (qkv_step_run(&run->parallel, run->step, &run->tape->rng, &step, show ? show_first_tape : NULL, run) != 0) {
        if (step.interrupted) run->result->interrupted = step.interrupted; /* the ranks' agreed signal */
        if (step.interrupted) return 2;
        return step.diverged ? stop_nonfinite(run, qkv_last_error()) : -1; /* the task's error: stop, write nothing */
    }
    if (check_finite(run, step.anomaly, step.loss) != 0) return -1;
    double grad_norm = config->clip > 0 ? qkv_clip_grad_norm(task->params, config->clip) : -1.0;
    size_t updated_bad = qkv_optimizer_step(&run->opt, task->params, lr);
    if (check_updated_state(run, step.loss, grad_norm, updated_bad) != 0) return -1;
    run->result->final_loss = step.loss;
    run->step++;
    return 0;
}

/* ---- between steps: evaluation, logging, checkpoints, early stop ------------------------ */

/* Evaluations and reports run with gradients and training mode off, and leave the tape empty. */
typedef struct tape_modes { int grad, training; } tape_modes;
static tape_modes inference_modes(qkv_tape *tape) {
    return (tape_modes){qkv_tape_set_grad(tape, 0), qkv_tape_set_training(tape, 0)};
}
static void restore_modes(qkv_tape *tape, tape_modes modes) {
    qkv_tape_reset(tape);
    qkv_tape_set_grad(tape, modes.grad);
    qkv_tape_set_training(tape, modes.training);
}

/* 0, or -1 when a signal cut the evaluation short (its chunks poll it,
 * train/interrupt.h): *metrics then keeps the last whole evaluation's. */
static int evaluate(qkv_task *task, qkv_tape *tape, qkv_metrics *metrics) {
    tape_modes modes = inference_modes(tape);
    qkv_metrics fresh = {0};
    task->evaluate(task->self, tape, &fresh);
    restore_modes(tape, modes);
    if (qkv_interrupt_signal()) return -1;
    *metrics = fresh;
    return 0;
}

static int reached_target(const qkv_trainer_config *config, const qkv_metrics *m) {
    const double *v = config->target_key ? qkv_metrics_get(m, config->target_key) : NULL;
    if (config->target <= 0 || !v) return 0;
    return config->lower_is_better ? *v <= config->target : *v >= config->target;
}

/* The checkpoint just written: its size in the result, and a line saying what
 * makes it up (the optimizer state is usually most of it). */
static void report_checkpoint(train_run *run) {
    struct stat st;
    if (stat(run->config.save_path, &st) != 0) return;
    run->result->checkpoint_bytes = (long)st.st_size;
    if (run->config.quiet) return;
    size_t params = qkv_params_count(run->task->params) * sizeof(float);
    size_t state = run->config.save_weights_only ? 0 : (size_t)run->opt.n_slots * params;
    if (run->prog.tty) putchar('\n');
    printf("checkpoint %s (step %ld): %.2f MB: parameters %.2f MB, optimizer state %.2f MB%s\n",
           run->config.save_path, run->step, st.st_size / 1e6, params / 1e6, state / 1e6,
           state ? " (--save-weights-only leaves it out)" : "");
    fflush(stdout);
}

static int save_checkpoint(train_run *run) {
    qkv_config_kv *settings = qkv_malloc(sizeof *settings, "the run's settings");
    qkv_trainer_settings(&run->config, settings); /* the micro-batch as the session settled it */
    char *history = qkv_history_csv(&run->outputs.history, 0);
    int rc = qkv_checkpoint_save(run->config.save_path, run->task->params,
                                 run->config.save_weights_only ? NULL : &run->opt, run->step, &run->tape->rng,
                                 run->description, settings, history);
    free(history);
    free(settings);
    if (rc == 0) report_checkpoint(run);
    return rc;
}

/* The --save checkpoint now, which is then the last good one. */
static int save_now(train_run *run) {
    if (save_checkpoint(run) != 0) return -1;
    run->last_path = run->config.save_path;
    run->last_saved = run->step;
    return 0;
}

/* --save-every: a checkpoint every save_every steps. */
static int save_periodic(train_run *run) {
    const qkv_trainer_config *config = &run->config;
    if (!config->save_path || config->save_every <= 0 || run->step % config->save_every != 0) return 0;
    return save_now(run);
}

/* The task's lines after an evaluation, below the progress line: written to a
 * buffer and printed whole, unless a signal reached them (core/cancel.h: a
 * sample decoded through a cut attention op is meaningless, and dropped). */
static void report(train_run *run) {
    if (run->prog.tty) putchar('\n');   /* the progress bar's line ends here */
    char *text = NULL;
    size_t len = 0;
    FILE *buffer = open_memstream(&text, &len);
    tape_modes modes = inference_modes(run->tape);
    run->task->report(run->task->self, run->tape, buffer ? buffer : stdout);
    restore_modes(run->tape, modes);
    if (buffer && fclose(buffer) == 0 && !qkv_cancelled()) fwrite(text, 1, len, stdout);
    free(text);
}

const qkv_metrics *qkv_run_metrics(const qkv_run *run) { return &run->metrics; }

int qkv_run_evaluation_due(const qkv_run *run) {
    return run->pending && run->config.eval_every > 0 && run->step % run->config.eval_every == 0;
}

int qkv_run_evaluate(qkv_run *run) {
    if (qkv_dist_rank() == 0 && evaluate(run->task, run->tape, &run->metrics) != 0)
        return 2; /* cut short by a signal: the row keeps no metrics, the next step ends the run */
    run->evaluated = run->pending;
    return 0;
}

/* The last step's row, once its evaluation (if any) is made: log every log_every
 * steps (and after the first), record for --csv and --plot, the task's report
 * after an evaluation, a checkpoint every save_every. 1 to stop early (the target
 * is reached), 0 to go on, -1 on an error. */
static int write_row(train_run *run) {
    if (!run->pending) return 0;
    run->pending = 0;
    const qkv_trainer_config *config = &run->config;
    long step = run->step;
    float loss = run->result->final_loss;
    /* Logged: every log_every steps and the first, which is also what the history
     * keeps; the first step of a resumed run is shown, not kept (a history must not
     * depend on where a run was interrupted). */
    int keep_now = config->log_every > 0 && (step % config->log_every == 0 || step == 1);
    int log_now = keep_now || (config->log_every > 0 && step == run->start + 1);
    /* A step the schedule evaluates at keeps its row even when a signal cut the
     * evaluation short (its metrics are then not shown or kept, and the next call
     * ends the run): the row is saved with this step's checkpoint, and a run
     * resumed from it evaluates this step first (evaluate_pending), so its history
     * is the uninterrupted one's (history.h). */
    int scheduled = config->eval_every > 0 && step % config->eval_every == 0;
    int eval_now = run->evaluated;
    const qkv_metrics *fresh = eval_now ? &run->metrics : NULL; /* metrics are shown and kept when evaluated */
    qkv_train_outputs_record(&run->outputs, step, loss, run->lr, run_seconds(run), fresh,
                             keep_now || scheduled);
    if (log_now || eval_now) report_progress(&run->prog, config, step, loss, fresh, &run->metrics, 0);
    if (eval_now && qkv_dist_rank() == 0 && run->task->report && !config->quiet) report(run);
    if (save_periodic(run) != 0) return -1;
    /* Every rank asks (rank 0 answers), whether or not rank 0's evaluation was cut. */
    if (scheduled && qkv_dist_root_flag(eval_now && reached_target(config, &run->metrics))) {
        run->result->stopped_early = step < config->steps;
        run->over = 1;
        return 1;
    }
    return 0;
}

/* On --resume: the evaluation of the checkpoint's step, when a signal cut it in
 * the run that saved it (its history row awaits its metrics, history.h), done
 * before the first step as that run would have done it after the step: the row,
 * the progress line, the report and the target. 0 to go on, 1 to stop (the
 * target is reached), 2 when a signal cuts it again. */
static int evaluate_pending(train_run *run) {
    const qkv_trainer_config *config = &run->config;
    qkv_history *h = &run->outputs.history;
    int pending = config->eval_every > 0 && run->start % config->eval_every == 0 &&
                  qkv_history_awaits_evaluation(h, run->start);
    if (!qkv_dist_root_flag(pending)) return 0; /* rank 0 alone restored the history */
    if (qkv_dist_rank() == 0 && evaluate(run->task, run->tape, &run->metrics) != 0) {
        run->result->interrupted = qkv_interrupt_signal();
        return 2;
    }
    if (qkv_dist_rank() == 0) {
        qkv_history_add(h, run->start, NAN, NAN, NAN, &run->metrics); /* fills the row's metric cells */
        report_progress(&run->prog, config, run->start, (float)h->loss[h->n - 1], &run->metrics, &run->metrics, 0);
        if (run->task->report && !config->quiet) report(run);
    }
    if (!qkv_dist_root_flag(reached_target(config, &run->metrics))) return 0;
    run->result->stopped_early = 1;
    return 1;
}

int qkv_run_step(qkv_run *run) {
    int rc = write_row(run);
    if (rc != 0 || run->over) return rc < 0 ? -1 : 1;
    if (run->step == run->start && !run->pending_checked) { /* before the first step of a resumed run */
        run->pending_checked = 1;
        rc = evaluate_pending(run);
        if (rc == 1) run->over = 1;
        if (rc != 0) return rc;
    }
    if (run->step >= run->config.steps) return 1;
    int signal = run->step > run->start ? qkv_dist_max(qkv_interrupt_signal()) : 0; /* the same on every rank */
    if (signal) {
        run->result->interrupted = signal;
        return 2;
    }
    float lr = run->config.optim.lr * qkv_schedule_factor(&run->config.schedule, run->step);
    rc = train_step(run, lr);
    if (rc != 0) return rc;
    run->lr = lr;
    run->pending = 1;
    run->evaluated = 0;
    return 0;
}

int qkv_run_save(qkv_run *run) {
    if (write_row(run) < 0) return -1;
    return run->config.save_path ? save_now(run) : 0;
}

/* ---- the end ------------------------------------------------------------------------- */

/* The checkpoint of --save at the end, unless --save-every has just written this
 * very step (once is enough). 0, or -1 if it cannot be written. */
static int save_final(train_run *run) {
    const char *path = run->config.save_path;
    if (!path || (run->last_path == path && run->last_saved == run->step)) return 0;
    return save_now(run);
}

/* After a run without error, on rank 0: the final evaluation and progress line, and
 * the checkpoint of --save. 0, or -1 if the checkpoint cannot be written. */
static int final_evaluation(train_run *run) {
    qkv_train_result *result = run->result;
    if (evaluate(run->task, run->tape, &run->metrics) != 0) {
        result->interrupted = qkv_interrupt_signal();
        return 2;
    }
    result->metrics = run->metrics;
    qkv_train_outputs_record_final(&run->outputs, run->step, result->final_loss, run->lr,
                                   run_seconds(run), &run->metrics);
    if (run->prog.tty && !run->prog.quiet)
        report_progress(&run->prog, &run->config, run->step, result->final_loss, &run->metrics, &run->metrics, 1);
    return save_final(run);
}

/* A run stopped by a signal, on rank 0: no final evaluation (the last one's metrics
 * stand), the checkpoint of --save, and the error saying where the work is. 0 to
 * write the other files, or -1 if the checkpoint failed. */
static int end_interrupted(train_run *run) {
    const char *name = qkv_signal_name(run->result->interrupted);
    run->result->metrics = run->metrics;
    if (save_final(run) != 0) return -1;
    if (run->config.save_path && run->step >= run->config.steps)
        qkv_set_error("stopped by %s in the final evaluation, after step %ld of %d; %s (step %ld) holds the "
                      "trained model", name, run->step, run->config.steps, run->config.save_path, run->step);
    else if (run->config.save_path)
        qkv_set_error("stopped by %s after step %ld of %d; %s (step %ld) holds the work: continue with --resume %s",
                      name, run->step, run->config.steps, run->config.save_path, run->step, run->config.save_path);
    else
        qkv_set_error("stopped by %s %safter step %ld of %d; nothing was saved (no --save)", name,
                      run->step >= run->config.steps ? "in the final evaluation, " : "", run->step, run->config.steps);
    return 0;
}

int qkv_run_finish(qkv_run *run, int rc) {
    if (rc == 0 && write_row(run) < 0) rc = -1; /* the last step's row, when the caller drove the steps */
    qkv_train_result *result = run->result;
    result->seconds = omp_get_wtime() - run->prog.start;
    result->steps_done = run->step;
    result->steps_per_second = (double)(run->step - run->start) / (result->seconds > 0 ? result->seconds : 1e-9);
    if (rc == 0 && qkv_dist_rank() == 0) rc = final_evaluation(run); /* 2: a signal cut it short */
    if (rc == 2 && qkv_dist_rank() == 0 && end_interrupted(run) != 0) rc = -1;
    char message[512];
    snprintf(message, sizeof message, "%s", qkv_last_error());
    if (qkv_train_outputs_finish(&run->outputs, rc >= 0, run->task, run->description, result) != 0) rc = -1;
    else if (rc == 2) qkv_set_error("%s", message);
    qkv_step_free(&run->parallel);
    qkv_tape_free(run->tape);
    qkv_optimizer_free(&run->opt);
    qkv_tape_set_arena_budget(run->arena_budget);
    free(run);
    return rc == 0 ? 0 : -1;
}
