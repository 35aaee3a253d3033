/* main.c — ./qkv: dispatches to the subcommands in commands.h. */
#include <stdio.h>
#include <string.h>

#include "core/error.h"
#include "core/isa.h"
#include "core/wait_policy.h"
#include "train/cli/commands.h"
#include "train/dist.h"

static void usage(FILE *out) {
    fputs("usage: qkv <command> [flags]   (qkv <command> --help for its flags)\n"
          "commands:\n"
          "  train reverse     train a transformer to reverse sequences (also: copy, sort)\n"
          "  train points      classify point clouds with a Set Transformer (or --data DIR of OFF meshes)\n"
          "  train maxreg      predict the maximum of a set (--compare: pooling baselines vs SAB+PMA)\n"
          "  train spirals     train an MLP on two spirals with SGD\n"
          "  train detect      train a DETR-style detector on synthetic shapes (or --data DIR)\n"
          "  detect CKPT IMG   print and draw (--out boxes.png) the boxes a detect checkpoint predicts\n"
          "  eval CKPT         re-evaluate a saved checkpoint on its task's test set\n"
          "  data detect       write a synthetic detection set: --out DIR --n N (PNG + annotations.txt)\n"
          "  gradcheck         finite-difference check of every op and layer\n"
          "  bench [SECTION]   speed on 1 thread and all threads: matmul, attention, train (all); long\n"
          "  attn CKPT         attention maps of a sequence model on one --input, as a PNG grid\n"
          "  explain attention one attention computation step by step, forward and backward\n"
          "  experiment NAME   permutation (symmetries vs theory) or lengthgen (length generalization)\n"
          "environment:\n"
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
    if (strcmp(command, "train") == 0) { /* under mpirun: one rank of a data-parallel run (train/dist.h) */
        qkv_dist_init(&argc, &argv);
        return qkv_dist_finish(qkv_cmd_train(argc - 2, argv + 2));
    }
    if (strcmp(command, "detect") == 0) return qkv_cmd_detect(argc - 2, argv + 2);
    if (strcmp(command, "eval") == 0) return qkv_cmd_eval(argc - 2, argv + 2);
    if (strcmp(command, "gradcheck") == 0) return qkv_cmd_gradcheck(argc - 2, argv + 2);
    if (strcmp(command, "data") == 0) return qkv_cmd_data(argc - 2, argv + 2);
    if (strcmp(command, "experiment") == 0) return qkv_cmd_experiment(argc - 2, argv + 2);
    if (strcmp(command, "bench") == 0) return qkv_cmd_bench(argc - 2, argv + 2);
    if (strcmp(command, "attn") == 0) return qkv_cmd_attn(argc - 2, argv + 2);
    if (strcmp(command, "explain") == 0) return qkv_cmd_explain(argc - 2, argv + 2);
    if (strcmp(command, "help") == 0 || strcmp(command, "--help") == 0 || strcmp(command, "-h") == 0) {
        usage(stdout);
        return 0;
    }
    fprintf(stderr, "qkv: unknown command '%s'\n", command);
    usage(stderr);
    return 2;
}
