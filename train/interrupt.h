/* interrupt.h — a run stopped by a signal keeps its work.
 *
 * qkv_interrupt_install (the command line calls it for `qkv train`; a program
 * using the library may) handles SIGINT, SIGTERM, SIGHUP and SIGPIPE by recording
 * the first one; the trainer looks at qkv_interrupt_signal() after every step and
 * ends the run there: the checkpoint of --save, the --csv, --json and --plot files,
 * then qkv_train returns -1 with result->interrupted = the signal (trainer.h), and
 * the command line exits 128 + the signal (130, 143, 129, 141).
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
/* "SIGINT", "SIGTERM", "SIGHUP", "SIGPIPE", or "a signal". */
const char *qkv_signal_name(int sig);

#endif
