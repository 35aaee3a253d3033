/* trainer_fields.h — the trainer's config (trainer_config.h) as one field table
 * (train/fields.h): every member of qkv_trainer_config has a row, in the order
 * `qkv train TASK --help` lists the flags; the command line's flags, their
 * --help and the checkpoint's "train.<key>" settings are generated from it.
 *
 * Settings in a checkpoint: the rows with a key (lr, clip, warmup, schedule,
 * micro_batch first: checkpoints were written in that order before the table
 * existed, and they are fixtures; then momentum, weight_decay and the Adam
 * constants). The rows marked QKV_FIELD_OPTIONAL are written only when they
 * differ from the task's defaults (config->defaults), so a run with a task's own
 * settings writes the same bytes as before those rows existed; absent, they read
 * as those defaults. The optimizer's kind is the checkpoint's "optim.kind"
 * (checkpoint.h), not a setting.
 */
#ifndef QKV_TRAINER_FIELDS_H
#define QKV_TRAINER_FIELDS_H

#include "train/fields.h"
#include "train/trainer_config.h"

extern const qkv_field qkv_trainer_fields[];
extern const int qkv_trainer_n_fields;

/* The settings of a run as key/value text (stored as "train.<key>"; the
 * micro-batch is the one the run uses, its default resolved by the caller). */
void qkv_trainer_settings(const qkv_trainer_config *config, qkv_config_kv *out);
/* With --resume: the settings that differ from those a checkpoint recorded
 * (saved: its "train." entries), as "--lr 0.05 (the checkpoint's run: 0.1), ..."
 * in out; "" when none differ. A setting the checkpoint does not record is not
 * compared (written before it existed), except an OPTIONAL one, which stands for
 * the defaults. */
void qkv_trainer_settings_changes(const qkv_trainer_config *config, const qkv_config_kv *saved, char *out,
                                  size_t len);
/* A resumed run, for its --json record: the checkpoint's path, step and recorded
 * settings, and the seconds the run had taken before it (from the earlier --csv,
 * history.h; < 0: unknown). */
typedef struct qkv_trainer_resume_note {
    const char *path;
    long step;
    const qkv_config_kv *settings;
    double seconds_before;
} qkv_trainer_resume_note;
/* The run's part of a --json record, as JSON members (malloc'd text to put after
 * "task"): "qkv_version", "isa" (the instruction-set path), "settings" (every
 * setting of the field table: the recorded ones by key, the others by flag,
 * "eval_every"; numbers as numbers, names as strings), then "resumed": null or
 * {"checkpoint", "step", "seconds_before" (null: unknown), "changed": {NAME:
 * {"now", "checkpoint"}} (the settings qkv_trainer_settings_changes names)}. */
char *qkv_trainer_record_json(const qkv_trainer_config *config, const qkv_trainer_resume_note *resumed);
/* A checkpoint's recorded settings (its "train." entries) read as the adoption
 * below reads them, into a copy of base: 0, or -1 with qkv_last_error() naming
 * the first key no setting has or a value out of its range or not a number as
 * flags write it (core/number.h). Evaluation checks them too: a checkpoint with
 * garbage there is refused by every reader, not only by --resume. */
int qkv_trainer_check_settings(const qkv_config_kv *saved, const qkv_trainer_config *base);
/* With --resume: every recorded setting whose flag the command line did not give
 * (given(flag, ctx) says) takes the checkpoint's value, so a resumed run goes on
 * with its own settings and only a flag the user gave can change one. 0, or -1
 * with qkv_last_error() (a recorded key or value qkv_trainer_check_settings
 * refuses, whether or not a flag replaces it). */
int qkv_trainer_adopt_settings(qkv_trainer_config *config, const qkv_config_kv *saved,
                               int (*given)(const char *flag, const void *ctx), const void *ctx);
/* Under MPI: every rank takes rank 0's recorded settings (rank 0 alone reads the
 * checkpoint). Collective; nothing without MPI. */
void qkv_trainer_share_settings(qkv_trainer_config *config);

#endif
