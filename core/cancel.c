/* cancel.c — the stop request of long ops. See cancel.h. */
#include "core/cancel.h"

#include <signal.h>

static volatile sig_atomic_t requested;

void qkv_cancel_request(void) { requested = 1; }

int qkv_cancelled(void) { return requested; }
