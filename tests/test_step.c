/* test_step.c — the parallel step (train/step.h) without MPI: the tape's batch
 * slices and gradient redirection; a step's gradient is exactly its micro-batches'
 * gradients added in the fixed tree, the same bits on 1 and 2 threads, and (to
 * float rounding) the whole batch's gradient for every train task, data and
 * dropout masks included. The MPI runs are tests/mpi_test.sh (make test-mpi). */
#include "tests/test_util.h"

#include <stdlib.h>

#include "train/dist.h"
#include "train/step.h"
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

/* ---- gradient redirection ------------------------------------------------------------- */

/* A parameter read on a redirecting tape: its gradient lands in the given buffer,
 * the parameter's own stays untouched, and the tape prints its name. */
START_TEST(redirected_gradients_go_to_the_buffer) {
    qkv_params params = {0};
    qkv_tensor *w = qkv_params_new(&params, "w", 1, (int[]){3});
    qkv_tensor *u = qkv_params_new(&params, "u", 1, (int[]){3});
    for (int i = 0; i < 3; i++) w->data[i] = (float)(i + 1);
    float gw[3] = {0}, gu[3] = {0};
    float *grads[2] = {gw, gu};
    qkv_tape *tape = qkv_tape_create(1);
    qkv_tape_redirect_grads(tape, &params, grads);
    qkv_backward(tape, qkv_sum_all(tape, qkv_mul(tape, w, w)));  /* d/dw sum w^2 = 2 w */
    for (int i = 0; i < 3; i++) {
        ck_assert_float_eq(gw[i], 2.0f * (float)(i + 1));
        ck_assert_float_eq(w->grad[i], 0.0f);
        ck_assert_float_eq(gu[i], 0.0f);
    }
    ck_assert_str_eq(tape->nodes[0].inputs[0]->name, "w");
    ck_assert_ptr_eq(params.items[1], u);
    qkv_tape_reset(tape);
    qkv_tape_redirect_grads(tape, NULL, NULL);   /* off: back to the parameter's own */
    qkv_backward(tape, qkv_sum_all(tape, w));
    ck_assert_float_eq(w->grad[0], 1.0f);
    ck_assert_float_eq(gw[0], 2.0f);
    qkv_tape_free(tape);
    qkv_params_free(&params);
}
END_TEST

/* ---- the micro-batches and the tree --------------------------------------------------------- */

static size_t grad_count(const qkv_task *task) { return qkv_params_count(task->params); }

/* Every parameter's gradient, in list order, into out. */
static void copy_grads(const qkv_task *task, float *out) {
    size_t k = 0;
    for (int i = 0; i < task->params->n; i++) {
        const qkv_tensor *p = task->params->items[i];
        memcpy(out + k, p->grad, p->size * sizeof(float));
        k += p->size;
    }
}

/* Step `step`'s gradient and loss with this micro-batch size (dropout stream seed 9). */
static float *step_gradients(qkv_task *task, long step, int micro_batch, float *loss) {
    qkv_step s;
    ck_assert_int_eq(qkv_step_init(&s, task, qkv_step_settle(task, micro_batch), 0), 0);
    qkv_rng rng = qkv_rng_make(9);
    qkv_step_result r;
    ck_assert_int_eq(qkv_step_run(&s, step, &rng, &r, NULL, NULL), 0);
    float *g = malloc(grad_count(task) * sizeof *g);
    copy_grads(task, g);
    *loss = r.loss;
    qkv_step_free(&s);
    return g;
}

/* Micro-batch m of M by hand: its own tape and buffer, the loss seeded with w_m / W. */
static float *micro_batch_gradient(qkv_task *task, long step, int m, int count, double w, double total, float *loss) {
    size_t n = grad_count(task), k = 0;
    float *g = calloc(n, sizeof *g);
    float **parts = malloc((size_t)task->params->n * sizeof *parts);
    for (int i = 0; i < task->params->n; i++) {
        parts[i] = g + k;
        k += task->params->items[i]->size;
    }
    qkv_tape *tape = qkv_tape_create(9);
    qkv_tape_set_slice(tape, m, count);
    qkv_tape_redirect_grads(tape, task->params, parts);
    qkv_tensor *l = task->loss(task->self, tape, step);
    const float seed = (float)(w / total);
    qkv_backward_seeded(tape, l, &seed);
    *loss = l->data[0];
    qkv_tape_free(tape);
    free(parts);
    return g;
}

/* g[lo] += g[mid] ..., the tree of step.h, written again from its definition. */
static void tree_add(float **g, int lo, int hi, size_t n) {
    if (hi - lo < 2) return;
    int mid = lo + (hi - lo) / 2;
    tree_add(g, lo, mid, n);
    tree_add(g, mid, hi, n);
    for (size_t i = 0; i < n; i++) g[lo][i] += g[mid][i];
}

/* The step's gradient is bitwise the micro-batches' in the tree, and its loss the
 * weighted sum of theirs. */
static void expect_tree_sum(qkv_task *task, long step, int micro_batch) {
    int count = task->batch / micro_batch;
    float loss;
    float *whole = step_gradients(task, step, micro_batch, &loss);
    if (task->prepare) task->prepare(task->self, step);
    double *w = malloc((size_t)count * sizeof *w), total = 0, expected_loss = 0;
    for (int m = 0; m < count; m++) {
        w[m] = task->weight ? task->weight(task->self, m * micro_batch, micro_batch) : micro_batch;
        total += w[m];
    }
    float **g = calloc((size_t)count, sizeof *g);
    for (int m = 0; m < count; m++) {
        float l;
        g[m] = micro_batch_gradient(task, step, m, count, w[m], total, &l);
        expected_loss += w[m] / total * l;
    }
    size_t n = grad_count(task);
    tree_add(g, 0, count, n);
    ck_assert_msg(memcmp(g[0], whole, n * sizeof(float)) == 0, "%s: the step's gradient is not the tree's sum",
                  task->name);
    ck_assert_float_eq(loss, (float)expected_loss);
    for (int m = 0; m < count; m++) free(g[m]);
    free(g);
    free(w);
    free(whole);
}

/* Micro-batches of micro_batch examples give the whole batch's gradient and loss
 * (one micro-batch) to float rounding: 1e-5 of the largest gradient; and one of
 * them alone differs from it (a task that ignored its slice would not). */
static void expect_micro_batches_make_the_whole(qkv_task *task, long step, int micro_batch) {
    float loss_whole, loss_parts, loss_one;
    float *whole = step_gradients(task, step, task->batch, &loss_whole);
    float *parts = step_gradients(task, step, micro_batch, &loss_parts);
    if (task->prepare) task->prepare(task->self, step);
    float *one = micro_batch_gradient(task, step, 0, task->batch / micro_batch, 1, 1, &loss_one);
    size_t n = grad_count(task);
    double largest = 0, worst = 0, one_vs_whole = 0;
    for (size_t i = 0; i < n; i++) {
        largest = larger(largest, fabs(whole[i]));
        worst = larger(worst, fabs(parts[i] - whole[i]));
        one_vs_whole = larger(one_vs_whole, fabs(one[i] - whole[i]));
    }
    ck_assert_msg(largest > 0, "%s: no gradient", task->name);
    ck_assert_msg(one_vs_whole > 1e-3 * largest, "%s: a micro-batch's gradient equals the whole batch's", task->name);
    ck_assert_msg(worst <= 1e-5 * largest, "%s: micro-batches of %d differ from the whole batch by %g (largest %g)",
                  task->name, micro_batch, worst, largest);
    ck_assert_close(loss_parts, loss_whole, 1e-5);
    free(whole);
    free(parts);
    free(one);
}

static void seq_config(qkv_seq_model_config *config, qkv_seq_arch arch) {
    qkv_seq_model_default_config(config);
    config->data = (qkv_seq_config){QKV_TASK_REVERSE, arch, 6, 2, 9};
    config->dim = 16;
    config->ff = 32;
    config->heads = 2;
    config->batch = 8;
    config->dropout = 0.2f;
    config->test_size = 8;
}

START_TEST(sequence_micro_batches) {
    /* Variable lengths (micro-batches hold different token counts, so their
     * weights differ) and dropout (masks must come from the whole batch's stream). */
    const qkv_seq_arch archs[] = {QKV_ARCH_ENCODER, QKV_ARCH_SEQ2SEQ, QKV_ARCH_DECODER};
    for (int a = 0; a < 3; a++) {
        qkv_seq_model_config config;
        seq_config(&config, archs[a]);
        qkv_seq_model model;
        qkv_seq_model_init(&model, &config);
        expect_micro_batches_make_the_whole(&model.task, 3, 4);
        expect_micro_batches_make_the_whole(&model.task, 5, 2);
        expect_tree_sum(&model.task, 5, 1);   /* 8 leaves */
        expect_tree_sum(&model.task, 6, 2);   /* 4 */
        qkv_seq_model_free(&model);
    }
}
END_TEST

START_TEST(set_and_spirals_micro_batches) {
    qkv_spirals_config sc;
    qkv_spirals_default_config(&sc);
    sc.batch = 16;
    sc.n_per_class = 50;
    qkv_spirals_task spirals;
    qkv_spirals_task_init(&spirals, &sc);
    expect_micro_batches_make_the_whole(&spirals.task, 2, 8);
    expect_tree_sum(&spirals.task, 2, 2);   /* 8 leaves */
    qkv_spirals_task_free(&spirals);

    qkv_maxreg_task_config mc;
    qkv_maxreg_task_default_config(&mc);
    mc.batch = 8;
    mc.model.width = 16;
    qkv_maxreg_task maxreg;
    qkv_maxreg_task_init(&maxreg, &mc);
    expect_micro_batches_make_the_whole(&maxreg.task, 1, 4);
    expect_tree_sum(&maxreg.task, 1, 1);
    qkv_maxreg_task_free(&maxreg);

    qkv_points_task_config pc;
    qkv_points_task_default_config(&pc);
    pc.batch = 6;
    pc.test_size = 4;
    pc.data.n_points = 16;
    pc.model.width = 16;
    pc.model.n_inducing = 4;
    qkv_points_task points;
    ck_assert_int_eq(qkv_points_task_init(&points, &pc, NULL, NULL, 0), 0);
    expect_micro_batches_make_the_whole(&points.task, 1, 3);
    expect_tree_sum(&points.task, 1, 1);   /* 6 leaves: an uneven tree */
    qkv_points_task_free(&points);
}
END_TEST

/* The step on 1 and on 2 threads: the same gradient and loss bits. */
static size_t reverse_step_floats;
static void reverse_step(float *out, void *ctx) {
    (void)ctx;
    qkv_seq_model_config config;
    seq_config(&config, QKV_ARCH_ENCODER);
    config.batch = 24;
    qkv_seq_model model;
    qkv_seq_model_init(&model, &config);
    float loss;
    float *g = step_gradients(&model.task, 4, 3, &loss);
    size_t n = grad_count(&model.task);
    if (out) {
        memcpy(out, g, n * sizeof(float));
        out[n] = loss;
    }
    reverse_step_floats = n + 1;
    free(g);
    qkv_seq_model_free(&model);
}

START_TEST(step_is_thread_independent) {
    reverse_step(NULL, NULL);
    expect_same_for_1_and_2_threads(reverse_step, NULL, reverse_step_floats, "the step's gradient and loss");
}
END_TEST

START_TEST(micro_batch_sizes) {
    qkv_task task = {.name = "t", .batch = 30};
    ck_assert_int_eq(qkv_step_default_micro_batch(&task), 6);   /* the largest divisor <= 8 */
    task.batch = 13;
    ck_assert_int_eq(qkv_step_default_micro_batch(&task), 1);
    task.batch = 64;
    task.micro_batch = 16;
    ck_assert_int_eq(qkv_step_default_micro_batch(&task), 16);
    task.batch = 3;
    ck_assert_int_eq(qkv_step_default_micro_batch(&task), 3);

    qkv_seq_model_config config;
    seq_config(&config, QKV_ARCH_ENCODER);
    qkv_seq_model model;
    qkv_seq_model_init(&model, &config);
    qkv_step s;
    ck_assert_int_eq(qkv_step_settle(&model.task, 3), -1);
    ck_assert_str_eq(qkv_last_error(), "--micro-batch 3 does not divide the batch of 8 (try 8)");
    ck_assert_int_eq(qkv_step_settle(&model.task, -2), -1);
    ck_assert_int_eq(qkv_step_settle(&model.task, 0), 8);   /* the default, settled once */
    ck_assert_int_eq(qkv_step_init(&s, &model.task, qkv_step_settle(&model.task, 0), 0), 0);
    ck_assert_int_eq(s.micro_batch, 8);
    ck_assert_int_eq(s.micro_batches, 1);
    qkv_step_free(&s);
    qkv_seq_model_free(&model);
}
END_TEST

/* ---- the single-process build ------------------------------------------------------------ */

START_TEST(single_process_dist_is_a_no_op) {
    ck_assert_int_eq(qkv_dist_rank(), 0);
    ck_assert_int_eq(qkv_dist_size(), 1);
    ck_assert_int_eq(qkv_dist_any(0), 0);
    ck_assert_int_eq(qkv_dist_any(5), 1);
    ck_assert_int_eq(qkv_dist_root_flag(7), 7);
    ck_assert_int_eq(qkv_dist_threads(0), 0);
    ck_assert_int_eq(qkv_dist_threads(3), 3);
    qkv_trainer_config shared = {.save_path = "a", .json_path = "b", .csv_path = "c", .resume_path = "d"};
    qkv_trainer_config own = qkv_trainer_rank_config(&shared);
    ck_assert_str_eq(own.save_path, "a");
    ck_assert_str_eq(own.resume_path, "d");
    float mine[2] = {1.5f, -2.0f}, all[2] = {0};
    qkv_dist_allgather(mine, 2, all, 0);
    ck_assert_mem_eq(all, mine, sizeof mine);
    double x[2] = {0.25, 3.0};
    qkv_dist_sum_doubles(x, 2);
    ck_assert_double_eq(x[0], 0.25);
}
END_TEST

Suite *suite_step(void) {
    Suite *s = suite_create("step");
    TCase *tc = tcase_create("micro-batches");
    tcase_set_timeout(tc, 0);
    tcase_add_test(tc, batch_slice_ranges);
    tcase_add_test(tc, dropout_slices_draw_the_whole_batch_masks);
    tcase_add_test(tc, redirected_gradients_go_to_the_buffer);
    tcase_add_test(tc, sequence_micro_batches);
    tcase_add_test(tc, set_and_spirals_micro_batches);
    tcase_add_test(tc, step_is_thread_independent);
    tcase_add_test(tc, micro_batch_sizes);
    tcase_add_test(tc, single_process_dist_is_a_no_op);
    suite_add_tcase(s, tc);
    return s;
}
