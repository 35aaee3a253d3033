/* wire.h — the JSON on both sides of web/api.h's calls: a request read once
 * (strictly, core/io/json.h) with typed getters whose refusals are one line, and
 * the one reply buffer every call writes its answer into (valid until the next
 * call). Numbers go out with 9 significant digits, so a float32 reads back
 * exactly; the non-finite ones as the strings "-Infinity", "Infinity", "NaN".
 * Internal to web/: the calls (api_*.c) share it.
 */
#ifndef QKV_WEB_WIRE_H
#define QKV_WEB_WIRE_H

#include <stddef.h>
#include <stdint.h>

#include "core/io/json.h"
#include "train/task.h"

/* A request: the parsed object and the name of the call for messages. */
typedef struct qkv_web_request {
    const char *call;             /* "attention": messages say "qkv web: attention: ..." */
    qkv_json doc;
} qkv_web_request;

/* Parses json (an object, nesting at most 8 deep, at most 16 MB): 0, or -1 with
 * qkv_last_error() "qkv web: CALL: not JSON: <why>". */
int qkv_web_request_parse(qkv_web_request *r, const char *call, const char *json);
void qkv_web_request_free(qkv_web_request *r);

/* The token index of key's value in the top-level object, or -1 when absent
 * (a key given twice is refused by the getters: -2). */
int qkv_web_find(const qkv_web_request *r, const char *key);
/* The same in the object at token index object. */
int qkv_web_find_in(const qkv_web_request *r, int object, const char *key);
/* The getters: absent keeps *out (the caller's default) and returns 0; a value of
 * the wrong type or range is -1 with qkv_last_error() naming the key:
 * "qkv web: train_step: \"steps\" must be an integer in [1, 1000000]". */
int qkv_web_get_int(const qkv_web_request *r, const char *key, long long lo, long long hi, long long *out);
int qkv_web_get_number(const qkv_web_request *r, const char *key, double *out);
int qkv_web_get_bool(const qkv_web_request *r, const char *key, int *out);
/* A string decoded into a malloc'd text (*out, NULL when absent; the caller frees). */
int qkv_web_get_string(const qkv_web_request *r, const char *key, char **out);
/* A matrix given as a string in the command line's syntax ("1,0; 0,1") or as an
 * array of rows of numbers ([[1,0],[0,1]]), as the string form (malloc'd, NULL
 * when absent). */
int qkv_web_get_rows(const qkv_web_request *r, const char *key, char **out);
/* The same for the value at token i (key names it in the message). */
int qkv_web_rows_at(const qkv_web_request *r, int i, const char *key, char **out);
/* Flags for a command: "args":["--steps","20"] and/or "flags":{"--steps":20,
 * "--quiet":true} (a value true is a flag without a value; false or null leaves
 * it out) as an argv of malloc'd strings (*argv NULL-terminated, free with
 * qkv_web_argv_free). */
int qkv_web_get_argv(const qkv_web_request *r, int *argc, char ***argv);
void qkv_web_argv_free(int argc, char **argv);
/* The decoded text of string token i (malloc'd). */
char *qkv_web_decode(const qkv_web_request *r, uint32_t i);

/* ---- the reply --------------------------------------------------------------- */

/* Starts the reply: {"ok":true ... ; returns the buffer to append members to. */
qkv_json_out *qkv_web_reply(void);
/* Closes it and returns its text (an out-of-memory reply is a refusal). */
const char *qkv_web_reply_end(void);
/* The refusal {"ok":false,"error":line}; returns its text. */
const char *qkv_web_refuse(const char *line);
/* The refusal of qkv_last_error(), after prefix (NULL: none): "qkv train reverse: " + error. */
const char *qkv_web_refuse_error(const char *prefix);

/* Members and values: ,"key": then the value. */
void qkv_web_key(qkv_json_out *o, const char *key);
void qkv_web_number(qkv_json_out *o, double x);
void qkv_web_int(qkv_json_out *o, long long x);
void qkv_web_text(qkv_json_out *o, const char *key, const char *s);   /* ,"key":"s" (NULL: null) */
/* ,"key":{"k0":"v0",...}: a run's or a checkpoint's settings as text (NULL: {}) */
void qkv_web_settings(qkv_json_out *o, const char *key, const qkv_config_kv *kv);
void qkv_web_floats(qkv_json_out *o, const float *x, size_t n);     /* [x0,x1,...] */
void qkv_web_ints(qkv_json_out *o, const int *x, int n);
/* {"name":..,"shape":[..],"data":[..]} (name NULL: left out). */
void qkv_web_tensor(qkv_json_out *o, const char *name, int ndim, const int *shape, const float *data);

#endif
