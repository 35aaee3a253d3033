/* cancel.h — a request to stop, seen by the long loops of the ops.
 *
 * One process-wide flag, set from a signal handler (train/interrupt.h sets it at
 * the first SIGINT, SIGTERM, SIGHUP or SIGPIPE) and never cleared. Once it is set
 * the ops whose one call can run for seconds (the fused attention, forward and
 * backward) stop between their blocks: their outputs are then defined (every
 * element written, finite) but meaningless, and the caller must drop the work
 * (the trainer drops the step or evaluation in progress and saves the last whole
 * one). A program that never sets it sees no difference: one relaxed load per
 * block of attention scores. */
#ifndef QKV_CANCEL_H
#define QKV_CANCEL_H

/* Async-signal-safe. */
void qkv_cancel_request(void);
/* 1 once qkv_cancel_request has been called. */
int qkv_cancelled(void);

#endif
