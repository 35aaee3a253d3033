/* api_model.c — web/api.h's "open a model": qkv_web_buffer, qkv_web_model_open,
 * qkv_web_model_attention, and qkv_web_reset.
 *
 * The page hands over a checkpoint's bytes (copied into the buffer this file
 * owns); they are written to a file of a fresh private directory (emscripten's
 * in-memory file system in the page, /tmp natively) under the file's own name,
 * opened as `qkv attn NAME` opens it (train/tasks/sequence.h's
 * qkv_seq_model_load: every check of a hostile or foreign file), and the file
 * removed. A refusal is the command line's line with the directory taken off the
 * path, as `qkv attn NAME` run beside the file says it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/error.h"
#include "train/checkpoint.h"
#include "web/api.h"
#include "web/calls.h"

static struct {
    unsigned char *bytes;
    size_t size;
    int open;
    qkv_seq_model model;
    long step;
    char name[128];
} opened;

void qkv_web_model_free(void) {
    if (opened.open) qkv_seq_model_free(&opened.model);
    opened.open = 0;
}

void qkv_web_model_reset(void) {
    qkv_web_model_free();
    free(opened.bytes);
    memset(&opened, 0, sizeof opened);
}

void qkv_web_model_forget(void) { memset(&opened, 0, sizeof opened); }

const char *qkv_web_call_buffer(const char *json) {
    qkv_web_request r;
    if (qkv_web_request_parse(&r, "buffer", json) != 0) return qkv_web_refuse_error(NULL);
    long long bytes = 0;
    int bad = qkv_web_get_int(&r, "bytes", 1, (long long)(QKV_WEB_MAX_HEAP / 2), &bytes);
    qkv_web_request_free(&r);
    if (bad || bytes == 0) return bad ? qkv_web_refuse_error(NULL) : qkv_web_refuse("qkv web: buffer: \"bytes\" is required");
    unsigned char *p = realloc(opened.bytes, (size_t)bytes);
    if (!p) return qkv_web_refuse("qkv web: buffer: not enough memory for the file");
    opened.bytes = p;
    opened.size = (size_t)bytes;
    qkv_json_out *o = qkv_web_reply();
    qkv_web_key(o, "pointer");
    qkv_web_int(o, (long long)(uintptr_t)p);
    qkv_web_key(o, "bytes");
    qkv_web_int(o, bytes);
    return qkv_web_reply_end();
}

/* The file's own name, without any folder: "model.safetensors" when none is left. */
static void base_name(const char *given, char *out, size_t size) {
    const char *slash = given ? strrchr(given, '/') : NULL, *name = slash ? slash + 1 : given;
    snprintf(out, size, "%s", name && *name && strcmp(name, ".") && strcmp(name, "..") ? name : "model.safetensors");
}

/* qkv_last_error() with "dir/" taken off, after "qkv attn: ". */
static const char *refuse_without(const char *dir) {
    char line[1200];
    const char *e = qkv_last_error(), *at = strstr(e, dir);
    if (at) snprintf(line, sizeof line, "qkv attn: %.*s%s", (int)(at - e), e, at + strlen(dir) + 1);
    else snprintf(line, sizeof line, "qkv attn: %s", e);
    return qkv_web_refuse(line);
}

static int write_file(const char *path, const unsigned char *bytes, size_t n) {
    FILE *f = fopen(path, "wb");
    int ok = f && fwrite(bytes, 1, n, f) == n;
    if (f && fclose(f) != 0) ok = 0;
    return ok ? 0 : -1;
}

const char *qkv_web_call_model_open(const char *json) {
    qkv_web_request r;
    if (qkv_web_request_parse(&r, "model_open", json) != 0) return qkv_web_refuse_error(NULL);
    long long bytes = 0;
    char *given = NULL;
    int bad = qkv_web_get_int(&r, "bytes", 1, (long long)opened.size, &bytes) || qkv_web_get_string(&r, "name", &given);
    qkv_web_request_free(&r);
    if (bad) {
        free(given);
        return opened.size ? qkv_web_refuse_error(NULL) : qkv_web_refuse("qkv web: model_open: no buffer (qkv_web_buffer first)");
    }
    if (bytes == 0) bytes = (long long)opened.size;
    qkv_web_model_free();
    base_name(given, opened.name, sizeof opened.name);
    free(given);
    char dir[] = "/tmp/qkv-web-XXXXXX", path[256];
    if (!opened.bytes || !mkdtemp(dir)) return qkv_web_refuse("qkv web: model_open: no room for the file");
    snprintf(path, sizeof path, "%s/%s", dir, opened.name);
    if (write_file(path, opened.bytes, (size_t)bytes) != 0) {
        unlink(path);
        rmdir(dir);
        return qkv_web_refuse("qkv web: model_open: the file could not be written to memory");
    }
    const char *answer = NULL;
    qkv_checkpoint ckpt;
    if (qkv_seq_model_load(&opened.model, path, &opened.step) != 0) {
        answer = refuse_without(dir);
    } else if (qkv_checkpoint_open(path, &ckpt) != 0) {   /* its settings, for the page to show */
        qkv_seq_model_free(&opened.model);
        answer = refuse_without(dir);
    } else {
        opened.open = 1;
        const qkv_seq_model_config *c = &opened.model.config;
        qkv_json_out *o = qkv_web_reply();
        qkv_web_text(o, "name", opened.name);
        qkv_web_text(o, "task", opened.model.task.name);
        qkv_web_key(o, "step");
        qkv_web_int(o, opened.step);
        qkv_web_settings(o, "settings", ckpt.config);
        qkv_web_settings(o, "training", ckpt.settings);
        qkv_web_key(o, "vocab");
        qkv_web_int(o, c->data.vocab);
        qkv_web_key(o, "trained");
        int trained[2] = {c->data.min_len, c->data.max_len};
        qkv_web_ints(o, trained, 2);
        qkv_web_key(o, "longest_input");
        qkv_web_int(o, qkv_seq_model_longest_input(c, QKV_WEB_MAPS_MAX_TOKENS));
        qkv_checkpoint_close(&ckpt);
        answer = qkv_web_reply_end();
    }
    unlink(path);
    rmdir(dir);
    return answer;
}

const char *qkv_web_call_model_attention(const char *json) {
    qkv_web_request r;
    if (qkv_web_request_parse(&r, "model_attention", json) != 0) return qkv_web_refuse_error(NULL);
    const char *answer;
    if (!opened.open) answer = qkv_web_refuse("qkv web: model_attention: no model open (qkv_web_model_open first)");
    else if (qkv_web_find(&r, "input") == -1) answer = qkv_web_refuse("qkv attn: --input is required, e.g. --input \"3 1 4 1 5\"");
    else answer = qkv_web_maps_answer(&r, &opened.model, opened.step, "qkv attn: ", NULL,
                                                 QKV_WEB_MAPS_FORCE | QKV_WEB_MAPS_GRADS);
    qkv_web_request_free(&r);
    return answer;
}
