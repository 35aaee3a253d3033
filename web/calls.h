/* calls.h — what web/'s call files share besides the wire (web/wire.h): the
 * frees qkv_web_reset calls, and the attention maps' answer, which the training
 * session's maps and an opened model's both give. Internal to web/. */
#ifndef QKV_WEB_CALLS_H
#define QKV_WEB_CALLS_H

#include "train/tasks/sequence.h"
#include "web/wire.h"

void qkv_web_train_free(void);
void qkv_web_model_free(void);

/* The maps of model on the request's "input" (absent: fallback, a typed text;
 * NULL: the symbols 0, 1, ... of the longest trained length), as `qkv attn`
 * draws them: its input checks and messages after prefix ("qkv attn: "); an
 * untrained length refused unless "force" (allowed is 0: always refused). step:
 * the model's. The whole answer, or a refusal. */
const char *qkv_web_maps_answer(const qkv_web_request *r, qkv_seq_model *model, long step, const char *prefix,
                                const char *fallback, int allow_force);

#endif
