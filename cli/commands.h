/* commands.h — the subcommands of ./qkv. Each takes the arguments after its own
 * name and returns the process exit code. */
#ifndef QKV_COMMANDS_H
#define QKV_COMMANDS_H

#include <stdio.h>

/* THE TABLE of commands, in the order of `qkv --help`: X(fn, name, usage, under_mpi).
 * fn names the entry point int qkv_cmd_<fn>(int argc, char **argv) (declared
 * here from the row), name is what the user types, usage the --help line
 * ("  NAME ARGS   what it does"), under_mpi 1 for a command that runs as one rank
 * of a data-parallel run under mpirun (train/dist.h). main.c's dispatch and usage
 * read it; tests/test_registries.c fails for a qkv_cmd_* defined in cli/
 * that it does not name. */
#define QKV_COMMANDS(X)                                                                                          \
    X(train, "train", "  train TASK        train a model on one of these tasks:\n", 1)                            \
    X(detect, "detect",                                                                                          \
      "  detect CKPT IMG   print and draw (--out boxes.png) the boxes a detect checkpoint predicts\n", 0)        \
    X(sample, "sample",                                                                                          \
      "  sample CKPT       a text model continues --prompt (--tokens, --temperature, --top-k, --top-p)\n", 0)    \
    X(eval, "eval", "  eval CKPT         re-evaluate a saved checkpoint on its task's test set\n", 0)             \
    X(data, "data",                                                                                              \
      "  data detect       write a synthetic detection set: --out DIR --n N (PNG + annotations.txt)\n", 0)       \
    X(gradcheck, "gradcheck", "  gradcheck         finite-difference check of every op and layer\n", 0)         \
    X(bench, "bench",                                                                                            \
      "  bench [SECTION]   speed on 1 thread and all threads: matmul, attention, train (all); long\n", 0)        \
    X(attn, "attn", "  attn CKPT         attention maps of a sequence model on one --input, as a PNG grid\n", 0)   \
    X(explain, "explain", "  explain attention one attention computation step by step, forward and backward\n", 0) \
    X(experiment, "experiment",                                                                                  \
      "  experiment NAME   permutation (symmetries vs theory) or lengthgen (length generalization)\n", 0)        \
    X(version, "--version",                                                                                      \
      "  --version         the release, compiler, flags and instruction-set path of this build\n", 0)

#define QKV_COMMAND_DECLARE_(fn, name, usage, under_mpi) int qkv_cmd_##fn(int argc, char **argv);
QKV_COMMANDS(QKV_COMMAND_DECLARE_)
#undef QKV_COMMAND_DECLARE_

/* One line per registered task, "INDENTname  summary" (usage texts). */
void qkv_print_task_list(FILE *out, const char *indent);

#endif
