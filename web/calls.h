/* calls.h — what web/'s call files share besides the wire (web/wire.h): the
 * frees qkv_web_reset calls, and the attention maps' answer, which the training
 * session's maps and an opened model's both give. Internal to web/. */
#ifndef QKV_WEB_CALLS_H
#define QKV_WEB_CALLS_H

#include "train/tasks/sequence.h"
#include "web/wire.h"

/* The calls' bodies (api_*.c); web/api.c exports each behind the guard. */
#define QKV_WEB_CALLS(X) X(info) X(attention) X(attention_check) X(train_start) X(train_step) X(train_evaluate) \
    X(train_maps) X(train_lengths) X(tape) X(tape_node) X(buffer) X(model_open) X(model_attention)
const char *qkv_web_call_info(const char *json);
const char *qkv_web_call_attention(const char *json);
const char *qkv_web_call_attention_check(const char *json);
const char *qkv_web_call_train_start(const char *json);
const char *qkv_web_call_train_step(const char *json);
const char *qkv_web_call_train_evaluate(const char *json);
const char *qkv_web_call_train_maps(const char *json);
const char *qkv_web_call_train_lengths(const char *json);
const char *qkv_web_call_tape(const char *json);
const char *qkv_web_call_tape_node(const char *json);
const char *qkv_web_call_buffer(const char *json);
const char *qkv_web_call_model_open(const char *json);
const char *qkv_web_call_model_attention(const char *json);

/* After a stop (below): forget what a call left half made, without freeing it. */
void qkv_web_train_forget(void);
void qkv_web_model_forget(void);

void qkv_web_train_free(void);
void qkv_web_model_free(void);
void qkv_web_model_reset(void);   /* the model and the buffer */

/* The maps of model on the request's "input" (absent: fallback, a typed text;
 * NULL: the symbols 0, 1, ... of the longest trained length), as `qkv attn`
 * draws them: its input checks and messages after prefix ("qkv attn: "); an
 * untrained length refused unless "force" and QKV_WEB_MAPS_FORCE is allowed;
 * with "grads" (QKV_WEB_MAPS_GRADS allowed) also every row's dP, dS, dQ, dK, dV
 * under the training loss on the input and its target (`qkv attn --grads`; the
 * model's parameter gradients are written: not for a model in training). step:
 * the model's. The whole answer, or a refusal. */
enum { QKV_WEB_MAPS_FORCE = 1, QKV_WEB_MAPS_GRADS = 2 };
const char *qkv_web_maps_answer(const qkv_web_request *r, qkv_seq_model *model, long step, const char *prefix,
                                const char *fallback, int allowed);

#endif
