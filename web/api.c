/* api.c — web/api.h's exported calls, each its body (api_*.c) behind one guard.
 *
 * The library stops on a programmer error (QKV_CHECK) and on memory it cannot go
 * on without (core/alloc.h: a model too big for the heap is refused while it is
 * made, with the command line's line "qkv: making the task takes more memory than
 * ..."). The command line exits there; the page must keep working. So each call
 * runs with an error hook that jumps back here: the answer is the refusal
 * {"ok":false, "error":"qkv: <the line>", "stopped":true}, the allocation budget
 * of a task being made is lifted, and what the call was making is forgotten (its
 * memory is not returned: a stop leaves the heap as it was at the stop).
 */
#include "web/api.h"

#include <setjmp.h>
#include <stdio.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "web/calls.h"
#include "web/wire.h"

static jmp_buf stop_jump;
static char stop_message[600];

static void stop_hook(const char *message) {
    snprintf(stop_message, sizeof stop_message, "qkv: %s", message);
    longjmp(stop_jump, 1);
}

static const char *guarded(const char *(*call)(const char *), const char *json) {
    qkv_error_hook previous = qkv_set_error_hook(stop_hook);
    const char *answer;
    if (setjmp(stop_jump) == 0) {
        answer = call(json);
    } else {
        qkv_alloc_set_budget(0, NULL);
        qkv_alloc_note_estimate(0);
        qkv_web_train_forget();
        qkv_web_model_forget();
        qkv_json_out *o = qkv_web_reply();
        o->len = 0;
        qkv_json_out_text(o, "{\"ok\":false");
        qkv_web_text(o, "error", stop_message);
        qkv_json_out_text(o, ",\"stopped\":true");
        answer = qkv_web_reply_end();
    }
    qkv_set_error_hook(previous);
    return answer;
}

#define QKV_WEB_EXPORT_(name) \
    const char *qkv_web_##name(const char *json) { return guarded(qkv_web_call_##name, json); }
QKV_WEB_CALLS(QKV_WEB_EXPORT_)
#undef QKV_WEB_EXPORT_

void qkv_web_reset(void) {
    qkv_web_train_free();
    qkv_web_model_reset();
}
