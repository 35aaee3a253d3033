/* interrupt.h — a run stopped by a signal keeps its work.
 *
 * qkv_interrupt_install (the command line calls it for `qkv train`; a program
 * using the library may) handles SIGINT, SIGTERM, SIGHUP and SIGPIPE by recording
 * the first one. The work answers it within a unit of work, not a whole step or
 * evaluation: the memory's measurement before the first step (train/memory.h)
 * looks at qkv_interrupt_poll() once, the step before each micro-batch
 * (train/step.h: the step is then dropped, the state stays the last whole step's),
 * every task's evaluation before each chunk (the evaluation is then dropped),
 * lengthgen's test and distance measurement before each length and input (the
 * model is then dropped: core/cancel.h's rule for cut work), and the trainer
 * between steps; the run ends with what a save at that point may save:
 * the checkpoint of --save (the last whole step), the --csv, --json and --plot
 * files, then qkv_train returns -1 with result->interrupted = the signal
 * (trainer.h), and the command line exits 128 + the signal (130, 143, 129, 141).
 * A second SIGINT, SIGTERM or SIGHUP does not wait: the handler removes this
 * process's temporary files (core/fileio.h: no partial file is left) and exits
 * at once with 128 + that signal. SIGPIPE (the reader of stdout went away, as in
 * `qkv train ... | head -1`) counts only once: later writes to the pipe fail with
 * EPIPE instead of killing the process, and the run ends at the end of its step.
 */
#ifndef QKV_INTERRUPT_H
#define QKV_INTERRUPT_H

void qkv_interrupt_install(void);
/* The first signal received since qkv_interrupt_install, or 0. */
int qkv_interrupt_signal(void);
/* The same, asked by a loop between two units of work (a micro-batch, an
 * evaluation chunk) that stops when it is not 0. Thread-safe.
 * Test hook: with QKV_TEST_SIGNAL_AT_POLL=N in the environment when
 * qkv_interrupt_install runs, the N-th poll raises SIGINT itself, and at exit the
 * process prints to stderr how many polls came after it ("qkv: test hook: SIGINT
 * at poll N, P polls after it"): a test sees that the work stopped at the next
 * boundary without timing anything.
 * Inside an op: with QKV_TEST_SIGNAL_IN_OP=N, the N-th cancellation point of the
 * long ops (core/cancel.h: the fused attention's blocks, forward and backward)
 * raises SIGINT, so the signal lands in the middle of the op, and at exit the
 * process prints "qkv: test hook: SIGINT at cancellation point N of P" (P >= N:
 * the hook fired; P counts every point passed, before and after it). */
int qkv_interrupt_poll(void);
/* "SIGINT", "SIGTERM", "SIGHUP", "SIGPIPE", or "a signal". */
const char *qkv_signal_name(int sig);

#endif
