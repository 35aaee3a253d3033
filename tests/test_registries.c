/* test_registries.c — the lists that name what exists, against the sources: a
 * thing defined but not listed would silently not run, so each test scans the
 * source files for definitions and fails on one its list does not name (a listed
 * thing that nothing defines fails to link instead).
 *   suites:    every `Suite *suite_NAME(void)` of the .c files in tests/ is in
 *              QKV_TEST_SUITES (suites.h), which run_tests.c runs;
 *   gradcheck: every exported `const qkv_gradcheck_group NAME` of the repository's
 *              C files is in QKV_GRADCHECK_GROUPS (layers/check/checks.h), which
 *              test_gradcheck.c and `./qkv gradcheck` run; their printed names
 *              differ, so each names one group;
 *   commands:  every `int qkv_cmd_NAME(int argc, char **argv)` of cli/ is a
 *              row of QKV_COMMANDS (cli/commands.h), which ./qkv dispatches;
 *   unary ops: every row of the elementwise table (qkv_unary_ops, core/ops/
 *              unary_ops.h) has a public qkv_NAME in ops.h and gradient-check
 *              rows "NAME [shape]" in the elementwise group at 2-D and 3-D (the
 *              table generates them); the table's names differ; and every op
 *              qkv_NAME defined in core/ops/ops_elementwise.c, in the table or
 *              not, has rows "NAME ..." there;
 *   position schemes: every list of scheme names in the sources (C string
 *              lists "a,b" "a|b" "a, b", arrays {"a", "b"}, Python tuples, and
 *              one name in context: "--pos", "a" and Python's scheme == "a",
 *              cfg["pos"] != "a") names only rows of layers/positions.h's
 *              table (a "-rand" suffix allowed): a list with two or more scheme
 *              names is taken as a scheme list, so a spelling the table lacks
 *              fails here, naming the file and line;
 *   lines:     the files of `qkv experiment lengthgen` and of `qkv bench` form
 *              lines, each including (of its line) only the next one's header. */
#include <glob.h>
#include <regex.h>
#include <stdlib.h>

#include "tests/suites.h"
#include "cli/commands.h"
#include "tests/test_util.h"

#define ELEMENTS(array) ((int)(sizeof array / sizeof array[0]))

START_TEST(every_defined_suite_is_listed) {
#define SUITE_SYMBOL(name) "suite_" #name,
    static const char *const listed[] = {QKV_TEST_SUITES(SUITE_SYMBOL)};
#undef SUITE_SYMBOL
    /* The runner links the .c files of tests/, none deeper (the Makefile's TEST_SRC). */
    static const char *const sources[] = {"../tests/*.c", NULL};
    assert_list_matches_sources("QKV_TEST_SUITES (tests/suites.h)", listed, ELEMENTS(listed), sources,
                                "^Suite[[:space:]]*\\*[[:space:]]*([A-Za-z_][A-Za-z0-9_]*)[[:space:]]*\\(");
}
END_TEST

START_TEST(every_defined_gradcheck_group_is_listed) {
#define GROUP_SYMBOL(name) "qkv_checks_" #name,
    static const char *const listed[] = {QKV_GRADCHECK_GROUPS(GROUP_SYMBOL)};
#undef GROUP_SYMBOL
    /* Groups belong in core/check/ and layers/check/, but one anywhere would be missed
     * as surely: every C file one and two folders down from the top is scanned. */
    static const char *const sources[] = {"../*/*.c", "../*/*/*.c", NULL};
    assert_list_matches_sources("QKV_GRADCHECK_GROUPS (layers/check/checks.h)", listed, ELEMENTS(listed), sources,
                                "^const[[:space:]]+qkv_gradcheck_group[[:space:]]+([A-Za-z_][A-Za-z0-9_]*)");
}
END_TEST

START_TEST(every_defined_command_is_listed) {
#define COMMAND_SYMBOL(fn, under_mpi) "qkv_cmd_" #fn,
    static const char *const listed[] = {QKV_COMMANDS(COMMAND_SYMBOL)};
#undef COMMAND_SYMBOL
    static const char *const sources[] = {"../cli/*.c", NULL};
    assert_list_matches_sources("QKV_COMMANDS (cli/commands.h)", listed, ELEMENTS(listed), sources,
                                "^int[[:space:]]+(qkv_cmd_[A-Za-z0-9_]*)[[:space:]]*\\(");
}
END_TEST

START_TEST(gradcheck_group_names_differ) {
    for (int i = 0; i < QKV_GRADCHECK_N_GROUPS; i++)
        for (int j = i + 1; j < QKV_GRADCHECK_N_GROUPS; j++)
            ck_assert_msg(strcmp(qkv_gradcheck_groups[i]->name, qkv_gradcheck_groups[j]->name) != 0,
                          "groups %d and %d of QKV_GRADCHECK_GROUPS are both named %s", i, j,
                          qkv_gradcheck_groups[i]->name);
}
END_TEST

/* Does any case of the group have a name "op [..." of the given rank (dims counted
 * by commas + 1 inside the brackets)? */
static int has_case(const qkv_gradcheck_group *g, const char *op, int *ranks_seen) {
    size_t n = strlen(op);
    int found = 0;
    for (int i = 0; i < g->n_cases; i++) {
        const char *name = g->cases[i].name;
        if (strncmp(name, op, n) != 0 || strncmp(name + n, " [", 2) != 0) continue;
        found = 1;
        int rank = 1;
        for (const char *c = name + n + 2; *c && *c != ']'; c++) rank += *c == ',';
        if (rank <= 4) ranks_seen[rank] = 1;
    }
    return found;
}

START_TEST(every_unary_op_has_a_wrapper_and_gradcheck_rows) {
    size_t len;
    char *ops_h = (char *)read_file_bytes("../core/ops/ops.h", &len);
    ops_h[len] = '\0';
    ck_assert_int_gt(qkv_unary_op_count, 0);
    for (int i = 0; i < qkv_unary_op_count; i++) {
        const char *op = qkv_unary_ops[i].name;
        for (int j = i + 1; j < qkv_unary_op_count; j++)
            ck_assert_msg(strcmp(op, qkv_unary_ops[j].name) != 0, "unary table names %s twice", op);
        ck_assert_msg(qkv_unary_ops[i].cost >= 1, "unary op %s: cost %d", op, qkv_unary_ops[i].cost);
        char declaration[64];
        snprintf(declaration, sizeof declaration, "*qkv_%s(qkv_tape *tape, qkv_tensor *x", op);
        ck_assert_msg(strstr(ops_h, declaration), "unary op %s: core/ops/ops.h declares no qkv_%s", op, op);
        int ranks[5] = {0};
        ck_assert_msg(has_case(&qkv_checks_elementwise, op, ranks),
                      "unary op %s has no gradient-check row \"%s [shape]\" (core/check/checks_elementwise.c)", op, op);
        ck_assert_msg(ranks[2] && ranks[3], "unary op %s: gradient-check rows need 2-D and 3-D shapes", op);
    }
    free(ops_h);
}
END_TEST

/* Does any case of the group have a name "op ..." (a space after the op)? */
static int has_named_case(const qkv_gradcheck_group *g, const char *op) {
    size_t n = strlen(op);
    for (int i = 0; i < g->n_cases; i++)
        if (strncmp(g->cases[i].name, op, n) == 0 && g->cases[i].name[n] == ' ') return 1;
    return 0;
}

/* The table's ops get their rows generated; an op written in ops_elementwise.c
 * outside the table (a public qkv_NAME defined there) needs rows of its own. */
START_TEST(every_elementwise_op_has_gradcheck_rows) {
    size_t len;
    char *source = (char *)read_file_bytes("../core/ops/ops_elementwise.c", &len);
    source[len] = '\0';
    regex_t definition;
    ck_assert_int_eq(regcomp(&definition, "(^|\n)qkv_tensor \\*qkv_([a-z_0-9]+)\\(", REG_EXTENDED), 0);
    int ops = 0;
    regmatch_t m[3];
    for (const char *at = source; regexec(&definition, at, 3, m, 0) == 0; at += m[0].rm_eo) {
        char op[64];
        snprintf(op, sizeof op, "%.*s", (int)(m[2].rm_eo - m[2].rm_so), at + m[2].rm_so);
        if (strcmp(op, "unary") == 0) continue;   /* the table's entry point, not an op */
        ops++;
        ck_assert_msg(has_named_case(&qkv_checks_elementwise, op),
                      "op qkv_%s of core/ops/ops_elementwise.c has no gradient-check row \"%s ...\" "
                      "(a row of core/ops/unary_ops.h gets them; an op outside it, in core/check/checks_elementwise.c)",
                      op, op);
    }
    ck_assert_int_ge(ops, 4 + qkv_unary_op_count + 1);   /* add sub mul div, the table, dropout */
    regfree(&definition);
    free(source);
}
END_TEST

/* A name of the position-scheme table, with an optional "-rand" suffix? */
static int is_scheme(const char *word, size_t n) {
    if (n > 5 && strncmp(word + n - 5, "-rand", 5) == 0) n -= 5;
    for (int i = 0; i < QKV_POS_COUNT; i++)
        if (strlen(qkv_pos_schemes[i].name) == n && strncmp(qkv_pos_schemes[i].name, word, n) == 0) return 1;
    return 0;
}

static int word_char(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-'; }

/* Checks the lists of one line: runs of lowercase words, each optionally quoted,
 * joined by ',' or '|' (spaces around allowed). A run with two or more schemes other
 * than "none" must consist of schemes only. Python's `kind == "x"` names one. */
static void check_scheme_lists(const char *path, int line_no, const char *line) {
    /* one scheme named by its context: a --pos flag's value, Python's scheme == / cfg["pos"] == */
    static const char *const contexts[] = {", \"--pos\", \"", "scheme == \"", "[\"pos\"] == \"", "[\"pos\"] != \""};
    for (size_t k = 0; k < sizeof contexts / sizeof contexts[0]; k++)
        for (const char *at = strstr(line, contexts[k]); at; at = strstr(at + 1, contexts[k])) {
            const char *w = at + strlen(contexts[k]);
            size_t n = 0;
            while (word_char(w[n]) || (w[n] >= 'A' && w[n] <= 'Z')) n++;
            ck_assert_msg(is_scheme(w, n), "%s:%d names the position scheme '%.*s', which the table "
                          "(layers/positions.h) does not name", path, line_no, (int)n, w);
        }
    const char *p = line;
    int in_string = 0; /* lists are string literals: "a,b", or quoted items "a", "b" */
    while (*p) {
        if (*p == '"' && (p == line || p[-1] != '\\')) in_string = !in_string;
        if (!in_string || !(*p >= 'a' && *p <= 'z') || word_char(p[-1])) { p++; continue; }
        const char *words[64];
        size_t lens[64];
        int n = 0, schemes = 0;
        const char *q = p;
        for (;;) {
            size_t len = 0;
            while (word_char(q[len])) len++;
            if (n < 64) words[n] = q, lens[n++] = len;
            int repeated = 0; /* distinct scheme names count */
            for (int i = 0; i + 1 < n; i++) repeated |= lens[i] == len && strncmp(words[i], q, len) == 0;
            schemes += is_scheme(q, len) && !repeated && !(len == 4 && strncmp(q, "none", 4) == 0);
            const char *r = q + len;
            if (*r == '"') r++;
            while (*r == ' ') r++;
            if (*r != ',' && *r != '|') { q = r; break; }
            r++;
            while (*r == ' ') r++;
            if (*r == '"') r++;
            if (!(*r >= 'a' && *r <= 'z')) { q = r; break; }
            q = r;
        }
        if (n >= 2 && schemes >= 2)
            for (int i = 0; i < n; i++)
                ck_assert_msg(is_scheme(words[i], lens[i]), "%s:%d lists '%.*s' among position schemes, which the "
                              "table (layers/positions.h) does not name", path, line_no, (int)lens[i], words[i]);
        for (const char *c = p; c < q; c++) in_string ^= *c == '"';
        p = q > p ? q : p + 1;
    }
}

START_TEST(every_listed_position_scheme_is_in_the_table) {
    static const char *const globs[] = {"../core/*/*.[ch]", "../layers/*.[ch]", "../train/*.[ch]",
                                        "../train/*/*.[ch]", "../python/*.py", "../tests/*.py", "../tests/*.c",
                                        NULL};
    glob_t files;
    for (int g = 0; globs[g]; g++)
        ck_assert_msg(glob(globs[g], g ? GLOB_APPEND : 0, NULL, &files) == 0, "no file matches %s", globs[g]);
    ck_assert_int_gt((int)files.gl_pathc, 50);
    for (size_t f = 0; f < files.gl_pathc; f++) {
        if (strstr(files.gl_pathv[f], "test_registries.c")) continue; /* its own examples */
        size_t len;
        char *text = (char *)read_file_bytes(files.gl_pathv[f], &len);
        text[len] = '\0';
        int line_no = 1;
        for (char *line = text; line; line_no++) {
            char *end = strchr(line, '\n');
            if (end) *end = '\0';
            check_scheme_lists(files.gl_pathv[f], line_no, line);
            line = end ? end + 1 : NULL;
        }
        free(text);
    }
    globfree(&files);
}
END_TEST

/* The table is the enum: row i is kind i, and the names parse back to it. */
START_TEST(position_scheme_table_is_the_enum) {
    for (int i = 0; i < QKV_POS_COUNT; i++) {
        ck_assert_int_eq((int)qkv_pos_schemes[i].kind, i);
        ck_assert_int_eq(qkv_pos_kind_parse(qkv_pos_schemes[i].name), i);
        ck_assert_str_eq(qkv_pos_kind_names[i], qkv_pos_schemes[i].name);
    }
    ck_assert_ptr_null(qkv_pos_kind_names[QKV_POS_COUNT]);
}
END_TEST

/* Each module (NAME.c and NAME.h) of a line includes, of the line's modules,
 * only the next one's header: calls can then only point down the line. */
static void assert_line(const char *const *modules, int n) {
    for (int i = 0; i < n; i++)
        for (int ext = 0; ext < 2; ext++) {
            char path[256];
            snprintf(path, sizeof path, "../%s.%s", modules[i], ext ? "h" : "c");
            FILE *exists = fopen(path, "rb");
            if (!exists) {   /* the top of a line has no header */
                ck_assert_msg(ext == 1 && i == 0, "%s is missing", path);
                continue;
            }
            fclose(exists);
            size_t len;
            char *text = (char *)read_file_bytes(path, &len);
            text[len] = '\0';
            for (int j = 0; j < n; j++) {
                char include[256];
                snprintf(include, sizeof include, "#include \"%s.h\"", modules[j]);
                int allowed = j == i + 1 || (ext == 0 && j == i);   /* the one below; a .c its own header */
                ck_assert_msg(allowed || !strstr(text, include), "%s includes %s.h: the line is %s -> ... (%s.h only)",
                              path, modules[j], modules[0], i + 1 < n ? modules[i + 1] : "none");
            }
            free(text);
        }
}

START_TEST(lengthgen_and_bench_files_form_lines) {
    static const char *const lengthgen[] = {"train/experiments/lengthgen", "train/experiments/lengthgen_record",
                                            "train/experiments/lengthgen_report", "train/experiments/lengthgen_distance",
                                            "train/experiments/lengthgen_runs"};
    static const char *const bench[] = {"cli/cmd_bench", "cli/bench", "cli/bench_models", "cli/bench_table",
                                        "cli/bench_load"};
    assert_line(lengthgen, ELEMENTS(lengthgen));
    assert_line(bench, ELEMENTS(bench));
}
END_TEST

Suite *suite_registries(void) {
    Suite *s = suite_create("registries");
    TCase *suites = tcase_create("suites");
    tcase_add_test(suites, every_defined_suite_is_listed);
    suite_add_tcase(s, suites);
    TCase *gradcheck = tcase_create("gradcheck");
    tcase_add_test(gradcheck, every_defined_gradcheck_group_is_listed);
    tcase_add_test(gradcheck, gradcheck_group_names_differ);
    suite_add_tcase(s, gradcheck);
    TCase *commands = tcase_create("commands");
    tcase_add_test(commands, every_defined_command_is_listed);
    suite_add_tcase(s, commands);
    TCase *unary = tcase_create("unary ops");
    tcase_add_test(unary, every_unary_op_has_a_wrapper_and_gradcheck_rows);
    tcase_add_test(unary, every_elementwise_op_has_gradcheck_rows);
    suite_add_tcase(s, unary);
    TCase *lines = tcase_create("lines");
    tcase_add_test(lines, lengthgen_and_bench_files_form_lines);
    suite_add_tcase(s, lines);
    TCase *positions = tcase_create("position schemes");
    tcase_add_test(positions, position_scheme_table_is_the_enum);
    tcase_add_test(positions, every_listed_position_scheme_is_in_the_table);
    suite_add_tcase(s, positions);
    return s;
}
