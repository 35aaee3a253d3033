/* args.c — see args.h. */
#include "cli/args.h"

#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/number.h"
#include "cli/suggest.h"

/* The usage line (with spec: its positional arguments and its summary beneath),
 * then one line per flag with its current (default) value. */
static void print_help(const char *command, const qkv_command_spec *spec, const qkv_arg *args, int n_args) {
    if (!spec) printf("usage: qkv %s [flags]\n", command);
    else printf("usage: qkv %s%s%s [flags]\n  %s\n", command, spec->args[0] ? " " : "", spec->args, spec->summary);
    for (int i = 0; i < n_args; i++) {
        int integer = args[i].kind == QKV_ARG_INT || args[i].kind == QKV_ARG_LONG || args[i].kind == QKV_ARG_U64;
        const char *value = integer ? " N" : args[i].kind == QKV_ARG_FLOAT ? " X"
                          : args[i].kind == QKV_ARG_FLAG ? "" : " S";
        const qkv_arg *a = &args[i];
        printf("  %s%-*s %s", a->flag, (int)(16 - strlen(a->flag)), value, a->help);
        for (int c = 0; a->kind == QKV_ARG_CHOICE && a->choices[c]; c++)
            printf("%s%s", c ? "|" : " (", a->choices[c]);
        if (a->kind == QKV_ARG_CHOICE) printf(") [%s]", a->choices[*(const int *)a->target]);
        if (a->kind == QKV_ARG_INT) printf(" [%d]", *(const int *)a->target);
        if (a->kind == QKV_ARG_LONG) printf(" [%ld]", *(const long *)a->target);
        if (a->kind == QKV_ARG_U64) printf(" [%llu]", *(const unsigned long long *)a->target);
        if (a->kind == QKV_ARG_FLOAT) printf(" [%g]", *(const float *)a->target);
        if (a->kind == QKV_ARG_STRING && *(const char *const *)a->target)
            printf(" [%s]", *(const char *const *)a->target);
        putchar('\n');
    }
}

/* Prints "qkv <message>" as one printable line (qkv_set_error escapes control
 * characters and raw bytes a flag's value may carry) and returns -1. */
static int arg_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int arg_fail(const char *fmt, ...) {
    char message[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(message, sizeof message, fmt, ap);
    va_end(ap);
    qkv_set_error("%s", message);
    fprintf(stderr, "qkv %s\n", qkv_last_error());
    return -1;
}

static int parse_value(const char *command, const qkv_arg *arg, const char *text) {
    if (arg->kind == QKV_ARG_STRING) {
        *(const char **)arg->target = text;
        return 0;
    }
    if (arg->kind == QKV_ARG_CHOICE) {
        char allowed[256] = "", hint[96];
        int index = qkv_choice_parse(arg->choices, text);   /* a name, or an alias (--pos nope) */
        if (index >= 0) {
            *(int *)arg->target = index;
            return 0;
        }
        for (int i = 0; arg->choices[i]; i++)
            snprintf(allowed + strlen(allowed), sizeof allowed - strlen(allowed), "%s%s", i ? ", " : "",
                     arg->choices[i]);
        return arg_fail("%s: %s: unknown value '%s' (%sallowed: %s)", command, arg->flag, text,
                        qkv_suggest_among(text, arg->choices, hint, sizeof hint), allowed);
    }
    /* core/number.h: the one number syntax (no blank, '+', leading zero, hex, inf, nan) */
    int integer = arg->kind != QKV_ARG_FLOAT;
    long long whole = 0;
    float real = 0;
    int bad = integer ? qkv_parse_int(text, LLONG_MIN, LLONG_MAX, &whole) != 0 ||
                            !((double)whole >= arg->min && (double)whole <= arg->max)
                      : qkv_parse_float(text, arg->min, arg->max, &real) != 0;
    if (bad) {
        return arg_fail("%s: %s: expected %s in [%g, %g], got '%s'", command, arg->flag,
                        integer ? "an integer" : "a number", arg->min, arg->max, text);
    }
    switch (arg->kind) {
    case QKV_ARG_INT: *(int *)arg->target = (int)whole; break;
    case QKV_ARG_LONG: *(long *)arg->target = (long)whole; break;
    case QKV_ARG_U64: *(unsigned long long *)arg->target = (unsigned long long)whole; break;
    default: *(float *)arg->target = real; break;
    }
    return 0;
}

int qkv_args_parse(const char *command, int argc, char **argv, const qkv_arg *args, int n_args) {
    unsigned char given[n_args > 0 ? n_args : 1];
    return qkv_args_parse_given(command, argc, argv, args, n_args, given);
}

static int is_help(const char *arg) { return strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0; }

static int parse_flags(const char *command, const qkv_command_spec *spec, int argc, char **argv, const qkv_arg *args,
                       int n_args, unsigned char *seen) {
    memset(seen, 0, (size_t)n_args); /* a flag given twice is refused, not the last one taken */
    for (int i = 0; i < argc; i++) {
        if (is_help(argv[i])) {
            print_help(command, spec, args, n_args);
            return 1;
        }
        const qkv_arg *arg = NULL;
        for (int j = 0; j < n_args && !arg; j++)
            if (strcmp(argv[i], args[j].flag) == 0) arg = &args[j];
        if (!arg) {
            char hint[96];
            qkv_suggestion near = qkv_suggestion_begin(argv[i]);
            for (int j = 0; j < n_args; j++) qkv_suggestion_consider(&near, args[j].flag);
            return arg_fail("%s: unknown flag '%s' (%stry --help)", command, argv[i],
                            qkv_suggestion_hint(&near, hint, sizeof hint));
        }
        if (seen[arg - args]++) return arg_fail("%s: %s given twice", command, arg->flag);
        if (arg->kind == QKV_ARG_FLAG) {
            *(int *)arg->target = 1;
            continue;
        }
        if (i + 1 >= argc) {
            return arg_fail("%s: %s needs a value", command, arg->flag);
        }
        if (parse_value(command, arg, argv[++i]) != 0) return -1;
    }
    return 0;
}

int qkv_args_parse_given(const char *command, int argc, char **argv, const qkv_arg *args, int n_args,
                         unsigned char *given) {
    return parse_flags(command, NULL, argc, argv, args, n_args, given);
}

int qkv_command_parse_args(const qkv_command_spec *spec, const char *command, int argc, char **argv,
                           const qkv_arg *args, int n, unsigned char *given) {
    unsigned char seen[n > 0 ? n : 1];
    for (int i = 0; i < spec->n_args && i < argc; i++)
        if (is_help(argv[i])) {
            print_help(command, spec, args, n);
            return 1;
        }
    for (int i = 0; i < spec->n_args; i++)
        if (i >= argc || argv[i][0] == '-')
            return arg_fail("%s: name %s first: qkv %s %s [flags] (qkv %s --help lists them)", command, spec->args,
                            command, spec->args, command);
    return parse_flags(command, spec, argc - spec->n_args, argv + spec->n_args, args, n, given ? given : seen);
}

int qkv_command_parse(const qkv_command_spec *spec, const char *command, int argc, char **argv, void *options) {
    qkv_arg args[QKV_MAX_COMMAND_FLAGS];
    QKV_CHECK(spec->n_fields <= QKV_MAX_COMMAND_FLAGS, "%s: %d flags, more than %d", command, spec->n_fields,
              QKV_MAX_COMMAND_FLAGS);
    int n = qkv_args_from_fields(spec->fields, spec->n_fields, options, args);
    return qkv_command_parse_args(spec, command, argc, argv, args, n, NULL);
}

void qkv_command_list(FILE *out, const qkv_command_spec *const *subs, const char *indent, int width) {
    for (int i = 0; subs[i]; i++) fprintf(out, "%s%-*s %s\n", indent, width, subs[i]->name, subs[i]->summary);
}

int qkv_command_dispatch(const qkv_command_spec *spec, int argc, char **argv) {
    if (argc >= 1 && is_help(argv[0])) {
        printf("usage: qkv %s <%s> [flags]   (qkv %s <%s> --help lists the flags)\n", spec->name, spec->what,
               spec->name, spec->what);
        qkv_command_list(stdout, spec->subs, "  ", 13);
        return 0;
    }
    for (int i = 0; argc >= 1 && spec->subs[i]; i++)
        if (strcmp(argv[0], spec->subs[i]->name) == 0) return spec->subs[i]->run(argc - 1, argv + 1);
    char hint[96], known[256] = "";
    qkv_suggestion near = qkv_suggestion_begin(argc >= 1 ? argv[0] : NULL);
    for (int i = 0; spec->subs[i]; i++) {
        qkv_suggestion_consider(&near, spec->subs[i]->name);
        snprintf(known + strlen(known), sizeof known - strlen(known), "%s%s", i ? ", " : "", spec->subs[i]->name);
    }
    if (argc < 1)   /* one line, as every error: the summaries are a --help away */
        arg_fail("%s: which %s? %s (qkv %s --help lists them)", spec->name, spec->what, known, spec->name);
    else
        arg_fail("%s: unknown %s '%s' (%sknown: %s)", spec->name, spec->what, argv[0],
                 qkv_suggestion_hint(&near, hint, sizeof hint), known);
    return 2;
}

int qkv_args_from_fields(const qkv_field *fields, int n, void *config, qkv_arg *args) {
    static const qkv_arg_kind arg_kind[] = {
        [QKV_FIELD_INT] = QKV_ARG_INT, [QKV_FIELD_LONG] = QKV_ARG_LONG, [QKV_FIELD_FLOAT] = QKV_ARG_FLOAT,
        [QKV_FIELD_CHOICE] = QKV_ARG_CHOICE, [QKV_FIELD_SEED] = QKV_ARG_U64, [QKV_FIELD_FLAG] = QKV_ARG_FLAG,
        [QKV_FIELD_TEXT] = QKV_ARG_STRING,
    };
    int made = 0;
    for (int i = 0; i < n; i++) {
        const qkv_field *f = &fields[i];
        if (!f->flag) continue;
        QKV_CHECK(f->kind != QKV_FIELD_POINTER && f->kind != QKV_FIELD_HASH, "args: %s: a %s member has no flag",
                  f->flag, f->kind == QKV_FIELD_HASH ? "hash" : "pointer");
        args[made++] = (qkv_arg){f->flag, arg_kind[f->kind], (char *)config + f->offset, f->min, f->max, f->help,
                                 f->choices};
    }
    return made;
}
