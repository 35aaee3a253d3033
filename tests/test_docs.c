/* test_docs.c — the docs cannot drift from the code.
 *
 * For README.md and every .md file of docs/:
 *  - every name shown in code font (`...`) that names something of qkv exists:
 *    a function or identifier with an underscore (`qkv_attention`, `block_probs`)
 *    occurs as a word in the sources; a path (`core/ops/tape.h`, `tests/ref`)
 *    exists; a flag (`--micro-batch`) appears in some `--help` of ./qkv; a
 *    command (`./qkv train ...`, and every ./qkv line of a shell block) is one
 *    that ./qkv lists, and its flags appear in some `--help`; `make X` is a
 *    target of the Makefile;
 *  - every example marked `<!-- docs-check: run CMD -->` just above a fenced
 *    block prints what the block shows: CMD is run (./qkv is the binary under
 *    test) and each line of the block, but a line "...", appears in its output,
 *    whole (indentation aside) and in the same order.
 * Names that belong to other programs (PyTorch, valgrind, mpirun) are listed in
 * foreign_names below, each with its owner; nothing else is excused. A planted
 * stale name of each kind must fail (stale_names_fail), so the check can fail.
 */
#include "tests/test_util.h"

#include <ctype.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* Names of other programs that the docs show in code font, and whose they are. */
static const char *const foreign_names[] = {
    /* PyTorch and torchvision */
    "scaled_dot_product_attention", "key_padding_mask", "attn_mask", "rotate_half", "generalized_box_iou_loss",
    "batch_first", "need_weights", "average_attn_weights", "state_dict", "load_state_dict", "cross_entropy",
    "ignore_index", "label_smoothing", "layer_norm", "weight_decay", "clip_grad_norm_", "is_causal",
    "apply_rotary_pos_emb", "in_proj_weight", "in_proj_bias", "out_proj",
    /* Hugging Face transformers' config keys */
    "rope_theta", "rotary_pct",
    /* other tools' flags */
    "--leak-check", "--oversubscribe", "--cflags", "--libs", "--bind-to", "--map-by", "--host", "--np",
    "--mca", "--allow-run-as-root", "--error-exitcode", "--suppressions", "--show-leak-kinds",
    "--track-origins", "--no-install-recommends", "--cpu-list",
    /* node's and emscripten's */
    "--no-experimental-fetch", "--cpu-prof", "--profiling-funcs",
    NULL,
};

static int is_foreign(const char *name) {
    for (int i = 0; foreign_names[i]; i++)
        if (strcmp(foreign_names[i], name) == 0) return 1;
    return 0;
}

/* ---- what the docs are checked against ---------------------------------------- */

typedef struct text {
    char *s;
    size_t len, cap;
} text;

static void text_add(text *t, const char *s, size_t n) {
    if (t->len + n + 2 > t->cap) {
        t->cap = (t->len + n + 2) * 2;
        t->s = realloc(t->s, t->cap);
        ck_assert_ptr_nonnull(t->s);
    }
    memcpy(t->s + t->len, s, n);
    t->len += n;
    t->s[t->len++] = '\n';
    t->s[t->len] = '\0';
}

static void add_file(text *t, const char *path) {
    size_t len;
    char *bytes = (char *)read_file_bytes(path, &len);
    text_add(t, bytes, len);
    free(bytes);
}

static int has_suffix(const char *s, const char *suffix) {
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* Every source-like file under dir (from tests/), recursively. */
static void add_sources(text *t, const char *dir) {
    DIR *d = opendir(dir);
    ck_assert_msg(d != NULL, "cannot open %s", dir);
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        struct stat st;
        if (stat(path, &st) != 0) continue;
        if (S_ISDIR(st.st_mode)) {
            if (strcmp(e->d_name, "node_modules") != 0) add_sources(t, path); /* the page's test's npm package */
        }
        else if ((has_suffix(path, ".c") || has_suffix(path, ".h") || has_suffix(path, ".py") ||
                  has_suffix(path, ".sh") || has_suffix(path, ".mk") || has_suffix(path, ".js")) &&
                 !has_suffix(path, "/test_docs.c")) /* its planted names */
            add_file(t, path);
    }
    closedir(d);
}

static text sources;   /* every .c, .h, .py, .sh, .mk, .js of the tree, and the Makefile */
static text help;      /* every --help ./qkv prints */
static text commands;  /* the commands ./qkv lists, one per line */

/* Appends what `qkv args --help` prints (stdout and stderr); its exit status. */
static int add_help(const char *args) {
    char command[512];
    snprintf(command, sizeof command, "%s %s --help 2>&1", qkv_binary(), args);
    FILE *p = popen(command, "r");
    ck_assert_ptr_nonnull(p);
    char line[1024];
    while (fgets(line, sizeof line, p)) text_add(&help, line, strlen(line));
    return pclose(p);
}

/* The lowercase word a help line starts with ("  train TASK ..." -> train), or 0. */
static int leading_word(const char *line, char *word, size_t len) {
    while (*line == ' ') line++;
    if (strncmp(line, "sets: ", 6) == 0) line += 6;
    size_t n = 0;
    while (n + 1 < len && (islower((unsigned char)line[n]) || line[n] == '-' || isdigit((unsigned char)line[n])))
        n++;
    if (n == 0 || line[0] == '-' || (line[n] != ' ' && line[n] != '\0' && line[n] != '\n')) return 0;
    memcpy(word, line, n);
    word[n] = '\0';
    return 1;
}

/* The lines of the help printed so far from offset from, split off for walking. */
static char **help_lines(size_t from, int *n) {
    char *copy = strdup(help.s + from);
    int cap = 16;
    char **lines = malloc(sizeof(char *) * (size_t)cap);
    *n = 0;
    for (char *l = strtok(copy, "\n"); l; l = strtok(NULL, "\n")) {
        if (*n + 1 >= cap) lines = realloc(lines, sizeof(char *) * (size_t)(cap *= 2));
        lines[(*n)++] = l;
    }
    lines[*n] = copy; /* freed by the caller */
    return lines;
}

static void load_corpora(void) {
    if (sources.s) return;
    static const char *const dirs[] = {"../core", "../layers", "../optim", "../data", "../train", "../cli",
                                       "../bench", "../tests", "../python", "../mk", "../docs", "../web"};
    for (size_t i = 0; i < sizeof dirs / sizeof *dirs; i++) add_sources(&sources, dirs[i]);
    add_file(&sources, "../Makefile");
    add_file(&sources, "../mk/web.mk"); /* the Makefile's part for the WebAssembly build */
    add_file(&sources, "../qkv.h");
    add_file(&sources, "../qkv_internal.h");
    /* The top help lists the commands (and the train tasks, indented deeper); each
     * command's help lists its own (an experiment, a data set). */
    ck_assert_int_eq(add_help(""), 0);
    int n_top;
    char **top = help_lines(0, &n_top), word[64];
    for (int i = 0; i < n_top; i++) {
        if (!leading_word(top[i], word, sizeof word)) continue;
        int task = strncmp(top[i], "    ", 4) == 0;
        char args[160];
        snprintf(args, sizeof args, "%s%s", task ? "train " : "", word);
        size_t from = help.len;
        if (add_help(args) != 0) continue;
        if (!task) text_add(&commands, word, strlen(word));
        int n_sub;
        char **sub = help_lines(from, &n_sub), subword[64];
        for (int j = 0; j < n_sub && !task; j++) {
            char sub_args[256];
            if (!leading_word(sub[j], subword, sizeof subword)) continue;
            snprintf(sub_args, sizeof sub_args, "%s %s", word, subword);
            add_help(sub_args);
        }
        free(sub[n_sub]);
        free(sub);
    }
    free(top[n_top]);
    free(top);
}

/* name occurs in t as a whole word (not inside a longer identifier or flag). */
static int has_word(const text *t, const char *name) {
    size_t n = strlen(name);
    for (const char *at = strstr(t->s, name); at; at = strstr(at + 1, name)) {
        char before = at == t->s ? ' ' : at[-1], after = at[n];
        int word_char_before = isalnum((unsigned char)before) || before == '_' || (name[0] == '-' && before == '-');
        int word_char_after = isalnum((unsigned char)after) || after == '_' || (name[0] == '-' && after == '-');
        if (!word_char_before && !word_char_after) return 1;
    }
    return 0;
}

static int has_line(const text *t, const char *line) {
    size_t n = strlen(line);
    for (const char *at = strstr(t->s, line); at; at = strstr(at + 1, line))
        if ((at == t->s || at[-1] == '\n') && at[n] == '\n') return 1;
    return 0;
}

/* ---- checking one doc ---------------------------------------------------------- */

typedef struct report {
    char what[4096];
    int problems;
} report;

static void complain(report *r, const char *doc, int line, const char *fmt, const char *name) {
    size_t used = strlen(r->what);
    char message[320];
    snprintf(message, sizeof message, fmt, name);
    if (used + 300 < sizeof r->what)
        snprintf(r->what + used, sizeof r->what - used, "%s:%d: %s\n", doc, line, message);
    r->problems++;
}

static const char *const top_dirs[] = {"core/", "layers/", "optim/", "data/", "train/", "tests/",
                                       "bench/", "cli/", "docs/", "python/", "mk/", NULL};

static int looks_like_path(const char *s) {
    if (strchr(s, ' ') || strchr(s, '*') || strchr(s, '<') || strchr(s, '{')) return 0; /* a pattern */
    for (int i = 0; top_dirs[i]; i++)
        if (strncmp(s, top_dirs[i], strlen(top_dirs[i])) == 0) return 1;
    return 0;
}

static int path_exists_from(const char *doc_dir, const char *path) {
    char full[1024];
    snprintf(full, sizeof full, "../%s", path);
    if (path_exists(full)) return 1;
    snprintf(full, sizeof full, "../%s/%s", doc_dir, path);
    return path_exists(full);
}

/* A ./qkv command line: its command is listed and each flag is in some help. */
static void check_command(report *r, const char *doc, int line, const char *cmd) {
    char copy[1024], *save = NULL;
    snprintf(copy, sizeof copy, "%s", cmd);
    char *word = strtok_r(copy, " \t", &save);
    if (!word || (strcmp(word, "./qkv") != 0 && strcmp(word, "qkv") != 0)) return;
    char *name = strtok_r(NULL, " \t", &save);
    if (name && islower((unsigned char)name[0]) && !has_line(&commands, name)) complain(r, doc, line, "no command %s", name);
    for (char *w = strtok_r(NULL, " \t", &save); w; w = strtok_r(NULL, " \t", &save)) {
        if (strncmp(w, "--", 2) != 0 || !isalpha((unsigned char)w[2])) continue;
        w[strcspn(w, "=,;)]|`")] = '\0';
        if (!has_word(&help, w) && !is_foreign(w)) complain(r, doc, line, "no flag %s in any --help", w);
    }
}

/* One span in code font. */
static void check_span(report *r, const char *doc, const char *doc_dir, int line, const char *span) {
    char name[256];
    size_t n = 0;
    if (strncmp(span, "./qkv ", 6) == 0 || strncmp(span, "qkv ", 4) == 0) {
        check_command(r, doc, line, span);
        return;
    }
    if (strncmp(span, "make ", 5) == 0) { /* the first word not a flag (-j2) or VAR=value */
        char copy[256], *save = NULL, rule[300];
        snprintf(copy, sizeof copy, "%s", span + 5);
        for (char *w = strtok_r(copy, " ", &save); w; w = strtok_r(NULL, " ", &save)) {
            if (w[0] == '-' || strspn(w, "abcdefghijklmnopqrstuvwxyz0123456789-") != strlen(w)) continue;
            snprintf(rule, sizeof rule, "\n%s:", w); /* a rule of the Makefile */
            if (!strstr(sources.s, rule)) complain(r, doc, line, "no make target %s", w);
            break;
        }
        return;
    }
    if (span[0] == '-' && span[1] == '-' && isalpha((unsigned char)span[2])) {
        while (n + 1 < sizeof name && (isalnum((unsigned char)span[n]) || span[n] == '-')) name[n] = span[n], n++;
        name[n] = '\0';
        if (!has_word(&help, name) && !is_foreign(name)) complain(r, doc, line, "no flag %s in any --help", name);
        return;
    }
    if (looks_like_path(span)) {
        snprintf(name, sizeof name, "%s", span);
        name[strcspn(name, ":")] = '\0'; /* file:line */
        if (!path_exists_from(doc_dir, name)) complain(r, doc, line, "no file %s", name);
        return;
    }
    /* An identifier with an underscore, alone or called: qkv_tape_print(tape, out). */
    while (n + 1 < sizeof name && (isalnum((unsigned char)span[n]) || span[n] == '_')) name[n] = span[n], n++;
    name[n] = '\0';
    if (n == 0 || isdigit((unsigned char)name[0]) || !strchr(name + 1, '_')) return;
    int lower = 0, upper = 0;
    for (size_t i = 0; i < n; i++) lower |= islower((unsigned char)name[i]), upper |= isupper((unsigned char)name[i]);
    if (lower && upper) return; /* a placeholder: qkv_NAME, NAME_case (names are one case or the other) */
    if (span[n] != '\0' && span[n] != '(') return;
    if (!has_word(&sources, name) && !is_foreign(name)) complain(r, doc, line, "no %s in the sources", name);
}

/* Every span in code font and every ./qkv line of a fenced block of doc_text. */
static void check_doc(report *r, const char *doc, const char *doc_dir, const char *doc_text) {
    char *copy = strdup(doc_text), *next = copy;
    int line_no = 0, fenced = 0;
    while (next) {
        char *l = next;
        next = strchr(l, '\n');
        if (next) *next++ = '\0';
        line_no++;
        const char *trimmed = l + strspn(l, " ");
        if (strncmp(trimmed, "```", 3) == 0) {
            fenced = !fenced;
            continue;
        }
        if (fenced) {
            const char *cmd = trimmed;
            if (strncmp(cmd, "$ ", 2) == 0) cmd += 2;
            char one[1024];
            snprintf(one, sizeof one, "%s", cmd);
            one[strcspn(one, "#")] = '\0'; /* a shell comment */
            check_command(r, doc, line_no, one);
            continue;
        }
        for (char *open = strchr(l, '`'); open; open = strchr(open, '`')) {
            char *close = strchr(open + 1, '`');
            if (!close) break;
            *close = '\0';
            check_span(r, doc, doc_dir, line_no, open + 1);
            open = close + 1;
        }
    }
    free(copy);
}

/* ---- examples that run ------------------------------------------------------------ */

/* Runs cmd (its ./qkv replaced by the binary under test); its stdout and stderr. */
static text run_example(const char *cmd) {
    char command[1200];
    const char *rest = strncmp(cmd, "./qkv", 5) == 0 ? cmd + 5 : cmd;
    snprintf(command, sizeof command, "%s%s 2>&1", rest == cmd ? "" : qkv_binary(), rest);
    FILE *p = popen(command, "r");
    ck_assert_ptr_nonnull(p);
    text out = {0};
    char line[4096];
    while (fgets(line, sizeof line, p)) {
        line[strcspn(line, "\n")] = '\0';
        text_add(&out, line, strlen(line));
    }
    int status = pclose(p);
    ck_assert_msg(status == 0, "%s: exit status %d", cmd, status);
    return out;
}

/* Each marked example of doc_text prints its block's lines in order; how many ran. */
static int check_examples(report *r, const char *doc, const char *doc_text) {
    static const char marker[] = "<!-- docs-check: run ";
    int ran = 0;
    for (const char *at = strstr(doc_text, marker); at; at = strstr(at + 1, marker)) {
        char cmd[1024];
        const char *start = at + strlen(marker), *end = strstr(start, " -->");
        ck_assert_ptr_nonnull(end);
        snprintf(cmd, sizeof cmd, "%.*s", (int)(end - start), start);
        const char *fence = strstr(end, "```");
        ck_assert_ptr_nonnull(fence);
        const char *body = strchr(fence, '\n') + 1, *body_end = strstr(body, "```");
        ck_assert_ptr_nonnull(body_end);
        text out = run_example(cmd);
        ran++;
        const char *search = out.s;
        char *block = strndup(body, (size_t)(body_end - body)), *save = NULL;
        for (char *l = strtok_r(block, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
            const char *want = l + strspn(l, " ");
            if (*want == '\0' || strcmp(want, "...") == 0) continue;
            size_t n = strlen(want);
            const char *found = NULL;
            for (const char *f = strstr(search, want); f && !found; f = strstr(f + 1, want)) {
                const char *b = f; /* the whole line, but its indentation */
                while (b > out.s && b[-1] == ' ') b--;
                if ((b == out.s || b[-1] == '\n') && f[n] == '\n') found = f;
            }
            if (!found) {
                complain(r, doc, 0, "an example's output has no line (in order): %s", want);
                break;
            }
            search = found + n;
        }
        free(block);
        free(out.s);
    }
    return ran;
}

/* ---- the tests ----------------------------------------------------------------------- */

static char *read_doc(const char *path) {
    size_t len;
    char *s = (char *)read_file_bytes(path, &len);
    s[len] = '\0';
    return s;
}

/* The README and every .md file of docs/ (paths from tests/). */
static int list_docs(char paths[][256], int max) {
    int n = 0;
    snprintf(paths[n++], 256, "../README.md");
    DIR *d = opendir("../docs");
    ck_assert_ptr_nonnull(d);
    struct dirent *e;
    while ((e = readdir(d)) && n < max)
        if (has_suffix(e->d_name, ".md")) snprintf(paths[n++], 256, "../docs/%s", e->d_name);
    closedir(d);
    return n;
}

START_TEST(names_in_docs_exist) {
    load_corpora();
    char paths[64][256];
    int n = list_docs(paths, 64);
    ck_assert_int_gt(n, 10);
    report r = {{0}, 0};
    for (int i = 0; i < n; i++) {
        char *doc = read_doc(paths[i]);
        check_doc(&r, paths[i] + 3, strncmp(paths[i], "../docs/", 8) == 0 ? "docs" : ".", doc);
        free(doc);
    }
    ck_assert_msg(r.problems == 0, "%d stale names in the docs:\n%s", r.problems, r.what);
}
END_TEST

START_TEST(marked_examples_print_what_they_show) {
    load_corpora();
    char paths[64][256];
    int n = list_docs(paths, 64), ran = 0;
    report r = {{0}, 0};
    for (int i = 0; i < n; i++) {
        char *doc = read_doc(paths[i]);
        ran += check_examples(&r, paths[i] + 3, doc);
        free(doc);
    }
    ck_assert_int_ge(ran, 2); /* the README's tape, docs/tape.md's, explain's numbers */
    ck_assert_msg(r.problems == 0, "%s", r.what);
}
END_TEST

/* The README's C example is docs/example.c, which `make test` builds and runs. */
START_TEST(readme_c_example_is_example_c) {
    char *readme = read_doc("../README.md"), *example = read_doc("../docs/example.c");
    const char *start = strstr(readme, "```c\n");
    ck_assert_ptr_nonnull(start);
    start += 5;
    char *block = strndup(start, (size_t)(strstr(start, "```") - start)), *save = NULL;
    const char *search = example;
    for (char *l = strtok_r(block, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
        const char *found = strstr(search, l);
        ck_assert_msg(found != NULL, "README's C example line not in docs/example.c (in order): %s", l);
        search = found + strlen(l);
    }
    free(block);
    free(readme);
    free(example);
}
END_TEST

/* A stale name of each kind, planted, is found: the check can fail. */
START_TEST(stale_names_fail) {
    load_corpora();
    static const char planted[] = "The row goes through `softmax_grad_rows` (`core/ops/no_such.c`).\n"
                                  "Run `./qkv trian reverse` or `./qkv train reverse --step 5`, `--no-such-flag`,\n"
                                  "and `make no-such-target`.\n"
                                  "```sh\n./qkv train reverse --no-such-either 1   # a comment --fine\n```\n"
                                  "But `qkv_attention(tape, q, k, v, &opts, NULL)`, `core/ops/tape.h`, `--micro-batch`,\n"
                                  "`./qkv train text --context 64` and `key_padding_mask` (PyTorch's) are fine.\n";
    report r = {{0}, 0};
    check_doc(&r, "planted.md", "docs", planted);
    ck_assert_msg(r.problems == 7, "found %d:\n%s", r.problems, r.what);
    ck_assert_ptr_nonnull(strstr(r.what, "no softmax_grad_rows in the sources"));
    ck_assert_ptr_nonnull(strstr(r.what, "no file core/ops/no_such.c"));
    ck_assert_ptr_nonnull(strstr(r.what, "no command trian"));
    ck_assert_ptr_nonnull(strstr(r.what, "no flag --step in any --help"));
    ck_assert_ptr_nonnull(strstr(r.what, "no flag --no-such-either in any --help"));

    static const char wrong_output[] = "<!-- docs-check: run ./qkv explain attention -->\n"
                                       "```\nthis line is not printed\n```\n";
    report out = {{0}, 0};
    ck_assert_int_eq(check_examples(&out, "planted.md", wrong_output), 1);
    ck_assert_int_eq(out.problems, 1);
}
END_TEST

Suite *suite_docs(void) {
    Suite *s = suite_create("docs");
    TCase *tc = tcase_create("docs");
    tcase_set_timeout(tc, 0);
    tcase_add_test(tc, names_in_docs_exist);
    tcase_add_test(tc, marked_examples_print_what_they_show);
    tcase_add_test(tc, readme_c_example_is_example_c);
    tcase_add_test(tc, stale_names_fail);
    suite_add_tcase(s, tc);
    return s;
}
