/* cmd_explain.c — `qkv explain attention [--mask none|causal|padding] [--pos
 * none|sinusoidal|rope|alibi]`: parses the flags and prints the usage; the walk
 * itself is train/experiments/explain.c. The --pos names are the schemes that
 * qkv_explain_schemes takes from layers/positions.h's table.
 */
#include <stdio.h>
#include <string.h>

#include "core/kernels/parallel.h"
#include "cli/args.h"
#include "cli/commands.h"
#include "cli/suggest.h"
#include "train/experiments/explain.h"

int qkv_cmd_explain(int argc, char **argv) {
    const char *pos_names[QKV_POS_COUNT + 1];
    qkv_pos_kind kinds[QKV_POS_COUNT];
    int n_pos = qkv_explain_schemes(pos_names, kinds), mask = QKV_EXPLAIN_MASK_NONE, pos = 0, threads = 0;
    const qkv_arg args[] = {
        QKV_ARG_CHOICE_ROW("--mask", &mask, qkv_explain_mask_names,
                           "none: the worked example; causal: 3 queries at positions 0..2; padding: key 2 is padding"),
        QKV_ARG_CHOICE_ROW("--pos", &pos, pos_names,
                           "sinusoidal: x + P[t]; rope: d = 2, rotated q and k; alibi: -slope * distance on the scores"),
        QKV_ARG_INT_ROW("--threads", &threads, 0, 1024, QKV_THREADS_HELP),
    };
    if (argc < 1 || argv[0][0] == '-') {
        int help = argc >= 1 && strcmp(argv[0], "--help") == 0;
        FILE *to = help ? stdout : stderr;
        fputs("usage: qkv explain attention [--mask none|causal|padding] [--pos ", to);
        for (int i = 0; i < n_pos; i++) fprintf(to, "%s%s", i ? "|" : "", pos_names[i]);
        fputs("]\n"
              "  walks one small attention computation: scores, scaling, softmax, output, then the\n"
              "  backward pass, each gradient checked against finite differences\n",
              to);
        return help ? 0 : 2;
    }
    if (strcmp(argv[0], "attention") != 0) {
        static const char *const topics[] = {"attention", NULL};
        char hint[96];
        fprintf(stderr, "qkv explain: unknown topic '%s' (%sknown: attention)\n", argv[0],
                qkv_suggest_among(argv[0], topics, hint, sizeof hint));
        return 2;
    }
    int parsed = qkv_args_parse("explain attention", argc - 1, argv + 1, args, (int)(sizeof args / sizeof args[0]));
    if (parsed != 0) return parsed > 0 ? 0 : 2;
    qkv_set_threads(threads);
    return qkv_explain_attention(mask, kinds[pos]);
}
