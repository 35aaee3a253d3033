/* error.c — the error hook and the per-thread last input error. See error.h. */
#include "error.h"

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
void qkv_set_error(const char *fmt, ...) {
    char message[sizeof last_error];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(message, sizeof message, fmt, ap);
    va_end(ap);
    memcpy(last_error, message, sizeof message);
}

const char *qkv_last_error(void) { return last_error; }
