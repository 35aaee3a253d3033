/* interrupt.c — the signal handlers of a run that stops cleanly. See interrupt.h. */
#include "train/interrupt.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/cancel.h"
#include "core/fileio.h"

static volatile sig_atomic_t first_signal;

/* Async-signal-safe only: the flag, unlink (through qkv_atomic_remove_temps), _exit. */
static void on_signal(int sig) {
    if (!first_signal) {
        first_signal = sig;
        qkv_cancel_request(); /* the long ops stop between blocks (core/cancel.h) */
        return;
    }
    if (sig == SIGPIPE) return; /* every write to a closed pipe raises one */
    qkv_atomic_remove_temps();
    _exit(128 + sig);
}

/* The test hook (interrupt.h): the poll that raises SIGINT (0: none), the polls so far, and after it. */
static long hook_poll;
static long polls, polls_after;

static void report_hook(void) {
    fprintf(stderr, "qkv: test hook: SIGINT at poll %ld, %ld polls after it\n", hook_poll, polls_after);
}

/* The hook inside the ops (core/cancel.h): the cancellation point that raises SIGINT. */
static long hook_point;

static void report_point_hook(void) {
    fprintf(stderr, "qkv: test hook: SIGINT at cancellation point %ld of %ld\n", hook_point, qkv_cancel_points());
}

int qkv_interrupt_poll(void) {
    if (hook_poll > 0) {
        long n;
        #pragma omp atomic capture
        n = ++polls;
        if (n == hook_poll) raise(SIGINT);
        else if (n > hook_poll) {
            #pragma omp atomic
            polls_after++;
        }
    }
    return first_signal;
}

void qkv_interrupt_install(void) {
    const char *hook = getenv("QKV_TEST_SIGNAL_AT_POLL");
    if (hook && !hook_poll && (hook_poll = atol(hook)) > 0) atexit(report_hook);
    const char *in_op = getenv("QKV_TEST_SIGNAL_IN_OP");
    if (in_op && !hook_point && (hook_point = atol(in_op)) > 0) atexit(report_point_hook);
    static const int signals[] = {SIGINT, SIGTERM, SIGHUP, SIGPIPE};
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART; /* a read or write in progress goes on; the step ends normally */
    for (size_t i = 0; i < sizeof signals / sizeof signals[0]; i++) sigaction(signals[i], &sa, NULL);
    if (hook_point > 0) qkv_cancel_test_hook(hook_point); /* armed once the handler is in place */
}

int qkv_interrupt_signal(void) { return first_signal; }

const char *qkv_signal_name(int sig) {
    switch (sig) {
    case SIGINT: return "SIGINT";
    case SIGTERM: return "SIGTERM";
    case SIGHUP: return "SIGHUP";
    case SIGPIPE: return "SIGPIPE";
    default: return "a signal";
    }
}
