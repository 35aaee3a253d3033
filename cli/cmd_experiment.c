/* cmd_experiment.c — `qkv experiment NAME`: the experiments of
 * train/experiments/experiments.h behind one flag table each. A command parses
 * its flags into the experiment's options, sets the thread count and runs it;
 * any error is one line "qkv experiment NAME: <qkv_last_error()>" and exit 2.
 * permutation exits 1 when a measurement disagrees with the theory (one between
 * the thresholds is inconclusive: exit 0). lengthgen answers Ctrl-C, SIGTERM and
 * SIGHUP (train/interrupt.h): the finished models stay in --csv and --json, one
 * line says how to resume, exit 128 + the signal; under mpirun it is one rank of
 * a run that spreads its models over the ranks (train/dist.h). Its provenance:
 * the command line as given, and the date now (or SOURCE_DATE_EPOCH's, the
 * reproducible-builds convention, so that tests can compare bytes). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/error.h"
#include "core/kernels/parallel.h"
#include "data/sequence.h"
#include "layers/positions.h"
#include "cli/args.h"
#include "cli/commands.h"
#include "train/dist.h"
#include "train/experiments/experiments.h"
#include "train/interrupt.h"


static int fail(const char *name) {
    fprintf(stderr, "qkv experiment %s: %s\n", name, qkv_last_error());
    return 2;
}

static int cmd_permutation(int argc, char **argv);
static const qkv_command_spec permutation = {
    "permutation", "", 0, "measure permutation equivariance and invariance of every model kind", qkv_perm_fields, 0,
    NULL, NULL, cmd_permutation};

static int cmd_permutation(int argc, char **argv) {
    qkv_perm_options o;
    qkv_perm_default_options(&o);
    qkv_command_spec spec = permutation;
    spec.n_fields = qkv_perm_n_fields;   /* a count in another file: not a constant here */
    int parsed = qkv_command_parse(&spec, "experiment permutation", argc, argv, &o);
    if (parsed != 0) return parsed > 0 ? 0 : 2;
    if (qkv_perm_check(&o) != 0) return fail("permutation");
    qkv_set_threads(o.threads);
    int all_agree;
    if (qkv_perm_run(&o, &all_agree) != 0) return fail("permutation");
    return all_agree ? 0 : 1;
}

/* "qkv experiment lengthgen ARGS", each argument with a character a shell would
 * read specially in single quotes; malloc'd. */
static char *command_line(int argc, char **argv) {
    size_t len = 32;
    for (int i = 0; i < argc; i++) len += 4 * strlen(argv[i]) + 3;
    char *text = malloc(len), *p = text;
    if (!text) return NULL;
    p += sprintf(p, "qkv experiment lengthgen");
    for (int i = 0; i < argc; i++) {
        int plain = argv[i][0] != '\0' && strspn(argv[i], "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                                            "0123456789_./,=:+-@%") == strlen(argv[i]);
        *p++ = ' ';
        if (plain) {
            p += sprintf(p, "%s", argv[i]);
            continue;
        }
        *p++ = '\'';
        for (const char *c = argv[i]; *c; c++) p += *c == '\'' ? sprintf(p, "'\\''") : sprintf(p, "%c", *c);
        *p++ = '\'';
    }
    *p = '\0';
    return text;
}

static int cmd_lengthgen(int argc, char **argv);
static const qkv_command_spec lengthgen = {
    "lengthgen", "", 0, "train decoder-only models per position scheme, test on longer sequences",
    qkv_lengthgen_fields, 0, NULL, NULL, cmd_lengthgen};

static int run_lengthgen(int argc, char **argv) {
    qkv_lengthgen_options o;
    qkv_lengthgen_default_options(&o);
    /* --preset first, wherever it stands, so that the other flags override it */
    for (int i = 0; i + 1 < argc; i++)
        if (strcmp(argv[i], "--preset") == 0) {
            o.preset = argv[i + 1];
            if (qkv_lengthgen_preset(&o, o.preset) != 0) return fail("lengthgen");
        }
    char all[96], randomized[96], aliases[96], pos_help[320]; /* the schemes of layers/positions.h's table */
    snprintf(pos_help, sizeof pos_help, "comma-separated position schemes (%s; %s; the papers' names: %s)",
             qkv_pos_scheme_list(all, sizeof all, ", ", NULL, NULL),
             qkv_pos_scheme_list(randomized, sizeof randomized, ", ", "-rand", qkv_pos_keep_randomizable),
             qkv_pos_alias_list(aliases, sizeof aliases));
    qkv_arg args[QKV_MAX_COMMAND_FLAGS];
    int n = qkv_args_from_fields(qkv_lengthgen_fields, qkv_lengthgen_n_fields, &o, args);
    for (int i = 0; i < n; i++) /* --pos lists the table's schemes, whatever its row says */
        if (strcmp(args[i].flag, "--pos") == 0) args[i].help = pos_help;
    int parsed = qkv_command_parse_args(&lengthgen, "experiment lengthgen", argc, argv, args, n, NULL);
    if (parsed != 0) return parsed > 0 ? 0 : 2;
    if (qkv_lengthgen_check(&o) != 0) return fail("lengthgen");
    qkv_set_threads(o.threads);
    char *command = command_line(argc, argv), date[40];
    const char *epoch = getenv("SOURCE_DATE_EPOCH");
    if (epoch && *epoch) {
        time_t t = (time_t)strtoll(epoch, NULL, 10);
        strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", gmtime(&t));
        o.date = date;
    }
    o.command = command;
    qkv_interrupt_install(); /* Ctrl-C: the models finished so far stay written */
    int rc = qkv_lengthgen_run(&o);
    free(command);
    if (rc == 0) return 0;
    fail("lengthgen");
    return rc > 0 ? 128 + rc : 2;
}

/* Under mpirun, one rank of a run whose models are spread over the ranks. */
static int cmd_lengthgen(int argc, char **argv) {
    qkv_dist_init(&argc, &argv);
    return qkv_dist_finish(run_lengthgen(argc, argv));
}

/* The experiments: the dispatcher, the usage and the error message read this table. */
static const qkv_command_spec *const experiments[] = {&permutation, &lengthgen, NULL};

const qkv_command_spec qkv_command_experiment = {
    "experiment", "NAME", 1, "runs of models with a verdict:", NULL, 0, experiments, "experiment", qkv_cmd_experiment};

int qkv_cmd_experiment(int argc, char **argv) { return qkv_command_dispatch(&qkv_command_experiment, argc, argv); }
