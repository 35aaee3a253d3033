/* test_dist.c — data parallelism without MPI: the tape's batch slices, and the
 * claim train/dist.h rests on, that slices' gradients averaged with their loss
 * weights equal the whole batch's gradient (data and dropout masks included), for
 * every train task. The MPI runs themselves are tests/mpi_test.sh (make test-mpi). */
#include "test_util.h"

#include <stdlib.h>

#include "train/dist.h"
#include "train/tasks/sequence.h"
#include "train/tasks/points.h"
#include "train/tasks/maxreg.h"
#include "train/tasks/spirals.h"

/* ---- the tape's slices ------------------------------------------------------------------ */

START_TEST(batch_slice_ranges) {
    qkv_tape *tape = qkv_tape_create(1);
    int first = -1, count = -1;
    qkv_tape_batch_slice(tape, 6, &first, &count);
    ck_assert_int_eq(first, 0);
    ck_assert_int_eq(count, 6);
    qkv_tape_set_slice(tape, 2, 3);
    qkv_tape_batch_slice(tape, 6, &first, &count);
    ck_assert_int_eq(first, 4);
    ck_assert_int_eq(count, 2);
    EXPECT_FATAL(qkv_tape_batch_slice(tape, 7, &first, &count), "tape_batch_slice: batch 7 over 3 slices");
    EXPECT_FATAL(qkv_tape_set_slice(tape, 3, 3), "tape_set_slice: slice 3 of 3");
    EXPECT_FATAL(qkv_tape_set_slice(tape, 0, 0), "tape_set_slice: slice 0 of 0");
    qkv_tape_free(tape);
}
END_TEST

/* Slice r of 3 draws exactly rows [2r, 2r+2) of the whole batch's dropout mask, and
 * leaves the stream where the whole batch leaves it (twice, so the second draw's
 * position is checked too). */
START_TEST(dropout_slices_draw_the_whole_batch_masks) {
    const int rows = 6, cols = 5;
    qkv_tape *whole = qkv_tape_create(42);
    float expected[2][6 * 5];
    for (int draw = 0; draw < 2; draw++) {
        qkv_tensor *x = qkv_tape_tensor(whole, 2, (int[]){rows, cols});
        for (size_t i = 0; i < x->size; i++) x->data[i] = 1.0f;
        memcpy(expected[draw], qkv_dropout(whole, x, 0.5f)->data, sizeof expected[draw]);
    }
    for (int r = 0; r < 3; r++) {
        qkv_tape *part = qkv_tape_create(42);
        qkv_tape_set_slice(part, r, 3);
        for (int draw = 0; draw < 2; draw++) {
            qkv_tensor *x = qkv_tape_tensor(part, 2, (int[]){rows / 3, cols});
            for (size_t i = 0; i < x->size; i++) x->data[i] = 1.0f;
            qkv_tensor *y = qkv_dropout(part, x, 0.5f);
            ck_assert_mem_eq(y->data, expected[draw] + (size_t)r * y->size, y->size * sizeof(float));
        }
        ck_assert_uint_eq(part->rng.counter, whole->rng.counter);
        qkv_tape_free(part);
    }
    qkv_tape_free(whole);
}
END_TEST

/* ---- slices average to the whole batch --------------------------------------------------- */

/* Loss and parameter gradients of step `step` computed as slice `index` of `count`,
 * on a fresh tape with the given dropout seed; *weight as dist.c takes it. */
static float *slice_gradients(qkv_task *task, long step, int index, int count, double *weight, float *loss) {
    qkv_tape *tape = qkv_tape_create(9);
    qkv_tape_set_slice(tape, index, count);
    task->loss_terms = 0;
    qkv_tensor *l = task->loss(task->self, tape, step);
    *loss = l->data[0];
    qkv_params_zero_grad(task->params);
    qkv_backward(tape, l);
    *weight = task->loss_terms > 0 ? task->loss_terms : 1.0;
    size_t n = qkv_params_count(task->params), k = 0;
    float *g = malloc(n * sizeof *g);
    for (int i = 0; i < task->params->n; i++) {
        qkv_tensor *p = task->params->items[i];
        memcpy(g + k, qkv_tensor_grad(p), p->size * sizeof(float));
        k += p->size;
    }
    qkv_tape_free(tape);
    return g;
}

/* The weighted mean of the slices' gradients and losses (what dist.c's allreduce
 * makes) equals the whole batch's to float rounding: 1e-5 of the largest gradient. */
static void expect_slices_make_the_whole(qkv_task *task, long step, int count) {
    double w_whole, total = 0;
    float loss_whole, loss_sum = 0, loss;
    float *whole = slice_gradients(task, step, 0, 1, &w_whole, &loss_whole);
    size_t n = qkv_params_count(task->params);
    double *sum = calloc(n, sizeof *sum), largest = 0, worst = 0, slice_vs_whole = 0;
    for (int r = 0; r < count; r++) {
        double w;
        float *g = slice_gradients(task, step, r, count, &w, &loss);
        for (size_t i = 0; i < n; i++) {
            sum[i] += w * g[i];
            slice_vs_whole = larger(slice_vs_whole, fabs(g[i] - whole[i]));
        }
        loss_sum += (float)(w * loss);
        total += w;
        free(g);
    }
    for (size_t i = 0; i < n; i++) {
        largest = larger(largest, fabs(whole[i]));
        worst = larger(worst, fabs(sum[i] / total - whole[i]));
    }
    ck_assert_msg(largest > 0, "%s: no gradient", task->name);
    /* A task that ignored its slice would make every slice the whole batch. */
    ck_assert_msg(slice_vs_whole > 1e-3 * largest, "%s: the slices' gradients equal the whole batch's", task->name);
    ck_assert_msg(worst <= 1e-5 * largest, "%s: %d slices differ from the whole batch by %g (largest gradient %g)",
                  task->name, count, worst, largest);
    ck_assert_close(loss_sum / total, loss_whole, 1e-5);
    free(whole);
    free(sum);
}

START_TEST(sequence_slices_make_the_whole_batch) {
    /* Variable lengths (slices hold different token counts, so the loss weights
     * differ) and dropout (masks must come from the whole batch's stream). */
    const qkv_seq_arch archs[] = {QKV_ARCH_ENCODER, QKV_ARCH_SEQ2SEQ, QKV_ARCH_DECODER};
    for (int a = 0; a < 3; a++) {
        qkv_seq_model_config config;
        qkv_seq_model_default_config(&config);
        config.data = (qkv_seq_config){QKV_TASK_REVERSE, archs[a], 6, 2, 9};
        config.dim = 16;
        config.ff = 32;
        config.heads = 2;
        config.batch = 8;
        config.dropout = 0.2f;
        config.test_size = 8;
        qkv_seq_model model;
        qkv_seq_model_init(&model, &config);
        expect_slices_make_the_whole(&model.task, 3, 2);
        expect_slices_make_the_whole(&model.task, 5, 4);
        qkv_seq_model_free(&model);
    }
}
END_TEST

START_TEST(set_and_spirals_slices_make_the_whole_batch) {
    qkv_spirals_config sc;
    qkv_spirals_default_config(&sc);
    sc.batch = 16;
    sc.n_per_class = 50;
    qkv_spirals_task spirals;
    qkv_spirals_task_init(&spirals, &sc);
    expect_slices_make_the_whole(&spirals.task, 2, 2);
    qkv_spirals_task_free(&spirals);

    qkv_maxreg_task_config mc;
    qkv_maxreg_task_default_config(&mc);
    mc.batch = 8;
    mc.model.width = 16;
    qkv_maxreg_task maxreg;
    qkv_maxreg_task_init(&maxreg, &mc);
    expect_slices_make_the_whole(&maxreg.task, 1, 2);
    qkv_maxreg_task_free(&maxreg);

    qkv_points_task_config pc;
    qkv_points_task_default_config(&pc);
    pc.batch = 4;
    pc.test_size = 4;
    pc.data.n_points = 16;
    pc.model.width = 16;
    pc.model.n_inducing = 4;
    qkv_points_task points;
    ck_assert_int_eq(qkv_points_task_init(&points, &pc, NULL, NULL, 0), 0);
    expect_slices_make_the_whole(&points.task, 1, 2);
    qkv_points_task_free(&points);
}
END_TEST

/* ---- the single-process build ------------------------------------------------------------ */

START_TEST(single_process_dist_is_a_no_op) {
    ck_assert_int_eq(qkv_dist_rank(), 0);
    ck_assert_int_eq(qkv_dist_size(), 1);
    ck_assert_int_eq(qkv_dist_check_batch(33), 0);
    ck_assert_int_eq(qkv_dist_any(0), 0);
    ck_assert_int_eq(qkv_dist_any(5), 1);
    ck_assert_int_eq(qkv_dist_root_flag(7), 7);
    ck_assert_int_eq(qkv_dist_threads(0), 0);
    ck_assert_int_eq(qkv_dist_threads(3), 3);
    qkv_trainer_config shared = {.save_path = "a", .json_path = "b", .csv_path = "c", .resume_path = "d"};
    qkv_trainer_config own = qkv_trainer_rank_config(&shared);
    ck_assert_str_eq(own.save_path, "a");
    ck_assert_str_eq(own.resume_path, "d");
    qkv_params params = {0};
    qkv_tensor *w = qkv_params_new(&params, "w", 1, (int[]){3});
    float *g = qkv_tensor_grad(w);
    g[0] = 1.5f;
    ck_assert_float_eq(qkv_dist_average_grads(&params, 0, 2.5f, 7.0), 2.5f);
    ck_assert_float_eq(g[0], 1.5f);
    qkv_params_free(&params);
}
END_TEST

Suite *suite_dist(void) {
    Suite *s = suite_create("dist");
    TCase *tc = tcase_create("slices");
    tcase_set_timeout(tc, 0);
    tcase_add_test(tc, batch_slice_ranges);
    tcase_add_test(tc, dropout_slices_draw_the_whole_batch_masks);
    tcase_add_test(tc, sequence_slices_make_the_whole_batch);
    tcase_add_test(tc, set_and_spirals_slices_make_the_whole_batch);
    tcase_add_test(tc, single_process_dist_is_a_no_op);
    suite_add_tcase(s, tc);
    return s;
}
