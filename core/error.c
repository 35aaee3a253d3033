/* error.c — the error hook and the per-thread last input error. See error.h. */
#include "core/error.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The exit status of the stop under way: 0 for a programmer error (abort, a core
 * to debug), else qkv_fatal_exit's status. */
static _Thread_local int stop_status;

static void default_hook(const char *message) {
    fprintf(stderr, "qkv: %s\n", message);
    fflush(stderr);
    if (stop_status) _Exit(stop_status);
    abort();
}

static qkv_error_hook current_hook = default_hook;

qkv_error_hook qkv_set_error_hook(qkv_error_hook hook) {
    qkv_error_hook previous = current_hook;
    current_hook = hook ? hook : default_hook;
    return previous;
}

void qkv_fatal(const char *fmt, ...) {
    char message[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(message, sizeof message, fmt, ap);
    va_end(ap);
    stop_status = 0;
    current_hook(message);
    abort(); /* a hook that returns has broken its contract */
}

void qkv_fatal_exit(int status, const char *fmt, ...) {
    char message[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(message, sizeof message, fmt, ap);
    va_end(ap);
    stop_status = status;
    current_hook(message);
    abort();
}

static _Thread_local char last_error[512];

/* Formatted into a buffer of its own first: a caller may pass qkv_last_error() as
 * an argument ("<context>: %s"), and formatting into the buffer being read would
 * repeat or garble the message. */
/* The length of the valid UTF-8 sequence at s (1 to 4), or 0 if the bytes there
 * are not one (a stray continuation byte, a truncated or overlong sequence). */
static int utf8_length(const unsigned char *s) {
    int n = s[0] >= 0xf0 && s[0] <= 0xf4 ? 4 : s[0] >= 0xe0 ? 3 : s[0] >= 0xc2 && s[0] < 0xe0 ? 2 : 0;
    for (int i = 1; i < n; i++)
        if ((s[i] & 0xc0) != 0x80) return 0;
    return n;
}

/* Copies message into out as one printable line: control characters become \n,
 * \t or \xNN, and bytes that are not UTF-8 \xNN (a flag value, a file name or a
 * decoder's message can carry any bytes). Cut to fit, never mid-escape. */
static void printable_line(const char *message, char *out, size_t cap) {
    const unsigned char *s = (const unsigned char *)message;
    size_t o = 0;
    while (*s && o + 5 < cap) {
        int n = *s >= 0x80 ? utf8_length(s) : 1;
        if (*s >= 0x20 && *s != 0x7f && n > 0) {
            memcpy(out + o, s, (size_t)n);
            o += (size_t)n;
            s += n;
            continue;
        }
        o += (size_t)snprintf(out + o, cap - o, *s == '\n' ? "\\n" : *s == '\t' ? "\\t" : "\\x%02x", *s);
        s++;
    }
    out[o] = '\0';
}

void qkv_set_error(const char *fmt, ...) {
    char message[sizeof last_error];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(message, sizeof message, fmt, ap);
    va_end(ap);
    printable_line(message, last_error, sizeof last_error);
}

const char *qkv_last_error(void) { return last_error; }
