/* error.h — the two kinds of failure in qkv.
 *
 * Programmer errors (shapes that do not fit, a bad axis, an activation used after
 * its tape was reset) go through qkv_fatal(): it formats one line naming the op
 * and the shapes and hands it to the error hook. The default hook prints
 * "qkv: <message>" to stderr and aborts. Tests install a hook that longjmps out,
 * to assert that the error happened. A hook must not return; if it does, qkv
 * aborts anyway.
 *
 * Input errors (files, flags, data sets) never stop the program: the function
 * records a one-line message with qkv_set_error() and returns a failure value
 * (NULL or -1). qkv_last_error() gives that message, per thread, like dlerror():
 * always one printable line (control characters and bytes that are not UTF-8
 * escaped as \n, \t, \xNN), whatever the input that went into it.
 */
#ifndef QKV_ERROR_H
#define QKV_ERROR_H

typedef void (*qkv_error_hook)(const char *message);

/* Installs hook (NULL restores the default) and returns the previous one. */
qkv_error_hook qkv_set_error_hook(qkv_error_hook hook);

/* Formats the message and calls the hook. Never returns. */
_Noreturn void qkv_fatal(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* The same for a stop that is not a bug (memory ran out): the default hook prints
 * "qkv: <message>" and exits with status (never 0) instead of aborting; a test's
 * hook sees it as any other stop. */
_Noreturn void qkv_fatal_exit(int status, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Stops with the formatted message unless cond holds. */
#define QKV_CHECK(cond, ...) do { if (!(cond)) qkv_fatal(__VA_ARGS__); } while (0)

/* Input errors: record a message, returned later by qkv_last_error(). */
void qkv_set_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
const char *qkv_last_error(void);

#endif
