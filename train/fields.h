/* fields.h — a config as one table of fields, read by everything that names a
 * setting: the command line's flags and their --help, the defaults, the
 * checkpoint's description (`__metadata__`) and its parsing back, JSON records.
 * The tasks' configs (train/tasks/), the trainer's (train/trainer_fields.h),
 * the experiments' options (train/experiments/experiments.h) and the commands'
 * (cli/) are such tables; a setting several of them take (--heads, --threads)
 * is written once in train/settings.h and embedded as a row of each.
 *
 * A field is one member of the task's config struct (at `offset`) with
 *   flag   "--vocab" on the command line, or NULL: a value the task works out
 *          itself (the image size of a detection set) and only writes down;
 *   key    "heads" in the checkpoint's description, or NULL: a command-line
 *          convenience that is not part of the model (--len sets --min-len and
 *          --max-len; --compare trains four models);
 *   a kind, a range [min, max] for numbers, a default, and a help line.
 * Kinds and their C types and texts in a description:
 *   INT int "%d"; LONG long "%ld"; FLOAT float "%g"; CHOICE int (or an enum of
 *   int's size), an index into `choices`, written as its name; SEED unsigned long
 *   long "%llu" (its flag takes 0..max, a description any 64-bit value);
 *   FLAG int 0/1, a flag without a value, never in a description; TEXT
 *   const char *, written as is, NULL written as `none` ("synthetic"); HASH
 *   uint64_t written as 16 lowercase hex digits (a JSON string), never a flag;
 *   POINTER any other pointer, never a flag nor a key.
 * A row with neither flag nor key is a member that is no setting (derived from
 * the settings, or fixed by the code that fills the config): it is there so that
 * the table covers the whole struct (qkv_fields_cover), and its help says why it
 * has no flag.
 *
 * The description lists the fields with a key in table order, so the table's
 * order is the checkpoint's; a row's key_at (1, 2, ...) puts it before the others
 * in that order instead (the trainer's keys were written in an order of their
 * own before its table existed, and old checkpoints are fixtures). A field marked
 * QKV_FIELD_OPTIONAL is written only when it differs from its default and reads
 * back as the default when absent: a setting added after checkpoints without it
 * were written.
 */
#ifndef QKV_FIELDS_H
#define QKV_FIELDS_H

#include <stddef.h>

#include "core/io/json.h"
#include "train/task.h"

typedef enum {
    QKV_FIELD_INT,
    QKV_FIELD_LONG,
    QKV_FIELD_FLOAT,
    QKV_FIELD_CHOICE,
    QKV_FIELD_SEED,
    QKV_FIELD_FLAG,
    QKV_FIELD_TEXT,
    QKV_FIELD_HASH,
    QKV_FIELD_POINTER,
} qkv_field_kind;

#define QKV_FIELD_OPTIONAL 1
/* A fact about the data set the task read (its size), checked when the same set
 * is read again; `qkv eval --data` on another set resets it to its default. */
#define QKV_FIELD_OF_DATA 2

typedef struct qkv_field {
    const char *flag;               /* "--vocab", or NULL */
    const char *key;                /* "heads", or NULL */
    qkv_field_kind kind;
    size_t offset;                  /* of the member in the config struct */
    double min, max;                /* INT, FLOAT, SEED */
    double fallback;                /* the default: a number, CHOICE's index, FLAG's 0/1 */
    const char *const *choices;     /* CHOICE: NULL-terminated names */
    const char *none;               /* TEXT: how NULL is written ("synthetic") */
    const char *help;
    int options;                    /* QKV_FIELD_OPTIONAL, QKV_FIELD_OF_DATA */
    int key_at;                     /* 0: the description's table order; k > 0: k-th, before the others */
    const char *text;               /* TEXT: the default (NULL: none) */
} qkv_field;

/* Rows, one macro per kind; T is the config struct's type, M its member. */
#define QKV_INT_FIELD(flag, key, T, M, lo, hi, def, help) \
    {flag, key, QKV_FIELD_INT, offsetof(T, M), lo, hi, def, NULL, NULL, help, 0, 0, NULL}
#define QKV_FLOAT_FIELD(flag, key, T, M, lo, hi, def, help) \
    {flag, key, QKV_FIELD_FLOAT, offsetof(T, M), lo, hi, def, NULL, NULL, help, 0, 0, NULL}
#define QKV_CHOICE_FIELD(flag, key, T, M, names, def, help) \
    {flag, key, QKV_FIELD_CHOICE, offsetof(T, M), 0, 0, def, names, NULL, help, 0, 0, NULL}
#define QKV_FLAG_FIELD(flag, T, M, help) \
    {flag, NULL, QKV_FIELD_FLAG, offsetof(T, M), 0, 1, 0, NULL, NULL, help, 0, 0, NULL}
#define QKV_TEXT_FIELD(flag, key, T, M, none, help) \
    {flag, key, QKV_FIELD_TEXT, offsetof(T, M), 0, 0, 0, NULL, none, help, 0, 0, NULL}
#define QKV_LONG_FIELD(flag, key, T, M, lo, hi, def, help) \
    {flag, key, QKV_FIELD_LONG, offsetof(T, M), lo, hi, def, NULL, NULL, help, 0, 0, NULL}
/* A TEXT row whose default is the text def. */
#define QKV_TEXT_DEFAULT_FIELD(flag, key, T, M, def, help) \
    {flag, key, QKV_FIELD_TEXT, offsetof(T, M), 0, 0, 0, NULL, NULL, help, 0, 0, def}
/* The content identity of the data set at member M (a qkv_data_identity,
 * data/identity.h): its size and hash, worked out when the task reads the set
 * to train and written only when known (a synthetic set has none; checkpoints
 * written before identities have none either, and are then not checked).
 * Evaluation and --resume find the set by it (train/tasks/registry.h). */
#define QKV_DATA_IDENTITY_FIELDS(T, M)                                                                          \
    {NULL, "data_bytes", QKV_FIELD_LONG, offsetof(T, M.bytes), 0, 1e18, 0, NULL, NULL,                          \
     "the data set's size in bytes, once read (no flag: worked out)", QKV_FIELD_OPTIONAL | QKV_FIELD_OF_DATA, 0, \
     NULL},                                                                                                     \
    {NULL, "data_hash", QKV_FIELD_HASH, offsetof(T, M.hash), 0, 0, 0, NULL, NULL,                               \
     "the data set's FNV-1a 64 hash, once read (no flag: worked out)", QKV_FIELD_OPTIONAL | QKV_FIELD_OF_DATA,  \
     0, NULL}
/* A member that is no setting (no flag, no key), of kind K; why: the reason. */
#define QKV_MEMBER_FIELD(K, T, M, why) {NULL, NULL, K, offsetof(T, M), 0, 0, 0, NULL, NULL, why, 0, 0, NULL}

/* Every field of config takes its default (members outside the table are left). */
void qkv_fields_defaults(const qkv_field *fields, int n, void *config);
/* Appends the fields with a key to out, in table order (key_at rows first). */
void qkv_fields_describe(const qkv_field *fields, int n, const void *config, qkv_config_kv *out);
/* The same, but an OPTIONAL field is left out when it equals base's member
 * (base: the same struct holding the defaults of this use; NULL: the fallbacks). */
void qkv_fields_describe_against(const qkv_field *fields, int n, const void *config, const void *base,
                                 qkv_config_kv *out);
/* One member as a description writes it, into out (len bytes). */
void qkv_field_format(const qkv_field *f, const void *config, char *out, size_t len);
/* The fields with a key as JSON members `"key": value, ...` appended to out
 * (numbers as numbers, CHOICE and TEXT as strings, a NULL TEXT as null), each
 * preceded by ", " unless first is set and it is the first one. */
void qkv_fields_json(const qkv_field *fields, int n, const void *config, int first, qkv_json_out *out);
/* Whether the rows describe every member of a struct of `size` bytes: sorted by
 * offset, each row starts where the one before ended, rounded up to its own
 * alignment (its size, at most 8), and the last ends less than 8 bytes before
 * size (tail padding): any gap larger than padding is a member without a row. 0,
 * or -1 with why (len bytes) naming the first gap or overlap. The one thing it
 * cannot see: a member of at most 4 bytes put into an existing alignment hole. */
int qkv_fields_cover(const qkv_field *fields, int n, size_t size, char *why, size_t len);
/* The bytes of a row's member (its kind's C type). */
size_t qkv_field_size(const qkv_field *f);
/* Reads the fields with a key back from a description into config: 0, or -1 with
 * a one-line qkv_last_error() naming the key, its text and what was expected (a
 * checkpoint is input). TEXT members then point into in, which must outlive
 * config. */
int qkv_fields_parse(const qkv_field *fields, int n, const qkv_config_kv *in, void *config);
/* The first key of in that no row with a key describes (other than those in
 * also, a NULL-terminated list, may be NULL), or NULL when every key is known:
 * a description's key no reader knows is refused, not ignored. */
const char *qkv_fields_unknown_key(const qkv_field *fields, int n, const qkv_config_kv *in,
                                   const char *const *also);
/* Reads every entry of in, a description that may leave settings out (an absent
 * key keeps its member), into config: 0, or -1 naming the first key no row
 * describes ("unknown WHAT key ...") or a bad value (`WHAT "key" is ...`). */
int qkv_fields_parse_present(const char *what, const qkv_field *fields, int n, const qkv_config_kv *in,
                             void *config);
/* Every TEXT member fits a description's value (QKV_CONFIG_VALUE_LEN - 1 bytes):
 * 0, or -1 with qkv_last_error() naming the flag. */
int qkv_fields_check_text(const qkv_field *fields, int n, const void *config);
/* The field with this key, or NULL. */
const qkv_field *qkv_fields_find_key(const qkv_field *fields, int n, const char *key);
/* The index of a CHOICE value as typed (a flag): one of choices, or an alias the
 * list's own table gives (the position schemes': nope, ape; layers/positions.h);
 * -1 if neither. A checkpoint's description holds names only, read exactly. */
int qkv_choice_parse(const char *const *choices, const char *text);

#endif
