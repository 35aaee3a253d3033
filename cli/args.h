/* args.h — strict command-line flag parsing for the ./qkv subcommands.
 *
 * A command declares its flags in a table; qkv_args_parse() walks argv, fills the
 * targets and returns 0, or prints one line naming the flag and what was wrong
 * ("qkv train spirals: --steps: expected an integer in [1, 10000000], got 'x'")
 * and returns -1. Numbers are strict, the same as a checkpoint's (core/number.h):
 * an optional '-' then digits (a float may add '.' and an exponent); a leading
 * blank, '+', a leading zero, hex, "inf" and "nan" are refused. A flag given twice is refused ("--steps given twice"), never the
 * last one silently taken. --help prints the table. Nothing is half-applied: on error the
 * targets may have changed, but the command then exits without running.
 */
#ifndef QKV_ARGS_H
#define QKV_ARGS_H

#include "core/kernels/parallel.h"   /* QKV_THREADS_HELP */
#include "train/fields.h"

/* CHOICE: target is an int* that receives the index of the value in choices.
 * LONG and U64: integers like INT, into a long* and an unsigned long long*. */
typedef enum { QKV_ARG_INT, QKV_ARG_FLOAT, QKV_ARG_FLAG, QKV_ARG_STRING, QKV_ARG_CHOICE, QKV_ARG_LONG, QKV_ARG_U64 } qkv_arg_kind;

typedef struct qkv_arg {
    const char *flag;      /* "--steps" */
    qkv_arg_kind kind;
    void *target;          /* int*, float*, int* (flag), const char**, int*, long*, unsigned long long* */
    double min, max;       /* accepted range for INT and FLOAT */
    const char *help;            /* --help adds the current (default) value */
    const char *const *choices;  /* CHOICE: NULL-terminated names */
} qkv_arg;

/* Table rows, one per kind. */
#define QKV_ARG_INT_ROW(flag, target, lo, hi, help) {flag, QKV_ARG_INT, target, lo, hi, help, NULL}
#define QKV_ARG_FLOAT_ROW(flag, target, lo, hi, help) {flag, QKV_ARG_FLOAT, target, lo, hi, help, NULL}
#define QKV_ARG_FLAG_ROW(flag, target, help) {flag, QKV_ARG_FLAG, target, 0, 0, help, NULL}
#define QKV_ARG_STRING_ROW(flag, target, help) {flag, QKV_ARG_STRING, target, 0, 0, help, NULL}
#define QKV_ARG_CHOICE_ROW(flag, target, choices, help) {flag, QKV_ARG_CHOICE, target, 0, 0, help, choices}

/* The flag rows of a field table (train/fields.h), targets in config: one per
 * field with a flag, in table order, written to args; returns how many. */
int qkv_args_from_fields(const qkv_field *fields, int n, void *config, qkv_arg *args);

/* Returns 0 on success, 1 if --help was printed, -1 on error (message printed). */
int qkv_args_parse(const char *command, int argc, char **argv, const qkv_arg *args, int n_args);
/* The same; given[i] (n_args of them) is then 1 for each flag the command line
 * gave (a setting the user chose, not a default). */
int qkv_args_parse_given(const char *command, int argc, char **argv, const qkv_arg *args, int n_args,
                         unsigned char *given);

#endif
