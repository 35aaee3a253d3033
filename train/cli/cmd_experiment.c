/* cmd_experiment.c — `qkv experiment NAME`: the experiments of
 * train/experiments/experiments.h behind one flag table each. A command parses
 * its flags into the experiment's options, sets the thread count and runs it;
 * any error is one line "qkv experiment NAME: <qkv_last_error()>" and exit 2.
 * permutation exits 1 when a measurement disagrees with the theory (one between
 * the thresholds is inconclusive: exit 0). */
#include <stdio.h>
#include <string.h>

#include "core/error.h"
#include "core/kernels/parallel.h"
#include "data/sequence.h"
#include "layers/positions.h"
#include "train/cli/args.h"
#include "train/cli/commands.h"
#include "train/experiments/experiments.h"

#define COUNT(table) ((int)(sizeof table / sizeof table[0]))

static int fail(const char *name) {
    fprintf(stderr, "qkv experiment %s: %s\n", name, qkv_last_error());
    return 2;
}

static int cmd_permutation(int argc, char **argv) {
    qkv_perm_options o;
    qkv_perm_default_options(&o);
    int seed = (int)o.seed, threads = 0;
    const qkv_arg args[] = {
        QKV_ARG_INT_ROW("--seeds", &o.seeds, 1, 1000, "random models per configuration"),
        QKV_ARG_INT_ROW("--perms", &o.perms, 1, 1000, "random permutations per model"),
        QKV_ARG_INT_ROW("--tokens", &o.tokens, 2, 256, "set size / sequence length"),
        QKV_ARG_INT_ROW("--dim", &o.dim, 2, 512, "model width"),
        QKV_ARG_INT_ROW("--heads", &o.heads, 1, 64, "attention heads (dim / heads must be even)"),
        QKV_ARG_INT_ROW("--seed", &seed, 0, 2147483647, "seed for weights, inputs and permutations"),
        QKV_ARG_STRING_ROW("--json", &o.json, "write the table as JSON"),
        QKV_ARG_STRING_ROW("--csv", &o.csv, "write the table as CSV"),
        QKV_ARG_INT_ROW("--threads", &threads, 0, 1024, QKV_THREADS_HELP),
    };
    int parsed = qkv_args_parse("experiment permutation", argc, argv, args, COUNT(args));
    if (parsed != 0) return parsed > 0 ? 0 : 2;
    o.seed = (unsigned long long)seed;
    if (qkv_perm_check(&o) != 0) return fail("permutation");
    qkv_set_threads(threads);
    int all_agree;
    if (qkv_perm_run(&o, &all_agree) != 0) return fail("permutation");
    return all_agree ? 0 : 1;
}

static int cmd_lengthgen(int argc, char **argv) {
    qkv_lengthgen_options o;
    qkv_lengthgen_default_options(&o);
    int threads = 1;
    const char *preset = NULL;
    /* --preset first, wherever it stands, so that the other flags override it */
    for (int i = 0; i + 1 < argc; i++)
        if (strcmp(argv[i], "--preset") == 0) {
            preset = argv[i + 1];
            if (qkv_lengthgen_preset(&o, preset) != 0) return fail("lengthgen");
        }
    char all[96], randomized[96], pos_help[224]; /* the schemes of layers/positions.h's table */
    snprintf(pos_help, sizeof pos_help, "comma-separated position schemes (%s; %s)",
             qkv_pos_scheme_list(all, sizeof all, ", ", NULL, NULL),
             qkv_pos_scheme_list(randomized, sizeof randomized, ", ", "-rand", qkv_pos_keep_randomizable));
    const qkv_arg args[] = {
        QKV_ARG_STRING_ROW("--preset", &preset, "kazemnejad: the paper's setup at qkv's scale (docs/lengthgen.md); "
                                                "the other flags override it"),
        QKV_ARG_CHOICE_ROW("--task", &o.task, qkv_seq_task_names, "what to learn"),
        QKV_ARG_STRING_ROW("--tasks", &o.tasks, "comma-separated tasks (reverse, copy, sort); overrides --task"),
        QKV_ARG_STRING_ROW("--pos", &o.schemes, pos_help),
        QKV_ARG_INT_ROW("--pos-randomize", &o.randomize, 0, 1e6,
                        "M of the -rand schemes: positions drawn from [0, M); 0: twice the longest test stream"),
        QKV_ARG_INT_ROW("--jobs", &o.jobs, 1, 64, "models trained at once, one thread each (same results)"),
        QKV_ARG_INT_ROW("--train-max", &o.train_max, 1, 256, "train on lengths 1..L"),
        QKV_ARG_INT_ROW("--test-max", &o.test_max, 1, 1024, "test at lengths 1..K (K >= L)"),
        QKV_ARG_INT_ROW("--seeds", &o.seeds, 1, 100, "models per scheme (seeds --seed, --seed + 1, ...)"),
        QKV_ARG_INT_ROW("--seed", &o.seed, 0, 2147483647, "first seed (data, init)"),
        QKV_ARG_INT_ROW("--steps", &o.steps, 1, 1e7, "training steps per model"),
        QKV_ARG_INT_ROW("--batch", &o.batch, 1, 65536, "batch size"),
        QKV_ARG_FLOAT_ROW("--lr", &o.lr, 0, 10, "AdamW learning rate (cosine schedule)"),
        QKV_ARG_INT_ROW("--warmup", &o.warmup, 0, 1e7, "linear warmup steps"),
        QKV_ARG_INT_ROW("--layers", &o.layers, 1, 64, "decoder layers"),
        QKV_ARG_INT_ROW("--heads", &o.heads, 1, 64, "attention heads"),
        QKV_ARG_INT_ROW("--dim", &o.dim, 2, 8192, "model width"),
        QKV_ARG_INT_ROW("--ff", &o.ff, 1, 65536, "feed-forward width"),
        QKV_ARG_INT_ROW("--vocab", &o.vocab, 2, 100000, "number of symbols"),
        QKV_ARG_INT_ROW("--test-size", &o.test_size, 1, 1e6, "test sequences per length"),
        QKV_ARG_STRING_ROW("--csv", &o.csv, "write one row per scheme, seed and length"),
        QKV_ARG_STRING_ROW("--json", &o.json, "write the config and every curve"),
        QKV_ARG_STRING_ROW("--plot", &o.plot, "PNG of accuracy against length"),
        QKV_ARG_CHOICE_ROW("--plot-metric", &o.plot_metric, qkv_lengthgen_metric_names, "what the plot shows"),
        QKV_ARG_INT_ROW("--threads", &threads, 0, 1024, QKV_THREADS_HELP "; these models are too small to gain from more than 1"),
        QKV_ARG_FLAG_ROW("--quiet", &o.quiet, "print only the tables"),
    };
    int parsed = qkv_args_parse("experiment lengthgen", argc, argv, args, COUNT(args));
    if (parsed != 0) return parsed > 0 ? 0 : 2;
    if (qkv_lengthgen_check(&o) != 0) return fail("lengthgen");
    qkv_set_threads(threads);
    return qkv_lengthgen_run(&o) == 0 ? 0 : fail("lengthgen");
}

/* The experiments: the dispatcher, the usage and the error message read this table. */
static const struct {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
} experiments[] = {
    {"permutation", cmd_permutation, "measure permutation equivariance and invariance of every model kind"},
    {"lengthgen", cmd_lengthgen, "train decoder-only models per position scheme, test on longer sequences"},
};

int qkv_cmd_experiment(int argc, char **argv) {
    if (argc < 1 || strcmp(argv[0], "--help") == 0 || strcmp(argv[0], "-h") == 0) {
        FILE *out = argc < 1 ? stderr : stdout;
        fputs("usage: qkv experiment <name> [flags]   (qkv experiment <name> --help lists the flags)\n", out);
        for (int i = 0; i < COUNT(experiments); i++)
            fprintf(out, "  %-13s %s\n", experiments[i].name, experiments[i].summary);
        return argc < 1 ? 2 : 0;
    }
    for (int i = 0; i < COUNT(experiments); i++)
        if (strcmp(argv[0], experiments[i].name) == 0) return experiments[i].run(argc - 1, argv + 1);
    fprintf(stderr, "qkv experiment: unknown experiment '%s' (known:", argv[0]);
    for (int i = 0; i < COUNT(experiments); i++) fprintf(stderr, "%s %s", i ? "," : "", experiments[i].name);
    fputs(")\n", stderr);
    return 2;
}
