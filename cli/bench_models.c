/* bench_models.c — the attention, train and long sections of `qkv bench`.
 *
 * attention  qkv_attention forward + backward (dq, dk, dv, seeded with a fixed
 *            dO) for (B,H,T,d) = (8,4,64,16), (4,8,256,64), (1,8,1024,64), causal
 *            and not, ms per forward + backward.
 * train      one full training step of a task at its defaults, ms, as the trainer
 *            runs it: the parallel step (train/step.h: the micro-batches on the
 *            threads, their gradients in the fixed tree), clipping, the optimizer
 *            step; its own batches. GFLOP per step: the products of forward and
 *            backward counted from the shapes (core/ops/tape.h: qkv_tape_flops).
 *              reverse: `qkv train reverse`: a pre-LN encoder, 2 layers, d 64,
 *                4 heads, FFN 256, GELU, learned positions, T 16, batch 64, AdamW;
 *              settf:   `qkv train points`, the Set Transformer: ISAB(16) x 2,
 *                PMA(1), width 128, 4 heads, layer norm, 10 classes, batches of
 *                32 synthetic clouds of 256 points, cross-entropy, Adam;
 *              text:    `qkv train text` on its default corpus (the fortunes
 *                package; the line says so and is skipped without it): 4 layers,
 *                d 128, 4 heads, context 64, batch 12, AdamW.
 * long       attention forward + backward at (1,8,8192,64), causal and not, on
 *            all threads only (one call is seconds); the row's peak resident
 *            memory shows the op's memory is linear in T.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/ops/attention.h"
#include "core/error.h"
#include "core/ops/ops.h"
#include "optim/optimizer.h"
#include "cli/bench_models.h"
#include "train/step.h"
#include "train/tasks/registry.h"

/* ---- attention ------------------------------------------------------------------- */

typedef struct attention_problem {
    qkv_tape *tape;
    qkv_tensor *q, *k, *v;
    float *dout;
    int causal;
} attention_problem;

static void attention_problem_init(attention_problem *p, int B, int H, int T, int d, int causal) {
    qkv_rng rng = qkv_rng_make(7);
    const int shape[4] = {B, H, T, d};
    p->tape = qkv_tape_create(1);
    p->q = qkv_tensor_create("q", 4, shape, 1);
    p->k = qkv_tensor_create("k", 4, shape, 1);
    p->v = qkv_tensor_create("v", 4, shape, 1);
    qkv_tensor *all[3] = {p->q, p->k, p->v};
    for (int i = 0; i < 3; i++) qkv_fill_normal(all[i]->data, all[i]->size, &rng, 0.0f, 1.0f);
    p->dout = qkv_malloc(p->q->size * sizeof(float), "bench: the attention output gradient");
    qkv_fill_normal(p->dout, p->q->size, &rng, 0.0f, 1.0f);
    p->causal = causal;
}

static void attention_problem_free(attention_problem *p) {
    qkv_tensor_free(p->q);
    qkv_tensor_free(p->k);
    qkv_tensor_free(p->v);
    free(p->dout);
    qkv_tape_free(p->tape);
}

static void run_attention(void *ctx) {
    attention_problem *p = ctx;
    qkv_attention_opts opts = {.causal = p->causal};
    qkv_tensor *out = qkv_attention(p->tape, p->q, p->k, p->v, &opts, NULL);
    qkv_backward_seeded(p->tape, out, p->dout);
    qkv_tape_reset(p->tape);
}

static void attention_name(char *name, size_t size, int B, int H, int T, int d, int causal) {
    snprintf(name, size, "B=%d H=%d T=%d d=%d%s", B, H, T, d, causal ? " causal" : "");
}

void qkv_bench_attention(qkv_bench_table *t) {
    static const int shapes[][4] = {{8, 4, 64, 16}, {4, 8, 256, 64}, {1, 8, 1024, 64}};
    for (int s = 0; s < 3; s++)
        for (int causal = 0; causal <= 1; causal++) {
            const int *sh = shapes[s];
            attention_problem p;
            attention_problem_init(&p, sh[0], sh[1], sh[2], sh[3], causal);
            char name[64];
            attention_name(name, sizeof name, sh[0], sh[1], sh[2], sh[3], causal);
            qkv_bench_row *row = qkv_bench_add(t, "attention", name, "ms");
            row->one = 1e3 * qkv_bench_seconds(run_attention, &p, 1, 0.1, BENCH_SAMPLES);
            row->all = 1e3 * qkv_bench_seconds(run_attention, &p, t->threads, 0.1, BENCH_SAMPLES);
            row->peak_rss_mb = qkv_bench_peak_rss_mb();
            qkv_bench_finish_row(t, row);
            attention_problem_free(&p);
        }
}

void qkv_bench_long_attention(qkv_bench_table *t) {
    for (int causal = 0; causal <= 1; causal++) {
        attention_problem p;
        attention_problem_init(&p, 1, 8, 8192, 64, causal);
        char name[64];
        attention_name(name, sizeof name, 1, 8, 8192, 64, causal);
        qkv_bench_row *row = qkv_bench_add(t, "long", name, "ms");
        row->all = 1e3 * qkv_bench_seconds(run_attention, &p, t->threads, 0.0, 3);
        row->peak_rss_mb = qkv_bench_peak_rss_mb();
        qkv_bench_finish_row(t, row);
        attention_problem_free(&p);
    }
}

/* ---- training steps ---------------------------------------------------------------- */

/* One task of the registry at its defaults, stepped as the trainer steps it: the
 * parallel step (train/step.h) at the task's default micro-batch, clipping to the
 * trainer's norm (1 where the task sets none), the optimizer step. */
typedef struct train_step {
    const qkv_task_kind *kind;
    void *config;
    qkv_task *task;
    qkv_trainer_config trainer;
    qkv_step parallel;
    qkv_optimizer opt;
    qkv_rng rng;
    long step;
} train_step;

static void run_train_step(void *ctx) {
    train_step *s = ctx;
    qkv_step_result result;
    if (qkv_step_run(&s->parallel, s->step, &s->rng, &result, NULL, NULL) != 0)
        qkv_fatal("bench: %s step %ld: %s", s->kind->name, s->step, qkv_last_error());
    qkv_clip_grad_norm(s->task->params, s->trainer.clip > 0 ? s->trainer.clip : 1.0);
    qkv_optimizer_step(&s->opt, s->task->params, s->trainer.optim.lr);
    s->step++;
}

/* 0, or -1 with qkv_last_error() (the text task without its corpus). */
static int train_step_init(train_step *s, const char *task, int micro_batch) {
    memset(s, 0, sizeof *s);
    s->kind = qkv_task_kind_find(task);
    s->config = qkv_task_config_new(s->kind);
    s->trainer = s->kind->trainer;
    if (s->kind->check(s->config, &s->trainer) != 0 || !(s->task = s->kind->create(s->config, 0))) {
        free(s->config);
        return -1;
    }
    micro_batch = qkv_step_settle(s->task, micro_batch); /* the task's default for 0 */
    if (micro_batch < 0 || qkv_step_init(&s->parallel, s->task, micro_batch, 0) != 0) {
        s->kind->destroy(s->task);
        free(s->config);
        return -1;
    }
    qkv_optimizer_init(&s->opt, &s->trainer.optim, s->task->params);
    s->rng = qkv_rng_make(1);
    return 0;
}

static void train_step_free(train_step *s) {
    qkv_optimizer_free(&s->opt);
    qkv_step_free(&s->parallel);
    s->kind->destroy(s->task);
    free(s->config);
}

static void measure_step(qkv_bench_table *t, const char *name, const char *task) {
    train_step s;
    if (train_step_init(&s, task, t->micro_batch) != 0) {
        printf("train     | %-30s | skipped: %s\n", name, qkv_last_error());
        return;
    }
    qkv_bench_row *row = qkv_bench_add(t, "train", name, "ms");
    snprintf(row->note, sizeof row->note, "micro-batch %d of %d", s.parallel.micro_batch, s.task->batch);
    row->one = 1e3 * qkv_bench_seconds(run_train_step, &s, 1, 0.2, BENCH_SAMPLES);
    row->all = 1e3 * qkv_bench_seconds(run_train_step, &s, t->threads, 0.2, BENCH_SAMPLES);
    row->gflop = s.parallel.flops * 1e-9;
    row->peak_rss_mb = qkv_bench_peak_rss_mb();
    qkv_bench_finish_row(t, row);
    train_step_free(&s);
}

void qkv_bench_train(qkv_bench_table *t) {
    measure_step(t, "reverse", "reverse");
    measure_step(t, "settf", "points");
    measure_step(t, "text", "text");
}
