/* cancel.c — the stop request of long ops. See cancel.h. */
#include "core/cancel.h"

#include <signal.h>

static volatile sig_atomic_t requested;

/* The test hook: the point that raises SIGINT (0: none), and the points passed. */
static long hook_at, points;

void qkv_cancel_request(void) { requested = 1; }

int qkv_cancelled(void) { return requested; }

int qkv_cancel_point(void) {
    if (hook_at > 0) {
        long n;
        #pragma omp atomic capture
        n = ++points;
        if (n == hook_at) raise(SIGINT); /* the handler sets requested before raise returns */
    }
    return requested;
}

void qkv_cancel_test_hook(long at) { hook_at = at; }

long qkv_cancel_points(void) {
    long passed;
    #pragma omp atomic read
    passed = points;
    return passed;
}
