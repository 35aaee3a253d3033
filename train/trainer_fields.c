/* trainer_fields.c — the trainer's field table and the settings a checkpoint
 * records. See trainer_fields.h. */
#include "train/trainer_fields.h"

#include <stdio.h>
#include <string.h>

#include "core/error.h"
#include "core/kernels/isa.h"
#include "core/kernels/parallel.h"
#include "core/version.h"
#include "train/dist.h"
#include "train/settings.h"

/* CHOICE rows write an int into these enums. */
_Static_assert(sizeof(qkv_opt_kind) == sizeof(int), "qkv_opt_kind is not int-sized");
_Static_assert(sizeof(qkv_schedule_kind) == sizeof(int), "qkv_schedule_kind is not int-sized");

#define T qkv_trainer_config
#define OPTIONAL_SETTING(flag, key, K, M, lo, hi, help) \
    {flag, key, K, offsetof(T, M), lo, hi, 0, NULL, NULL, help, QKV_FIELD_OPTIONAL, 0, NULL}

const qkv_field qkv_trainer_fields[] = {
    QKV_SETTING_FIELD_UNKEYED(QKV_FIELD_INT, QKV_SETTING_STEPS, T, steps, 0),
    QKV_SETTING_FIELD_AT(QKV_FIELD_FLOAT, QKV_SETTING_LR, T, optim.lr, 0, 0, 1),
    QKV_CHOICE_FIELD("--optimizer", NULL, T, optim.kind, qkv_opt_kind_names, 0, "optimizer"),
    OPTIONAL_SETTING("--momentum", "momentum", QKV_FIELD_FLOAT, optim.momentum, 0, 0.9999, "SGD momentum"),
    QKV_SETTING_FIELD_AT(QKV_FIELD_FLOAT, QKV_SETTING_WEIGHT_DECAY, T, optim.weight_decay, 0, QKV_FIELD_OPTIONAL, 0),
    QKV_SETTING_FIELD_AT(QKV_FIELD_CHOICE, QKV_SETTING_SCHEDULE, T, schedule.kind, 0, 0, 4),
    QKV_SETTING_FIELD_AT(QKV_FIELD_LONG, QKV_SETTING_WARMUP, T, schedule.warmup, 0, 0, 3),
    QKV_SETTING_FIELD_AT(QKV_FIELD_FLOAT, QKV_SETTING_CLIP, T, clip, 0, 0, 2),
    QKV_INT_FIELD("--eval-every", NULL, T, eval_every, 0, 1e9, 0, "steps between evaluations; 0: only at the end"),
    QKV_INT_FIELD("--log-every", NULL, T, log_every, 0, 1e9, 0, "steps between log lines; 0: none"),
    QKV_FLOAT_FIELD("--target", NULL, T, target, 0, 1e9, 0,
                    "stop early when the target metric reaches this (an accuracy: at most 1; an error: any); 0: never"),
    QKV_TEXT_FIELD("--save", NULL, T, save_path, NULL, "write a checkpoint (safetensors) here"),
    QKV_INT_FIELD("--save-every", NULL, T, save_every, 0, 1e9, 0, "also checkpoint every N steps"),
    QKV_FLAG_FIELD("--save-weights-only", T, save_weights_only,
                   "--save writes the parameters only, no optimizer state: smaller, evaluates, cannot resume"),
    QKV_TEXT_FIELD("--resume", NULL, T, resume_path, NULL, "continue from this checkpoint"),
    QKV_TEXT_FIELD("--json", NULL, T, json_path, NULL, "write a JSON summary here"),
    QKV_TEXT_FIELD("--csv", NULL, T, csv_path, NULL, "write the run's history here: a row per logged step, a column per metric"),
    QKV_SETTING_FIELD(QKV_FIELD_INT, QKV_SETTING_THREADS, T, threads, 0),
    QKV_TEXT_FIELD("--max-memory", NULL, T, max_memory, NULL,
                   "refuse a run estimated to need more memory than SIZE (2G, 512M, bytes; 0: the cgroup's limit "
                   "or physical memory)"),
    {"--micro-batch", "micro_batch", QKV_FIELD_INT, offsetof(T, micro_batch), 0, 1e9, 0, NULL, NULL,
     "examples per micro-batch, the unit of parallel work (divides the batch; 0: the task's)", 0, 5, NULL},
    QKV_FLAG_FIELD("--quiet", T, quiet, "print only the final line"),
    QKV_FLAG_FIELD("--print-tape", T, print_tape, "print the tape of the first step"),
    QKV_TEXT_FIELD("--plot", NULL, T, plot_path, NULL, "write the loss and metric curves here (PNG)"),
    QKV_TEXT_FIELD("--dot", NULL, T, dot_path, NULL, "write the first step's tape here (Graphviz)"),
    QKV_FLAG_FIELD("--detect-nan", T, detect_nan, "anomaly mode: stop at the first op giving NaN/Inf"),
    /* Settings without a flag: each task fixes them (the text task's beta2); a run resumed with others is another run. */
    OPTIONAL_SETTING(NULL, "nesterov", QKV_FIELD_INT, optim.nesterov, 0, 1, "SGD: Nesterov momentum"),
    OPTIONAL_SETTING(NULL, "beta1", QKV_FIELD_FLOAT, optim.beta1, 0, 1, "Adam(W): beta1 (0: 0.9)"),
    OPTIONAL_SETTING(NULL, "beta2", QKV_FIELD_FLOAT, optim.beta2, 0, 1, "Adam(W): beta2 (0: 0.999)"),
    OPTIONAL_SETTING(NULL, "eps", QKV_FIELD_FLOAT, optim.eps, 0, 1, "Adam(W): eps (0: 1e-8)"),
    OPTIONAL_SETTING(NULL, "decay_all", QKV_FIELD_INT, optim.decay_all, 0, 1, "weight decay on every parameter"),
    /* A flag, the row in its old place: the order a checkpoint writes its keys in stays. */
    OPTIONAL_SETTING("--lr-floor", "min_factor", QKV_FIELD_FLOAT, schedule.min_factor, 0, 1,
                     "cosine: the lr's floor, a fraction of --lr (0: decays to 0)"),
    /* Members that are no settings. */
    QKV_MEMBER_FIELD(QKV_FIELD_TEXT, T, target_key, "the task's: the metric --target reads"),
    QKV_MEMBER_FIELD(QKV_FIELD_INT, T, lower_is_better, "the task's: whether the target metric is an error"),
    QKV_MEMBER_FIELD(QKV_FIELD_LONG, T, schedule.total, "derived: --steps"),
    QKV_MEMBER_FIELD(QKV_FIELD_LONG, T, schedule.step_size, "derived: --steps / 3"),
    QKV_MEMBER_FIELD(QKV_FIELD_FLOAT, T, schedule.gamma, "derived: 0.1"),
    QKV_MEMBER_FIELD(QKV_FIELD_SEED, T, seed, "the task's seed: the checkpoint's rng.seed"),
    QKV_MEMBER_FIELD(QKV_FIELD_POINTER, T, defaults, "the task's defaults, which OPTIONAL settings are compared with"),
};
const int qkv_trainer_n_fields = (int)(sizeof qkv_trainer_fields / sizeof qkv_trainer_fields[0]);

void qkv_trainer_settings(const qkv_trainer_config *config, qkv_config_kv *out) {
    out->n = 0;
    qkv_fields_describe_against(qkv_trainer_fields, qkv_trainer_n_fields, config, config->defaults, out);
}

/* Calls changed(f, now, before, ctx) for each recorded setting whose value now
 * differs from the one saved recorded (an OPTIONAL one it leaves out stands for
 * the defaults; another it lacks was written before the setting: not compared). */
static void for_each_change(const qkv_trainer_config *config, const qkv_config_kv *saved,
                            void (*changed)(const qkv_field *f, const char *now, const char *before, void *ctx),
                            void *ctx) {
    for (int i = 0; i < qkv_trainer_n_fields; i++) {
        const qkv_field *f = &qkv_trainer_fields[i];
        if (!f->key) continue;
        char now[64], before_default[64];
        const char *before = qkv_config_get(saved, f->key);
        if (!before && !(f->options & QKV_FIELD_OPTIONAL)) continue;   /* a checkpoint from before the setting */
        if (!before) {
            if (config->defaults) qkv_field_format(f, config->defaults, before_default, sizeof before_default);
            else snprintf(before_default, sizeof before_default, "%g", f->fallback);
            before = before_default;
        }
        qkv_field_format(f, config, now, sizeof now);
        if (strcmp(before, now) != 0) changed(f, now, before, ctx);
    }
}

typedef struct change_text {
    char *out;
    size_t len, used;
} change_text;

static void change_as_text(const qkv_field *f, const char *now, const char *before, void *ctx) {
    change_text *t = ctx;
    if (t->used >= t->len) return;
    t->used += (size_t)snprintf(t->out + t->used, t->len - t->used, "%s%s%s %s (the checkpoint's run: %s)",
                                t->used ? ", " : "", f->flag ? "" : "train.", f->flag ? f->flag : f->key, now, before);
}

void qkv_trainer_settings_changes(const qkv_trainer_config *config, const qkv_config_kv *saved, char *out,
                                  size_t len) {
    out[0] = '\0';
    change_text t = {out, len, 0};
    for_each_change(config, saved, change_as_text, &t);
}

/* ---- the --json record ---------------------------------------------------------- */

/* A row's name in JSON: its key, else its flag without the dashes, '-' as '_'. */
static void json_name(const qkv_field *f, char *out, size_t len) {
    snprintf(out, len, "%s", f->key ? f->key : f->flag + 2);
    for (char *c = out; *c; c++)
        if (*c == '-') *c = '_';
}

/* A value as qkv_field_format writes it: a name as a JSON string, a number as it is. */
static void json_value(qkv_json_out *out, const qkv_field *f, const char *text) {
    if (f->kind == QKV_FIELD_CHOICE || f->kind == QKV_FIELD_TEXT) qkv_json_out_string(out, text);
    else qkv_json_out_text(out, text);
}

/* A setting of the run: a row with a key (what a checkpoint records), or a flag
 * that takes a number or a name (--steps, --optimizer, --eval-every, --target,
 * --threads); paths, switches and members are no settings. */
static int is_setting(const qkv_field *f) {
    if (f->kind == QKV_FIELD_TEXT || f->kind == QKV_FIELD_FLAG || f->kind == QKV_FIELD_POINTER) return 0;
    return f->key || f->flag;
}

typedef struct change_json {
    qkv_json_out *out;
    int n;
} change_json;

static void change_as_json(const qkv_field *f, const char *now, const char *before, void *ctx) {
    change_json *j = ctx;
    char name[48];
    json_name(f, name, sizeof name);
    qkv_json_out_text(j->out, j->n++ ? ", " : "");
    qkv_json_out_string(j->out, name);
    qkv_json_out_text(j->out, ": {\"now\": ");
    json_value(j->out, f, now);
    qkv_json_out_text(j->out, ", \"checkpoint\": ");
    json_value(j->out, f, before);
    qkv_json_out_text(j->out, "}");
}

static void record_json(const qkv_trainer_config *config, const qkv_trainer_resume_note *resumed,
                        qkv_json_out *out) {
    qkv_json_out_text(out, "\"qkv_version\": ");
    qkv_json_out_string(out, QKV_VERSION);
    qkv_json_out_text(out, ", \"isa\": ");
    qkv_json_out_string(out, qkv_isa_name());
    qkv_json_out_text(out, ", \"settings\": {");
    int n = 0;
    for (int i = 0; i < qkv_trainer_n_fields; i++) {
        const qkv_field *f = &qkv_trainer_fields[i];
        if (!is_setting(f)) continue;
        char name[48], value[64];
        json_name(f, name, sizeof name);
        qkv_field_format(f, config, value, sizeof value);
        qkv_json_out_text(out, n++ ? ", " : "");
        qkv_json_out_string(out, name);
        qkv_json_out_text(out, ": ");
        json_value(out, &qkv_trainer_fields[i], value);
    }
    qkv_json_out_text(out, "}, \"resumed\": ");
    if (!resumed) {
        qkv_json_out_text(out, "null");
        return;
    }
    char number[64];
    qkv_json_out_text(out, "{\"checkpoint\": ");
    qkv_json_out_string(out, resumed->path);
    snprintf(number, sizeof number, ", \"step\": %ld, \"seconds_before\": ", resumed->step);
    qkv_json_out_text(out, number);
    if (resumed->seconds_before >= 0) snprintf(number, sizeof number, "%.3f", resumed->seconds_before);
    qkv_json_out_text(out, resumed->seconds_before >= 0 ? number : "null");
    qkv_json_out_text(out, ", \"changed\": {");
    change_json j = {out, 0};
    for_each_change(config, resumed->settings, change_as_json, &j);
    qkv_json_out_text(out, "}}");
}

char *qkv_trainer_record_json(const qkv_trainer_config *config, const qkv_trainer_resume_note *resumed) {
    qkv_json_out json = {0};
    record_json(config, resumed, &json);
    if (json.failed) qkv_fatal("trainer: out of memory for the --json record");
    return json.data;
}

int qkv_trainer_check_settings(const qkv_config_kv *saved, const qkv_trainer_config *base) {
    qkv_trainer_config scratch = *base;
    return qkv_fields_parse_present("train", qkv_trainer_fields, qkv_trainer_n_fields, saved, &scratch);
}

int qkv_trainer_adopt_settings(qkv_trainer_config *config, const qkv_config_kv *saved,
                               int (*given)(const char *flag, const void *ctx), const void *ctx) {
    qkv_trainer_config recorded = *config;   /* every recorded value checked, also those a flag replaces */
    if (qkv_fields_parse_present("train", qkv_trainer_fields, qkv_trainer_n_fields, saved, &recorded) != 0)
        return -1;
    for (int i = 0; i < qkv_trainer_n_fields; i++) {
        const qkv_field *f = &qkv_trainer_fields[i];
        if (!f->key || !f->flag || !qkv_config_get(saved, f->key) || given(f->flag, ctx)) continue;
        memcpy((char *)config + f->offset, (const char *)&recorded + f->offset, qkv_field_size(f));
    }
    return 0;
}

/* A recorded setting's value as a double and back: every kind a setting has
 * (int, long, float, choice) is exact in a double. */
static double setting_value(const qkv_field *f, const void *config) {
    const char *at = (const char *)config + f->offset;
    if (f->kind == QKV_FIELD_FLOAT) return *(const float *)at;
    if (f->kind == QKV_FIELD_LONG) return (double)*(const long *)at;
    return *(const int *)at;
}

static void set_setting(const qkv_field *f, void *config, double v) {
    char *at = (char *)config + f->offset;
    if (f->kind == QKV_FIELD_FLOAT) *(float *)at = (float)v;
    else if (f->kind == QKV_FIELD_LONG) *(long *)at = (long)v;
    else *(int *)at = (int)v;
}

void qkv_trainer_share_settings(qkv_trainer_config *config) {
    if (qkv_dist_size() == 1) return;
    double values[64] = {0};
    int n = 0, root = qkv_dist_rank() == 0;
    for (int i = 0; i < qkv_trainer_n_fields && n < 64; i++)
        if (qkv_trainer_fields[i].key) values[n++] = root ? setting_value(&qkv_trainer_fields[i], config) : 0.0;
    qkv_dist_sum_doubles(values, n); /* rank 0's values: the others add zeros */
    n = 0;
    for (int i = 0; i < qkv_trainer_n_fields && n < 64; i++)
        if (qkv_trainer_fields[i].key) set_setting(&qkv_trainer_fields[i], config, values[n++]);
}
