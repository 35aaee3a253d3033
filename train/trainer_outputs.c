/* trainer_outputs.c — a run's --csv log, --plot curves and --json summary. See
 * trainer_outputs.h. */
#include "train/trainer_outputs.h"

#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/fileio.h"
#include "core/io/json.h"

int qkv_train_outputs_open(qkv_train_outputs *out, const char *csv_path, const char *plot_path,
                           const char *json_path, int log_every) {
    memset(out, 0, sizeof *out);
    out->csv_path = csv_path;
    out->plot_path = plot_path;
    out->json_path = json_path;
    out->log_every = log_every;
    if (!out->csv_path) return 0;
    static const char header[] = "step,loss,lr,seconds\n";
    if (qkv_atomic_open(&out->csv, out->csv_path) != 0) return -1;
    return qkv_atomic_write(&out->csv, header, sizeof header - 1);
}

void qkv_train_outputs_record(qkv_train_outputs *out, long step, float loss, float lr, double seconds,
                              const qkv_metrics *metrics, int log_now, int eval_now) {
    if (out->plot_path) {
        if (log_now || eval_now || out->log_every <= 0) qkv_curves_add_loss(&out->curves, (double)step, loss);
        if (eval_now) qkv_curves_add_metrics(&out->curves, (double)step, metrics);
    }
    if (out->csv.path && (log_now || eval_now)) {
        char row[128];
        int len = snprintf(row, sizeof row, "%ld,%.6g,%.6g,%.3f\n", step, loss, lr, seconds);
        if (qkv_atomic_write(&out->csv, row, (size_t)len) != 0 || qkv_atomic_flush(&out->csv) != 0)
            out->csv_failed = 1; /* the writer removed its file; the error is reported at the end */
    }
}

void qkv_train_outputs_record_final(qkv_train_outputs *out, long step, long start, float loss,
                                    const qkv_metrics *metrics) {
    if (!out->plot_path) return;
    const qkv_curves *c = &out->curves;
    long last_loss = c->n_loss ? (long)c->loss_step[c->n_loss - 1] : -1;
    if (last_loss != step && step > start) qkv_curves_add_loss(&out->curves, (double)step, loss);
    if (!c->n_eval || c->eval_step[c->n_eval - 1] != (double)step)
        qkv_curves_add_metrics(&out->curves, (double)step, metrics);
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

static int write_summary_json(const char *path, const qkv_task *task, const qkv_config_kv *config,
                              const qkv_train_result *r) {
    qkv_json_out out = {0};
    qkv_json_out_text(&out, "{\"task\": ");
    qkv_json_out_string(&out, task->name);
    json_config(&out, config);
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

/* ---- the end --------------------------------------------------------------------- */

int qkv_train_outputs_finish(qkv_train_outputs *out, int write, const qkv_task *task,
                             const qkv_config_kv *description, const qkv_train_result *result) {
    int rc = 0;
    if (out->csv_path) {
        if (write) rc = out->csv_failed ? qkv_file_fail(out->csv_path, "a row could not be written") :
                                          qkv_atomic_commit(&out->csv);
        qkv_atomic_abort(&out->csv);
    }
    if (write && rc == 0 && out->json_path) rc = write_summary_json(out->json_path, task, description, result);
    if (write && rc == 0 && out->plot_path) rc = qkv_curves_write_png(&out->curves, out->plot_path, task->name);
    qkv_curves_free(&out->curves);
    memset(out, 0, sizeof *out);
    return rc != 0 ? -1 : 0;
}
