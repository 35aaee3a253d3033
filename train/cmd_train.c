/* cmd_train.c — `qkv train <task>`. For now the one task is spirals. */
#include <stdio.h>
#include <string.h>

#include "core/parallel.h"
#include "train/args.h"
#include "train/commands.h"
#include "train/spirals_task.h"

static int train_spirals(int argc, char **argv) {
    qkv_spirals_config config;
    qkv_spirals_default_config(&config);
    int threads = 0, quiet = 0;
    const qkv_arg args[] = {
        {"--steps", QKV_ARG_INT, &config.steps, 1, 1e7, "training steps (2000)"},
        {"--batch", QKV_ARG_INT, &config.batch, 1, 65536, "minibatch size (128)"},
        {"--hidden", QKV_ARG_INT, &config.hidden, 1, 4096, "hidden width of the 3-layer MLP (64)"},
        {"--points", QKV_ARG_INT, &config.n_per_class, 2, 1e6, "points per spiral (500)"},
        {"--lr", QKV_ARG_FLOAT, &config.lr, 0, 100, "SGD learning rate (0.1)"},
        {"--momentum", QKV_ARG_FLOAT, &config.momentum, 0, 0.999, "SGD momentum (0.9)"},
        {"--noise", QKV_ARG_FLOAT, &config.noise, 0, 10, "angular noise of the spirals (0.1)"},
        {"--seed", QKV_ARG_INT, &config.seed, 0, 2147483647, "seed for data, init and batches (1)"},
        {"--log-every", QKV_ARG_INT, &config.log_every, 0, 1e7, "steps between log lines (200; 0: none)"},
        {"--threads", QKV_ARG_INT, &threads, 0, 1024, "OpenMP threads (0: all cores)"},
        {"--print-tape", QKV_ARG_FLAG, &config.print_tape, 0, 0, "print the tape of the first step"},
        {"--quiet", QKV_ARG_FLAG, &quiet, 0, 0, "print only the final line"},
    };
    int parsed = qkv_args_parse("train spirals", argc, argv, args, (int)(sizeof args / sizeof args[0]));
    if (parsed != 0) return parsed > 0 ? 0 : 2;
    threads = qkv_set_threads(threads);
    FILE *log = quiet ? NULL : stdout;
    if (log)
        fprintf(log, "two spirals: MLP 2-%d-%d-2, SGD lr %g momentum %g, batch %d, %d steps, %d threads\n",
                config.hidden, config.hidden, config.lr, config.momentum, config.batch, config.steps,
                threads);
    qkv_spirals_result result;
    qkv_spirals_train(&config, log, &result, NULL);
    printf("final: task=spirals steps=%d loss=%.4f train_acc=%.4f test_acc=%.4f seconds=%.3f "
           "steps_per_s=%.0f\n",
           config.steps, result.final_loss, result.train_accuracy, result.test_accuracy,
           result.seconds, config.steps / result.seconds);
    return 0;
}

int qkv_cmd_train(int argc, char **argv) {
    if (argc < 1) {
        fputs("qkv train: name a task: spirals\n", stderr);
        return 2;
    }
    if (strcmp(argv[0], "spirals") == 0) return train_spirals(argc - 1, argv + 1);
    fprintf(stderr, "qkv train: unknown task '%s' (known: spirals)\n", argv[0]);
    return 2;
}
