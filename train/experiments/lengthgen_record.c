/* lengthgen_record.c — the JSON record of a lengthgen run (--json), written after
 * every finished model and read back by --resume.
 *
 *   {"experiment": "lengthgen",
 *    "provenance": {"qkv_version", "isa", "date", "command"}   of the run that started it
 *    "config": {every setting with a key in qkv_lengthgen_fields},
 *    "fixed": {what no flag sets: arch, decoding, optimizer's betas and eps, table rows, ...},
 *    "models": n, "finished": m,
 *    "tasks": [{"task", "schemes": [{"pos", "complete", and when complete: "fits",
 *               the summaries, the seed-mean curves, "attention_distance";
 *               "runs": [one per finished seed: "seed", "train_seconds", "final_train_loss",
 *                        "exact_match", "token_acc", "distance_mean", "distance_histogram"]}]}],
 *    "mrr": {scheme: MRR among the schemes that fit, or null: left out} (null until complete),
 *    "mrr_left_out": {scheme: why}, "mrr_paper_schemes": {...} or null}
 *
 * A run's numbers are written as the shortest decimals that read back as the
 * same doubles (qkv_lg_json_exact), so a resumed experiment recomputes every
 * summary from the same bits and writes the same bytes as one that never stopped
 * (the provenance is the start's: a resume keeps it).
 *
 * --resume refuses (one line naming --resume and the file) a file that is not
 * such a record, one written by another qkv version, and one whose config differs
 * from this command's in any setting (naming the first, with both values).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/fileio.h"
#include "core/version.h"
#include "train/experiments/lengthgen_record.h"

typedef qkv_lengthgen lengthgen;

#define MAX_RECORD_BYTES ((size_t)1 << 30)

static void json_key(qkv_json_out *out, const char *sep, const char *key) {
    qkv_json_out_text(out, sep);
    qkv_json_out_string(out, key);
    qkv_json_out_text(out, ": ");
}

static void json_array(qkv_json_out *out, const double *values, int n) {
    qkv_json_out_text(out, "[");
    for (int i = 0; i < n; i++) {
        if (i) qkv_json_out_text(out, ", ");
        qkv_lg_json_exact(out, values[i]);
    }
    qkv_json_out_text(out, "]");
}

static void json_int(qkv_json_out *out, const char *sep, const char *key, long v) {
    char text[32];
    json_key(out, sep, key);
    snprintf(text, sizeof text, "%ld", v);
    qkv_json_out_text(out, text);
}

static void write_head(const lengthgen *g, qkv_json_out *out) {
    const qkv_lengthgen_options *o = g->o;
    char text[512];
    qkv_json_out_text(out, "{\"experiment\": \"lengthgen\",\n\"provenance\": {\"qkv_version\": ");
    qkv_json_out_string(out, g->version);
    json_key(out, ", ", "isa");
    qkv_json_out_string(out, g->isa);
    json_key(out, ", ", "date");
    qkv_json_out_string(out, g->date);
    json_key(out, ", ", "command");
    qkv_json_out_string(out, g->command);
    qkv_json_out_text(out, "},\n\"config\": {");
    qkv_fields_json(qkv_lengthgen_fields, qkv_lengthgen_n_fields, o, 1, out);
    snprintf(text, sizeof text,
             "},\n\"fixed\": {\"arch\": \"decoder\", \"decoding\": \"greedy\", \"optimizer\": \"adamw\", "
             "\"beta1\": 0.9, \"beta2\": 0.999, \"eps\": 1e-08, \"weight_decay_on\": \"weights, not biases, norms or "
             "position tables\", \"step_schedule\": \"x0.1 every %d steps\", \"learned_table_rows\": %d, "
             "\"randomize_max\": %d, \"test_seed\": \"%#llx xor the model's seed\", \"fit_threshold\": %g, "
             "\"distance_lengths\": [%d, %d], \"distance_inputs\": %d},\n",
             o->steps / 3 > 0 ? o->steps / 3 : 1, 2 * o->test_max + 1, g->randomize, QKV_LG_TEST_SEED,
             QKV_LENGTHGEN_FIT, qkv_lg_distance_length(g, 0), qkv_lg_distance_length(g, 1),
             o->test_size < QKV_LG_DISTANCE_INPUTS ? o->test_size : QKV_LG_DISTANCE_INPUTS);
    qkv_json_out_text(out, text);
    json_int(out, "", "models", g->n_runs);
    json_int(out, ", ", "finished", qkv_lg_finished(g));
}

static void write_run(const lengthgen *g, size_t run, int seed, qkv_json_out *out) {
    int k = g->o->test_max, d = QKV_LG_DISTANCE_AT;
    json_int(out, "{", "seed", seed);
    json_key(out, ", ", "train_seconds");
    qkv_lg_json_exact(out, g->train_seconds[run]);
    json_key(out, ", ", "final_train_loss");
    qkv_lg_json_exact(out, g->train_loss[run]);
    json_key(out, ", ", "exact_match");
    json_array(out, g->exact + run * k, k);
    json_key(out, ", ", "token_acc");
    json_array(out, g->token + run * k, k);
    json_key(out, ", ", "distance_mean");
    json_array(out, g->distance_mean + run * d, d);
    json_key(out, ", ", "distance_histogram");
    for (int i = 0; i < d; i++) {
        qkv_json_out_text(out, i ? ", " : "[");
        json_array(out, g->distance + (run * d + i) * g->bins, g->bins);
    }
    qkv_json_out_text(out, "]}");
}

/* A complete scheme's fit, summaries and seed-mean curves. */
static void write_summary(const lengthgen *g, int t, int s, qkv_json_out *out) {
    const qkv_lengthgen_options *o = g->o;
    double v[4];
    qkv_lg_range_summary(g, t, s, o->train_max, o->test_max, &v[0], &v[1]);
    qkv_lg_range_summary(g, t, s, 0, o->train_max, &v[2], &v[3]);
    json_key(out, ", ", "fits");
    qkv_json_out_text(out, v[2] >= QKV_LENGTHGEN_FIT ? "true" : "false");
    static const char *const keys[4] = {"extrapolation_exact", "extrapolation_exact_ci95", "trained_exact",
                                        "trained_exact_ci95"};
    for (int i = 0; i < 4; i++) {
        json_key(out, ", ", keys[i]);
        qkv_lg_json_exact(out, v[i]);
    }
    double *mean = malloc((size_t)o->test_max * sizeof(double));
    QKV_CHECK(mean, "experiment lengthgen: out of memory");
    const double *metrics[2] = {g->exact, g->token};
    static const char *const curves[2] = {"exact_match", "token_acc"};
    for (int m = 0; m < 2; m++) {
        for (int n = 0; n < o->test_max; n++) {
            double sum = 0;
            for (int k = 0; k < o->seeds; k++) sum += metrics[m][qkv_lg_run_at(g, t, s, k) * o->test_max + n];
            mean[n] = sum / o->seeds;
        }
        json_key(out, ", ", curves[m]);
        json_array(out, mean, o->test_max);
    }
    free(mean);
    qkv_json_out_text(out, ", ");
    qkv_lg_json_distance(g, t, s, out);
}

static void write_mrr(const lengthgen *g, qkv_json_out *out) {
    int n_paper = qkv_lg_paper_count();
    double mrr_paper[16], mrr_all[QKV_LENGTHGEN_MAX_SCHEMES];
    int have_paper = qkv_lg_mrr(g, mrr_paper, mrr_all);
    char why[256];
    qkv_json_out_text(out, ",\n\"mrr\": {");
    for (int s = 0; s < g->n_schemes; s++) {
        json_key(out, s ? ", " : "", g->schemes[s].name);
        qkv_lg_json_exact(out, mrr_all[s]);
    }
    qkv_json_out_text(out, "},\n\"mrr_left_out\": {");
    for (int s = 0, n = 0; s < g->n_schemes; s++)
        if (qkv_lg_left_out_reason(g, s, why, sizeof why)) {
            json_key(out, n++ ? ", " : "", g->schemes[s].name);
            qkv_json_out_string(out, why);
        }
    qkv_json_out_text(out, "},\n\"mrr_paper_schemes\": ");
    if (!have_paper) qkv_json_out_text(out, "null");
    for (int p = 0; have_paper && p < n_paper; p++) {
        json_key(out, p ? ", " : "{", qkv_pos_kind_name(qkv_lg_paper_kind(p)));
        json_key(out, "{", "here");
        qkv_lg_json_exact(out, mrr_paper[p]);
        char text[32];
        snprintf(text, sizeof text, ", \"paper\": %.2f}", qkv_lg_paper_mrr(p));
        qkv_json_out_text(out, text);
    }
    qkv_json_out_text(out, have_paper ? "}" : "");
}

int qkv_lg_write_json(const lengthgen *g) {
    const qkv_lengthgen_options *o = g->o;
    qkv_json_out out = {0};
    write_head(g, &out);
    qkv_json_out_text(&out, ",\n\"tasks\": [");
    for (int t = 0; t < g->n_tasks; t++) {
        qkv_json_out_text(&out, t ? ",\n {\"task\": " : "\n {\"task\": ");
        qkv_json_out_string(&out, qkv_seq_task_name((qkv_seq_task)g->tasks[t]));
        qkv_json_out_text(&out, ", \"schemes\": [");
        for (int s = 0; s < g->n_schemes; s++) {
            qkv_json_out_text(&out, s ? ",\n  {\"pos\": " : "\n  {\"pos\": ");
            qkv_json_out_string(&out, g->schemes[s].name);
            int complete = qkv_lg_complete(g, t, s);
            qkv_json_out_text(&out, complete ? ", \"complete\": true" : ", \"complete\": false");
            if (complete) write_summary(g, t, s, &out);
            qkv_json_out_text(&out, ",\n   \"runs\": [");
            for (int k = 0, n = 0; k < o->seeds; k++) {
                size_t run = qkv_lg_run_at(g, t, s, k);
                if (!g->done[run]) continue;
                if (n++) qkv_json_out_text(&out, ",\n    ");
                write_run(g, run, o->seed + k, &out);
            }
            qkv_json_out_text(&out, "]}");
        }
        qkv_json_out_text(&out, "]}");
    }
    qkv_json_out_text(&out, "]");
    if (qkv_lg_finished(g) == g->n_runs) write_mrr(g, &out);
    else qkv_json_out_text(&out, ",\n\"mrr\": null, \"mrr_left_out\": null, \"mrr_paper_schemes\": null");
    qkv_json_out_text(&out, "}\n");
    int rc = out.failed ? (qkv_set_error("%s: out of memory", o->json), -1) : qkv_write_file_atomic(o->json, out.data, out.len);
    qkv_json_out_free(&out);
    return rc;
}

/* ---- --resume ------------------------------------------------------------------ */

/* Index of the value of key in object token obj, or 0 if absent (or obj is no object). */
static uint32_t member(const qkv_json *doc, uint32_t obj, const char *key) {
    if (doc->tokens[obj].type != QKV_JSON_OBJECT) return 0;
    for (uint32_t k = 0, j = obj + 1; k < doc->tokens[obj].count; k++, j = doc->tokens[j + 1].next)
        if (qkv_json_equals(doc, j, key)) return j + 1;
    return 0;
}

/* The i-th element of array token arr, or 0. */
static uint32_t element(const qkv_json *doc, uint32_t arr, uint32_t i) {
    if (!arr || doc->tokens[arr].type != QKV_JSON_ARRAY || i >= doc->tokens[arr].count) return 0;
    uint32_t j = arr + 1;
    while (i--) j = doc->tokens[j].next;
    return j;
}

/* A token's text (strings decoded), cut to len bytes. */
static void token_text(const qkv_json *doc, uint32_t i, char *out, size_t len) {
    if (doc->tokens[i].type == QKV_JSON_STRING) {
        qkv_json_decode(doc, i, out, len);
        return;
    }
    size_t n = doc->tokens[i].len < len - 1 ? doc->tokens[i].len : len - 1;
    memcpy(out, doc->text + doc->tokens[i].start, n);
    out[n] = '\0';
}

/* A number (null: NAN) into *v; -1 if the token is neither. */
static int number(const qkv_json *doc, uint32_t i, double *v) {
    char text[64];
    if (!i) return -1;
    if (doc->tokens[i].type == QKV_JSON_NULL) return *v = NAN, 0;
    if (doc->tokens[i].type != QKV_JSON_NUMBER) return -1;
    token_text(doc, i, text, sizeof text);
    *v = strtod(text, NULL);
    return 0;
}

/* n numbers of array token arr into v; -1 on a wrong length or element. */
static int numbers(const qkv_json *doc, uint32_t arr, double *v, int n) {
    if (!arr || doc->tokens[arr].type != QKV_JSON_ARRAY || doc->tokens[arr].count != (uint32_t)n) return -1;
    uint32_t j = arr + 1;
    for (int i = 0; i < n; i++, j = doc->tokens[j].next)
        if (number(doc, j, &v[i]) != 0) return -1;
    return 0;
}

/* The record's config against this command's: 0, or -1 naming the first difference. */
static int same_config(const lengthgen *g, const qkv_json *doc, uint32_t config) {
    qkv_json_out mine = {0};
    qkv_json_out_text(&mine, "{");
    qkv_fields_json(qkv_lengthgen_fields, qkv_lengthgen_n_fields, g->o, 1, &mine);
    qkv_json_out_text(&mine, "}");
    qkv_json now;
    QKV_CHECK(!mine.failed && qkv_json_parse(&now, (const unsigned char *)mine.data, mine.len, 2) == 0,
              "experiment lengthgen: the config record does not parse");
    int rc = 0;
    char key[64], was[160], is[160];
    if (!config || doc->tokens[config].type != QKV_JSON_OBJECT) {
        qkv_set_error("--resume: %s: no \"config\" object", g->o->json);
        rc = -1;
    }
    for (uint32_t k = 0, j = 1; rc == 0 && k < now.tokens[0].count; k++, j = now.tokens[j + 1].next) {
        token_text(&now, j, key, sizeof key);
        uint32_t theirs = member(doc, config, key);
        token_text(&now, j + 1, is, sizeof is);
        if (theirs) token_text(doc, theirs, was, sizeof was);
        if (!theirs || doc->tokens[theirs].type != now.tokens[j + 1].type || strcmp(was, is) != 0) {
            const qkv_field *f = qkv_fields_find_key(qkv_lengthgen_fields, qkv_lengthgen_n_fields, key);
            qkv_set_error("--resume: %s was made with %s %s, this command has %s (resume with the same settings)",
                          g->o->json, f && f->flag ? f->flag : key, theirs ? was : "(none)", is);
            rc = -1;
        }
    }
    if (rc == 0 && doc->tokens[config].count != now.tokens[0].count) {
        qkv_set_error("--resume: %s: its config has %u settings, this qkv's %u", g->o->json,
                      doc->tokens[config].count, now.tokens[0].count);
        rc = -1;
    }
    qkv_json_free(&now);
    qkv_json_out_free(&mine);
    return rc;
}

/* One finished run's record; -1 if it is malformed. */
static int read_run(lengthgen *g, const qkv_json *doc, uint32_t entry, int t, int s) {
    const qkv_lengthgen_options *o = g->o;
    double seed, v[2];
    if (number(doc, member(doc, entry, "seed"), &seed) != 0 || seed < o->seed || seed >= (double)o->seed + o->seeds ||
        seed != floor(seed))
        return -1;
    size_t run = qkv_lg_run_at(g, t, s, (int)seed - o->seed);
    int k = o->test_max, d = QKV_LG_DISTANCE_AT;
    uint32_t hist = member(doc, entry, "distance_histogram");
    if (g->done[run] || number(doc, member(doc, entry, "train_seconds"), &v[0]) != 0 ||
        number(doc, member(doc, entry, "final_train_loss"), &v[1]) != 0 ||
        numbers(doc, member(doc, entry, "exact_match"), g->exact + run * k, k) != 0 ||
        numbers(doc, member(doc, entry, "token_acc"), g->token + run * k, k) != 0 ||
        numbers(doc, member(doc, entry, "distance_mean"), g->distance_mean + run * d, d) != 0 || !hist ||
        doc->tokens[hist].type != QKV_JSON_ARRAY || doc->tokens[hist].count != (uint32_t)d)
        return -1;
    for (int i = 0; i < d; i++)
        if (numbers(doc, element(doc, hist, (uint32_t)i), g->distance + (run * d + i) * g->bins, g->bins) != 0)
            return -1;
    g->train_seconds[run] = v[0];
    g->train_loss[run] = v[1];
    g->done[run] = 1;
    return 0;
}

/* The finished runs of every task and scheme; -1 with the error on a malformed record. */
static int read_runs(lengthgen *g, const qkv_json *doc) {
    uint32_t tasks = member(doc, 0, "tasks");
    char name[32];
    for (int t = 0; t < g->n_tasks; t++) {
        uint32_t task = element(doc, tasks, (uint32_t)t), schemes = task ? member(doc, task, "schemes") : 0;
        for (int s = 0; s < g->n_schemes; s++) {
            uint32_t scheme = element(doc, schemes, (uint32_t)s), pos = scheme ? member(doc, scheme, "pos") : 0;
            uint32_t runs = scheme ? member(doc, scheme, "runs") : 0;
            if (pos) token_text(doc, pos, name, sizeof name);
            if (!pos || strcmp(name, g->schemes[s].name) != 0 || !runs || doc->tokens[runs].type != QKV_JSON_ARRAY)
                return qkv_set_error("--resume: %s: task %d, scheme %d is not %s's %s", g->o->json, t + 1, s + 1,
                                     qkv_seq_task_name((qkv_seq_task)g->tasks[t]), g->schemes[s].name), -1;
            for (uint32_t r = 0; r < doc->tokens[runs].count; r++)
                if (read_run(g, doc, element(doc, runs, r), t, s) != 0)
                    return qkv_set_error("--resume: %s: %s, %s: run %u is malformed", g->o->json,
                                         qkv_seq_task_name((qkv_seq_task)g->tasks[t]), g->schemes[s].name, r + 1), -1;
        }
    }
    return 0;
}

/* The provenance of the run that started the experiment; -1 if absent or another qkv's. */
static int read_provenance(lengthgen *g, const qkv_json *doc) {
    uint32_t p = member(doc, 0, "provenance"), fields[4];
    static const char *const keys[4] = {"qkv_version", "isa", "date", "command"};
    for (int i = 0; i < 4; i++)
        if (!p || !(fields[i] = member(doc, p, keys[i])) || doc->tokens[fields[i]].type != QKV_JSON_STRING)
            return qkv_set_error("--resume: %s: no provenance.%s", g->o->json, keys[i]), -1;
    token_text(doc, fields[0], g->version, sizeof g->version);
    if (strcmp(g->version, QKV_VERSION) != 0)
        return qkv_set_error("--resume: %s was made by qkv %s, this is %s: its models may differ", g->o->json,
                             g->version, QKV_VERSION), -1;
    token_text(doc, fields[1], g->isa, sizeof g->isa);
    token_text(doc, fields[2], g->date, sizeof g->date);
    size_t len = doc->tokens[fields[3]].len + 1;
    g->command = malloc(len);
    QKV_CHECK(g->command, "experiment lengthgen: out of memory");
    token_text(doc, fields[3], g->command, len);
    return 0;
}

int qkv_lg_resume(lengthgen *g) {
    const char *path = g->o->json;
    size_t len;
    unsigned char *text = qkv_read_file(path, MAX_RECORD_BYTES, &len);
    if (!text) return qkv_set_error("--resume: %s: cannot read it (%s)", path, qkv_last_error()), -1;
    qkv_json doc;
    int rc = qkv_json_parse(&doc, text, len, 16);
    if (rc != 0) {
        qkv_set_error("--resume: %s: %s", path, doc.error);
    } else {
        uint32_t kind = member(&doc, 0, "experiment");
        if (!kind || !qkv_json_equals(&doc, kind, "lengthgen")) {
            qkv_set_error("--resume: %s: not the JSON record of a lengthgen experiment", path);
            rc = -1;
        }
        if (rc == 0) rc = read_provenance(g, &doc);
        if (rc == 0) rc = same_config(g, &doc, member(&doc, 0, "config"));
        if (rc == 0) rc = read_runs(g, &doc);
        qkv_json_free(&doc);
    }
    free(text);
    return rc;
}
