/* test_experiments.c — `qkv experiment permutation` and `qkv experiment lengthgen`
 * on reduced settings, and the tutorial program (docs/tutorial.c) end to end:
 * verdicts agree with the theory, the measures have the promised orders of
 * magnitude, the output files are valid and have the right number of rows, bad
 * flags (and bad options given to the C API) give one line and exit 2 (return -1)
 * with nothing written, and the tutorial's loss falls below a threshold (read from
 * its record, which the docs suite compares with a run). */
#include "tests/test_util.h"
#include "tests/docs_records.h"

#include <stdio.h>
#include <stdlib.h>

#include <math.h>

#include "core/io/json.h"
#include "core/kernels/isa.h"
#include "core/version.h"
#include "train/experiments/experiments.h"
#include "train/experiments/lengthgen_distance.h"

/* Parses path as JSON (failing the test otherwise); the caller frees both. */
static unsigned char *parse_json_file(const char *path, qkv_json *doc) {
    size_t len;
    unsigned char *text = read_file_bytes(path, &len);
    ck_assert_msg(qkv_json_parse(doc, text, len, 16) == 0, "%s: %s", path, doc->error);
    return text;
}

/* Index of the value of key in object token obj, or 0 if absent. */
static uint32_t json_member(const qkv_json *doc, uint32_t obj, const char *key) {
    for (uint32_t k = 0, j = obj + 1; k < doc->tokens[obj].count; k++, j = doc->tokens[j + 1].next)
        if (qkv_json_equals(doc, j, key)) return j + 1;
    return 0;
}

static int count_lines(const char *path) {
    size_t len;
    unsigned char *text = read_file_bytes(path, &len);
    int lines = 0;
    for (size_t i = 0; i < len; i++) lines += text[i] == '\n';
    free(text);
    return lines;
}

static const qkv_perm_row *find_row(const qkv_perm_row *rows, int n, const char *config) {
    for (int i = 0; i < n; i++)
        if (strcmp(rows[i].config, config) == 0) return &rows[i];
    ck_abort_msg("no row \"%s\"", config);
    return NULL;
}

START_TEST(permutation_measures_have_the_promised_size) {
    qkv_perm_options o;
    qkv_perm_default_options(&o);
    o.seeds = 1;
    o.perms = 2;
    qkv_perm_row rows[QKV_PERM_MAX_ROWS];
    int n = qkv_permutation_experiment(&o, rows);
    ck_assert_int_ge(n, 13);
    const qkv_perm_row *none = find_row(rows, n, "encoder, no positions");
    const qkv_perm_row *learned = find_row(rows, n, "encoder, learned positions");
    ck_assert_msg(none->equivariance >= 0 && none->equivariance < 1e-5, "no positions: %g", none->equivariance);
    ck_assert_msg(learned->equivariance > 0.1, "learned positions: %g", learned->equivariance);
    ck_assert_msg(find_row(rows, n, "causal mask, no positions")->equivariance > 0.05, "causal mask");
    const qkv_perm_row *context = find_row(rows, n, "cross-attention, context permuted");
    ck_assert(context->equivariance < 0 && context->invariance < 1e-5);   /* n/a, holds */
    for (int i = 0; i < n; i++) ck_assert_msg(rows[i].agrees, "%s disagrees with the theory", rows[i].config);
    ck_assert_str_eq(qkv_perm_measured(-1), "n/a");
    ck_assert_str_eq(qkv_perm_measured(1e-7), "holds");
    ck_assert_str_eq(qkv_perm_measured(1e-3), "unclear");
    ck_assert_str_eq(qkv_perm_measured(0.5), "broken");
}
END_TEST

/* The errors as floats (equivariance, invariance per row), for the thread check. */
static void permutation_errors(float *out, void *ctx) {
    (void)ctx;
    qkv_perm_options o;
    qkv_perm_default_options(&o);
    o.seeds = 1;
    o.perms = 1;
    qkv_perm_row rows[QKV_PERM_MAX_ROWS];
    int n = qkv_permutation_experiment(&o, rows);
    for (int i = 0; i < n; i++) {
        out[2 * i] = (float)rows[i].equivariance;
        out[2 * i + 1] = (float)rows[i].invariance;
    }
}

START_TEST(permutation_errors_are_thread_independent) {
    expect_same_for_1_and_2_threads(permutation_errors, NULL, 2 * QKV_PERM_MAX_ROWS, "permutation errors");
}
END_TEST

START_TEST(permutation_command_writes_json_and_csv) {
    char args[512], line[512];
    const char *json = scratch_file("perm.json");
    snprintf(args, sizeof args, "experiment permutation --seeds 1 --perms 2 --threads 1 --json %s", json);
    const char *csv = scratch_file("perm.csv");
    snprintf(args + strlen(args), sizeof args - strlen(args), " --csv %s", csv);
    ck_assert_int_eq(run_qkv(args, line, sizeof line), 0);
    qkv_json doc;
    unsigned char *text = parse_json_file(scratch_file("perm.json"), &doc);
    uint32_t all = json_member(&doc, 0, "all_agree"), rows = json_member(&doc, 0, "rows");
    ck_assert(all && doc.tokens[all].type == QKV_JSON_TRUE);
    ck_assert(rows && doc.tokens[rows].type == QKV_JSON_ARRAY);
    int n_rows = (int)doc.tokens[rows].count;
    ck_assert_int_ge(n_rows, 13);
    uint32_t first = rows + 1;   /* encoder, no positions: both errors numbers */
    ck_assert_int_eq(doc.tokens[json_member(&doc, first, "equivariance_error")].type, QKV_JSON_NUMBER);
    qkv_json_free(&doc);
    free(text);
    ck_assert_int_eq(count_lines(scratch_file("perm.csv")), n_rows + 1);
    /* An output in a missing directory: one line, exit 2, before any work. */
    ck_assert_int_eq(run_qkv("experiment permutation --csv /nonexistent-dir/p.csv", line, sizeof line), 2);
    ck_assert_msg(strstr(line, "/nonexistent-dir/p.csv") != NULL, "message: %s", line);
    ck_assert_int_eq(run_qkv("experiment permutation --heads 3", line, sizeof line), 2);
    ck_assert_ptr_nonnull(strstr(line, "--heads"));
}
END_TEST

#define TINY_MODEL "--train-max 2 --test-max 4 --test-size 4 --dim 8 --heads 2 --ff 16 --layers 1 --batch 8 " \
                   "--threads 1 --quiet"
#define TINY "experiment lengthgen --steps 3 --seeds 1 " TINY_MODEL

START_TEST(lengthgen_writes_csv_json_and_png) {
    char args[1024], line[512];
    int n = snprintf(args, sizeof args, TINY " --pos none,learned --csv %s", scratch_file("lg.csv"));
    n += snprintf(args + n, sizeof args - n, " --json %s", scratch_file("lg.json"));
    snprintf(args + n, sizeof args - n, " --plot %s", scratch_file("lg.png"));
    ck_assert_int_eq(run_qkv(args, line, sizeof line), 0);
    ck_assert_int_eq(count_lines(scratch_file("lg.csv")), 4 + 2 * 1 * 4);   /* 3 # lines, header, schemes x seeds x K */
    qkv_json doc;
    unsigned char *text = parse_json_file(scratch_file("lg.json"), &doc);
    uint32_t tasks = json_member(&doc, 0, "tasks");
    ck_assert(tasks && doc.tokens[tasks].count == 1);
    uint32_t schemes = json_member(&doc, tasks + 1, "schemes");
    ck_assert(schemes && doc.tokens[schemes].count == 2);
    uint32_t curve = json_member(&doc, schemes + 1, "exact_match");
    ck_assert(curve && doc.tokens[curve].type == QKV_JSON_ARRAY && doc.tokens[curve].count == 4);
    qkv_json_free(&doc);
    free(text);
    size_t len;
    unsigned char *png = read_file_bytes(scratch_file("lg.png"), &len);
    ck_assert(len > 8 && memcmp(png, "\x89PNG\r\n\x1a\n", 8) == 0);
    free(png);
}
END_TEST

/* The kazemnejad preset parses, and a tiny version of it (flags after --preset
 * override it) runs every scheme on both tasks: a CSV row per task, scheme, seed
 * and length, the summary and the MRR next to the paper's. */
START_TEST(lengthgen_preset_runs_tiny) {
    qkv_lengthgen_options g;
    qkv_lengthgen_default_options(&g);
    ck_assert_int_eq(qkv_lengthgen_preset(&g, "kazemnejad"), 0);
    ck_assert_int_eq(g.train_max, 20);
    ck_assert_int_eq(g.test_max, 40);
    ck_assert_int_eq(g.seeds, 3);
    ck_assert_str_eq(g.tasks, "copy,reverse");
    g.plot = NULL;
    ck_assert_int_eq(qkv_lengthgen_check(&g), 0);
    ck_assert_int_eq(qkv_lengthgen_preset(&g, "nosuch"), -1);
    ck_assert_msg(strstr(qkv_last_error(), "--preset") && strstr(qkv_last_error(), "kazemnejad"), "%s",
                  qkv_last_error());

    char args[1024], line[512];
    int n = snprintf(args, sizeof args,
                     "experiment lengthgen --preset kazemnejad --steps 2 --train-max 2 --test-max 3 --seeds 2 "
                     "--test-size 3 --dim 8 --heads 2 --ff 8 --layers 1 --batch 4 --jobs 2 --quiet --csv %s",
                     scratch_file("k.csv"));
    snprintf(args + n, sizeof args - n, " --plot %s", scratch_file("k.png"));
    ck_assert_int_eq(run_qkv(args, line, sizeof line), 0);
    ck_assert_int_eq(count_lines(scratch_file("k.csv")), 4 + 2 * 6 * 2 * 3);   /* tasks x schemes x seeds x K */
    ck_assert_int_eq(run_qkv("experiment lengthgen --preset bogus", line, sizeof line), 2);
    ck_assert_msg(strstr(line, "'bogus'"), "message: %s", line);
    ck_assert_int_eq(run_qkv("experiment lengthgen --preset kazemnejad --pos alibi-rand", line, sizeof line), 2);
    ck_assert_msg(strstr(line, "'alibi-rand'"), "message: %s", line);
    ck_assert_int_eq(run_qkv("experiment lengthgen --preset kazemnejad --pos-randomize 40", line, sizeof line), 2);
    ck_assert_msg(strstr(line, "--pos-randomize 40"), "message: %s", line);
}
END_TEST

START_TEST(lengthgen_refuses_bad_flags_in_one_line) {
    char args[512], line[512];
    int before = count_dir_entries(scratch_dir);
    snprintf(args, sizeof args, TINY " --pos none,bogus --plot %s", scratch_file("x.png"));
    ck_assert_int_eq(run_qkv(args, line, sizeof line), 2);
    ck_assert_msg(strstr(line, "--pos") && strstr(line, "'bogus'") && strstr(line, "rope"), "message: %s", line);
    snprintf(args, sizeof args, TINY " --pos rope,rope --plot %s", scratch_file("x.png"));
    ck_assert_int_eq(run_qkv(args, line, sizeof line), 2);
    ck_assert_ptr_nonnull(strstr(line, "twice"));
    snprintf(args, sizeof args, "experiment lengthgen --steps 3 --train-max 5 --test-max 3 --seeds 1 --test-size 4 "
             "--dim 8 --heads 2 --ff 16 --layers 1 --batch 8 --threads 1 --quiet --plot %s", scratch_file("x.png"));
    ck_assert_int_eq(run_qkv(args, line, sizeof line), 2);
    ck_assert_ptr_nonnull(strstr(line, "--test-max"));
    snprintf(args, sizeof args, "experiment lengthgen --steps 3 --train-max 2 --test-max 4 --seeds 1 --test-size 4 "
             "--dim 6 --heads 2 --ff 16 --layers 1 --batch 8 --threads 1 --quiet --pos rope --plot %s",
             scratch_file("x.png"));
    ck_assert_int_eq(run_qkv(args, line, sizeof line), 2);   /* odd head width */
    ck_assert_ptr_nonnull(strstr(line, "rope"));
    ck_assert_int_eq(count_dir_entries(scratch_dir), before);   /* nothing written */
}
END_TEST


#define RESUMABLE "experiment lengthgen " TINY_MODEL " --pos none,rope --seeds 2 --steps 4"

/* An experiment interrupted (deterministically: the test hook raises SIGINT once
 * a model has finished) keeps the finished model in its CSV and JSON, exits 130
 * with one line saying how to resume; resumed twice (the second time interrupted
 * again), it writes the CSV and JSON of one uninterrupted run, byte for byte
 * apart from the measured training times. A resume with other settings is
 * refused in one line, naming the setting. */
START_TEST(lengthgen_resume_gives_the_bytes_of_one_run) {
    char args[1024], line[512];
    setenv("SOURCE_DATE_EPOCH", "86400", 1);
    static const char *const runs[2] = {"one", "resumed"};
    for (int r = 0; r < 2; r++) {
        char csv[64], json[64];
        snprintf(csv, sizeof csv, "%s.csv", runs[r]);
        snprintf(json, sizeof json, "%s.json", runs[r]);
        int n = snprintf(args, sizeof args, RESUMABLE " --plot %s --csv %s", scratch_file("r.png"), scratch_file(csv));
        n += snprintf(args + n, sizeof args - n, " --json %s", scratch_file(json));
        if (r == 0) {
            ck_assert_int_eq(run_qkv(args, line, sizeof line), 0);
            continue;
        }
        setenv("QKV_TEST_LENGTHGEN_INTERRUPT", "1", 1);
        ck_assert_int_eq(run_qkv(args, line, sizeof line), 130);
        ck_assert_msg(strstr(line, "stopped by SIGINT after 1 of 4 models") && strstr(line, "--resume"), "%s", line);
        ck_assert_int_eq(count_lines(scratch_file(csv)), 4 + 1 * 4); /* the finished model's rows */
        snprintf(args + n, sizeof args - n, " --resume");
        ck_assert_int_eq(run_qkv(args, line, sizeof line), 130);     /* the second model, then stopped again */
        ck_assert_int_eq(count_lines(scratch_file(csv)), 4 + 2 * 4);
        unsetenv("QKV_TEST_LENGTHGEN_INTERRUPT");
        ck_assert_int_eq(run_qkv(args, line, sizeof line), 0);
        snprintf(args, sizeof args, "experiment lengthgen " TINY_MODEL " --pos none,rope --seeds 2 --steps 5 "
                 "--resume --json %s", scratch_file(json));
        ck_assert_int_eq(run_qkv(args, line, sizeof line), 2);
        ck_assert_msg(strstr(line, "--resume") && strstr(line, "--steps 4") && strstr(line, "5"), "%s", line);
    }
    char a[256], b[256];
    snprintf(a, sizeof a, "%s", scratch_file("one.csv"));
    snprintf(b, sizeof b, "%s", scratch_file("resumed.csv"));
    /* the command lines name their own files: compare from the third line on */
    char *x = read_text(a), *y = read_text(b);
    const char *xs = strstr(x, "# config:"), *ys = strstr(y, "# config:");
    ck_assert(xs && ys);
    ck_assert_msg(strcmp(xs, ys) == 0, "the CSVs differ");
    free(x);
    free(y);
    snprintf(a, sizeof a, "%s", scratch_file("one.json"));
    snprintf(b, sizeof b, "%s", scratch_file("resumed.json"));
    char *j1 = without_times(a), *j2 = without_times(b);
    ck_assert_msg(strcmp(strstr(j1, "\"config\""), strstr(j2, "\"config\"")) == 0, "the JSONs differ");
    free(j1);
    free(j2);
    ck_assert_int_eq(run_qkv(TINY " --resume", line, sizeof line), 2); /* no --json to resume from */
    ck_assert_msg(strstr(line, "--resume") && strstr(line, "--json"), "%s", line);
    unsetenv("SOURCE_DATE_EPOCH");
}
END_TEST

/* The JSON and the CSV record the qkv version, the ISA path, the date, the command
 * line and every setting, the new --weight-decay, --clip and --schedule included. */
START_TEST(lengthgen_records_provenance_and_every_setting) {
    char args[1024], line[512];
    setenv("SOURCE_DATE_EPOCH", "0", 1);
    int n = snprintf(args, sizeof args, TINY " --pos none --weight-decay 0.05 --clip 0.5 --schedule constant --csv %s",
                     scratch_file("p.csv"));
    snprintf(args + n, sizeof args - n, " --json %s --plot %s", scratch_file("p.json"), scratch_file("p.png"));
    ck_assert_int_eq(run_qkv(args, line, sizeof line), 0);
    qkv_json doc;
    unsigned char *text = parse_json_file(scratch_file("p.json"), &doc);
    uint32_t prov = json_member(&doc, 0, "provenance"), config = json_member(&doc, 0, "config");
    ck_assert(prov && config && json_member(&doc, 0, "fixed"));
    ck_assert(qkv_json_equals(&doc, json_member(&doc, prov, "qkv_version"), QKV_VERSION));
    /* The child's path, which need not be this process's (under valgrind this one runs without AVX-512). */
    uint32_t isa = json_member(&doc, prov, "isa");
    ck_assert(qkv_json_equals(&doc, isa, "avx512") || qkv_json_equals(&doc, isa, "avx2") ||
              qkv_json_equals(&doc, isa, "portable"));
    ck_assert(qkv_json_equals(&doc, json_member(&doc, prov, "date"), "1970-01-01T00:00:00Z"));
    char command[600];
    qkv_json_decode(&doc, json_member(&doc, prov, "command"), command, sizeof command);
    ck_assert_msg(strstr(command, "qkv experiment lengthgen --steps 3") && strstr(command, "--clip 0.5"), "%s", command);
    for (int i = 0; i < qkv_lengthgen_n_fields; i++) /* every setting with a key */
        if (qkv_lengthgen_fields[i].key)
            ck_assert_msg(json_member(&doc, config, qkv_lengthgen_fields[i].key), "no %s", qkv_lengthgen_fields[i].key);
    static const char *const expected[][2] = {{"weight_decay", "0.05"}, {"clip", "0.5"}, {"warmup", "100"}};
    for (int i = 0; i < 3; i++) {
        uint32_t v = json_member(&doc, config, expected[i][0]);
        ck_assert(v && doc.tokens[v].len == strlen(expected[i][1]));
        ck_assert(memcmp(doc.text + doc.tokens[v].start, expected[i][1], doc.tokens[v].len) == 0);
    }
    ck_assert(qkv_json_equals(&doc, json_member(&doc, config, "schedule"), "constant"));
    qkv_json_free(&doc);
    free(text);
    char *csv = read_text(scratch_file("p.csv"));
    ck_assert_msg(strncmp(csv, "# qkv " QKV_VERSION " experiment lengthgen; isa ", 36) == 0, "%.80s", csv);
    ck_assert(strstr(csv, "date 1970-01-01T00:00:00Z") && strstr(csv, "# command: qkv experiment lengthgen"));
    ck_assert(strstr(csv, " weight_decay=0.05 clip=0.5 schedule=constant warmup=100 "));
    free(csv);
    unsetenv("SOURCE_DATE_EPOCH");
}
END_TEST

/* MRR among the schemes that fit: a scheme below QKV_LENGTHGEN_FIT on a task is
 * not ranked (NAN), and the others rank among themselves as if it were absent. */
START_TEST(lengthgen_mrr_refuses_a_scheme_that_did_not_fit) {
    const double score[2 * 3] = {0.5, 0.9, 0.3, /* task 0: scheme 1 extrapolates best, but did not fit */
                                 0.4, 0.8, 0.6};
    const double trained[2 * 3] = {1.0, 0.34, 0.995, 1.0, 1.0, 0.99};
    double mrr[3], all[3];
    qkv_lengthgen_mrr_fitted(score, trained, 2, 3, mrr);
    ck_assert_msg(isnan(mrr[1]), "the scheme that did not fit is ranked: %g", mrr[1]);
    ck_assert_double_eq_tol(mrr[0], (1.0 + 1.0 / 3) / 2, 1e-12); /* 1st of {0, 2} on task 0; 3rd of 3 on task 1 */
    ck_assert_double_eq_tol(mrr[2], (1.0 / 2 + 1.0 / 2) / 2, 1e-12);
    qkv_lengthgen_mrr(score, 2, 3, all); /* without the fit rule scheme 1 would rank first */
    ck_assert_double_eq_tol(all[1], 1.0, 1e-12);
    ck_assert_double_eq_tol(all[0], (1.0 / 2 + 1.0 / 3) / 2, 1e-12);
}
END_TEST

/* The attention distance on a model whose attention is uniform (zero query
 * weights: every score 0): query i spreads 1/(i+1) over keys 0..i, so its
 * distance is i/2; over the stream's 2n+1 queries the mean is n/2 and the
 * histogram puts 2/(2n+1) in bins 0..n-1 and 1/(2n+1) in bin n. */
START_TEST(lengthgen_attention_distance_of_uniform_attention) {
    qkv_lengthgen_options o;
    qkv_lengthgen_default_options(&o);
    o.train_max = 3;
    o.test_max = 6;
    o.test_size = 2;
    qkv_seq_model_config c;
    qkv_seq_model_default_config(&c);
    c.data = (qkv_seq_config){QKV_TASK_REVERSE, QKV_ARCH_DECODER, 10, 1, 3};
    c.layers = 2;
    c.heads = 2;
    c.dim = 8;
    c.ff = 16;
    c.pos = QKV_POS_NONE;
    qkv_seq_model model;
    qkv_seq_model_init(&model, &c);
    for (int l = 0; l < c.layers; l++) {
        qkv_linear *wq = &model.encoder.blocks[l].attn.wq;
        memset(wq->weight->data, 0, wq->weight->size * sizeof(float));
        if (wq->bias) memset(wq->bias->data, 0, wq->bias->size * sizeof(float));
    }
    qkv_lengthgen g = {.o = &o, .bins = 2 * o.test_max + 1};
    g.distance = calloc((size_t)QKV_LG_DISTANCE_AT * g.bins, sizeof(double));
    g.distance_mean = calloc(QKV_LG_DISTANCE_AT, sizeof(double));
    qkv_lg_measure_distance(&g, &model, 0);
    for (int w = 0; w < QKV_LG_DISTANCE_AT; w++) {
        int n = w == 0 ? o.train_max : o.test_max;
        ck_assert_double_eq_tol(g.distance_mean[w], n / 2.0, 1e-5);
        for (int b = 0; b < g.bins; b++) {
            double want = b < n ? 2.0 / (2 * n + 1) : b == n ? 1.0 / (2 * n + 1) : 0;
            ck_assert_msg(fabs(g.distance[w * g.bins + b] - want) < 1e-12, "length %d, bin %d: %g, not %g", n, b,
                          g.distance[w * g.bins + b], want);
        }
    }
    free(g.distance);
    free(g.distance_mean);
    qkv_seq_model_free(&model);
}
END_TEST

/* The JSON's distances have their shape: per finished run two histograms of
 * 2K+1 bins summing to 1, nothing beyond 2L at the trained length, means in
 * [0, 2n]; and --distance-plot writes a PNG. */
START_TEST(lengthgen_distance_outputs_have_their_shape) {
    char args[1024], line[512];
    int n = snprintf(args, sizeof args, TINY " --pos none,rope --json %s", scratch_file("d.json"));
    snprintf(args + n, sizeof args - n, " --plot %s --distance-plot %s", scratch_file("p.png"), scratch_file("d.png"));
    ck_assert_int_eq(run_qkv(args, line, sizeof line), 0);
    qkv_json doc;
    unsigned char *text = parse_json_file(scratch_file("d.json"), &doc);
    uint32_t tasks = json_member(&doc, 0, "tasks"), schemes = json_member(&doc, tasks + 1, "schemes");
    ck_assert(schemes && doc.tokens[schemes].count == 2);
    uint32_t scheme = schemes + 1, summary = json_member(&doc, scheme, "attention_distance");
    ck_assert(summary && json_member(&doc, summary, "median") && json_member(&doc, summary, "beyond_trained"));
    uint32_t runs = json_member(&doc, scheme, "runs"), hist = json_member(&doc, runs + 1, "distance_histogram");
    ck_assert(hist && doc.tokens[hist].count == 2);
    uint32_t h = hist + 1;
    for (int w = 0; w < 2; w++, h = doc.tokens[h].next) {
        ck_assert_int_eq(doc.tokens[h].count, 2 * 4 + 1); /* 2K + 1 bins, K = 4 */
        double sum = 0;
        uint32_t v = h + 1;
        for (int b = 0; b < 9; b++, v = doc.tokens[v].next) {
            double x = strtod((const char *)doc.text + doc.tokens[v].start, NULL);
            if (w == 0 && b > 2 * 2) ck_assert_msg(x == 0, "length L = 2 has distance %d: %g", b, x);
            sum += x;
        }
        ck_assert_double_eq_tol(sum, 1.0, 1e-9);
    }
    qkv_json_free(&doc);
    free(text);
    size_t len;
    unsigned char *png = read_file_bytes(scratch_file("d.png"), &len);
    ck_assert(len > 8 && memcmp(png, "\x89PNG\r\n\x1a\n", 8) == 0);
    free(png);
}
END_TEST

/* The C API's checks: one line naming the option by its flag, nothing run or written. */
START_TEST(experiment_checks_name_the_bad_option) {
    qkv_lengthgen_options g;
    qkv_lengthgen_default_options(&g);
    g.plot = scratch_file("lg.png");
    ck_assert_int_eq(qkv_lengthgen_check(&g), 0);
    g.schemes = "rope,bogus";
    ck_assert_int_eq(qkv_lengthgen_check(&g), -1);
    ck_assert_msg(strstr(qkv_last_error(), "--pos") && strstr(qkv_last_error(), "'bogus'"), "%s", qkv_last_error());
    g.schemes = "rope";
    g.test_max = g.train_max - 1;
    ck_assert_int_eq(qkv_lengthgen_run(&g), -1);   /* run checks first */
    ck_assert_ptr_nonnull(strstr(qkv_last_error(), "--test-max"));
    g.test_max = g.train_max;
    g.seeds = 0;
    ck_assert_int_eq(qkv_lengthgen_check(&g), -1);
    ck_assert_ptr_nonnull(strstr(qkv_last_error(), "--seeds 0"));
    g.seeds = 1;
    g.json = g.plot;
    ck_assert_int_eq(qkv_lengthgen_check(&g), -1);
    ck_assert_ptr_nonnull(strstr(qkv_last_error(), "given for two outputs"));

    qkv_perm_options p;
    qkv_perm_default_options(&p);
    ck_assert_int_eq(qkv_perm_check(&p), 0);
    p.heads = 3;
    int all_agree = -1;
    ck_assert_int_eq(qkv_perm_run(&p, &all_agree), -1);
    ck_assert_ptr_nonnull(strstr(qkv_last_error(), "--heads 3"));
    ck_assert_int_eq(all_agree, -1);
    p.heads = 4;
    p.tokens = 1;
    ck_assert_int_eq(qkv_perm_check(&p), -1);
    ck_assert_ptr_nonnull(strstr(qkv_last_error(), "--tokens 1"));
    ck_assert_int_eq(count_dir_entries(scratch_dir), 0);
}
END_TEST

/* `qkv experiment` lists every experiment, and names them for an unknown one. */
START_TEST(experiment_usage_lists_every_experiment) {
    char line[512];
    ck_assert_int_eq(run_qkv("experiment nosuch", line, sizeof line), 2);
    ck_assert_msg(strstr(line, "'nosuch'") && strstr(line, "permutation, lengthgen"), "message: %s", line);
}
END_TEST

/* docs/tutorial.c, built by make test: its loss falls from ~2.6 to below 0.05.
 * The tutorial runs once in make test: the docs suite's records case (test_docs.c)
 * runs build/tutorial (its build directory's) and requires it to print
 * results/tutorial-loss.txt exactly, so the loss is read from that record here. */
START_TEST(tutorial_loss_falls) {
    record rec;
    char error[256];
    ck_assert_msg(record_read("../results", "tutorial-loss", &rec, error, sizeof error) == 0, "%s", error);
    ck_assert_str_eq(rec.command, "build/tutorial");
    ck_assert_str_eq(rec.cost, "cheap");   /* so make test runs it and compares */
    double first = -1, final = -1;
    for (const char *line = rec.output; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
        if (first < 0) sscanf(line, "step %*d loss %lf", &first);
        sscanf(line, "final loss %lf", &final);
    }
    record_free(&rec);
    ck_assert_msg(first > 2.0, "first loss %g", first);
    ck_assert_msg(final >= 0 && final < 0.05, "final loss %g", final);
}
END_TEST

Suite *suite_experiments(void) {
    Suite *s = suite_create("experiments");
    TCase *tc = tcase_create("experiments");
    tcase_set_timeout(tc, 0);
    tcase_add_checked_fixture(tc, scratch_dir_create, scratch_dir_remove);
    tcase_add_test(tc, permutation_measures_have_the_promised_size);
    tcase_add_test(tc, permutation_errors_are_thread_independent);
    tcase_add_test(tc, permutation_command_writes_json_and_csv);
    tcase_add_test(tc, lengthgen_writes_csv_json_and_png);
    tcase_add_test(tc, lengthgen_refuses_bad_flags_in_one_line);
    tcase_add_test(tc, lengthgen_preset_runs_tiny);
    tcase_add_test(tc, lengthgen_resume_gives_the_bytes_of_one_run);
    tcase_add_test(tc, lengthgen_records_provenance_and_every_setting);
    tcase_add_test(tc, lengthgen_mrr_refuses_a_scheme_that_did_not_fit);
    tcase_add_test(tc, lengthgen_attention_distance_of_uniform_attention);
    tcase_add_test(tc, lengthgen_distance_outputs_have_their_shape);
    tcase_add_test(tc, experiment_checks_name_the_bad_option);
    tcase_add_test(tc, experiment_usage_lists_every_experiment);
    tcase_add_test(tc, tutorial_loss_falls);
    suite_add_tcase(s, tc);
    return s;
}
