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
 *  - every number that comes from a run is tied to the record of that run,
 *    results/NAME.txt (the command and what it printed; tests/docs_records.h):
 *    `<!-- results: NAME -->` just above a fenced block says that each line of
 *    the block, but a line "...", is a line of the record's output, whole
 *    (indentation aside) and in the same order; `<!-- results: NAME "363 cases"
 *    "4.0e-07" -->` in a line (a table row, a sentence) says that each quoted
 *    text stands in that line and in the record's output (a marker in code
 *    font is an example, not a marker). Every record is shown by some doc. Timings are masked on both sides: they carry the machine and
 *    the date, never the result;
 *  - the records' commands print now what they recorded: make test runs the
 *    cheap ones (the "results" case), `make results [NAME]` the long ones.
 * Names that belong to other programs (PyTorch, valgrind, mpirun) are listed in
 * foreign_names below, each with its owner; nothing else is excused. A planted
 * stale name of each kind must fail (stale_names_fail), and so must a stale
 * number planted in a copy of a doc (stale_numbers_fail), so the check can fail.
 */
#include "tests/docs_records.h"
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
    if (used + 400 < sizeof r->what)
        snprintf(r->what + used, 400, "%.60s:%d: %.300s\n", doc, line, message);
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

/* ---- numbers tied to their records ------------------------------------------------ */

/* Each `<!-- results: NAME -->` of doc_text: the fenced block on the next line
 * shows lines the record prints, in order (the records' rule, docs_records.h);
 * each `<!-- results: NAME "text" ... -->` in a line: every quoted text stands
 * in that line outside the marker and in the record's output. Counts the
 * markers per record in used (indexed as names); how many markers there were. */
static int check_results(report *r, const char *doc, const char *doc_text, char names[][64], int n_names,
                         int *used) {
    static const char marker[] = "<!-- results: ";
    int markers = 0;
    for (const char *at = strstr(doc_text, marker); at; at = strstr(at + 1, marker)) {
        if (at > doc_text && at[-1] == '`') continue; /* a marker shown in code font, as an example */
        int line = 1;
        for (const char *c = doc_text; c < at; c++) line += *c == '\n';
        const char *start = at + strlen(marker), *end = strstr(start, "-->");
        char name[64], error[256];
        size_t name_len = strcspn(start, " \"");
        snprintf(name, sizeof name, "%.*s", (int)(name_len < 63 ? name_len : 63), start);
        markers++;
        record rec;
        if (!end || record_read("../results", name, &rec, error, sizeof error) != 0) {
            complain(r, doc, line, "%s", end ? error : "a results marker without -->");
            continue;
        }
        for (int i = 0; i < n_names; i++)
            if (strcmp(names[i], name) == 0) used[i]++;
        const char *quote = memchr(start, '"', (size_t)(end - start));
        if (!quote) { /* a block */
            const char *fence = end + 3;
            fence += strspn(fence, " \n");
            if (strncmp(fence, "```", 3) != 0) {
                complain(r, doc, line, "results: %s: no fenced block on the next line", name);
            } else {
                const char *body = strchr(fence, '\n') + 1, *body_end = strstr(body, "```");
                char *block = strndup(body, (size_t)(body_end - body));
                const char *missing = first_missing_line(block, rec.output);
                if (missing) {
                    char what[320];
                    snprintf(what, sizeof what, "results/%.63s.txt has no line (in order): %.200s", name, missing);
                    complain(r, doc, line, "%s", what);
                }
                free(block);
            }
        } else { /* quoted texts in this line */
            const char *line_start = at, *line_end = strchr(end, '\n');
            while (line_start > doc_text && line_start[-1] != '\n') line_start--;
            if (!line_end) line_end = end + strlen(end);
            char *outside = malloc((size_t)(line_end - line_start) + 1);
            memcpy(outside, line_start, (size_t)(at - line_start));
            outside[at - line_start] = '\0';
            strncat(outside, end + 3, (size_t)(line_end - end - 3));
            for (const char *q = quote; q && q < end; q = memchr(q + 1, '"', (size_t)(end - q - 1))) {
                const char *close = memchr(q + 1, '"', (size_t)(end - q - 1));
                if (!close) break;
                char text[256], what[400];
                snprintf(text, sizeof text, "%.*s", (int)(close - q - 1), q + 1);
                if (!strstr(outside, text) || !strstr(rec.output, text)) {
                    snprintf(what, sizeof what, "\"%s\" is not in %s", text,
                             !strstr(outside, text) ? "the line beside its marker" : "its record");
                    snprintf(what + strlen(what), sizeof what - strlen(what), " results/%s.txt", name);
                    complain(r, doc, line, "%s", what);
                }
                q = close;
            }
            free(outside);
        }
        record_free(&rec);
    }
    return markers;
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

/* Every number tied to a record says what the record says, and every record is
 * tied to by some doc. */
START_TEST(doc_numbers_match_their_records) {
    char paths[64][256], names[64][64];
    int n = list_docs(paths, 64), n_names = record_list("../results", names, 64), used[64] = {0}, markers = 0;
    report r = {{0}, 0};
    for (int i = 0; i < n; i++) {
        char *doc = read_doc(paths[i]);
        markers += check_results(&r, paths[i] + 3, doc, names, n_names, used);
        free(doc);
    }
    for (int i = 0; i < n_names; i++)
        if (!used[i]) complain(&r, names[i], 0, "results/%s.txt: no doc shows it (<!-- results: NAME -->)", names[i]);
    ck_assert_int_ge(markers, 10);
    ck_assert_msg(r.problems == 0, "%d numbers in the docs differ from their records:\n%s", r.problems, r.what);
}
END_TEST

/* The records' commands print now what they recorded. make test runs the cheap
 * ones; `make results` (QKV_RESULTS=long, or names separated by commas) the
 * others, and with QKV_RESULTS_RECORD=1 it rewrites the records instead. */
START_TEST(records_print_what_they_recorded) {
    char names[64][64];
    int n = record_list("../results", names, 64), ran = 0;
    const char *only = getenv("QKV_RESULTS"), *rewrite = getenv("QKV_RESULTS_RECORD");
    report r = {{0}, 0};
    for (int i = 0; i < n; i++) {
        record rec;
        char error[256], listed[96];
        ck_assert_msg(record_read("../results", names[i], &rec, error, sizeof error) == 0, "%s", error);
        snprintf(listed, sizeof listed, ",%.63s,", names[i]);
        char *wanted = NULL;
        if (only && *only) {
            wanted = malloc(strlen(only) + 3);
            sprintf(wanted, ",%s,", only);
        }
        int chosen = wanted ? strstr(wanted, listed) != NULL || (strcmp(only, "long") == 0 && strcmp(rec.cost, "long") == 0)
                            : strcmp(rec.cost, "cheap") == 0;
        free(wanted);
        if (chosen) {
            int status;
            if (only) fprintf(stderr, "results: %s: %s\n", names[i], rec.command); /* make results */
            char *now = record_run(&rec, "..", &status);
            ran++;
            if (status != 0) complain(&r, names[i], 0, "%s: the command failed", rec.name);
            else if (rewrite && *rewrite) ck_assert_int_eq(record_write("../results", &rec, now), 0);
            else {
                const char *differs = record_compare(&rec, now);
                if (differs) complain(&r, names[i], 0, "%s", differs);
            }
            free(now);
        }
        record_free(&rec);
    }
    ck_assert_msg(ran > 0, "no record chosen (QKV_RESULTS=%s)", only ? only : "");
    ck_assert_msg(r.problems == 0, "%d records differ from their commands now:\n%s", r.problems, r.what);
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

}
END_TEST

/* A copy of doc with its first `from` replaced by `to`. */
static char *planted_copy(const char *doc, const char *from, const char *to) {
    char *text = read_doc(doc), *at = strstr(text, from);
    ck_assert_msg(at != NULL, "%s has no %s to plant over", doc, from);
    char *copy = malloc(strlen(text) + strlen(to) + 1);
    sprintf(copy, "%.*s%s%s", (int)(at - text), text, to, at + strlen(from));
    free(text);
    return copy;
}

/* A stale number planted in a copy of a doc, in a block or in a line, is found;
 * the docs as they are pass. A record's command printing another number fails,
 * one printing only other timings does not. */
START_TEST(stale_numbers_fail) {
    char names[64][64];
    int n_names = record_list("../results", names, 64), used[64] = {0};
    static const struct { const char *doc, *from, *to, *complaint; } plants[] = {
        {"../docs/permutation.md", "4.0e-07  agrees", "3.0e-07  agrees", "results/permutation.txt has no line"},
        {"../README.md", "363 cases pass", "353 cases pass", "\"363 cases\" is not in the line"},
        {"../docs/lengthgen.md", "0.025", "0.040", "results/lengthgen-default.txt has no line"},
    };
    for (size_t i = 0; i < sizeof plants / sizeof *plants; i++) {
        report clean = {{0}, 0}, stale = {{0}, 0};
        char *doc = read_doc(plants[i].doc), *copy = planted_copy(plants[i].doc, plants[i].from, plants[i].to);
        check_results(&clean, "doc", doc, names, n_names, used);
        check_results(&stale, "planted", copy, names, n_names, used);
        ck_assert_msg(clean.problems == 0, "%s", clean.what);
        ck_assert_msg(stale.problems == 1 && strstr(stale.what, plants[i].complaint), "%s: %s -> %s found %d:\n%s",
                      plants[i].doc, plants[i].from, plants[i].to, stale.problems, stale.what);
        free(doc);
        free(copy);
    }
    record rec = {.name = "planted", .command = "./qkv train reverse",
                  .output = "step 50  loss 2.0306  94 steps/s  6033 examples/s\nfinal: loss=0.0001 seconds=3.03\n"};
    ck_assert_ptr_null(record_compare(&rec, "step 50  loss 2.0306  12.5 steps/s  799 examples/s\n"
                                            "final: loss=0.0001 seconds=17.9\n"));
    ck_assert_ptr_nonnull(record_compare(&rec, "step 50  loss 2.0307  94 steps/s  6033 examples/s\n"
                                               "final: loss=0.0001 seconds=3.03\n"));
    ck_assert_ptr_nonnull(record_compare(&rec, "step 50  loss 2.0306  94 steps/s  6033 examples/s\n"
                                               "final: loss=0.0001 seconds=3.03\nanother line\n"));
}
END_TEST

Suite *suite_docs(void) {
    Suite *s = suite_create("docs");
    TCase *tc = tcase_create("docs");
    tcase_set_timeout(tc, 0);
    tcase_add_test(tc, names_in_docs_exist);
    tcase_add_test(tc, doc_numbers_match_their_records);
    tcase_add_test(tc, readme_c_example_is_example_c);
    tcase_add_test(tc, stale_names_fail);
    tcase_add_test(tc, stale_numbers_fail);
    suite_add_tcase(s, tc);
    /* A case of its own, so that `make results` runs it alone (CK_RUN_CASE). */
    TCase *results = tcase_create("results");
    tcase_set_timeout(results, 0);
    tcase_add_test(results, records_print_what_they_recorded);
    suite_add_tcase(s, results);
    return s;
}
