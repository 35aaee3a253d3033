/* main.c — ./qkv: the dispatch and the usage text, both read from the one table of
 * subcommands (QKV_COMMANDS in commands.h) and their specs. */
#include <stdio.h>
#include <string.h>

#include "core/error.h"
#include "core/kernels/isa.h"
#include "core/kernels/wait_policy.h"
#include "cli/commands.h"
#include "core/suggest.h"
#include "train/dist.h"

static const struct {
    const qkv_command_spec *spec;
    int (*run)(int argc, char **argv);
    int under_mpi;              /* under mpirun: one rank of a data-parallel run (train/dist.h) */
} commands[] = {
#define COMMAND_ROW(fn, under_mpi) {&qkv_command_##fn, qkv_cmd_##fn, under_mpi},
    QKV_COMMANDS(COMMAND_ROW)
#undef COMMAND_ROW
};
#define N_COMMANDS ((int)(sizeof commands / sizeof commands[0]))

/* "  NAME ARGS         summary", then a command's tasks or subcommands beneath it. */
static void usage(FILE *out) {
    fputs("usage: qkv <command> [flags]   (qkv <command> --help for its flags)\ncommands:\n", out);
    for (int i = 0; i < N_COMMANDS; i++) {
        const qkv_command_spec *c = commands[i].spec;
        char name_args[64];
        snprintf(name_args, sizeof name_args, "%s%s%s", c->name, c->args[0] ? " " : "", c->args);
        fprintf(out, "  %-17s %s\n", name_args, c->summary);
        if (commands[i].run == qkv_cmd_train) qkv_print_task_list(out, "    ");
        if (c->subs) qkv_command_list(out, c->subs, "    ", 11);
    }
    fputs("environment:\n"
          "  QKV_ISA=avx512|avx2|portable   kernels for this instruction set (default: the widest the\n"
          "                    CPU runs; the results are the same bits on every one)\n",
          out);
}

int main(int argc, char **argv) {
    qkv_default_wait_policy(argv); /* before any thread starts */
    if (qkv_isa_init() != 0) {       /* QKV_ISA names a path this build or CPU lacks */
        fprintf(stderr, "qkv: %s\n", qkv_last_error());
        return 2;
    }
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    const char *command = argv[1];
    for (int i = 0; i < N_COMMANDS; i++) {
        if (strcmp(command, commands[i].spec->name) != 0) continue;
        if (!commands[i].under_mpi) return commands[i].run(argc - 2, argv + 2);
        qkv_dist_init(&argc, &argv);
        return qkv_dist_finish(commands[i].run(argc - 2, argv + 2));
    }
    if (strcmp(command, "help") == 0 || strcmp(command, "--help") == 0 || strcmp(command, "-h") == 0) {
        usage(stdout);
        return 0;
    }
    char hint[96];
    qkv_suggestion near = qkv_suggestion_begin(command);
    for (int i = 0; i < N_COMMANDS; i++) qkv_suggestion_consider(&near, commands[i].spec->name);
    fprintf(stderr, "qkv: unknown command '%s' (%sknown: see below)\n", command,
            qkv_suggestion_hint(&near, hint, sizeof hint));
    usage(stderr);
    return 2;
}
