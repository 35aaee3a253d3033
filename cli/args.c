/* args.c — see args.h. */
#include "cli/args.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/suggest.h"

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

/* rc after printing the recorded message as "qkv <message>" (arg_fail: qkv_args_fail's, printed). */
static int printed(int rc) {
    fprintf(stderr, "qkv %s\n", qkv_last_error());
    return rc;
}
#define arg_fail(...) printed(qkv_args_fail(__VA_ARGS__))

int qkv_args_parse(const char *command, int argc, char **argv, const qkv_arg *args, int n_args) {
    unsigned char given[n_args > 0 ? n_args : 1];
    return qkv_args_parse_given(command, argc, argv, args, n_args, given);
}

static int is_help(const char *arg) { return strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0; }

static int parse_flags(const char *command, const qkv_command_spec *spec, int argc, char **argv, const qkv_arg *args,
                       int n_args, unsigned char *seen) {
    int rc = qkv_args_read(command, argc, argv, args, n_args, seen);   /* train/args.h */
    if (rc > 0) print_help(command, spec, args, n_args);
    if (rc < 0) fprintf(stderr, "qkv %s\n", qkv_last_error());
    return rc;
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

