/* args.h — flags read strictly into a table's targets: the command line's
 * parsing (cli/args.h prints its messages and --help) and any other caller that
 * takes settings as flags (the page's C API, web/), with the same checks and the
 * same one-line messages.
 *
 * A table of qkv_arg rows (usually qkv_args_from_fields of a field table,
 * train/fields.h) names the flags and their targets. Numbers are strict, the
 * same as a checkpoint's (core/number.h): an optional '-' then digits (a float
 * may add '.' and an exponent); a leading blank, '+', a leading zero, hex, "inf"
 * and "nan" are refused. A flag given twice is refused ("--steps given twice"),
 * never the last one silently taken. An unknown flag or value is named with the
 * nearest known one (core/suggest.h). Nothing is half-applied for the caller
 * that stops on an error: the targets may have changed, but it then does not run.
 */
#ifndef QKV_TRAIN_ARGS_H
#define QKV_TRAIN_ARGS_H

#include "train/fields.h"

/* CHOICE: target is an int* that receives the index of the value in choices.
 * LONG and U64: integers like INT, into a long* and an unsigned long long*. */
typedef enum { QKV_ARG_INT, QKV_ARG_FLOAT, QKV_ARG_FLAG, QKV_ARG_STRING, QKV_ARG_CHOICE, QKV_ARG_LONG, QKV_ARG_U64 } qkv_arg_kind;

typedef struct qkv_arg {
    const char *flag;      /* "--input" */
    qkv_arg_kind kind;
    void *target;          /* int*, float*, int* (flag), const char**, int*, long*, unsigned long long* */
    double min, max;       /* accepted range for INT and FLOAT */
    const char *help;            /* --help adds the current (default) value */
    const char *const *choices;  /* CHOICE: NULL-terminated names */
} qkv_arg;

/* Flags a table (a command's, a task's with the trainer's) may have. */
#define QKV_MAX_COMMAND_FLAGS 64

/* Table rows, one per kind. */
#define QKV_ARG_INT_ROW(flag, target, lo, hi, help) {flag, QKV_ARG_INT, target, lo, hi, help, NULL}
#define QKV_ARG_FLOAT_ROW(flag, target, lo, hi, help) {flag, QKV_ARG_FLOAT, target, lo, hi, help, NULL}
#define QKV_ARG_FLAG_ROW(flag, target, help) {flag, QKV_ARG_FLAG, target, 0, 0, help, NULL}
#define QKV_ARG_STRING_ROW(flag, target, help) {flag, QKV_ARG_STRING, target, 0, 0, help, NULL}
#define QKV_ARG_CHOICE_ROW(flag, target, choices, help) {flag, QKV_ARG_CHOICE, target, 0, 0, help, choices}

/* Records a flag's one-line message for qkv_last_error() (qkv_set_error escapes
 * control characters and raw bytes a flag's value may carry); returns -1. */
int qkv_args_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* The flag rows of a field table (train/fields.h), targets in config: one per
 * field with a flag, in table order, written to args; returns how many. */
int qkv_args_from_fields(const qkv_field *fields, int n, void *config, qkv_arg *args);

/* Reads argv[0..argc) (flags and their values) into the targets of args[0..n).
 * 0: read, given[i] (n of them) 1 for each flag given; 1: "--help" or "-h" met
 * (the flags before it read, the rest not); -1: one line in qkv_last_error()
 * prefixed by command: "train reverse: --steps: expected an integer in [1,
 * 10000000], got 'x'" (the command line prints it after "qkv "). */
int qkv_args_read(const char *command, int argc, char **argv, const qkv_arg *args, int n, unsigned char *given);

#endif
