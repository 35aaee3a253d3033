/* args.c — see args.h. */
#include "train/args.h"

#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "core/error.h"
#include "core/number.h"
#include "core/suggest.h"

/* Records the one-line message (qkv_set_error escapes control characters and raw
 * bytes a flag's value may carry) and returns -1. */
int qkv_args_fail(const char *fmt, ...) {
    char message[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(message, sizeof message, fmt, ap);
    va_end(ap);
    qkv_set_error("%s", message);
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
        return qkv_args_fail("%s: %s: unknown value '%s' (%sallowed: %s)", command, arg->flag, text,
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
        return qkv_args_fail("%s: %s: expected %s in [%g, %g], got '%s'", command, arg->flag,
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

static int is_help(const char *arg) { return strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0; }

int qkv_args_read(const char *command, int argc, char **argv, const qkv_arg *args, int n_args, unsigned char *seen) {
    memset(seen, 0, (size_t)n_args); /* a flag given twice is refused, not the last one taken */
    for (int i = 0; i < argc; i++) {
        if (is_help(argv[i])) return 1;
        const qkv_arg *arg = NULL;
        for (int j = 0; j < n_args && !arg; j++)
            if (strcmp(argv[i], args[j].flag) == 0) arg = &args[j];
        if (!arg) {
            char hint[96];
            qkv_suggestion near = qkv_suggestion_begin(argv[i]);
            for (int j = 0; j < n_args; j++) qkv_suggestion_consider(&near, args[j].flag);
            return qkv_args_fail("%s: unknown flag '%s' (%stry --help)", command, argv[i],
                            qkv_suggestion_hint(&near, hint, sizeof hint));
        }
        if (seen[arg - args]++) return qkv_args_fail("%s: %s given twice", command, arg->flag);
        if (arg->kind == QKV_ARG_FLAG) {
            *(int *)arg->target = 1;
            continue;
        }
        if (i + 1 >= argc) {
            return qkv_args_fail("%s: %s needs a value", command, arg->flag);
        }
        if (parse_value(command, arg, argv[++i]) != 0) return -1;
    }
    return 0;
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
