/* sequence_input.c — a sequence model's input as a person types it, and its
 * tokens as labels: what `qkv attn` and the page's C API (web/) both read and
 * show (train/tasks/sequence.h). */
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "core/error.h"
#include "core/number.h"
#include "train/tasks/sequence.h"

int qkv_seq_parse_input(const char *text, int vocab, int max_len, int32_t *symbols, int *n) {
    *n = 0;
    const char *p = text;
    for (;;) {
        while (*p == ' ' || *p == ',' || *p == '\t') p++;
        if (!*p) break;
        size_t len = strcspn(p, " ,\t");
        char token[24];
        long long v = 0;
        snprintf(token, sizeof token, "%.*s", (int)(len < sizeof token ? len : sizeof token - 1), p);
        if (len >= sizeof token || qkv_parse_int(token, LLONG_MIN, LLONG_MAX, &v) != 0) {   /* core/number.h */
            qkv_set_error("--input: '%.20s' is not a list of integers", p);
            return -1;
        }
        const char *end = p + len;
        if (v < 0 || v >= vocab) {
            qkv_set_error("--input: symbol %lld is outside the model's vocabulary 0..%d", v, vocab - 1);
            return -1;
        }
        if (*n == max_len) {
            qkv_set_error("--input: more than %d symbols; this model reads at most %d", max_len, max_len);
            return -1;
        }
        symbols[(*n)++] = (int32_t)v + QKV_SEQ_FIRST_SYMBOL;
        p = end;
    }
    if (*n == 0) {
        qkv_set_error("--input: no symbols (give e.g. --input \"3 1 4 1 5\")");
        return -1;
    }
    return 0;
}

void qkv_seq_token_label(int32_t id, char *out, size_t len) {
    if (id == QKV_SEQ_BOS) snprintf(out, len, "BOS");
    else if (id == QKV_SEQ_SEP) snprintf(out, len, "SEP");
    else if (id == QKV_SEQ_PAD) snprintf(out, len, "PAD");
    else snprintf(out, len, "%d", (int)(id - QKV_SEQ_FIRST_SYMBOL));
}

int qkv_seq_untrained_length(const qkv_seq_model_config *c, int len, char *warning, size_t size) {
    warning[0] = '\0';
    if (len >= c->data.min_len && len <= c->data.max_len) return 0;
    snprintf(warning, size, "%d symbols, but this model was trained on lengths %d..%d only: "
             "these maps show an input it never learned", len, c->data.min_len, c->data.max_len);
    return 1;
}
