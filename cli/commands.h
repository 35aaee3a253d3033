/* commands.h — the subcommands of ./qkv. Each is a spec (cli/args.h:
 * qkv_command_<fn>: name, positional arguments, summary, flags) and an entry
 * point int qkv_cmd_<fn>(int argc, char **argv) that takes the arguments after
 * its name and returns the process exit code. */
#ifndef QKV_COMMANDS_H
#define QKV_COMMANDS_H

#include <stdio.h>

#include "cli/args.h"

/* THE TABLE of commands, in the order of `qkv --help`: X(fn, under_mpi). fn names
 * the spec qkv_command_<fn> and the entry point qkv_cmd_<fn> (both declared here
 * from the row); under_mpi is 1 for a command that runs as one rank of a
 * data-parallel run under mpirun (train/dist.h). main.c's dispatch and usage read
 * it, and the usage line of each command comes from its spec; tests/test_registries.c
 * fails for a qkv_cmd_* defined in cli/ that it does not name. */
#define QKV_COMMANDS(X) \
    X(train, 1)         \
    X(detect, 0)        \
    X(sample, 0)        \
    X(eval, 0)          \
    X(data, 0)          \
    X(gradcheck, 0)     \
    X(bench, 0)         \
    X(attn, 0)          \
    X(explain, 0)       \
    X(experiment, 0)    \
    X(version, 0)

#define QKV_COMMAND_DECLARE_(fn, under_mpi)       \
    extern const qkv_command_spec qkv_command_##fn; \
    int qkv_cmd_##fn(int argc, char **argv);
QKV_COMMANDS(QKV_COMMAND_DECLARE_)
#undef QKV_COMMAND_DECLARE_

/* One line per registered task, "INDENTname  summary" (usage texts). */
void qkv_print_task_list(FILE *out, const char *indent);

#endif
