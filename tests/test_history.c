/* test_history.c — a run's record (train/history.h): rows and metric columns, the
 * CSV it writes and reads back, and a training run's --csv with every metric. */
#include "tests/test_util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "train/history.h"
#include "core/kernels/isa.h"
#include "core/version.h"
#include "train/trainer_fields.h"

static qkv_metrics two_metrics(double a, double b) {
    qkv_metrics m = {0};
    qkv_metrics_set(&m, "token_acc", a);
    qkv_metrics_set(&m, "seq_acc", b);
    return m;
}

/* Metrics get a column each, in the order they appear; a row without them has
 * empty cells; the final evaluation of a logged step fills that step's row. */
START_TEST(rows_and_columns) {
    qkv_history h = {0};
    qkv_metrics m = two_metrics(0.5, 0.25), last = two_metrics(0.75, 0.5);
    qkv_history_add(&h, 1, 2.5, 0.01, 0.1, NULL);
    qkv_history_add(&h, 10, 2.0, 0.01, 0.5, &m);
    qkv_history_add(&h, 20, 1.5, 0.005, 1.0, NULL);
    qkv_history_add(&h, 20, 9.0, 9.0, 9.0, &last); /* the final evaluation: the same row */
    ck_assert_int_eq(h.n, 3);
    ck_assert_int_eq(h.n_keys, 2);
    ck_assert(isnan(h.metric[0][0]) && h.metric[1][1] == 0.25 && h.metric[0][2] == 0.75);
    ck_assert(h.loss[2] == 1.5); /* the logged values stay */
    ck_assert_str_eq(qkv_history_loss_title(&h), "train loss (nats)");   /* accuracies only: no held-out loss */
    char *csv = qkv_history_csv(&h, 1);
    ck_assert_str_eq(csv, "step,loss,lr,seconds,token_acc,seq_acc\n"
                          "1,2.5,0.01,0.100,,\n"
                          "10,2,0.01,0.500,0.5,0.25\n"
                          "20,1.5,0.005,1.000,0.75,0.5\n");
    /* Read back, up to a step: a resumed run's history. */
    qkv_history back = {0};
    ck_assert_int_eq(qkv_history_parse(&back, csv, 10, "ck"), 0);
    ck_assert_int_eq(back.n, 2);
    ck_assert_int_eq(back.n_keys, 2);
    ck_assert_str_eq(back.key[1], "seq_acc");
    ck_assert(back.metric[0][1] == 0.5 && isnan(back.metric[1][0]));
    qkv_history_add(&back, 20, 1.5, 0.005, 1.0, &last);
    char *again = qkv_history_csv(&back, 1);
    ck_assert_str_eq(again, csv);
    free(again);
    free(csv);
    qkv_history_free(&back);
    qkv_metrics val = {0};   /* a held-out loss (text's val_loss) is drawn beside the train loss */
    qkv_metrics_set(&val, "val_loss", 1.25);
    qkv_history_add(&h, 30, 1.0, 0.005, 2.0, &val);
    ck_assert_str_eq(qkv_history_loss_title(&h), "loss (train and held-out, nats)");
    qkv_history_free(&h);
}
END_TEST

/* A checkpoint's history is input: anything malformed is one error naming it. */
START_TEST(malformed_history_is_refused) {
    static const char *const bad[] = {
        "",                                          /* no header */
        "step,loss\n",                               /* a column short */
        "step,loss,seconds\n",                       /* a column out of place */
        "step,loss,rate,seconds\n",                  /* a wrong column */
        "step,loss,lr,seconds,acc,acc\n",            /* a key twice */
        "step,loss,lr,seconds\n1,2,3\n",             /* a cell short */
        "step,loss,lr,seconds\n1,2,3,4,5\n",         /* a cell too many */
        "step,loss,lr,seconds\n1,x,3,4\n",           /* not a number */
        "step,loss,lr,seconds\n1,inf,3,4\n",         /* not finite */
        "step,loss,lr,seconds\n2,1,1,1\n1,1,1,1\n",  /* out of order */
        "step,loss,lr,seconds\n,1,1,1\n",            /* no step */
        "step,loss,lr,seconds\n1,1,1,1",             /* no final newline */
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        qkv_history h = {0};
        ck_assert_msg(qkv_history_parse(&h, bad[i], 100, "ck.safetensors") == -1, "accepted case %zu", i);
        ck_assert_msg(strncmp(qkv_last_error(), "ck.safetensors: ", 16) == 0, "%s", qkv_last_error());
        ck_assert_int_eq(h.n, 0);
        qkv_history_free(&h);
    }
}
END_TEST

/* `train reverse --csv`: a column per metric, filled at every evaluation and at
 * the end; the progress lines show metrics only when they were evaluated. */
START_TEST(csv_has_every_metric) {
    scratch_dir_create();
    char command[1024], line[512];
    char csv[256], json[256];
    snprintf(csv, sizeof csv, "%s", scratch_file("run.csv"));
    snprintf(json, sizeof json, "%s", scratch_file("run.json"));
    snprintf(command, sizeof command,
             "%s train reverse --steps 6 --eval-every 4 --log-every 1 --test-size 16 --threads 1 --csv %s --json %s",
             qkv_binary(), csv, json);
    FILE *p = popen(command, "r");
    ck_assert_ptr_nonnull(p);
    int lines = 0;
    while (fgets(line, sizeof line, p)) {
        if (strncmp(line, "step ", 5) != 0) continue;
        long step = strtol(line + 5, NULL, 10);
        int has_metric = strstr(line, "seq_acc") != NULL;
        ck_assert_msg(has_metric == (step == 4), "%s", line); /* step 6: the final line has them */
        ck_assert_msg(strstr(line, " examples/s"), "%s", line);
        lines++;
    }
    ck_assert_int_eq(pclose(p), 0);
    ck_assert_int_eq(lines, 6);
    size_t len;
    char *text = (char *)read_file_bytes(csv, &len);
    text[len] = '\0';
    ck_assert_msg(strncmp(text, "step,loss,lr,seconds,token_acc,seq_acc\n", 39) == 0, "%s", text);
    char *row4 = strstr(text, "\n4,"), *row5 = strstr(text, "\n5,"), *row6 = strstr(text, "\n6,");
    ck_assert(row4 && row5 && row6);
    ck_assert_msg(strstr(row5, ",,\n") == strchr(row5 + 1, '\n') - 2, "%s", text); /* not evaluated */
    ck_assert_msg(row4[strcspn(row4 + 1, "\n")] != ',', "%s", text);            /* evaluated */
    ck_assert_msg(row6[strlen(row6) - 2] != ',', "%s", text);                       /* the final evaluation */
    free(text);
    /* The --json summary holds the same table. */
    text = (char *)read_file_bytes(json, &len);
    text[len] = '\0';
    ck_assert_msg(strstr(text, "\"history\": {\"columns\": [\"step\", \"loss\", \"lr\", \"seconds\", \"token_acc\", "
                               "\"seq_acc\"], \"rows\": [[1, "), "%s", text);
    ck_assert_msg(strstr(text, ", null, null], [6, "), "%s", text); /* step 5: not evaluated */
    free(text);
    scratch_dir_remove();
}
END_TEST

/* A resumed run's CSV covers the whole run, the same rows as an uninterrupted
 * run's but the seconds (those of the first part are not kept: a checkpoint's
 * bytes must not depend on the clock), and its checkpoint is the same bytes. */
START_TEST(resumed_history_covers_the_whole_run) {
    scratch_dir_create();
    char args[1024], line[512], ck[256], whole_ck[256], whole[256], resumed[256];
    snprintf(ck, sizeof ck, "%s", scratch_file("half.st"));
    snprintf(whole_ck, sizeof whole_ck, "%s", scratch_file("whole.st"));
    snprintf(whole, sizeof whole, "%s", scratch_file("whole.csv"));
    snprintf(resumed, sizeof resumed, "%s", scratch_file("resumed.csv"));
#define RUN "train spirals --hidden 8 --batch 16 --points 50 --schedule constant --warmup 0 --target 0 " \
            "--threads 1 --quiet --log-every 3 --eval-every 4"
    snprintf(args, sizeof args, RUN " --steps 10 --save %s", ck);
    ck_assert_int_eq(run_qkv(args, line, sizeof line), 0);
    snprintf(args, sizeof args, RUN " --steps 20 --resume %s --save %s --csv %s", ck, ck, resumed);
    ck_assert_int_eq(run_qkv(args, line, sizeof line), 0);
    snprintf(args, sizeof args, RUN " --steps 20 --save %s --csv %s", whole_ck, whole);
    ck_assert_int_eq(run_qkv(args, line, sizeof line), 0);
#undef RUN
    size_t na, nb;
    unsigned char *a = read_file_bytes(ck, &na), *b = read_file_bytes(whole_ck, &nb);
    ck_assert_msg(na == nb && memcmp(a, b, na) == 0, "the resumed run's checkpoint differs");
    free(a);
    free(b);
    qkv_history h[2] = {{0}, {0}};
    const char *paths[2] = {whole, resumed};
    for (int i = 0; i < 2; i++) {
        size_t len;
        char *text = (char *)read_file_bytes(paths[i], &len);
        text[len] = '\0';
        ck_assert_int_eq(qkv_history_parse(&h[i], text, 1000, paths[i]), 0);
        free(text);
    }
    ck_assert_int_eq(h[0].n, h[1].n); /* 1 3 4 6 8 9 12 15 16 18 20 */
    ck_assert_int_eq(h[0].n, 11);
    for (int r = 0; r < h[0].n; r++) {
        ck_assert(h[0].step[r] == h[1].step[r] && h[0].loss[r] == h[1].loss[r] && h[0].lr[r] == h[1].lr[r]);
        for (int k = 0; k < h[0].n_keys; k++)
            ck_assert(h[0].metric[k][r] == h[1].metric[k][r] || (isnan(h[0].metric[k][r]) && isnan(h[1].metric[k][r])));
        ck_assert(isnan(h[1].seconds[r]) == (h[1].step[r] <= 10)); /* the first part's seconds are not kept */
    }
    qkv_history_free(&h[0]);
    qkv_history_free(&h[1]);
    scratch_dir_remove();
}
END_TEST

/* --save-weights-only: a smaller file that evaluates and refuses to resume; the
 * final line and the checkpoint line say the size. */
START_TEST(weights_only_checkpoints) {
    scratch_dir_create();
    char args[1024], line[512], full[256], small[256];
    snprintf(full, sizeof full, "%s", scratch_file("full.st"));
    snprintf(small, sizeof small, "%s", scratch_file("small.st"));
    snprintf(args, sizeof args, SMALL_SPIRALS " --steps 5 --save %s", full);
    ck_assert_int_eq(run_qkv(args, line, sizeof line), 0);
    snprintf(args, sizeof args, SMALL_SPIRALS " --steps 5 --save %s --save-weights-only", small);
    ck_assert_int_eq(run_qkv(args, line, sizeof line), 0);
    struct stat a, b;
    ck_assert(stat(full, &a) == 0 && stat(small, &b) == 0);
    ck_assert_msg(b.st_size < a.st_size, "%ld vs %ld bytes", (long)b.st_size, (long)a.st_size);
    snprintf(args, sizeof args, "eval %s", small);
    ck_assert_int_eq(run_qkv(args, line, sizeof line), 0);
    snprintf(args, sizeof args, SMALL_SPIRALS " --steps 9 --resume %s", small);
    ck_assert_int_eq(run_qkv(args, line, sizeof line), 2);
    ck_assert_msg(strstr(line, "holds the parameters only (saved with --save-weights-only): it evaluates, it cannot resume"),
                  "%s", line);
    /* The sizes are said: after each save, and in the final line. */
    char command[1024], out[512];
    snprintf(command, sizeof command, "%s " SMALL_SPIRALS " --steps 5 --save %s", qkv_binary(), full);
    char *quiet = strstr(command, " --quiet");
    memmove(quiet, quiet + 8, strlen(quiet + 8) + 1);
    FILE *p = popen(command, "r");
    int said = 0, final = 0;
    while (fgets(out, sizeof out, p)) {
        said |= strstr(out, "checkpoint ") == out && strstr(out, " MB: parameters ") && strstr(out, "optimizer state");
        final |= strstr(out, "final: ") == out && strstr(out, " checkpoint_mb=") != NULL;
    }
    ck_assert_int_eq(pclose(p), 0);
    ck_assert(said && final);
    scratch_dir_remove();
}
END_TEST

/* --resume goes on with the checkpoint's settings: a setting is named as changed
 * only when the command line gave its flag (the warmup a shorter run clamped to 0
 * is not), and a checkpoint of another run names every difference in one line. */
START_TEST(resume_names_only_what_the_user_changed) {
    scratch_dir_create();
    char args[1024], line[512], ck[256];
    snprintf(ck, sizeof ck, "%s", scratch_file("ck.st"));
#define REV "train reverse --dim 16 --heads 2 --ff 32 --layers 1 --batch 16 --test-size 16 --threads 1 --quiet"
    snprintf(args, sizeof args, REV " --steps 20 --save %s", ck); /* warmup 100 >= 20 steps: 0 in this run */
    ck_assert_int_eq(run_qkv(args, line, sizeof line), 0);
    snprintf(args, sizeof args, REV " --steps 30 --resume %s", ck);
    ck_assert_int_eq(run_qkv(args, line, sizeof line), 0);
    ck_assert_msg(line[0] == '\0', "said: %s", line); /* nothing on stderr */
    snprintf(args, sizeof args, REV " --steps 30 --lr 0.01 --resume %s", ck);
    ck_assert_int_eq(run_qkv(args, line, sizeof line), 0);
    ck_assert_msg(strstr(line, "changed settings: --lr 0.01 (the checkpoint's run: 0.02); the run goes on"), "%s", line);
    ck_assert_ptr_null(strstr(line, "--warmup"));
    snprintf(args, sizeof args,
             "train reverse --dim 32 --heads 4 --ff 32 --layers 1 --batch 16 --test-size 16 --threads 1 --quiet "
             "--steps 30 --resume %s", ck);
    ck_assert_int_eq(run_qkv(args, line, sizeof line), 2);
    ck_assert_msg(strstr(line, "a checkpoint of another run: heads is \"2\" there, 4 here; dim is \"16\" there, 32 here"),
                  "%s", line);
#undef REV
    scratch_dir_remove();
}
END_TEST

/* The --json record of a run: this qkv's version and instruction-set path, every
 * setting of the trainer's field table (so a row added later is in it without a
 * line here), and "resumed": null. Resumed with --csv where the first part wrote
 * its CSV, with another --lr: the record names the checkpoint, its step, the
 * seconds the first part took and the changed lr; the CSV's seconds are the first
 * part's up to the resume and go on from there (no empty cell, no restart at 0).
 * A CSV of another run there is not taken: its seconds stay unknown (null). */
START_TEST(json_records_the_run_and_seconds_go_on_across_a_resume) {
    scratch_dir_create();
    char args[1024], line[512], ck[256], csv[256], json[256], first[256], other[256];
    snprintf(ck, sizeof ck, "%s", scratch_file("ck.st"));
    snprintf(csv, sizeof csv, "%s", scratch_file("run.csv"));
    snprintf(json, sizeof json, "%s", scratch_file("run.json"));
    snprintf(first, sizeof first, "%s", scratch_file("first.csv"));
    snprintf(other, sizeof other, "%s", scratch_file("other.csv"));
#define RUN "train spirals --hidden 8 --batch 16 --points 50 --schedule constant --warmup 0 --target 0 " \
            "--threads 1 --quiet --log-every 3 --eval-every 4"
    snprintf(args, sizeof args, RUN " --steps 10 --save %s --csv %s --json %s", ck, csv, json);
    /* the run on this process's path: under valgrind, whose CPUID hides AVX-512,
     * this process takes avx2 while ./qkv outside it would take avx512 */
    const char *forced = getenv("QKV_ISA");
    char before[32];
    snprintf(before, sizeof before, "%s", forced ? forced : "");
    setenv("QKV_ISA", qkv_isa_name(), 1);
    int ran = run_qkv(args, line, sizeof line);
    if (forced) setenv("QKV_ISA", before, 1);
    else unsetenv("QKV_ISA");
    ck_assert_int_eq(ran, 0);
    size_t len;
    char *text = (char *)read_file_bytes(json, &len);
    text[len] = '\0';
    char want[768];
    snprintf(want, sizeof want, "\"qkv_version\": \"%s\", \"isa\": \"%s\", \"settings\": {\"steps\": 10, ", QKV_VERSION,
             qkv_isa_name());
    ck_assert_msg(strstr(text, want), "%s lacks %s", text, want);
    for (int i = 0; i < qkv_trainer_n_fields; i++) {
        const qkv_field *f = &qkv_trainer_fields[i];
        if (f->kind == QKV_FIELD_TEXT || f->kind == QKV_FIELD_FLAG || f->kind == QKV_FIELD_POINTER) continue;
        if (!f->key && !f->flag) continue;
        snprintf(want, sizeof want, "\"%s\": ", f->key ? f->key : f->flag + 2);
        for (char *c = want; *c; c++) *c = *c == '-' ? '_' : *c;
        ck_assert_msg(strstr(text, want), "the record lacks the setting %s: %s", want, text);
    }
    ck_assert_msg(strstr(text, "\"lr\": 0.1, \"optimizer\": \"sgd\"") && strstr(text, "\"resumed\": null"), "%s", text);
    free(text);
    rename(csv, first);   /* kept to compare; the resume finds a copy where it writes */
    char *first_text = (char *)read_file_bytes(first, &len);
    write_file_bytes(csv, first_text, len);
    snprintf(args, sizeof args, RUN " --steps 20 --lr 0.05 --resume %s --csv %s --json %s", ck, csv, json);
    ck_assert_int_eq(run_qkv(args, line, sizeof line), 0);
    qkv_history h[2] = {{0}, {0}};
    const char *paths[2] = {first, csv};
    for (int i = 0; i < 2; i++) {
        char *t = (char *)read_file_bytes(paths[i], &len);
        t[len] = '\0';
        ck_assert_int_eq(qkv_history_parse(&h[i], t, 1000, paths[i]), 0);
        free(t);
    }
    double at_checkpoint = NAN;
    for (int r = 0; r < h[0].n; r++) at_checkpoint = h[0].step[r] <= 10 ? h[0].seconds[r] : at_checkpoint;
    for (int r = 0; r < h[1].n; r++) {
        ck_assert_msg(!isnan(h[1].seconds[r]), "step %g has no seconds", h[1].step[r]);
        if (r) ck_assert(h[1].seconds[r] >= h[1].seconds[r - 1]);
        if (h[1].step[r] <= 10) ck_assert(h[1].seconds[r] == h[0].seconds[r]);   /* the first part's */
        else ck_assert(h[1].seconds[r] >= at_checkpoint);                       /* going on from there */
    }
    text = (char *)read_file_bytes(json, &len);
    text[len] = '\0';
    snprintf(want, sizeof want, "\"resumed\": {\"checkpoint\": \"%s\", \"step\": 10, \"seconds_before\": %.3f, "
             "\"changed\": {\"lr\": {\"now\": 0.05, \"checkpoint\": 0.1}}}", ck, at_checkpoint);
    ck_assert_msg(strstr(text, want), "%s lacks %s", text, want);
    ck_assert_msg(strstr(text, "\"settings\": {\"steps\": 20, \"lr\": 0.05, "), "%s", text);
    free(text);
    /* Another run's CSV at --csv: its rows are not this run's, so nothing is taken. */
    snprintf(args, sizeof args, RUN " --steps 10 --seed 2 --csv %s", other);
    ck_assert_int_eq(run_qkv(args, line, sizeof line), 0);
    snprintf(args, sizeof args, RUN " --steps 20 --resume %s --csv %s --json %s", ck, other, json);
    ck_assert_int_eq(run_qkv(args, line, sizeof line), 0);
    text = (char *)read_file_bytes(json, &len);
    text[len] = '\0';
    ck_assert_msg(strstr(text, "\"step\": 10, \"seconds_before\": null, \"changed\": {}}"), "%s", text);
    free(text);
#undef RUN
    free(first_text);
    qkv_history_free(&h[0]);
    qkv_history_free(&h[1]);
    scratch_dir_remove();
}
END_TEST

Suite *suite_history(void) {
    Suite *s = suite_create("history");
    TCase *tc = tcase_create("history");
    tcase_add_test(tc, rows_and_columns);
    tcase_add_test(tc, malformed_history_is_refused);
    tcase_add_test(tc, csv_has_every_metric);
    tcase_add_test(tc, resumed_history_covers_the_whole_run);
    tcase_add_test(tc, weights_only_checkpoints);
    tcase_add_test(tc, resume_names_only_what_the_user_changed);
    tcase_add_test(tc, json_records_the_run_and_seconds_go_on_across_a_resume);
    suite_add_tcase(s, tc);
    return s;
}
