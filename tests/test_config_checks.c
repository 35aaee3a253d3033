/* test_config_checks.c — a checkpoint's config passes the same checks as flags
 * (docs/reliability.md). For one committed checkpoint of every task
 * (tests/ref/tasks/), every key of its config description is rewritten to
 * boundary values (the range's ends and one beyond, 0, 1, small numbers that
 * break a combination: 3 heads of a width of 16, a width of 63 that 2-D positions
 * cannot split, an image size of 33 that no patch divides, a vocabulary of 0 or
 * 1), every name a CHOICE takes and one it does not, NaN and negative numbers,
 * empty and missing paths. The values come from the task's field table, so a key
 * added later is covered without a line here. `qkv eval` of each file (and
 * `qkv detect`, `qkv sample`, `qkv attn` where they apply) must end with exit
 * status 0 (a value the model takes) or 2 with one line on stderr; never a
 * signal, never a programmer-error stop (SIGABRT).
 *
 * Also: the field tables of the trainer and the experiments describe every member
 * of their structs (qkv_fields_cover), and the check can fail; every row of a
 * shared setting (train/settings.h) in any table (trainer, tasks, experiments,
 * commands) is that setting, its range at most narrowed, and no source writes a
 * shared flag anywhere but train/settings.h.
 */
#include "tests/test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include <glob.h>

#include "cli/commands.h"
#include "core/io/png.h"
#include "core/io/safetensors.h"
#include "cli/args.h"
#include "train/checkpoint.h"
#include "train/experiments/experiments.h"
#include "train/tasks/detect.h"
#include "train/tasks/registry.h"
#include "train/settings.h"
#include "train/trainer_fields.h"

#define FIXTURES "ref/tasks"
#define MAX_VALUES 24

/* The values a row's key is rewritten to; how many. */
static int mutations(const qkv_field *f, char values[MAX_VALUES][48]) {
    int n = 0;
    switch (f->kind) {
    case QKV_FIELD_INT: case QKV_FIELD_LONG: {
        static const char *const small[] = {"0", "1", "3", "33", "63", "-1", "x"};
        snprintf(values[n++], 48, "%.0f", f->min - 1);
        snprintf(values[n++], 48, "%.0f", f->max + 1);
        for (size_t i = 0; i < sizeof small / sizeof small[0]; i++) snprintf(values[n++], 48, "%s", small[i]);
        break;
    }
    case QKV_FIELD_FLOAT: {
        static const char *const odd[] = {"-1", "nan", "inf", "0", "1e30"};
        for (size_t i = 0; i < sizeof odd / sizeof odd[0]; i++) snprintf(values[n++], 48, "%s", odd[i]);
        snprintf(values[n++], 48, "%g", f->max * 2 + 1);
        break;
    }
    case QKV_FIELD_CHOICE:
        for (int c = 0; f->choices[c] && n < MAX_VALUES - 1; c++) snprintf(values[n++], 48, "%s", f->choices[c]);
        snprintf(values[n++], 48, "nosuch");
        break;
    case QKV_FIELD_SEED:
        snprintf(values[n++], 48, "-1");
        snprintf(values[n++], 48, "18446744073709551615");
        break;
    case QKV_FIELD_HASH:
        snprintf(values[n++], 48, "%s", "0000000000000000");
        snprintf(values[n++], 48, "%s", "ffffffffffffffff");
        snprintf(values[n++], 48, "%s", "0123456789ABCDEF");
        snprintf(values[n++], 48, "%s", "123");
        snprintf(values[n++], 48, "%s", "x");
        break;
    case QKV_FIELD_TEXT:
        snprintf(values[n++], 48, "%s", "");
        snprintf(values[n++], 48, "/nonexistent/qkv");
        snprintf(values[n++], 48, "garbage 1 2 3");
        break;
    default: break;
    }
    int kept = 0;   /* each value once */
    for (int i = 0; i < n; i++) {
        int seen = 0;
        for (int j = 0; j < kept; j++) seen |= strcmp(values[i], values[j]) == 0;
        if (!seen) memmove(values[kept++], values[i], 48);
    }
    return kept;
}

/* A copy of the checkpoint at src with metadata key set to value, at dst. */
static void write_mutated(const char *src, const char *dst, const char *key, const char *value) {
    qkv_safetensors st;
    ck_assert_msg(qkv_safetensors_load(src, &st) == 0, "%s", qkv_last_error());
    qkv_st_meta *meta = malloc((size_t)st.n_meta * sizeof *meta);
    int found = 0;
    for (int i = 0; i < st.n_meta; i++) {
        meta[i] = st.meta[i];
        if (strcmp(meta[i].key, key) == 0) meta[i].value = value, found = 1;
    }
    ck_assert_msg(found, "%s has no %s", src, key);
    ck_assert_int_eq(qkv_safetensors_save(dst, st.n_tensors, st.tensors, st.n_meta, meta), 0);
    free(meta);
    qkv_safetensors_free(&st);
}

/* Runs qkv args; fails unless it exits 0, or 2 with one line on stderr. */
static void expect_clean_end(const char *args, const char *what) {
    char err[512];
    snprintf(err, sizeof err, "%s", scratch_file("err.txt"));
    int status = wait_qkv(spawn_qkv(args, NULL, 0, err));
    ck_assert_msg(WIFEXITED(status), "%s: qkv %s: killed by signal %d", what, args,
                  WIFSIGNALED(status) ? WTERMSIG(status) : 0);
    int code = WEXITSTATUS(status);
    size_t len;
    unsigned char *text = read_file_bytes(err, &len);
    int lines = 0;
    for (size_t i = 0; i < len; i++) lines += text[i] == '\n';
    ck_assert_msg(code == 0 || (code == 2 && lines == 1 && len > 5 && memcmp(text, "qkv ", 4) == 0),
                  "%s: qkv %s: exit %d, stderr: %.*s", what, args, code, (int)(len < 300 ? len : 300), (const char *)text);
    free(text);
}

/* The checkpoint of fixture `name`: every key of its description, every value. */
static void mutate_every_key(const char *name) {
    char src[128], args[1600], what[320];
    snprintf(src, sizeof src, FIXTURES "/%s.safetensors", name);
    qkv_task_checkpoint ckpt;
    ck_assert_msg(qkv_task_checkpoint_open(src, NULL, &ckpt) == 0, "%s", qkv_last_error());
    const qkv_task_kind *kind = ckpt.kind;
    char dst[512], image[512], attn_png[512];   /* scratch_file's buffer is reused */
    snprintf(dst, sizeof dst, "%s", scratch_file("mutated.safetensors"));
    snprintf(image, sizeof image, "%s", scratch_file("image.png"));
    snprintf(attn_png, sizeof attn_png, "%s", scratch_file("attn.png"));
    int size = 0;
    if (kind == &qkv_task_kind_detect) {   /* an image of the model's size for `qkv detect` */
        size = ((const qkv_detect_task_config *)ckpt.config)->model.image_size;
        unsigned char *pixels = calloc((size_t)size * size * 3, 1);
        ck_assert_int_eq(qkv_png_write(image, pixels, size, size, 3), 0);
        free(pixels);
    }
    int cases = 0;
    for (int i = 0; i < kind->n_fields; i++) {
        const qkv_field *f = &kind->fields[i];
        if (!f->key || f->kind == QKV_FIELD_FLAG || f->kind == QKV_FIELD_POINTER) continue;
        char key[64], values[MAX_VALUES][48];
        snprintf(key, sizeof key, "config.%s", f->key);
        if (!qkv_config_get(ckpt.file.config, f->key)) continue;   /* an OPTIONAL key this checkpoint leaves out */
        int n = mutations(f, values);
        for (int v = 0; v < n; v++, cases++) {
            write_mutated(src, dst, key, values[v]);
            snprintf(what, sizeof what, "%.31s with %.63s = \"%.47s\"", name, key, values[v]);
            snprintf(args, sizeof args, "eval %s --threads 1", dst);
            expect_clean_end(args, what);
            if (kind == &qkv_task_kind_detect) {
                snprintf(args, sizeof args, "detect %s %s --threads 1", dst, image);
                expect_clean_end(args, what);
            } else if (kind == &qkv_task_kind_text) {
                snprintf(args, sizeof args, "sample %s --tokens 2 --threads 1", dst);
                expect_clean_end(args, what);
            } else if (kind->create == qkv_task_kind_reverse.create) {
                snprintf(args, sizeof args, "attn %s --input 1 --out %s", dst, attn_png);
                expect_clean_end(args, what);
            }
        }
    }
    ck_assert_int_gt(cases, 10);
    qkv_task_checkpoint_close(&ckpt);
}

/* One fixture per task kind: the test covers every kind of the registry. */
static const char *const fixtures[] = {"reverse", "copy", "sort", "points", "maxreg", "spirals", "detect", "text"};

START_TEST(hostile_config_values_end_cleanly) {
    scratch_dir_create();
    mutate_every_key(fixtures[_i]);
    scratch_dir_remove();
}
END_TEST

START_TEST(every_task_kind_has_a_fixture_here) {
    for (int k = 0; k < qkv_task_kind_count(); k++) {
        int found = 0;
        for (size_t i = 0; i < sizeof fixtures / sizeof fixtures[0]; i++)
            found |= strcmp(fixtures[i], qkv_task_kind_at(k)->name) == 0;
        ck_assert_msg(found, "task %s has no fixture in test_config_checks.c", qkv_task_kind_at(k)->name);
    }
}
END_TEST

/* ---- numbers, keys and optimizer state as strict as flags ------------------------------------ */

/* A copy of the checkpoint at src with metadata key set to value (added when the
 * file has no such key; value NULL: the key removed), at dst. */
static void write_with(const char *src, const char *dst, const char *key, const char *value) {
    qkv_safetensors st;
    ck_assert_msg(qkv_safetensors_load(src, &st) == 0, "%s", qkv_last_error());
    qkv_st_meta *meta = malloc((size_t)(st.n_meta + 1) * sizeof *meta);
    int n = 0, found = 0;
    for (int i = 0; i < st.n_meta; i++) {
        int here = strcmp(st.meta[i].key, key) == 0;
        found |= here;
        if (here && !value) continue;
        meta[n] = st.meta[i];
        if (here) meta[n].value = value;
        n++;
    }
    if (!found && value) meta[n++] = (qkv_st_meta){key, value};
    ck_assert_int_eq(qkv_safetensors_save(dst, st.n_tensors, st.tensors, n, meta), 0);
    free(meta);
    qkv_safetensors_free(&st);
}

/* What every reader of a checkpoint goes through (eval, sample, attn, detect
 * and, for the header, --resume): -1 with an error containing want. */
static void expect_open_refuses(const char *path, const char *want, const char *what) {
    qkv_task_checkpoint ckpt;
    int rc = qkv_task_checkpoint_open(path, NULL, &ckpt);
    if (rc == 0) qkv_task_checkpoint_close(&ckpt);
    ck_assert_msg(rc == -1, "%s: accepted", what);
    ck_assert_msg(strstr(qkv_last_error(), want) && !strchr(qkv_last_error(), '\n'), "%s: %s", what,
                  qkv_last_error());
}

/* The flag row of f refuses text, as the checkpoint's reader does. */
static int flag_refuses(const qkv_field *f, const char *text) {
    unsigned char config[4096] = {0};
    qkv_arg arg;
    if (qkv_args_from_fields(f, 1, config, &arg) != 1) return 1;   /* no flag: nothing to compare */
    char *argv[] = {(char *)f->flag, (char *)text};
    FILE *saved = stderr;
    stderr = fopen("/dev/null", "w");   /* the refusal prints its line */
    int rc = qkv_args_parse("test", 2, argv, &arg, 1);
    fclose(stderr);
    stderr = saved;
    return rc == -1;
}

/* Issue 36, finding 4: "+4", " 4", "04", hex were taken from a checkpoint while
 * the flag refused them. For every number of every fixture's config (and the
 * trainer's settings), each such spelling of its own value is refused by the
 * reader, and by the flag. */
START_TEST(checkpoint_numbers_are_as_strict_as_flags) {
    scratch_dir_create();
    char dst[512];
    snprintf(dst, sizeof dst, "%s", scratch_file("loose.safetensors"));
    int cases = 0;
    for (size_t fx = 0; fx < sizeof fixtures / sizeof fixtures[0]; fx++) {
        char src[128];
        snprintf(src, sizeof src, FIXTURES "/%s.safetensors", fixtures[fx]);
        qkv_task_checkpoint ckpt;
        ck_assert_msg(qkv_task_checkpoint_open(src, NULL, &ckpt) == 0, "%s", qkv_last_error());
        for (int table = 0; table < 2; table++) {
            const qkv_field *fields = table ? qkv_trainer_fields : ckpt.kind->fields;
            int n = table ? qkv_trainer_n_fields : ckpt.kind->n_fields;
            const qkv_config_kv *kv = table ? ckpt.file.settings : ckpt.file.config;
            for (int i = 0; i < n; i++) {
                const qkv_field *f = &fields[i];
                const char *value = f->key ? qkv_config_get(kv, f->key) : NULL;
                if (!value || (f->kind != QKV_FIELD_INT && f->kind != QKV_FIELD_LONG && f->kind != QKV_FIELD_FLOAT &&
                               f->kind != QKV_FIELD_SEED))
                    continue;
                char loose[5][QKV_CONFIG_VALUE_LEN + 4], key[64], what[QKV_CONFIG_VALUE_LEN + 160];
                snprintf(loose[0], sizeof loose[0], "+%s", value);
                snprintf(loose[1], sizeof loose[0], " %s", value);
                snprintf(loose[2], sizeof loose[0], "%s ", value);
                snprintf(loose[3], sizeof loose[0], "0%s", value);
                snprintf(loose[4], sizeof loose[0], "%s", f->kind == QKV_FIELD_FLOAT ? "0x1p-3" : "0x1");
                snprintf(key, sizeof key, "%s.%s", table ? "train" : "config", f->key);
                for (int l = 0; l < 5; l++, cases++) {
                    if (value[0] == '-' && l == 3) continue;
                    snprintf(what, sizeof what, "%s: %s = \"%.200s\"", fixtures[fx], key, loose[l]);
                    write_with(src, dst, key, loose[l]);
                    char want[QKV_CONFIG_VALUE_LEN + 96];
                    snprintf(want, sizeof want, "\"%s\" is \"%.40s\"", f->key, loose[l]);
                    expect_open_refuses(dst, want, what);
                    ck_assert_msg(flag_refuses(f, loose[l]), "%s: the flag %s takes it", what, f->flag);
                }
            }
        }
        qkv_task_checkpoint_close(&ckpt);
    }
    ck_assert_int_gt(cases, 100);
    /* The command line says it the same way: eval, attn, sample, detect. */
    char line[512], args[1200], png[512];
    snprintf(png, sizeof png, "%s", scratch_file("a.png"));
    const char *runs[][3] = {{"reverse", "config.heads", "attn %s --input 1 --out %s"},
                             {"reverse", "config.seed", "eval %s"},
                             {"text", "config.heads", "sample %s --tokens 2"},
                             {"detect", "config.heads", "detect %s %s"},
                             {"spirals", "config.noise", "eval %s"}};
    for (size_t r = 0; r < sizeof runs / sizeof runs[0]; r++) {
        char src[128];
        snprintf(src, sizeof src, FIXTURES "/%s.safetensors", runs[r][0]);
        write_with(src, dst, runs[r][1], strcmp(runs[r][1], "config.noise") == 0 ? "0x1p3" : "+4");
        snprintf(args, sizeof args, runs[r][2], dst, png);
        ck_assert_int_eq(run_qkv(args, line, sizeof line), 2);
        ck_assert_msg(strstr(line, runs[r][1] + 7) && strstr(line, "(expected"), "qkv %s: %s", args, line);
    }
    scratch_dir_remove();
}
END_TEST

/* Issue 36, finding 6: a metadata key no reader knows, in config.*, train.* or
 * at the top, is refused by every reader in one line naming it; so is garbage in
 * the optimizer's kind and step, and an optim.step that is not the checkpoint's
 * step (0 would silently restart Adam's bias correction on --resume). */
START_TEST(unknown_keys_and_bad_optimizer_state_are_refused_by_every_reader) {
    scratch_dir_create();
    char dst[512], line[512], args[1200];
    snprintf(dst, sizeof dst, "%s", scratch_file("odd.safetensors"));
    const char *src = FIXTURES "/reverse.safetensors";   /* step 3, adamw */
    const char *cases[][3] = {
        {"config.colour", "1", "unknown config key \"colour\""},
        {"train.colour", "1", "unknown train key \"colour\""},
        {"colour", "1", "unknown metadata \"colour\""},
        {"optim.kind", "lion", "metadata \"optim.kind\" is \"lion\""},
        {"optim.kind", NULL, "metadata \"optim.kind\" is missing"},
        {"optim.step", "0", "metadata \"optim.step\" is 0, expected 3"},
        {"optim.step", "4", "metadata \"optim.step\" is 4, expected 3"},
        {"optim.step", "+3", "metadata \"optim.step\" is not an integer"},
        {"optim.step", "x", "metadata \"optim.step\" is not an integer"},
        {"step", "03", "metadata \"step\" is not an integer"},
        {"rng.counter", " 0", "metadata \"rng.counter\" is not an integer"},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        write_with(src, dst, cases[c][0], cases[c][1]);
        expect_open_refuses(dst, cases[c][2], cases[c][0]);
        snprintf(args, sizeof args, "eval %s", dst);
        ck_assert_int_eq(run_qkv(args, line, sizeof line), 2);
        ck_assert_msg(strstr(line, cases[c][2]), "qkv %s: %s", args, line);
    }
    /* Without optimizer state, optim.step is 0. */
    qkv_params params = {0};
    qkv_params_new(&params, "w", 1, (int[]){3});
    qkv_config_kv config = {0};
    qkv_config_add(&config, "task", "maxreg");
    ck_assert_int_eq(qkv_checkpoint_save(dst, &params, NULL, 5, NULL, &config, NULL, NULL), 0);
    qkv_checkpoint ckpt;
    ck_assert_msg(qkv_checkpoint_open(dst, &ckpt) == 0, "%s", qkv_last_error());
    ck_assert_int_eq(ckpt.optim_kind, -1);
    qkv_checkpoint_close(&ckpt);
    char other[512];
    snprintf(other, sizeof other, "%s", scratch_file("none.safetensors"));
    write_with(dst, other, "optim.step", "5");
    ck_assert_int_eq(qkv_checkpoint_open(other, &ckpt), -1);
    ck_assert_msg(strstr(qkv_last_error(), "\"optim.step\" is 5, expected 0 (no optimizer state)"), "%s",
                  qkv_last_error());
    qkv_params_free(&params);

    /* --resume: the same refusals, before a step is taken. */
    char ck[512];
    snprintf(ck, sizeof ck, "%s", scratch_file("ck.safetensors"));
    snprintf(args, sizeof args, SMALL_SPIRALS " --steps 2 --save %s", ck);
    ck_assert_int_eq(run_qkv(args, line, sizeof line), 0);
    const char *resume_cases[][3] = {
        {"optim.step", "0", "\"optim.step\" is 0, expected 2"},
        {"train.lr", "0x1p3", "train \"lr\" is \"0x1p3\""},
        {"train.clip", "+4", "train \"clip\" is \"+4\""},
        {"train.warmup", "04", "train \"warmup\" is \"04\""},
        {"train.colour", "1", "unknown train key \"colour\""},
        {"config.colour", "1", "colour"},
    };
    for (size_t c = 0; c < sizeof resume_cases / sizeof resume_cases[0]; c++) {
        write_with(ck, dst, resume_cases[c][0], resume_cases[c][1]);
        snprintf(args, sizeof args, SMALL_SPIRALS " --steps 4 --resume %s", dst);
        ck_assert_int_eq(run_qkv(args, line, sizeof line), 2);
        ck_assert_msg(strstr(line, resume_cases[c][2]), "%s = %s: %s", resume_cases[c][0], resume_cases[c][1], line);
    }
    /* ... and the file as saved resumes. */
    snprintf(args, sizeof args, SMALL_SPIRALS " --steps 4 --resume %s", ck);
    ck_assert_int_eq(run_qkv(args, line, sizeof line), 0);
    scratch_dir_remove();
}
END_TEST

/* ---- the tables cover their structs ------------------------------------------------------ */

START_TEST(trainer_and_experiment_tables_cover_their_structs) {
    char why[256];
    ck_assert_msg(qkv_fields_cover(qkv_trainer_fields, qkv_trainer_n_fields, sizeof(qkv_trainer_config), why,
                                   sizeof why) == 0, "qkv_trainer_config: %s", why);
    ck_assert_msg(qkv_fields_cover(qkv_perm_fields, qkv_perm_n_fields, sizeof(qkv_perm_options), why, sizeof why) == 0,
                  "qkv_perm_options: %s", why);
    ck_assert_msg(qkv_fields_cover(qkv_lengthgen_fields, qkv_lengthgen_n_fields, sizeof(qkv_lengthgen_options), why,
                                   sizeof why) == 0, "qkv_lengthgen_options: %s", why);
}
END_TEST

/* A member without a row, in the middle or at the end, and two rows on one member, are found. */
typedef struct toy { int a; float b; long c; int d; const char *e; int f; } toy;
START_TEST(coverage_check_finds_a_member_without_a_row) {
    qkv_field rows[] = {
        QKV_INT_FIELD("--a", "a", toy, a, 0, 1, 0, "a"), QKV_FLOAT_FIELD("--b", "b", toy, b, 0, 1, 0, "b"),
        QKV_LONG_FIELD("--c", "c", toy, c, 0, 1, 0, "c"), QKV_INT_FIELD("--d", "d", toy, d, 0, 1, 0, "d"),
        QKV_TEXT_FIELD("--e", "e", toy, e, NULL, "e"), QKV_INT_FIELD("--f", "f", toy, f, 0, 1, 0, "f"),
    };
    char why[256];
    ck_assert_int_eq(qkv_fields_cover(rows, 6, sizeof(toy), why, sizeof why), 0);
    ck_assert_int_eq(qkv_fields_cover(rows, 5, sizeof(toy), why, sizeof why), -1);   /* f */
    ck_assert_msg(strstr(why, "a member after it has no row"), "%s", why);
    qkv_field gap[] = {rows[0], rows[1], rows[3], rows[4], rows[5]};   /* c */
    ck_assert_int_eq(qkv_fields_cover(gap, 5, sizeof(toy), why, sizeof why), -1);
    ck_assert_msg(strstr(why, "\"--d\"") && strstr(why, "has no row"), "%s", why);
    qkv_field twice[] = {rows[0], rows[0], rows[1], rows[2], rows[3], rows[4], rows[5]};
    ck_assert_int_eq(qkv_fields_cover(twice, 7, sizeof(toy), why, sizeof why), -1);
    ck_assert_msg(strstr(why, "overlap"), "%s", why);
}
END_TEST

/* ---- shared settings ---------------------------------------------------------------------- */

typedef struct shared_setting {
    const char *flag, *key;
    double lo, hi;
    const char *const *choices;
    const char *help;
} shared_setting;
#define SHARED_ROW(S) {QKV_SETTING_##S},
static const shared_setting shared[] = {QKV_SHARED_SETTINGS(SHARED_ROW)};
#undef SHARED_ROW
#define N_SHARED ((int)(sizeof shared / sizeof shared[0]))

/* What is wrong with a row that carries a shared flag (NULL: nothing, or no
 * shared flag): its key must be the setting's (or none), its choices the
 * setting's, its range within the setting's. */
static const char *shared_row_fault(const qkv_field *f) {
    for (int s = 0; s < N_SHARED && f->flag; s++) {
        if (strcmp(f->flag, shared[s].flag) != 0) continue;
        if (f->key && !(shared[s].key && strcmp(f->key, shared[s].key) == 0)) return "a key not its setting's";
        if (f->choices != shared[s].choices) return "other choices than its setting's";
        if (!(f->min >= shared[s].lo && f->max <= shared[s].hi && f->min <= f->max)) return "a range beyond its setting's";
    }
    return NULL;
}

/* Checks the rows of a table; returns how many carry flag. */
static int check_shared_rows(const char *table, const qkv_field *fields, int n, const char *flag) {
    int found = 0;
    for (int i = 0; i < n; i++) {
        const char *fault = shared_row_fault(&fields[i]);
        ck_assert_msg(!fault, "%s: %s has %s (train/settings.h)", table, fields[i].flag, fault);
        found += fields[i].flag && strcmp(fields[i].flag, flag) == 0;
    }
    return found;
}

/* Every table's rows of every command spec (and its subcommands'). */
static int check_spec_rows(const qkv_command_spec *spec, const char *flag) {
    int found = check_shared_rows(spec->name, spec->fields, spec->n_fields, flag);
    for (int i = 0; spec->subs && spec->subs[i]; i++) found += check_spec_rows(spec->subs[i], flag);
    return found;
}

/* All tables, counting the rows of flag. */
static int check_every_table(const char *flag) {
    int found = check_shared_rows("trainer", qkv_trainer_fields, qkv_trainer_n_fields, flag);
    for (int k = 0; k < qkv_task_kind_count(); k++)
        found += check_shared_rows(qkv_task_kind_at(k)->name, qkv_task_kind_at(k)->fields,
                                   qkv_task_kind_at(k)->n_fields, flag);
    found += check_shared_rows("permutation", qkv_perm_fields, qkv_perm_n_fields, flag);
    found += check_shared_rows("lengthgen", qkv_lengthgen_fields, qkv_lengthgen_n_fields, flag);
#define SPEC_ROWS(fn, under_mpi) found += check_spec_rows(&qkv_command_##fn, flag);
    QKV_COMMANDS(SPEC_ROWS)
#undef SPEC_ROWS
    return found;
}

START_TEST(shared_setting_rows_are_their_settings) {
    /* the walk reaches the rows: --heads in the 7 tasks with attention, both
     * experiments and explain attention, --threads in the trainer, the
     * experiments and 8 commands */
    ck_assert_int_eq(check_every_table("--heads"), 7 + 2 + 1);
    ck_assert_int_eq(check_every_table("--threads"), 1 + 2 + 8);
    /* the check can fail: a row that widens --heads, one with another key */
    typedef struct { int heads; } one;
    const qkv_field wide = QKV_INT_FIELD("--heads", "heads", one, heads, 1, 4096, 4, "attention heads");
    const qkv_field renamed = QKV_INT_FIELD("--heads", "n_heads", one, heads, 1, 64, 4, "attention heads");
    const qkv_field narrowed = QKV_SETTING_FIELD_IN(QKV_FIELD_INT, QKV_SETTING_HEADS, one, heads, 4, 1, 64);
    ck_assert_ptr_nonnull(shared_row_fault(&wide));
    ck_assert_ptr_nonnull(shared_row_fault(&renamed));
    ck_assert_ptr_null(shared_row_fault(&narrowed));
}
END_TEST

/* A shared flag ("--heads" with its quotes) is written in train/settings.h only. */
START_TEST(shared_flags_are_written_once) {
    static const char *const globs[] = {"../cli/*.[ch]", "../train/*.[ch]", "../train/*/*.[ch]", "../web/*.c", NULL};
    glob_t files;
    for (int g = 0; globs[g]; g++) glob(globs[g], g ? GLOB_APPEND : 0, NULL, &files);
    ck_assert_int_gt((int)files.gl_pathc, 50);
    for (int s = 0; s < N_SHARED; s++) {
        char quoted[64];
        snprintf(quoted, sizeof quoted, "\"%s\"", shared[s].flag);
        int written = 0;
        for (size_t f = 0; f < files.gl_pathc; f++) {
            size_t len;
            char *text = (char *)read_file_bytes(files.gl_pathv[f], &len);
            text[len] = '\0';
            int here = 0;
            for (const char *p = text; (p = strstr(p, quoted)); p++) here++;
            ck_assert_msg(!here || strstr(files.gl_pathv[f], "train/settings.h"),
                          "%s writes %s: embed QKV_SETTING_ rows (train/settings.h) instead", files.gl_pathv[f], quoted);
            written += here;
            free(text);
        }
        ck_assert_msg(written == 1, "%s is written %d times in train/settings.h", quoted, written);
    }
    globfree(&files);
}
END_TEST

Suite *suite_config_checks(void) {
    Suite *s = suite_create("config_checks");
    TCase *tc = tcase_create("config_checks");
    tcase_set_timeout(tc, 0);
    tcase_add_loop_test(tc, hostile_config_values_end_cleanly, 0, (int)(sizeof fixtures / sizeof fixtures[0]));
    tcase_add_test(tc, every_task_kind_has_a_fixture_here);
    tcase_add_test(tc, checkpoint_numbers_are_as_strict_as_flags);
    tcase_add_test(tc, unknown_keys_and_bad_optimizer_state_are_refused_by_every_reader);
    tcase_add_test(tc, trainer_and_experiment_tables_cover_their_structs);
    tcase_add_test(tc, coverage_check_finds_a_member_without_a_row);
    tcase_add_test(tc, shared_setting_rows_are_their_settings);
    tcase_add_test(tc, shared_flags_are_written_once);
    suite_add_tcase(s, tc);
    return s;
}
