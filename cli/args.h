/* args.h — strict command-line flag parsing for the ./qkv subcommands.
 *
 * A command declares its flags in a table; qkv_args_parse() walks argv, fills the
 * targets and returns 0, or prints one line naming the flag and what was wrong
 * ("qkv train spirals: --steps: expected an integer in [1, 10000000], got 'x'")
 * and returns -1. Numbers are strict, the same as a checkpoint's (core/number.h):
 * an optional '-' then digits (a float may add '.' and an exponent); a leading
 * blank, '+', a leading zero, hex, "inf" and "nan" are refused. A flag given
 * twice is refused ("--steps given twice"), never the last one silently taken.
 * --help prints the table. Commands describe themselves once, in a
 * qkv_command_spec (below). Nothing is half-applied: on error the
 * targets may have changed, but the command then exits without running.
 */
#ifndef QKV_ARGS_H
#define QKV_ARGS_H

#include <stdio.h>

#include "train/args.h"

/* A command described once (Redis-style: one spec per command): its name, its
 * positional arguments, a one-line summary, and its flags as rows of a field
 * table (train/fields.h) over its options struct, so that the shared settings
 * (train/settings.h: --threads, --heads, ...) are the same rows everywhere.
 * `qkv --help` (cli/main.c), the command's --help, its parsing and its errors
 * are generated from it. A command with subcommands (data, explain, experiment)
 * lists them in subs (NULL-terminated), each a spec of its own named by its word
 * ("detect"); `what` names that word in usage and errors ("set", "topic"). */
typedef struct qkv_command_spec qkv_command_spec;
struct qkv_command_spec {
    const char *name;                    /* as typed: "attn"; a subcommand's word: "detect" */
    const char *args;                    /* positional arguments as usage shows them: "CKPT IMG", "" */
    int n_args;                          /* of which this many come first, required */
    const char *summary;                 /* one line */
    const qkv_field *fields;             /* its flags, targets in its options struct */
    int n_fields;
    const qkv_command_spec *const *subs; /* or its subcommands */
    const char *what;                    /* what a subcommand is: "set" */
    int (*run)(int argc, char **argv);   /* the arguments after its name -> the exit status */
};

/* Parses a command's arguments (argv after its name; command is its name as
 * messages show it, "data detect"): argv[0 .. spec->n_args) must be there and not
 * flags, then the flags of args[0..n) (qkv_args_from_fields of its fields, or
 * more). Returns 0 (argv[0 .. n_args) are the positional arguments), 1 if --help
 * was printed (usage line, summary, flags), -1 on an error (one line printed).
 * given: as qkv_args_parse_given, or NULL. */
int qkv_command_parse_args(const qkv_command_spec *spec, const char *command, int argc, char **argv,
                           const qkv_arg *args, int n, unsigned char *given);
/* The same over the spec's own fields, targets in options (whose defaults the
 * caller has set: qkv_fields_defaults, or a preset). */
int qkv_command_parse(const qkv_command_spec *spec, const char *command, int argc, char **argv, void *options);
/* A command with subcommands: argv[0] names one of spec->subs, which runs on the
 * arguments after it; its exit status. Or the usage (to stdout for --help: 0; to
 * stderr when nothing is named: 2), or an "unknown <what>" line with a suggestion (2). */
int qkv_command_dispatch(const qkv_command_spec *spec, int argc, char **argv);
/* Usage lines "INDENTname  summary" of subs (NULL-terminated), names padded to width. */
void qkv_command_list(FILE *out, const qkv_command_spec *const *subs, const char *indent, int width);

/* Returns 0 on success, 1 if --help was printed, -1 on error (message printed). */
int qkv_args_parse(const char *command, int argc, char **argv, const qkv_arg *args, int n_args);
/* The same; given[i] (n_args of them) is then 1 for each flag the command line
 * gave (a setting the user chose, not a default). */
int qkv_args_parse_given(const char *command, int argc, char **argv, const qkv_arg *args, int n_args,
                         unsigned char *given);

#endif
