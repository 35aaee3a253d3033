/* test_trainer.c — the shared training loop, checkpoints and the sequence tasks:
 * resuming is bitwise exact, a checkpoint that does not fit leaves the model
 * untouched, incremental decoding equals the full pass, the CLI refuses bad
 * flags without writing anything, and the summaries are written. The C API
 * prints nothing: its failures (a NaN/Inf stop, the task's error, an unwritable
 * output) are -1 and qkv_last_error(). */
#include "tests/test_util.h"

#include <sys/wait.h>

#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/ops/ops.h"
#include "train/checkpoint.h"
#include "train/tasks/sequence.h"

static void small_config(qkv_seq_model_config *c, qkv_seq_arch arch) {
    qkv_seq_model_default_config(c);
    c->data.arch = arch;
    c->data.min_len = 3;
    c->data.max_len = 6;
    c->data.vocab = 5;
    c->layers = 1;
    c->heads = 2;
    c->dim = 16;
    c->ff = 32;
    c->batch = 8;
    c->test_size = 12;
    c->dropout = 0.1f; /* so that the dropout stream must be restored too */
}

static qkv_trainer_config small_trainer(int steps) {
    qkv_trainer_config t = {.steps = steps, .quiet = 1, .clip = 1.0f, .seed = 1};
    t.optim = (qkv_optimizer_config){.kind = QKV_OPT_ADAMW, .lr = 3e-3f, .weight_decay = 0.01f};
    t.schedule = (qkv_schedule){.kind = QKV_SCHED_COSINE, .warmup = 5, .total = steps};
    return t;
}

/* Trains a fresh model with the trainer config; returns its parameters flattened. */
static float *train_and_flatten(const qkv_seq_model_config *c, const qkv_trainer_config *t, size_t *n) {
    qkv_seq_model model;
    qkv_seq_model_init(&model, c);
    qkv_train_result result;
    ck_assert_int_eq(train_with(t, &model.task, &result), 0);
    *n = qkv_params_count(&model.params);
    float *flat = malloc(*n * sizeof(float));
    qkv_params_copy_values(&model.params, flat);
    qkv_seq_model_free(&model);
    return flat;
}

START_TEST(resume_is_bitwise_exact) {
    const qkv_seq_arch archs[] = {QKV_ARCH_ENCODER, QKV_ARCH_SEQ2SEQ, QKV_ARCH_DECODER};
    scratch_dir_create();
    char path[128];
    snprintf(path, sizeof path, "%s/half.safetensors", scratch_dir);
    for (int a = 0; a < 3; a++) {
        qkv_seq_model_config c;
        small_config(&c, archs[a]);
        size_t n_full, n_resumed;
        qkv_trainer_config full = small_trainer(30);
        float *uninterrupted = train_and_flatten(&c, &full, &n_full);

        qkv_trainer_config first = small_trainer(30);
        first.steps = 12; /* the same schedule (total 30), stopped at step 12 */
        first.schedule.total = 30;
        first.save_path = path;
        free(train_and_flatten(&c, &first, &n_resumed));
        qkv_trainer_config second = small_trainer(30);
        second.resume_path = path;
        float *resumed = train_and_flatten(&c, &second, &n_resumed);
        ck_assert_int_eq(n_full, n_resumed);
        ck_assert_msg(memcmp(uninterrupted, resumed, n_full * sizeof(float)) == 0,
                      "%s: resumed run differs from the uninterrupted one", qkv_seq_arch_name(archs[a]));
        free(uninterrupted);
        free(resumed);
    }
    scratch_dir_remove();
}
END_TEST

START_TEST(checkpoint_that_does_not_fit_leaves_model_untouched) {
    scratch_dir_create();
    char path[128];
    snprintf(path, sizeof path, "%s/model.safetensors", scratch_dir);
    qkv_seq_model_config c;
    small_config(&c, QKV_ARCH_ENCODER);
    qkv_seq_model a;
    qkv_seq_model_init(&a, &c);
    qkv_optimizer_config oc = {.kind = QKV_OPT_ADAM, .lr = 1e-3f};
    qkv_optimizer opt;
    qkv_optimizer_init(&opt, &oc, &a.params);
    opt.step = 17;   /* the updates of 17 steps: a checkpoint's optim.step is its step */
    qkv_rng rng = qkv_rng_make(3);
    qkv_config_kv description = {0};
    a.task.describe(&a, &description);
    ck_assert_int_eq(qkv_checkpoint_save(path, &a.params, &opt, 17, &rng, &description, NULL, NULL), 0);

    /* A wider model: shapes differ. */
    c.dim = 24;
    qkv_seq_model b;
    qkv_seq_model_init(&b, &c);
    float before = b.embed->data[0];
    ck_assert_int_eq(qkv_checkpoint_load(path, &b.params, NULL, NULL, NULL), -1);
    ck_assert_ptr_nonnull(strstr(qkv_last_error(), "has shape"));
    ck_assert_float_eq(b.embed->data[0], before);

    /* The same model loads, with step, rng and optimizer state. */
    qkv_seq_model_config same;
    ck_assert_int_eq(qkv_checkpoint_read_config(path, &description), 0);
    ck_assert_int_eq(qkv_seq_model_config_from(&description, &same), 0);
    ck_assert_int_eq(same.dim, 16);
    qkv_seq_model a2;
    qkv_seq_model_init(&a2, &same);
    qkv_fill_normal(a2.embed->data, a2.embed->size, &rng, 0, 1);
    qkv_optimizer opt2;
    qkv_optimizer_init(&opt2, &oc, &a2.params);
    long step = 0;
    qkv_rng restored = {0};
    ck_assert_int_eq(qkv_checkpoint_load(path, &a2.params, &opt2, &step, &restored), 0);
    ck_assert_int_eq(step, 17);
    ck_assert_uint_eq(restored.seed, rng.seed);
    ck_assert_int_eq(memcmp(a2.embed->data, a.embed->data, a.embed->size * sizeof(float)), 0);

    /* Another optimizer kind does not fit either. */
    qkv_optimizer_config sgd = {.kind = QKV_OPT_SGD, .lr = 0.1f, .momentum = 0.9f};
    qkv_optimizer opt3;
    qkv_optimizer_init(&opt3, &sgd, &a2.params);
    ck_assert_int_eq(qkv_checkpoint_load(path, &a2.params, &opt3, NULL, NULL), -1);
    ck_assert_ptr_nonnull(strstr(qkv_last_error(), "optimizer is adam"));

    /* A file that is not a checkpoint. */
    char junk[128];
    snprintf(junk, sizeof junk, "%s/junk", scratch_dir);
    FILE *f = fopen(junk, "wb");
    fputs("not a checkpoint", f);
    fclose(f);
    ck_assert_int_eq(qkv_checkpoint_load(junk, &a2.params, NULL, NULL, NULL), -1);
    ck_assert_ptr_nonnull(strstr(qkv_last_error(), junk));

    qkv_optimizer_free(&opt);
    qkv_optimizer_free(&opt2);
    qkv_optimizer_free(&opt3);
    qkv_seq_model_free(&a);
    qkv_seq_model_free(&a2);
    qkv_seq_model_free(&b);
    scratch_dir_remove();
}
END_TEST

/* A long config value (a --data directory deep in a tree) is stored whole and
 * read back whole: eval finds the data the model was trained on. */
START_TEST(long_config_values_round_trip) {
    scratch_dir_create();
    char path[128], long_dir[1200];
    snprintf(path, sizeof path, "%s/long.safetensors", scratch_dir);
    size_t n = 0;
    while (n + 12 < sizeof long_dir - 1) n += (size_t)snprintf(long_dir + n, sizeof long_dir - n, "/a-directory");
    qkv_config_kv saved = {0}, back = {0};
    qkv_config_add(&saved, "task", "maxreg");
    qkv_config_add(&saved, "data", "%s", long_dir);
    qkv_params params = {0};
    qkv_params_new(&params, "w", 1, (int[]){3});
    ck_assert_int_eq(qkv_checkpoint_save(path, &params, NULL, 0, NULL, &saved, NULL, NULL), 0);
    ck_assert_int_eq(qkv_checkpoint_read_config(path, &back), 0);
    ck_assert_int_eq(back.n, 2);
    ck_assert_str_eq(qkv_config_get(&back, "data"), long_dir);
    ck_assert_uint_gt(strlen(qkv_config_get(&back, "data")), 1000);
    qkv_params_free(&params);
    scratch_dir_remove();
}
END_TEST

/* Greedy decoding through the caches predicts what the full causal pass predicts:
 * run the full pass on the predicted target (teacher forcing with the model's own
 * outputs) and compare the argmax at every position. */
START_TEST(cached_decoding_matches_full_pass) {
    const qkv_seq_arch archs[] = {QKV_ARCH_SEQ2SEQ, QKV_ARCH_DECODER};
    /* the last: RoPE with every portability option away from its default */
    const qkv_pos_kind kinds[] = {QKV_POS_LEARNED, QKV_POS_ROPE, QKV_POS_ALIBI, QKV_POS_SINUSOIDAL, QKV_POS_ROPE};
    for (int a = 0; a < 2; a++)
        for (int k = 0; k < 5; k++) {
            qkv_seq_model_config c;
            small_config(&c, archs[a]);
            c.pos = kinds[k];
            c.dropout = 0;
            if (k == 4)
                c.options = (qkv_stack_options){.activation = QKV_ACT_GELU_EXACT, .ln_eps = 1e-6f, .rope_layout = 1,
                                                .rope_base = 500.0f, .rope_fraction = 0.5f, .attn_scale = 0.3f};
            qkv_seq_model t;
            qkv_seq_model_init(&t, &c);
            qkv_tape *tape = qkv_tape_create(1);
            qkv_tape_set_grad(tape, 0);
            qkv_seq_batch batch = {0};
            qkv_seq_make_batch(&c.data, 99, 0, 6, &batch);
            int width = archs[a] == QKV_ARCH_SEQ2SEQ ? batch.tgt_len : c.data.max_len;
            int32_t *pred = calloc((size_t)6 * width, sizeof(int32_t));
            qkv_seq_model_predict(&t, tape, &batch, pred);
            /* Feed the predictions back as the target and run the full pass. */
            for (int i = 0; i < 6; i++)
                for (int s = 0; s < batch.lengths[i]; s++) {
                    int32_t y = pred[(size_t)i * width + s];
                    if (archs[a] == QKV_ARCH_SEQ2SEQ) {
                        if (s + 1 < batch.tgt_len) batch.tgt_in[(size_t)i * batch.tgt_len + s + 1] = y;
                    } else {
                        batch.src[(size_t)i * batch.src_len + batch.lengths[i] + 1 + s] = y;
                    }
                }
            qkv_tensor *src_mask = qkv_tape_tensor(tape, 2, (int[]){6, batch.src_len});
            memcpy(src_mask->data, batch.src_mask, src_mask->size * sizeof(float));
            qkv_tensor *h = qkv_encoder_forward(
                tape, &t.encoder, qkv_embedding(tape, t.embed, batch.src, 2, (int[]){6, batch.src_len}), src_mask);
            if (archs[a] == QKV_ARCH_SEQ2SEQ)
                h = qkv_decoder_forward(tape, &t.decoder,
                                        qkv_embedding(tape, t.embed, batch.tgt_in, 2, (int[]){6, batch.tgt_len}), h,
                                        src_mask, NULL);
            qkv_tensor *logits = qkv_linear_forward(tape, &t.head, h);
            int tokens = logits->shape[2], rows = logits->shape[1];
            for (int i = 0; i < 6; i++)
                for (int s = 0; s < batch.lengths[i]; s++) {
                    int pos = archs[a] == QKV_ARCH_SEQ2SEQ ? s : batch.lengths[i] + s;
                    const float *row = logits->data + ((size_t)i * rows + pos) * tokens;
                    int best = 0;
                    for (int v = 1; v < tokens; v++) if (row[v] > row[best]) best = v;
                    ck_assert_msg(best == pred[(size_t)i * width + s], "%s %s: example %d position %d",
                                  qkv_seq_arch_name(archs[a]), qkv_pos_kind_name(kinds[k]), i, s);
                }
            free(pred);
            qkv_seq_batch_free(&batch);
            qkv_tape_free(tape);
            qkv_seq_model_free(&t);
        }
}
END_TEST

static int file_exists(const char *path) { return access(path, F_OK) == 0; }

/* ---- the C API's failures ------------------------------------------------------------- */

/* One parameter w (zero at first); the loss of step s is w + 1, NaN from step
 * nan_from on, or NULL with an error from step fail_from on (-1: never). */
typedef struct toy_task {
    qkv_params params;
    long nan_from, fail_from;
    qkv_task task;
} toy_task;

/* 1: the failure from fail_from on is a diverged value (task->diverged). */
static int toy_failure_diverged;

static qkv_tensor *toy_loss(void *self, qkv_tape *tape, long step) {
    toy_task *t = self;
    if (t->fail_from >= 0 && step >= t->fail_from) {
        qkv_set_error("toy: no batch for step %ld", step);
        t->task.diverged = toy_failure_diverged;
        return NULL;
    }
    float c = t->nan_from >= 0 && step >= t->nan_from ? NAN : 1.0f;
    return qkv_sum_all(tape, qkv_add_scalar(tape, t->params.items[0], c));
}

static void toy_evaluate(void *self, qkv_tape *tape, qkv_metrics *metrics) {
    (void)tape;
    qkv_metrics_set(metrics, "w", ((toy_task *)self)->params.items[0]->data[0]);
}

static void toy_describe(void *self, qkv_config_kv *config) {
    (void)self;
    qkv_config_add(config, "task", "toy");
}

static void toy_init(toy_task *t, long nan_from, long fail_from) {
    memset(t, 0, sizeof *t);
    qkv_params_new(&t->params, "w", 1, (int[]){1});
    t->nan_from = nan_from;
    t->fail_from = fail_from;
    t->task = (qkv_task){.name = "toy", .self = t, .params = &t->params, .loss = toy_loss,
                         .evaluate = toy_evaluate, .describe = toy_describe};
}

/* qkv_train on a toy task with stderr (fd 2) sent to a file: its return code,
 * after asserting that the library printed nothing there. */
static int train_toy_silently(const qkv_trainer_config *config, long nan_from, long fail_from,
                              qkv_train_result *result) {
    char path[128];
    snprintf(path, sizeof path, "%s/stderr.txt", scratch_dir);
    toy_task toy;
    toy_init(&toy, nan_from, fail_from);
    fflush(stderr);
    int saved = dup(STDERR_FILENO), file = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    ck_assert(saved >= 0 && file >= 0 && dup2(file, STDERR_FILENO) == STDERR_FILENO);
    close(file);
    int rc = train_with(config, &toy.task, result);
    fflush(stderr);
    dup2(saved, STDERR_FILENO);
    close(saved);
    struct stat st;
    ck_assert_int_eq(stat(path, &st), 0);
    ck_assert_msg(st.st_size == 0, "qkv_train printed %lld bytes to stderr", (long long)st.st_size);
    remove(path);
    qkv_params_free(&toy.params);
    return rc;
}

START_TEST(api_failures_return_an_error_and_print_nothing) {
    scratch_dir_create();
    qkv_trainer_config t = {.steps = 10, .quiet = 1, .seed = 1, .save_every = 1};
    t.optim = (qkv_optimizer_config){.kind = QKV_OPT_SGD, .lr = 0.1f};
    t.schedule = (qkv_schedule){.kind = QKV_SCHED_CONSTANT, .total = 10};
    char save[128], json[128];
    snprintf(save, sizeof save, "%s/toy.safetensors", scratch_dir);
    snprintf(json, sizeof json, "%s/run.json", scratch_dir);
    t.save_path = save;
    qkv_train_result result;

    /* A NaN loss at step 3 (1-based): -1, nonfinite, and the last good checkpoint named. */
    ck_assert_int_eq(train_toy_silently(&t, 2, -1, &result), -1);
    ck_assert_int_eq(result.nonfinite, 1);
    ck_assert_msg(strncmp(qkv_last_error(), "step 3: the loss is NaN", 23) == 0, "%s", qkv_last_error());
    ck_assert_msg(strstr(qkv_last_error(), "; training stopped; ") &&
                      strstr(qkv_last_error(), "/toy.safetensors (step 2) is the last good checkpoint"),
                  "%s", qkv_last_error());

    /* The task's own error: -1 with that error, not a NaN/Inf stop. */
    ck_assert_int_eq(train_toy_silently(&t, -1, 4, &result), -1);
    ck_assert_int_eq(result.nonfinite, 0);
    ck_assert_str_eq(qkv_last_error(), "toy: no batch for step 4");
    /* The same error marked as a diverged value: a NaN/Inf stop naming the step once. */
    toy_failure_diverged = 1;
    ck_assert_int_eq(train_toy_silently(&t, -1, 4, &result), -1);
    toy_failure_diverged = 0;
    ck_assert_int_eq(result.nonfinite, 1);
    ck_assert_msg(strncmp(qkv_last_error(), "step 5: toy: no batch for step 4; training stopped; ", 52) == 0, "%s",
                  qkv_last_error());

    /* An unwritable --json: -1 before training, naming the path; nothing written. */
    remove(t.save_path);
    t.json_path = "/nonexistent-dir/run.json";
    ck_assert_int_eq(train_toy_silently(&t, -1, -1, &result), -1);
    ck_assert_int_eq(result.nonfinite, 0);
    ck_assert_msg(strstr(qkv_last_error(), "/nonexistent-dir/run.json"), "%s", qkv_last_error());
    ck_assert(!file_exists(t.save_path));

    /* And a run that goes well returns 0. */
    t.json_path = json;
    ck_assert_int_eq(train_toy_silently(&t, -1, -1, &result), 0);
    ck_assert_int_eq(result.nonfinite, 0);
    ck_assert_int_eq(result.steps_done, 10);
    ck_assert(file_exists(t.json_path) && file_exists(t.save_path));
    scratch_dir_remove();
}
END_TEST

START_TEST(cli_refuses_bad_flags_and_writes_nothing) {
    scratch_dir_create();
    char args[512], line[512], json[128];
    snprintf(json, sizeof json, "%s/out.json", scratch_dir);
    const struct { const char *flags, *message; } bad[] = {
        {"--heads 3 --dim 64", "--heads 3 does not divide --dim 64"},
        {"--len 20 --max-pos 16", "beyond the learned table's --max-pos 16"},
        {"--batch 0", "--batch: expected an integer"},
        {"--pos fancy", "allowed: none, learned, sinusoidal, rope, alibi"},
        {"--lr", "--lr needs a value"},
        {"--steps 3", "--steps given twice"},
        {"--resume /nonexistent/ckpt.safetensors", "/nonexistent/ckpt.safetensors"},
        {"--csv /nonexistent-dir/x.csv", "/nonexistent-dir/x.csv"},
        {"--save /dev/null", "not a regular file"},
        {"--csv ''", "an output path is empty"},
        {"--epochs 3 --train-size 1000000000 --batch 1", "at most 1e9"},
        {"--target 2", "--target 2: seq_acc is at most 1"},   /* an accuracy's target within [0, 1] */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        snprintf(args, sizeof args, "train reverse --steps 2 --json %s %s", json, bad[i].flags);
        ck_assert_int_eq(run_qkv(args, line, sizeof line), 2);
        ck_assert_msg(strstr(line, bad[i].message), "flags '%s': message '%s'", bad[i].flags, line);
        ck_assert_msg(!file_exists(json), "flags '%s' wrote %s", bad[i].flags, json);
    }
    ck_assert_int_eq(run_qkv("eval /nonexistent.safetensors", line, sizeof line), 2);
    ck_assert_int_eq(run_qkv("train", line, sizeof line), 2);
    /* an error (maxreg's test MAE) has no upper bound: a target of 2 is one it can reach; 1 is an accuracy's top */
    ck_assert_int_eq(run_qkv("train maxreg --target 2 --steps 1 --eval-every 0 --quiet", line, sizeof line), 0);
    ck_assert_int_eq(run_qkv("train reverse --target 1 --steps 1 --eval-every 0 --quiet", line, sizeof line), 0);
    scratch_dir_remove();
}
END_TEST

START_TEST(cli_trains_saves_evaluates_and_summarizes) {
    scratch_dir_create();
    char args[512], line[512], path[128], json[128], csv[128];
    snprintf(path, sizeof path, "%s/m.safetensors", scratch_dir);
    snprintf(json, sizeof json, "%s/s.json", scratch_dir);
    snprintf(csv, sizeof csv, "%s/s.csv", scratch_dir);
    snprintf(args, sizeof args,
             "train copy --steps 20 --len 4 --dim 16 --heads 2 --ff 16 --layers 1 --test-size 16 --log-every 5 "
             "--quiet --save %s --json %s --csv %s",
             path, json, csv);
    ck_assert_int_eq(run_qkv(args, line, sizeof line), 0);
    ck_assert(file_exists(path) && file_exists(json) && file_exists(csv));
    FILE *f = fopen(json, "r");
    char text[4096] = "";
    size_t got = fread(text, 1, sizeof text - 1, f);
    text[got] = '\0';
    fclose(f);
    const char *keys[] = {"\"task\": \"copy\"", "\"config\"", "\"steps\": 20", "\"final_train_loss\"",
                          "\"token_acc\"", "\"seq_acc\"", "\"wall_seconds\"", "\"steps_per_second\""};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        ck_assert_msg(strstr(text, keys[i]), "summary lacks %s: %s", keys[i], text);
    f = fopen(csv, "r");
    int rows = 0;
    while (fgets(line, sizeof line, f)) rows++;
    fclose(f);
    ck_assert_int_eq(rows, 1 + 5); /* header, step 1, 5, 10, 15, 20 */
    snprintf(args, sizeof args, "eval %s", path);
    ck_assert_int_eq(run_qkv(args, line, sizeof line), 0);
    snprintf(args, sizeof args, "eval %s --data /tmp", path); /* only tasks that read a data set take another */
    ck_assert_int_eq(run_qkv(args, line, sizeof line), 2);
    ck_assert_msg(strstr(line, "--data") && strstr(line, "is a copy model, trained on data it makes itself"), "%s", line);
    /* Resuming needs the same run's config and more steps than the checkpoint has. */
    snprintf(args, sizeof args, "train reverse --steps 30 --len 4 --dim 16 --heads 2 --ff 16 --layers 1 "
             "--test-size 16 --quiet --resume %s", path);
    ck_assert_int_eq(run_qkv(args, line, sizeof line), 2);
    ck_assert_msg(strstr(line, "a checkpoint of another run: task is \"copy\" there, reverse here"), "%s", line);
    /* ... in one line, with no "changed settings" line before it (this run's --lr differs too) */
    char err[512];
    snprintf(err, sizeof err, "%s", scratch_file("resume_err.txt"));
    snprintf(args, sizeof args, "train reverse --steps 30 --len 4 --dim 16 --heads 2 --ff 16 --layers 1 "
             "--test-size 16 --quiet --lr 0.5 --resume %s", path);
    int status = wait_qkv(spawn_qkv(args, NULL, 0, err));
    ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 2);
    size_t err_len;
    unsigned char *err_text = read_file_bytes(err, &err_len);
    char said[1024];
    snprintf(said, sizeof said, "%.*s", (int)(err_len < 1000 ? err_len : 1000), (const char *)err_text);
    free(err_text);
    int lines = 0;
    for (const char *c = said; *c; c++) lines += *c == '\n';
    ck_assert_msg(lines == 1 && strstr(said, "another run") && !strstr(said, "changed settings"), "%s", said);
    snprintf(args, sizeof args, "train copy --steps 20 --len 4 --dim 16 --heads 2 --ff 16 --layers 1 "
             "--test-size 16 --log-every 5 --quiet --resume %s", path);
    ck_assert_int_eq(run_qkv(args, line, sizeof line), 2);
    ck_assert_msg(strstr(line, "is at step 20; --steps 20 must be larger"), "%s", line);
    scratch_dir_remove();
}
END_TEST

Suite *suite_trainer(void) {
    Suite *s = suite_create("trainer");
    TCase *tc = tcase_create("trainer");
    tcase_set_timeout(tc, 0);
    tcase_add_test(tc, resume_is_bitwise_exact);
    tcase_add_test(tc, checkpoint_that_does_not_fit_leaves_model_untouched);
    tcase_add_test(tc, long_config_values_round_trip);
    tcase_add_test(tc, cached_decoding_matches_full_pass);
    tcase_add_test(tc, cli_refuses_bad_flags_and_writes_nothing);
    tcase_add_test(tc, cli_trains_saves_evaluates_and_summarizes);
    tcase_add_test(tc, api_failures_return_an_error_and_print_nothing);
    suite_add_tcase(s, tc);
    return s;
}
