/* main.c — ./qkv: dispatches to the subcommands in commands.h. */
#include <stdio.h>
#include <string.h>

#include "train/commands.h"

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
          "  bench [matmul]    measure matmul GFLOP/s on 1 thread and all threads\n",
          out);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    const char *command = argv[1];
    if (strcmp(command, "train") == 0) return qkv_cmd_train(argc - 2, argv + 2);
    if (strcmp(command, "detect") == 0) return qkv_cmd_detect(argc - 2, argv + 2);
    if (strcmp(command, "eval") == 0) return qkv_cmd_eval(argc - 2, argv + 2);
    if (strcmp(command, "gradcheck") == 0) return qkv_cmd_gradcheck(argc - 2, argv + 2);
    if (strcmp(command, "data") == 0) return qkv_cmd_data(argc - 2, argv + 2);
    if (strcmp(command, "bench") == 0) return qkv_cmd_bench(argc - 2, argv + 2);
    if (strcmp(command, "help") == 0 || strcmp(command, "--help") == 0 || strcmp(command, "-h") == 0) {
        usage(stdout);
        return 0;
    }
    fprintf(stderr, "qkv: unknown command '%s'\n", command);
    usage(stderr);
    return 2;
}
