/* models.c — the attention, train and long sections of `qkv bench`.
 *
 * attention  qkv_attention forward + backward (dq, dk, dv, seeded with a fixed
 *            dO) for (B,H,T,d) = (8,4,64,16), (4,8,256,64), (1,8,1024,64), causal
 *            and not, ms per forward + backward.
 * train      one full training step, ms: zero grads, loss, backward, clip to norm
 *            1, optimizer step, tape reset.
 *              reverse: train/seq_model's default (the `qkv train reverse`
 *                model): a pre-LN encoder, 2 layers, d 64, 4 heads, FFN 256, GELU,
 *                learned positions, T 16, batch 64, AdamW; its own batches;
 *              settf:   the Set Transformer of `qkv train points`
 *                (layers/set_models): ISAB(16) x 2, PMA(1), width 128, 4 heads,
 *                layer norm, 10 classes; a fixed batch of 32 clouds of 256
 *                uniform points; cross-entropy; Adam.
 * long       attention forward + backward at (1,8,8192,64), causal and not, on
 *            all threads only (one call is seconds); the row's peak resident
 *            memory shows the op's memory is linear in T.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/alloc.h"
#include "core/attention.h"
#include "core/error.h"
#include "core/ops.h"
#include "layers/set_models.h"
#include "optim/optimizer.h"
#include "bench/bench.h"
#include "train/tasks/sequence.h"

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
            qkv_bench_print_row(row);
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
        qkv_bench_print_row(row);
        attention_problem_free(&p);
    }
}

/* ---- training steps ---------------------------------------------------------------- */

typedef struct train_step {
    qkv_tape *tape;
    qkv_params *params;
    qkv_optimizer opt;
    float lr;
    long step;
    qkv_tensor *(*loss)(struct train_step *s);
    /* reverse */
    qkv_seq_model *seq;
    /* settf */
    qkv_set_model set;
    qkv_params set_params;
    qkv_tensor *points;
    int32_t *labels;
} train_step;

static void run_train_step(void *ctx) {
    train_step *s = ctx;
    qkv_params_zero_grad(s->params);
    qkv_tensor *loss = s->loss(s);
    qkv_backward(s->tape, loss);
    qkv_clip_grad_norm(s->params, 1.0);
    qkv_optimizer_step(&s->opt, s->params, s->lr);
    qkv_tape_reset(s->tape);
    s->step++;
}

static qkv_tensor *reverse_loss(train_step *s) {
    return s->seq->task.loss(s->seq->task.self, s->tape, s->step);
}

static qkv_tensor *settf_loss(train_step *s) {
    qkv_tensor *logits = qkv_set_model_forward(s->tape, &s->set, s->points, NULL);
    return qkv_cross_entropy(s->tape, logits, s->labels, -1, NULL);
}

static void measure_step(qkv_bench_table *t, const char *name, train_step *s) {
    qkv_bench_row *row = qkv_bench_add(t, "train", name, "ms");
    row->one = 1e3 * qkv_bench_seconds(run_train_step, s, 1, 0.2, BENCH_SAMPLES);
    row->all = 1e3 * qkv_bench_seconds(run_train_step, s, t->threads, 0.2, BENCH_SAMPLES);
    row->peak_rss_mb = qkv_bench_peak_rss_mb();
    qkv_bench_print_row(row);
}

static void bench_reverse(qkv_bench_table *t) {
    qkv_seq_model_config config;
    qkv_seq_model_default_config(&config);
    config.test_size = 1;
    static qkv_seq_model model;
    qkv_seq_model_init(&model, &config);
    train_step s = {.tape = qkv_tape_create(1), .params = &model.params, .lr = 3e-3f,
                    .loss = reverse_loss, .seq = &model};
    qkv_optimizer_init(&s.opt, &(qkv_optimizer_config){.kind = QKV_OPT_ADAMW, .lr = s.lr},
                       s.params);
    measure_step(t, "reverse", &s);
    qkv_optimizer_free(&s.opt);
    qkv_tape_free(s.tape);
    qkv_seq_model_free(&model);
}

static void bench_settf(qkv_bench_table *t) {
    enum { BATCH = 32, POINTS = 256, CLASSES = 10 };
    train_step s = {.tape = qkv_tape_create(1), .lr = 1e-3f, .loss = settf_loss};
    qkv_set_model_config config = {.kind = QKV_SET_MODEL_ISAB, .d_in = 3, .width = 128,
                                   .n_heads = 4, .n_outputs = CLASSES, .n_layers = 2,
                                   .n_inducing = 16, .layer_norm = 1};
    qkv_rng rng = qkv_rng_make(3);
    qkv_set_model_init(&s.set, &s.set_params, "set", &config, &rng);
    s.params = &s.set_params;
    s.points = qkv_tensor_create("points", 3, (const int[]){BATCH, POINTS, 3}, 0);
    qkv_fill_uniform(s.points->data, s.points->size, &rng, -1.0f, 1.0f);
    int32_t labels[BATCH];
    for (int b = 0; b < BATCH; b++) labels[b] = b % CLASSES;
    s.labels = labels;
    qkv_optimizer_init(&s.opt, &(qkv_optimizer_config){.kind = QKV_OPT_ADAM, .lr = s.lr}, s.params);
    measure_step(t, "settf", &s);
    qkv_optimizer_free(&s.opt);
    qkv_tensor_free(s.points);
    qkv_params_free(&s.set_params);
    qkv_tape_free(s.tape);
}

void qkv_bench_train(qkv_bench_table *t) {
    bench_reverse(t);
    bench_settf(t);
}
