/* trainer.c — the shared training loop, progress output and run summaries.
 * See trainer.h. */
#define _GNU_SOURCE /* open_memstream */
#include "train/trainer.h"

#include <errno.h>
#include <libgen.h>
#include <math.h>
#include <omp.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "train/checkpoint.h"
#include "core/alloc.h"
#include "core/error.h"
#include "core/fileio.h"
#include "core/json.h"
#include "core/parallel.h"
#include "train/dist.h"
#include "train/curves.h"

/* ---- metrics and config ------------------------------------------------------ */

void qkv_metrics_set(qkv_metrics *m, const char *key, double value) {
    for (int i = 0; i < m->n; i++)
        if (strcmp(m->key[i], key) == 0) { m->value[i] = value; return; }
    QKV_CHECK(m->n < QKV_MAX_METRICS, "metrics: more than %d metrics", QKV_MAX_METRICS);
    m->key[m->n] = key;
    m->value[m->n++] = value;
}

int qkv_argmax(const float *row, int n) {
    int best = 0;
    for (int i = 1; i < n; i++)
        if (row[i] > row[best]) best = i;
    return best;
}

const double *qkv_metrics_get(const qkv_metrics *m, const char *key) {
    for (int i = 0; i < m->n; i++)
        if (strcmp(m->key[i], key) == 0) return &m->value[i];
    return NULL;
}

void qkv_config_add(qkv_config_kv *c, const char *key, const char *fmt, ...) {
    QKV_CHECK(c->n < QKV_MAX_CONFIG && strlen(key) < sizeof c->key[0], "config: cannot add %s", key);
    strcpy(c->key[c->n], key);
    va_list ap;
    va_start(ap, fmt);
    int len = vsnprintf(c->value[c->n], sizeof c->value[0], fmt, ap);
    va_end(ap);
    QKV_CHECK(len >= 0 && (size_t)len < sizeof c->value[0], "config: the value of %s is %d bytes, more than %zu", key,
              len, sizeof c->value[0] - 1);
    c->n++;
}

const char *qkv_config_get(const qkv_config_kv *c, const char *key) {
    for (int i = 0; i < c->n; i++)
        if (strcmp(c->key[i], key) == 0) return c->value[i];
    return NULL;
}

int qkv_config_get_int(const qkv_config_kv *c, const char *key, long long lo, long long hi, long long *out) {
    const char *text = qkv_config_get(c, key);
    char *end = NULL;
    errno = 0;
    long long v = text ? strtoll(text, &end, 10) : 0;
    if (!text || errno || end == text || *end || v < lo || v > hi) {
        qkv_set_error("config \"%s\" is %s%s%s (expected an integer in %lld..%lld)", key, text ? "\"" : "missing",
                      text ? text : "", text ? "\"" : "", lo, hi);
        return -1;
    }
    *out = v;
    return 0;
}

int qkv_check_output_path(const char *path) {
    struct stat st;
    if (!*path) {
        qkv_set_error("an output path is empty");
        return -1;
    }
    if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
        qkv_set_error("%s: exists and is not a regular file (%s)", path, S_ISDIR(st.st_mode) ? "a directory" : "a device, FIFO or socket");
        return -1;
    }
    char *copy = qkv_strdup(path, "a path");
    const char *dir = dirname(copy);
    int ok = stat(dir, &st) == 0 && S_ISDIR(st.st_mode);
    int writable = ok && access(dir, W_OK | X_OK) == 0;
    if (!writable) qkv_set_error("%s: cannot write here: directory %s %s", path, dir,
                                 ok ? "is not writable" : "does not exist");
    free(copy);
    return writable ? 0 : -1;
}

/* ---- progress ---------------------------------------------------------------- */

typedef struct progress {
    int tty, quiet;
    double start;
    long first_step, steps;
} progress;

static const char *primary_metric(const qkv_trainer_config *config, const qkv_metrics *m, double *value) {
    const double *v = config->target_key ? qkv_metrics_get(m, config->target_key) : NULL;
    if (!v && m->n > 0) { *value = m->value[0]; return m->key[0]; }
    if (!v) return NULL;
    *value = *v;
    return config->target_key;
}

static void report_progress(const progress *p, const qkv_trainer_config *config, long step, float loss,
                            const qkv_metrics *metrics, int final_line) {
    if (p->quiet) return;
    double elapsed = omp_get_wtime() - p->start;
    double rate = (double)(step - p->first_step) / (elapsed > 0 ? elapsed : 1e-9);
    double eta = rate > 0 ? (double)(p->steps - step) / rate : 0;
    double metric = 0;
    const char *metric_name = primary_metric(config, metrics, &metric);
    char metric_text[64] = "";
    if (metric_name) snprintf(metric_text, sizeof metric_text, "  %s %.4f", metric_name, metric);
    if (p->tty) {
        const int width = 24;
        int filled = (int)((double)step / (double)p->steps * width);
        char bar[32];
        for (int i = 0; i < width; i++) bar[i] = i < filled ? '#' : '.';
        bar[width] = '\0';
        printf("\r[%s] step %ld/%ld  loss %.4f%s  %.0f steps/s  ETA %.0fs   ", bar, step, p->steps, loss,
               metric_text, rate, eta);
        if (final_line) putchar('\n');
    } else {
        printf("step %6ld  loss %.4f%s  %.0f steps/s\n", step, loss, metric_text, rate);
    }
    fflush(stdout);
}

/* ---- summaries ------------------------------------------------------------------ */

static void json_number(qkv_json_out *out, const char *key, double value, const char *fmt) {
    char number[64];
    snprintf(number, sizeof number, fmt, value);
    qkv_json_out_string(out, key);
    qkv_json_out_text(out, ": ");
    qkv_json_out_text(out, number);
}

static int write_summary_json(const char *path, const qkv_task *task, const qkv_config_kv *config,
                              const qkv_train_result *r) {
    qkv_json_out out = {0};
    qkv_json_out_text(&out, "{\"task\": ");
    qkv_json_out_string(&out, task->name);
    qkv_json_out_text(&out, ", \"config\": {");
    for (int i = 0; i < config->n; i++) {
        if (i) qkv_json_out_text(&out, ", ");
        qkv_json_out_string(&out, config->key[i]);
        qkv_json_out_text(&out, ": ");
        qkv_json_out_string(&out, config->value[i]);
    }
    qkv_json_out_text(&out, "}, ");
    json_number(&out, "steps", (double)r->steps_done, "%.0f");
    qkv_json_out_text(&out, ", ");
    json_number(&out, "final_train_loss", r->final_loss, "%.9g"); /* a float round-trips in 9 digits */
    qkv_json_out_text(&out, ", \"test\": {");
    for (int i = 0; i < r->metrics.n; i++) {
        if (i) qkv_json_out_text(&out, ", ");
        json_number(&out, r->metrics.key[i], r->metrics.value[i], "%.6g");
    }
    qkv_json_out_text(&out, "}, ");
    json_number(&out, "wall_seconds", r->seconds, "%.3f");
    qkv_json_out_text(&out, ", ");
    json_number(&out, "steps_per_second", r->steps_per_second, "%.2f");
    qkv_json_out_text(&out, r->stopped_early ? ", \"stopped_early\": true}\n" : ", \"stopped_early\": false}\n");
    int rc = out.failed ? (qkv_set_error("%s: out of memory", path), -1) : qkv_write_file_atomic(path, out.data, out.len);
    qkv_json_out_free(&out);
    return rc;
}

/* ---- the loop ------------------------------------------------------------------- */

static void evaluate(qkv_task *task, qkv_tape *tape, qkv_metrics *metrics) {
    int grad = qkv_tape_set_grad(tape, 0), training = qkv_tape_set_training(tape, 0);
    metrics->n = 0;
    task->evaluate(task->self, tape, metrics);
    qkv_tape_reset(tape);
    qkv_tape_set_grad(tape, grad);
    qkv_tape_set_training(tape, training);
}

static int reached_target(const qkv_trainer_config *config, const qkv_metrics *m) {
    const double *v = config->target_key ? qkv_metrics_get(m, config->target_key) : NULL;
    if (config->target <= 0 || !v) return 0;
    return config->lower_is_better ? *v <= config->target : *v >= config->target;
}

static int fail(const char *what) {
    fprintf(stderr, "qkv: %s\n", what);
    return 2;
}

int qkv_trainer_check_outputs(const qkv_trainer_config *config) {
    const char *outputs[] = {config->json_path, config->csv_path, config->save_path, config->plot_path,
                             config->dot_path};
    for (int i = 0; i < 5; i++) {
        if (outputs[i] && qkv_check_output_path(outputs[i]) != 0) return -1;
        for (int j = 0; j < i; j++)
            if (outputs[i] && outputs[j] && strcmp(outputs[i], outputs[j]) == 0) {
                qkv_set_error("%s: given for two outputs (--json, --csv, --save, --plot, --dot)", outputs[i]);
                return -1;
            }
    }
    return 0;
}

/* The checkpoint's task config must be this run's: same task, same model, same data. */
static int check_resume_config(const char *path, const qkv_config_kv *now) {
    qkv_config_kv saved;
    if (qkv_checkpoint_read_config(path, &saved) != 0) return -1;
    for (int i = 0; i < now->n; i++) {
        const char *value = qkv_config_get(&saved, now->key[i]);
        if (!value || strcmp(value, now->value[i]) != 0) {
            qkv_set_error("%s: a checkpoint of another run: %s is %s%s%s there, %s here", path, now->key[i],
                          value ? "\"" : "", value ? value : "missing", value ? "\"" : "", now->value[i]);
            return -1;
        }
    }
    return 0;
}

/* A NaN/Inf in step (1-based) stops the run: says where, and which checkpoint
 * (last_path, at step last_saved; NULL if none) is the last good one. */
static int diverged(long step, const char *last_path, long last_saved, const char *what) {
    char saved[160] = "";
    if (last_path) snprintf(saved, sizeof saved, "; %s (step %ld) is the last good checkpoint", last_path, last_saved);
    fprintf(stderr, "qkv: step %ld: %s; training stopped%s\n", step, what, saved);
    return 3;
}

int qkv_train(const qkv_trainer_config *shared_config, qkv_task *task, qkv_train_result *result) {
    qkv_trainer_config rank_config = qkv_dist_rank_config(shared_config); /* MPI: rank 0 alone writes */
    const qkv_trainer_config *config = &rank_config;
    int bad = qkv_trainer_check_outputs(config) != 0 || qkv_dist_check_batch(task->batch) != 0;

    qkv_config_kv description = {0};
    task->describe(task->self, &description);
    qkv_optimizer opt;
    qkv_optimizer_init(&opt, &config->optim, task->params);
    qkv_tape *tape = qkv_tape_create(config->seed);
    qkv_tape_set_detect_nan(tape, config->detect_nan);
    long start = 0;
    if (!bad && config->resume_path &&
        (check_resume_config(config->resume_path, &description) != 0 ||
         qkv_checkpoint_load(config->resume_path, task->params, &opt, &start, &tape->rng) != 0 ||
         (start >= config->steps &&
          (qkv_set_error("%s: the checkpoint is at step %ld; --steps %d must be larger to resume",
                         config->resume_path, start, config->steps), 1))))
        bad = 1;
    if (qkv_dist_any(bad)) {
        qkv_tape_free(tape);
        qkv_optimizer_free(&opt);
        return bad ? fail(qkv_last_error()) : 2;
    }
    qkv_dist_share_state(task->params, &opt, &start, tape);

    char *csv = NULL;
    size_t csv_len = 0;
    FILE *csv_out = config->csv_path ? open_memstream(&csv, &csv_len) : NULL;
    if (csv_out) fputs("step,loss,lr,seconds\n", csv_out);
    memset(result, 0, sizeof *result);
    progress prog = {isatty(STDOUT_FILENO), config->quiet, omp_get_wtime(), start, config->steps};
    qkv_metrics metrics = {0};
    qkv_curves curves = {0};
    long step = start, last_saved = start;
    const char *last_path = config->resume_path; /* the last good checkpoint, if any */
    int rc = 0;

    while (step < config->steps) {
        float lr = config->optim.lr * qkv_schedule_factor(&config->schedule, step);
        qkv_tensor *loss = task->loss(task->self, tape, step);
        if (!loss) { /* the task reported an error (a diverged run): stop, write nothing */
            rc = fail(qkv_last_error());
            qkv_tape_reset(tape);
            break;
        }
        qkv_params_zero_grad(task->params);
        qkv_backward(tape, loss);
        /* Under MPI the checks below are collective: every rank stops at the same step. */
        float loss_value = qkv_dist_average_grads(task->params, step, loss->data[0], task->loss_terms);
        if (config->detect_nan && qkv_dist_any(tape->anomaly[0] != 0)) {
            char what[sizeof tape->anomaly + 16];
            snprintf(what, sizeof what, "--detect-nan: %s", tape->anomaly[0] ? tape->anomaly : "on another rank");
            rc = diverged(step + 1, last_path, last_saved, what);
            break;
        }
        if (!isfinite(loss_value)) {
            char what[96];
            snprintf(what, sizeof what, "the loss is %s (try a smaller --lr, --clip, or --detect-nan to find the op)",
                     isnan(loss_value) ? "NaN" : "Inf");
            rc = diverged(step + 1, last_path, last_saved, what);
            break;
        }
        if (config->print_tape && step == start) {
            printf("tape of step %ld (%d nodes):\n", step + 1, tape->n_nodes);
            qkv_tape_print(tape, stdout);
        }
        if (config->dot_path && step == start && qkv_tape_write_dot(tape, config->dot_path) != 0) {
            rc = fail(qkv_last_error());
            qkv_tape_reset(tape);
            break;
        }
        if (config->clip > 0) qkv_clip_grad_norm(task->params, config->clip);
        qkv_optimizer_step(&opt, task->params, lr);
        result->final_loss = loss_value;
        qkv_tape_reset(tape);
        step++;

        int log_now = config->log_every > 0 && (step % config->log_every == 0 || step == start + 1);
        int eval_now = config->eval_every > 0 && step % config->eval_every == 0;
        if (eval_now && qkv_dist_rank() == 0) evaluate(task, tape, &metrics);
        if (config->plot_path) {
            if (log_now || eval_now || config->log_every <= 0) qkv_curves_add_loss(&curves, (double)step, result->final_loss);
            if (eval_now) qkv_curves_add_metrics(&curves, (double)step, &metrics);
        }
        if (csv_out && (log_now || eval_now))
            fprintf(csv_out, "%ld,%.6g,%.6g,%.3f\n", step, result->final_loss, lr, omp_get_wtime() - prog.start);
        if (log_now || eval_now) report_progress(&prog, config, step, result->final_loss, &metrics, 0);
        if (config->save_path && config->save_every > 0 && step % config->save_every == 0 &&
            qkv_checkpoint_save(config->save_path, task->params, &opt, step, &tape->rng, &description) != 0) {
            rc = fail(qkv_last_error());
            break;
        }
        if (config->save_path && config->save_every > 0 && step % config->save_every == 0) {
            last_path = config->save_path;
            last_saved = step;
        }
        if (eval_now && qkv_dist_root_flag(reached_target(config, &metrics))) {
            result->stopped_early = step < config->steps;
            break;
        }
    }
    result->seconds = omp_get_wtime() - prog.start;
    result->steps_done = step;
    result->steps_per_second = (double)(step - start) / (result->seconds > 0 ? result->seconds : 1e-9);
    if (rc == 0 && qkv_dist_rank() == 0) {
        evaluate(task, tape, &metrics);
        result->metrics = metrics;
        if (config->plot_path) {
            long last = curves.n_loss ? (long)curves.loss_step[curves.n_loss - 1] : -1;
            if (last != step && step > start) qkv_curves_add_loss(&curves, (double)step, result->final_loss);
            if (!curves.n_eval || curves.eval_step[curves.n_eval - 1] != (double)step)
                qkv_curves_add_metrics(&curves, (double)step, &metrics);
        }
        if (prog.tty && !prog.quiet) report_progress(&prog, config, step, result->final_loss, &metrics, 1);
        if (config->save_path &&
            qkv_checkpoint_save(config->save_path, task->params, &opt, step, &tape->rng, &description) != 0)
            rc = fail(qkv_last_error());
    }
    if (csv_out) {
        fclose(csv_out);
        if (rc == 0 && qkv_write_file_atomic(config->csv_path, csv, csv_len) != 0) rc = fail(qkv_last_error());
        free(csv);
    }
    if (rc == 0 && config->json_path && write_summary_json(config->json_path, task, &description, result) != 0)
        rc = fail(qkv_last_error());
    if (rc == 0 && config->plot_path && qkv_curves_write_png(&curves, config->plot_path, task->name) != 0)
        rc = fail(qkv_last_error());
    qkv_curves_free(&curves);
    qkv_tape_free(tape);
    qkv_optimizer_free(&opt);
    return rc;
}
