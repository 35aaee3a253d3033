/* test_history.c — a run's record (train/history.h): rows and metric columns, the
 * CSV it writes and reads back, and a training run's --csv with every metric. */
#include "tests/test_util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "train/history.h"

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
    char *csv = qkv_history_csv(&h);
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
    char *again = qkv_history_csv(&back);
    ck_assert_str_eq(again, csv);
    free(again);
    free(csv);
    qkv_history_free(&back);
    qkv_history_free(&h);
}
END_TEST

/* A checkpoint's history is input: anything malformed is one error naming it. */
START_TEST(malformed_history_is_refused) {
    static const char *const bad[] = {
        "",                                          /* no header */
        "step,loss,lr\n",                            /* a column short */
        "step,loss,lr,time\n",                       /* a wrong column */
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
    const char *csv = scratch_file("run.csv");
    snprintf(command, sizeof command,
             "%s train reverse --steps 6 --eval-every 4 --log-every 1 --test-size 16 --threads 1 --csv %s", qkv_binary(),
             csv);
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
    scratch_dir_remove();
}
END_TEST

Suite *suite_history(void) {
    Suite *s = suite_create("history");
    TCase *tc = tcase_create("history");
    tcase_add_test(tc, rows_and_columns);
    tcase_add_test(tc, malformed_history_is_refused);
    tcase_add_test(tc, csv_has_every_metric);
    suite_add_tcase(s, tc);
    return s;
}
