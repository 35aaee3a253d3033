/* trainer_outputs.c — a run's --csv log, --plot curves and --json summary. See
 * trainer_outputs.h. */
#include "train/trainer_outputs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/fileio.h"
#include "core/io/json.h"

void qkv_train_outputs_open(qkv_train_outputs *out, const char *csv_path, const char *plot_path,
                            const char *json_path, int log_every) {
    memset(out, 0, sizeof *out);
    out->csv_path = csv_path;
    out->plot_path = plot_path;
    out->json_path = json_path;
    out->log_every = log_every;
}

void qkv_train_outputs_record(qkv_train_outputs *out, long step, float loss, float lr, double seconds,
                              const qkv_metrics *metrics, int log_now) {
    if (log_now || metrics || out->log_every <= 0) qkv_history_add(&out->history, step, loss, lr, seconds, metrics);
}

void qkv_train_outputs_record_final(qkv_train_outputs *out, long step, float loss, float lr, double seconds,
                                    const qkv_metrics *metrics) {
    out->has_final = 1;
    out->final_step = step;
    out->final_loss = loss;
    out->final_lr = lr;
    out->final_seconds = seconds;
    out->final_metrics = *metrics;
}

/* ---- the --json summary ---------------------------------------------------------- */

static void json_number(qkv_json_out *out, const char *key, double value, const char *fmt) {
    char number[64];
    snprintf(number, sizeof number, fmt, value);
    qkv_json_out_string(out, key);
    qkv_json_out_text(out, ": ");
    qkv_json_out_text(out, number);
}

static void json_config(qkv_json_out *out, const qkv_config_kv *config) {
    qkv_json_out_text(out, ", \"config\": {");
    for (int i = 0; i < config->n; i++) {
        if (i) qkv_json_out_text(out, ", ");
        qkv_json_out_string(out, config->key[i]);
        qkv_json_out_text(out, ": ");
        qkv_json_out_string(out, config->value[i]);
    }
    qkv_json_out_text(out, "}, ");
}

/* "history": the CSV's table as JSON: its columns, then one array per row (null
 * where a metric was not evaluated). */
static void json_history(qkv_json_out *out, const qkv_history *h) {
    char *csv = qkv_history_csv(h, 1), *save = NULL;
    qkv_json_out_text(out, "\"history\": {\"columns\": [");
    char *line = strtok_r(csv, "\n", &save), *cell, *cells = NULL;
    for (int c = 0; (cell = strtok_r(c ? NULL : line, ",", &cells)); c++) {
        if (c) qkv_json_out_text(out, ", ");
        qkv_json_out_string(out, cell);
    }
    qkv_json_out_text(out, "], \"rows\": [");
    for (int r = 0; (line = strtok_r(NULL, "\n", &save)); r++) {
        qkv_json_out_text(out, r ? ", [" : "[");
        char *at = line;
        for (int c = 0;; c++) { /* cells may be empty: split by hand */
            size_t n = strcspn(at, ",");
            char number[40];
            snprintf(number, sizeof number, "%.*s", (int)n, at);
            qkv_json_out_text(out, c ? ", " : "");
            qkv_json_out_text(out, n ? number : "null");
            if (!at[n]) break;
            at += n + 1;
        }
        qkv_json_out_text(out, "]");
    }
    qkv_json_out_text(out, "]}");
    free(csv);
}

/* The --json summary's text into out (out->failed: out of memory). */
static void summary_json(qkv_json_out *out, const qkv_task *task, const char *record, const qkv_config_kv *config,
                         const qkv_train_result *r, const qkv_history *history) {
    qkv_json_out_text(out, "{\"task\": ");
    qkv_json_out_string(out, task->name);
    if (record) {
        qkv_json_out_text(out, ", ");
        qkv_json_out_text(out, record);
    }
    json_config(out, config);
    json_number(out, "steps", (double)r->steps_done, "%.0f");
    qkv_json_out_text(out, ", ");
    json_number(out, "final_train_loss", r->final_loss, "%.9g"); /* a float round-trips in 9 digits */
    qkv_json_out_text(out, ", \"test\": {");
    for (int i = 0; i < r->metrics.n; i++) {
        if (i) qkv_json_out_text(out, ", ");
        json_number(out, r->metrics.key[i], r->metrics.value[i], "%.6g");
    }
    qkv_json_out_text(out, "}, ");
    json_history(out, history);
    qkv_json_out_text(out, ", ");
    json_number(out, "wall_seconds", r->seconds, "%.3f");
    qkv_json_out_text(out, ", ");
    json_number(out, "steps_per_second", r->steps_per_second, "%.2f");
    qkv_json_out_text(out, r->stopped_early ? ", \"stopped_early\": true}\n" : ", \"stopped_early\": false}\n");
}

/* ---- the end --------------------------------------------------------------------- */

/* Removes a file this finish already put in place (through a symlink: its target,
 * which is what was written), so that a failed finish leaves none of its files. */
static void remove_written(const char *path) {
    char *real = realpath(path, NULL);
    remove(real ? real : path);
    free(real);
}

/* The three files together: --csv and --json are written to their temporary files
 * and flushed (a full disk shows there), then --plot is written, and only when all
 * of that worked are --csv and --json renamed into place. Any failure: the
 * temporary files are removed and a plot or file already in place removed too, so
 * the run leaves all of its outputs or none (a previous file at a path is kept
 * unless the failure came after it was replaced). 0, or -1 with the error. */
static int write_together(qkv_train_outputs *out, const qkv_task *task, const qkv_config_kv *description,
                          const qkv_train_result *result) {
    const char *paths[2] = {out->csv_path, out->json_path};
    char *texts[2] = {NULL, NULL};
    size_t lens[2] = {0, 0};
    qkv_json_out json = {0};
    if (out->csv_path) lens[0] = strlen(texts[0] = qkv_history_csv(&out->history, 1));
    if (out->json_path) {
        summary_json(&json, task, out->record, description, result, &out->history);
        texts[1] = json.data;
        lens[1] = json.len;
    }
    qkv_atomic_file files[2];
    int opened[2] = {0, 0}, placed[3] = {0, 0, 0}, rc = 0;
    if (out->json_path && json.failed) rc = (qkv_set_error("%s: out of memory", out->json_path), -1);
    for (int i = 0; i < 2 && rc == 0; i++) {
        if (!paths[i]) continue;
        if (qkv_atomic_open(&files[i], paths[i]) != 0) { rc = -1; break; }
        opened[i] = 1;
        if (qkv_atomic_write(&files[i], texts[i], lens[i]) != 0 || qkv_atomic_flush(&files[i]) != 0) rc = -1;
    }
    if (rc == 0 && out->plot_path) rc = qkv_history_write_png(&out->history, out->plot_path, task->name);
    if (rc == 0) placed[2] = out->plot_path != NULL;
    for (int i = 0; i < 2 && rc == 0; i++)
        if (opened[i]) {
            opened[i] = 0;
            rc = qkv_atomic_commit(&files[i]);
            placed[i] = rc == 0;
        }
    if (rc != 0) {
        char reason[512];
        snprintf(reason, sizeof reason, "%s", qkv_last_error());
        for (int i = 0; i < 2; i++)
            if (opened[i]) qkv_atomic_abort(&files[i]);
        const char *all[3] = {out->csv_path, out->json_path, out->plot_path};
        for (int i = 0; i < 3; i++)
            if (placed[i]) remove_written(all[i]);
        qkv_set_error("%s (no output of the run was kept)", reason);
    }
    free(texts[0]);
    qkv_json_out_free(&json);
    return rc;
}

int qkv_train_outputs_finish(qkv_train_outputs *out, int write, const qkv_task *task,
                             const qkv_config_kv *description, const qkv_train_result *result) {
    int rc = 0;
    if (out->has_final)
        qkv_history_add(&out->history, out->final_step, out->final_loss, out->final_lr, out->final_seconds,
                        &out->final_metrics);
    if (write && (out->csv_path || out->json_path || out->plot_path))
        rc = write_together(out, task, description, result);
    qkv_history_free(&out->history);
    free(out->record);
    memset(out, 0, sizeof *out);
    return rc != 0 ? -1 : 0;
}
