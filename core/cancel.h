/* cancel.h — a request to stop, seen by the long loops of the ops.
 *
 * One process-wide flag, set from a signal handler (train/interrupt.h sets it at
 * the first SIGINT, SIGTERM, SIGHUP or SIGPIPE) and never cleared. Once it is set
 * the ops whose one call can run for seconds (the fused attention, forward and
 * backward) stop at their cancellation points, between their blocks
 * (qkv_cancel_point): their outputs are then defined (every element written,
 * finite) but meaningless. The rule for cut work: whoever asked for a
 * computation checks qkv_cancelled() when it is done (the flag is never cleared,
 * so a check after the work sees every cut made during it) and drops the result
 * when it is set: the trainer drops the step or evaluation in progress and saves
 * the last whole one, an experiment drops the model whose test or measurement a
 * signal reached (train/experiments/), and nothing cut reaches a record. A
 * program that never sets it sees no difference: one relaxed load per block of
 * attention scores (two while the test hook below is armed). */
#ifndef QKV_CANCEL_H
#define QKV_CANCEL_H

/* Async-signal-safe. */
void qkv_cancel_request(void);
/* 1 once qkv_cancel_request has been called. */
int qkv_cancelled(void);
/* An op's cancellation point: 1 when it must stop here (qkv_cancelled()).
 * Thread-safe. */
int qkv_cancel_point(void);
/* Test hook: the at-th cancellation point raises SIGINT itself (at <= 0: none),
 * so that a test interrupts inside an op, wherever fusion puts its points,
 * rather than between units of work. The process's handler must be installed
 * (train/interrupt.h arms the hook from QKV_TEST_SIGNAL_IN_OP). Points are
 * counted only while it is armed: qkv_cancel_points() says how many came. */
void qkv_cancel_test_hook(long at);
long qkv_cancel_points(void);

#endif
