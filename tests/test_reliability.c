/* test_reliability.c — what keeps long unattended runs safe:
 *  - anomaly mode (tape.h): the first NaN/Inf of an op's output (forward) or of an
 *    input gradient (backward) is reported with the op and its input shapes;
 *  - the trainer stops on a NaN loss, gradient or updated state (exit 3) with or
 *    without --detect-nan, writes nothing after the bad step, and no checkpoint
 *    holds a NaN (eval and --resume refuse one); the NaN path through the ops is
 *    free of undefined behavior (make test-asan);
 *  - crash safety: a run killed with SIGKILL in the middle of training, or in the
 *    middle of a checkpoint write (the QKV_TEST_KILL_SAVE hook, checkpoint.h),
 *    leaves the previous checkpoint loadable, and resuming from it ends bitwise
 *    equal to an uninterrupted run;
 *  - input errors found early and said in one printable line (an output path
 *    ending in '/', control characters, data detect's paths, --enc-layers 0), and
 *    a permutation measurement between the thresholds called inconclusive;
 *  - memory exhaustion (alloc.h): a clear message naming the size and exit 1,
 *    never abort or a segfault, also for ./qkv under a limited address space.
 * Signals and the files a save leaves are test_interrupt.c's.
 */
#define _GNU_SOURCE /* memmem */
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/kernels/fastmath.h"
#include "tests/test_util.h"
#include "train/experiments/experiments.h"

/* ---- anomaly mode ---------------------------------------------------------------- */

START_TEST(anomaly_mode_names_the_forward_op) {
    qkv_tape *tape = qkv_tape_create(1);
    qkv_tensor *x = tensor_of(2, (const int[]){2, 3}, (const float[]){1, 2, 3, 4, -5, 6}, 1);
    qkv_log(tape, x); /* off by default: nothing is checked */
    ck_assert_str_eq(tape->anomaly, "");
    qkv_tape_set_detect_nan(tape, 1);
    qkv_tensor *y = qkv_exp(tape, x);
    ck_assert_str_eq(tape->anomaly, "");
    qkv_tensor *bad = qkv_log(tape, y);
    ck_assert_str_eq(tape->anomaly, "");          /* log(exp(x)) is finite */
    qkv_log(tape, x);                             /* log(-5) is NaN */
    ck_assert_msg(strstr(tape->anomaly, "forward of log (inputs [2,3]): output [2,3] has NaN at element 4"),
                  "%s", tape->anomaly);
    qkv_sqrt(tape, qkv_scale(tape, bad, -1.0f));  /* a second anomaly keeps the first message */
    ck_assert_msg(strstr(tape->anomaly, "forward of log"), "%s", tape->anomaly);
    qkv_tape_reset(tape);                         /* the message outlives the step */
    ck_assert_msg(strstr(tape->anomaly, "forward of log"), "%s", tape->anomaly);
    qkv_tape_set_detect_nan(tape, 1);             /* and is cleared here */
    ck_assert_str_eq(tape->anomaly, "");
    qkv_tensor_free(x);
    qkv_tape_free(tape);
}
END_TEST

START_TEST(anomaly_mode_names_the_backward_op) {
    qkv_tape *tape = qkv_tape_create(1);
    qkv_tape_set_detect_nan(tape, 1);
    qkv_tensor *x = tensor_of(1, (const int[]){3}, (const float[]){4, 0, 1}, 1);
    qkv_tensor *w = tensor_of(1, (const int[]){3}, (const float[]){1, 1, 1}, 1);
    /* sqrt(0) = 0 is finite, its slope 1 / (2 sqrt(0)) is not. */
    qkv_tensor *loss = qkv_sum_all(tape, qkv_mul(tape, qkv_sqrt(tape, x), w));
    ck_assert_str_eq(tape->anomaly, "");
    qkv_backward(tape, loss);
    ck_assert_msg(strstr(tape->anomaly, "backward of sqrt (inputs [3]): the gradient of input 0 [3] has Inf at "
                                        "element 1"),
                  "%s", tape->anomaly);
    qkv_tensor_free(x);
    qkv_tensor_free(w);
    qkv_tape_free(tape);
}
END_TEST

/* ---- the trainer on NaN ------------------------------------------------------------ */

/* maxreg with plain SGD at lr 10 and no clipping blows up at step 3. */
#define DIVERGING "train maxreg --lr 10 --optimizer sgd --clip 0 --schedule constant --warmup 0 --width 8 " \
                  "--heads 2 --batch 16 --test-size 16 --threads 1 --quiet --steps 20"

/* The step a "qkv: step N: ..." message names. */
static long step_in(const char *line) {
    long step = -1;
    ck_assert_msg(sscanf(line, "qkv: step %ld: ", &step) == 1 && step > 1, "%s", line);
    return step;
}

START_TEST(nan_loss_stops_training) {
    scratch_dir_create();
    char args[1024], line[512], saved[96];
    snprintf(args, sizeof args, DIVERGING " --save %s --save-every 1 --json %s", scratch_file("ck.safetensors"),
             scratch_file("run.json"));
    ck_assert_int_eq(run_qkv(args, line, sizeof line), 3);
    long step = step_in(line); /* 3 on the development machine */
    ck_assert_msg(strstr(line, ": the loss is NaN") || strstr(line, ": the loss is Inf"), "%s", line);
    snprintf(saved, sizeof saved, "ck.safetensors (step %ld) is the last good checkpoint", step - 1);
    ck_assert_msg(strstr(line, saved), "%s", line);
    ck_assert_int_eq(checkpoint_step(scratch_file("ck.safetensors")), step - 1); /* nothing after the bad step */
    ck_assert(!path_exists(scratch_file("run.json")));
    ck_assert_int_eq(count_dir_entries(scratch_dir), 1); /* no temporary file left */
    scratch_dir_remove();
}
END_TEST

START_TEST(detect_nan_names_the_op_and_the_step) {
    scratch_dir_create();
    char args[1024], line[512];
    snprintf(args, sizeof args, DIVERGING " --detect-nan --save %s --save-every 1", scratch_file("ck.safetensors"));
    ck_assert_int_eq(run_qkv(args, line, sizeof line), 3);
    /* On the development machine: "qkv: step 3: --detect-nan: forward of matmul (inputs
     * [16,10,8], [8,8]): output [16,10,8] has Inf at element 0; training stopped; ..." */
    long step = step_in(line);
    ck_assert_msg(strstr(line, ": --detect-nan: forward of ") && strstr(line, " (inputs [") &&
                      (strstr(line, "] has Inf at element ") || strstr(line, "] has NaN at element ")),
                  "%s", line);
    ck_assert_int_eq(checkpoint_step(scratch_file("ck.safetensors")), step - 1);
    /* A stable run with the flag on trains as usual. */
    ck_assert_int_eq(run_qkv("train spirals --steps 20 --hidden 8 --batch 16 --points 50 --detect-nan --quiet", line,
                             sizeof line), 0);
    scratch_dir_remove();
}
END_TEST

/* Finding 1 of issue 20: the loss of step 7 of this run is finite, its update is
 * not. The check after the update stops the run there, so the step-6 checkpoint
 * is the last one, and it holds only finite values. */
#define SGD_LR10 "--optimizer sgd --lr 10 --clip 0 --schedule constant --steps 100 --save-every 1 --eval-every 0"

/* Every tensor of a checkpoint is finite. */
static void expect_finite_checkpoint(const char *path) {
    qkv_safetensors st;
    ck_assert_msg(qkv_safetensors_load(path, &st) == 0, "%s", qkv_last_error());
    for (int i = 0; i < st.n_tensors; i++)
        ck_assert_msg(qkv_count_nonfinite(st.tensors[i].data, qkv_shape_size(st.tensors[i].ndim, st.tensors[i].shape)) == 0,
                      "%s: %s holds NaN/Inf", path, st.tensors[i].name);
    qkv_safetensors_free(&st);
}

START_TEST(a_diverged_update_is_never_checkpointed) {
    scratch_dir_create();
    char args[1024], line[512], saved[128], ck[64];
    snprintf(ck, sizeof ck, "%s", scratch_file("ck.safetensors"));
    snprintf(args, sizeof args, "train reverse " SGD_LR10 " --save %s --quiet", ck);
    ck_assert_int_eq(run_qkv(args, line, sizeof line), 3);
    long step = step_in(line); /* 7 on the development machine: a finite loss, a NaN gradient */
    ck_assert_msg(strstr(line, "the gradient norm is ") || strstr(line, "the update left ") ||
                      strstr(line, "the loss is "), "%s", line);
    snprintf(saved, sizeof saved, "ck.safetensors (step %ld) is the last good checkpoint", step - 1);
    ck_assert_msg(strstr(line, saved), "%s", line);
    ck_assert_int_eq(checkpoint_step(ck), step - 1);
    expect_finite_checkpoint(ck);
    ck_assert_int_eq(count_dir_entries(scratch_dir), 1);
    /* The detect task stops the same way: exit 3, the step once, the checkpoint. */
    snprintf(args, sizeof args, "train detect " SGD_LR10 " --save %s --quiet --threads 1", ck);
    ck_assert_int_eq(run_qkv(args, line, sizeof line), 3);
    step = step_in(line);
    snprintf(saved, sizeof saved, "ck.safetensors (step %ld) is the last good checkpoint", step - 1);
    ck_assert_msg(strstr(line, saved), "%s", line);
    ck_assert_msg(!strstr(line, "detect: step"), "the step is named twice: %s", line);
    expect_finite_checkpoint(ck);
    scratch_dir_remove();
}
END_TEST

/* A checkpoint someone else wrote with a NaN in it: eval and --resume refuse it in
 * one line with exit 2. */
START_TEST(a_nonfinite_checkpoint_is_refused) {
    scratch_dir_create();
    char args[1024], line[512], ck[64];
    snprintf(ck, sizeof ck, "%s", scratch_file("ck.safetensors"));
    snprintf(args, sizeof args, SMALL_SPIRALS " --steps 5 --save %s", ck);
    ck_assert_int_eq(run_qkv(args, line, sizeof line), 0);
    size_t len = 0;
    unsigned char *bytes = read_file_bytes(ck, &len);
    const uint32_t nan_bits = 0x7fc00000u; /* the file's last float: a NaN */
    memcpy(bytes + len - 4, &nan_bits, 4);
    write_file_bytes(ck, bytes, len);
    free(bytes);
    snprintf(args, sizeof args, "eval %s", ck);
    ck_assert_int_eq(run_qkv(args, line, sizeof line), 2);
    ck_assert_msg(strstr(line, "ck.safetensors: refused: tensor \"") && strstr(line, " holds 1 NaN/Inf value of "),
                  "%s", line);
    snprintf(args, sizeof args, SMALL_SPIRALS " --steps 10 --resume %s --save %s", ck, scratch_file("next"));
    ck_assert_int_eq(run_qkv(args, line, sizeof line), 2);
    ck_assert_msg(strstr(line, " holds 1 NaN/Inf value of "), "%s", line);
    ck_assert(!path_exists(scratch_file("next")));
    scratch_dir_remove();
}
END_TEST

/* An error built from the previous one ("<context>: %s" of qkv_last_error()) says
 * the context once: the detect task's doubled "detect: step 7: detect: step 7:". */
START_TEST(an_error_wrapping_the_last_one_is_not_garbled) {
    qkv_set_error("hungarian: entry 0 is nan");
    qkv_set_error("detect: step %d: %s", 7, qkv_last_error());
    ck_assert_str_eq(qkv_last_error(), "detect: step 7: hungarian: entry 0 is nan");
}
END_TEST

/* ---- NaN on the way through the ops (finding 5 of issue 20) -------------------------- */

/* The fast exponential's special inputs: no undefined behavior (make test-asan runs
 * this under UBSan), NaN for NaN and +inf, 0 for -inf. */
START_TEST(fast_exp_on_special_values) {
    (void)qkv_fast_exp_nonpositive(1e30f); /* outside the contract (x <= 0), but defined */
    ck_assert(isnan(qkv_fast_exp_nonpositive(NAN)) && isnan(qkv_fast_exp_nonpositive(INFINITY)));
    ck_assert(qkv_fast_exp_nonpositive(-INFINITY) == 0.0f && qkv_fast_exp_nonpositive(-1e30f) == 0.0f);
    ck_assert(qkv_fast_exp_nonpositive(0.0f) == 1.0f);
    ck_assert(isnan(qkv_fast_tanhf(NAN)) && qkv_fast_tanhf(INFINITY) == 1.0f);
}
END_TEST

/* Values a diverging run produces: NaN, both infinities, the largest float. */
static const float hostile[] = {NAN, INFINITY, -INFINITY, 3.4e38f, -3.4e38f, 1.0f, -2.0f, 0.5f};
#define N_HOSTILE ((int)(sizeof hostile / sizeof hostile[0]))

static qkv_tensor *hostile_tensor(int ndim, const int *shape, int shift) {
    qkv_tensor *t = tensor_of(ndim, shape, NULL, 1);
    for (size_t i = 0; i < t->size; i++) t->data[i] = hostile[(i + (size_t)shift) % N_HOSTILE];
    return t;
}

/* NaN and Inf through cross-entropy, softmax, attention, GELU and the set loss,
 * forward and backward: the results are NaN where they must be, and under
 * make test-asan no op does anything undefined on the way. */
START_TEST(nan_through_the_ops_is_defined) {
    qkv_tape *tape = qkv_tape_create(1);
    qkv_tensor *logits = hostile_tensor(2, (const int[]){8, 5}, 0);
    const int32_t targets[8] = {0, 1, 2, 3, 4, 0, 1, 2};
    qkv_tensor *ce = qkv_cross_entropy(tape, logits, targets, -1, NULL);
    ck_assert(!isfinite(ce->data[0]));
    qkv_backward(tape, ce);
    qkv_tape_reset(tape);
    qkv_tensor *sm = qkv_sum_all(tape, qkv_softmax(tape, logits));
    ck_assert(!isfinite(sm->data[0]));
    qkv_backward(tape, sm);
    qkv_tape_reset(tape);

    qkv_tensor *x = hostile_tensor(2, (const int[]){4, 8}, 3);
    qkv_tensor *g = qkv_sum_all(tape, qkv_gelu(tape, x));
    ck_assert(isnan(g->data[0]));
    qkv_backward(tape, g);
    qkv_tape_reset(tape);
    g = qkv_sum_all(tape, qkv_gelu_exact(tape, x));
    qkv_backward(tape, g);
    qkv_tape_reset(tape);

    for (int shift = 0; shift < N_HOSTILE; shift++) { /* NaN in q, in k, in v, and in every position */
        const int shape[4] = {1, 2, 4, 4};
        qkv_tensor *q = hostile_tensor(4, shape, shift), *k = hostile_tensor(4, shape, shift + 1),
                   *v = hostile_tensor(4, shape, shift + 2);
        qkv_attention_opts opts = {.causal = shift & 1};
        qkv_tensor *a = qkv_sum_all(tape, qkv_attention(tape, q, k, v, &opts, NULL));
        ck_assert(!isfinite(a->data[0]));
        qkv_backward(tape, a);
        qkv_tape_reset(tape);
        qkv_tensor_free(q);
        qkv_tensor_free(k);
        qkv_tensor_free(v);
    }

    /* The set loss: NaN logits or boxes make the matching fail with an error, never UB. */
    qkv_tensor *set_logits = hostile_tensor(3, (const int[]){1, 4, 3}, 0);
    qkv_tensor *boxes = hostile_tensor(3, (const int[]){1, 4, 4}, 5);
    const int counts[1] = {2};
    const int32_t classes[2] = {0, 1};
    const float target_boxes[8] = {0.5f, 0.5f, 0.2f, 0.2f, 0.3f, 0.3f, 0.1f, 0.1f};
    qkv_set_targets set = {1, counts, classes, target_boxes};
    ck_assert_ptr_null(qkv_set_loss(tape, set_logits, boxes, &set, NULL, NULL, NULL));
    ck_assert_msg(strstr(qkv_last_error(), "matching failed"), "%s", qkv_last_error());
    qkv_tape_reset(tape);
    for (size_t i = 0; i < boxes->size; i++) boxes->data[i] = 0.25f; /* finite boxes, NaN logits */
    ck_assert_ptr_null(qkv_set_loss(tape, set_logits, boxes, &set, NULL, NULL, NULL));
    qkv_tape_reset(tape);
    qkv_tensor *raw = hostile_tensor(1, (const int[]){N_HOSTILE}, 0);
    qkv_tensor *sig = qkv_sigmoid(tape, raw);
    qkv_tensor *giou = qkv_sum_all(tape, qkv_giou_loss(tape, qkv_reshape(tape, sig, 2, (const int[]){2, 4}),
                                                       qkv_reshape(tape, sig, 2, (const int[]){2, 4})));
    ck_assert(isnan(giou->data[0]));
    qkv_backward(tape, giou);
    qkv_tape_free(tape);
    qkv_tensor_free(logits);
    qkv_tensor_free(x);
    qkv_tensor_free(set_logits);
    qkv_tensor_free(boxes);
    qkv_tensor_free(raw);
}
END_TEST

/* ---- crash safety ------------------------------------------------------------------ */


START_TEST(sigkill_during_training_resumes_bitwise) {
    scratch_dir_create();
    char args[512];
    char ck[64];
    snprintf(ck, sizeof ck, "%s", scratch_file("ck.safetensors"));
    /* A run that would go on for a long time, checkpointing every 5 steps: kill it
     * as soon as its first checkpoint exists, wherever it is then. */
    snprintf(args, sizeof args, SMALL_SPIRALS " --steps 100000000 --save %s --save-every 5", ck);
    pid_t pid = spawn_qkv(args, NULL, 0, NULL);
    int status = 0;
    while (!path_exists(ck)) {
        ck_assert_msg(waitpid(pid, &status, WNOHANG) == 0, "the run ended before its first checkpoint");
        usleep(1000);
    }
    ck_assert_int_eq(kill(pid, SIGKILL), 0);
    status = wait_qkv(pid);
    ck_assert_msg(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL, "status %d", status);
    long step = checkpoint_step(ck); /* intact and loadable, whatever the kill interrupted */
    ck_assert(step >= 5 && step % 5 == 0);
    expect_resume_matches(SMALL_SPIRALS, ck, step + 12);
    scratch_dir_remove();
}
END_TEST

START_TEST(sigkill_during_checkpoint_write_keeps_the_previous_one) {
    scratch_dir_create();
    char args[512], ck[64], err[64];
    snprintf(ck, sizeof ck, "%s", scratch_file("ck.safetensors"));
    snprintf(err, sizeof err, "%s", scratch_file("stderr"));
    /* The third checkpoint (step 30) dies after 300 bytes of its temporary file. */
    snprintf(args, sizeof args, SMALL_SPIRALS " --steps 40 --save %s --save-every 10", ck);
    pid_t pid = spawn_qkv(args, "QKV_TEST_KILL_SAVE=3:300", 0, err);
    int status = wait_qkv(pid);
    ck_assert_msg(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL, "status %d", status);
    ck_assert_int_eq(checkpoint_step(ck), 20); /* the previous checkpoint, intact */
    /* The torn temporary file is there beside it, and is not a checkpoint. */
    char tmp[128];
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", ck, (long)pid);
    size_t len = 0;
    free(read_file_bytes(tmp, &len));
    ck_assert_msg(len >= 300 && len < 2000, "temporary file of %zu bytes", len);
    qkv_safetensors st;
    ck_assert_int_eq(qkv_safetensors_load(tmp, &st), -1);
    expect_resume_matches(SMALL_SPIRALS, ck, 40);
    scratch_dir_remove();
}
END_TEST

START_TEST(a_measurement_between_the_thresholds_is_inconclusive) {
    qkv_perm_options o;
    qkv_perm_default_options(&o);
    o.tokens = 256;
    qkv_perm_row rows[QKV_PERM_MAX_ROWS];
    int n = qkv_permutation_experiment(&o, rows), inconclusive = 0;
    for (int i = 0; i < n; i++) {
        ck_assert_msg(rows[i].agrees, "%s disagrees", rows[i].config);
        inconclusive += rows[i].inconclusive;
    }
    ck_assert_int_ge(inconclusive, 1);
}
END_TEST

/* ---- errors found early, in one printable line (finding 4 of issue 20) ------------------ */

/* --save newdir/ used to pass the up-front check (dirname is ".") and fail after
 * the last step: now it is refused before the data is even loaded. */
START_TEST(a_directory_name_as_output_is_refused_up_front) {
    scratch_dir_create();
    char args[1024], line[512];
    snprintf(args, sizeof args, SMALL_SPIRALS " --steps 100000000 --save %s/", scratch_file("newdir"));
    ck_assert_int_eq(run_qkv(args, line, sizeof line), 2); /* at once: 10^8 steps would never end */
    ck_assert_msg(strstr(line, "newdir/: names a directory (ends with '/')"), "%s", line);
    ck_assert_int_eq(count_dir_entries(scratch_dir), 0);
    scratch_dir_remove();
}
END_TEST

/* A newline or a raw byte inside a value: still one line, escaped. */
START_TEST(control_characters_in_errors_are_escaped) {
    qkv_set_error("%s", "adam\nw\t\xff\xc3\xa9\x1b");
    ck_assert_str_eq(qkv_last_error(), "adam\\nw\\t\\xff\xc3\xa9\\x1b"); /* UTF-8 (é) is kept */
    scratch_dir_create();
    char err[64], line[512];
    snprintf(err, sizeof err, "%s", scratch_file("stderr"));
    int status = wait_qkv(spawn_qkv("train spirals --steps 1 --optimizer adam\nw", NULL, 0, err));
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 2, "status %d", status);
    first_line(err, line, sizeof line); /* fails on a second line */
    ck_assert_msg(strstr(line, "--optimizer: unknown value 'adam\\nw'"), "%s", line);
    status = wait_qkv(spawn_qkv("gradcheck --filter a\nb", NULL, 0, err)); /* a command's own message too */
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 2, "status %d", status);
    first_line(err, line, sizeof line);
    ck_assert_msg(strstr(line, "no case matches 'a\\nb'"), "%s", line);
    scratch_dir_remove();
}
END_TEST

/* `qkv data detect`: a path that cannot work is exit 2 before any image; the set is
 * written into a temporary directory renamed into place, so nothing else is left. */
START_TEST(data_detect_path_errors_are_exit_2_and_leave_nothing) {
    scratch_dir_create();
    char args[1024], line[512];
    write_file_bytes(scratch_file("file"), "x", 1);
    snprintf(args, sizeof args, "data detect --n 2 --out %s", scratch_file("file"));
    ck_assert_int_eq(run_qkv(args, line, sizeof line), 2);
    ck_assert_msg(strstr(line, "file: exists and is not a directory"), "%s", line);
    snprintf(args, sizeof args, "data detect --n 2 --out %s/x", scratch_file("missing"));
    ck_assert_int_eq(run_qkv(args, line, sizeof line), 2);
    ck_assert_msg(strstr(line, "the parent directory ") && strstr(line, "does not exist"), "%s", line);
    ck_assert_int_eq(count_dir_entries(scratch_dir), 1);
    snprintf(args, sizeof args, "data detect --n 2 --out %s", scratch_file("set"));
    ck_assert_int_eq(run_qkv(args, line, sizeof line), 0);
    ck_assert_int_eq(count_dir_entries(scratch_file("set")), 3); /* two images and annotations.txt */
    ck_assert_int_eq(count_dir_entries(scratch_dir), 2);           /* no temporary directory */
    snprintf(args, sizeof args, "data detect --n 2 --out %s", scratch_file("set"));
    ck_assert_int_eq(run_qkv(args, line, sizeof line), 2);
    ck_assert_msg(strstr(line, "directory is not empty (3 entries)"), "%s", line);
    scratch_dir_remove();
}
END_TEST

/* ---- values at the edge of a range (finding 3 of issue 20) ----------------------------- */

/* --enc-layers 0 used to be inside the range and abort (134) in the encoder: the
 * range starts at 1, and a checkpoint that says 0 is refused in one line too. */
START_TEST(enc_layers_zero_is_refused_not_aborted) {
    scratch_dir_create();
    char args[1024], line[512], ck[64], bad[64];
    ck_assert_int_eq(run_qkv("train detect --enc-layers 0 --steps 1", line, sizeof line), 2);
    ck_assert_msg(strstr(line, "--enc-layers: expected an integer in [1, 64], got '0'"), "%s", line);
    snprintf(ck, sizeof ck, "%s", scratch_file("ck.safetensors"));
    snprintf(bad, sizeof bad, "%s", scratch_file("zero.safetensors"));
    snprintf(args, sizeof args, "train detect --steps 1 --width 16 --ff 16 --heads 2 --threads 1 --quiet --save %s", ck);
    ck_assert_int_eq(run_qkv(args, line, sizeof line), 0);
    size_t len = 0;
    unsigned char *bytes = read_file_bytes(ck, &len);
    bytes[len] = '\0';
    char *key = memmem(bytes, len, "\"config.enc_layers\":\"2\"", 23);
    ck_assert_ptr_nonnull(key);
    key[21] = '0'; /* same length: the header stays valid */
    write_file_bytes(bad, bytes, len);
    free(bytes);
    snprintf(args, sizeof args, "eval %s", bad);
    ck_assert_int_eq(run_qkv(args, line, sizeof line), 2);
    ck_assert_msg(strstr(line, "config \"enc_layers\" is \"0\" (expected an integer in 1..64)"), "%s", line);
    snprintf(args, sizeof args, "data detect --out %s --n 1", scratch_file("images"));
    ck_assert_int_eq(run_qkv(args, line, sizeof line), 0);
    snprintf(args, sizeof args, "detect %s %s/img_00000.png", bad, scratch_file("images"));
    ck_assert_int_eq(run_qkv(args, line, sizeof line), 2);
    ck_assert_msg(strstr(line, "config \"enc_layers\" is \"0\""), "%s", line);
    scratch_dir_remove();
}
END_TEST

/* ---- memory exhaustion -------------------------------------------------------------- */

START_TEST(allocation_failure_names_the_size) {
    EXPECT_FATAL(qkv_malloc(SIZE_MAX / 2, "a test buffer"),
                 "out of memory allocating 9223372036854775807 bytes for a test buffer");
    EXPECT_FATAL(qkv_calloc(SIZE_MAX / 4, 8, "a test array"), /* count * size overflows */
                 "out of memory allocating 18446744073709551615 bytes for a test array");
    qkv_alloc_note_estimate((size_t)612 << 20); /* a session's run, measured: the stop names it */
    EXPECT_FATAL(qkv_malloc(SIZE_MAX / 2, "a tape chunk"),
                 "out of memory allocating 9223372036854775807 bytes for a tape chunk; the run was estimated to need "
                 "about 612.0 MiB");
    qkv_alloc_note_estimate(0);
    ck_assert_ptr_null(qkv_try_malloc(SIZE_MAX / 2, "big.npy", "the data"));
    expect_last_error("big.npy", "out of memory allocating 9223372036854775807 bytes for the data");
    /* A tensor an input file asks for (npy, images): an input error, not a stop. */
    ck_assert_ptr_null(qkv_tensor_try_create("big.npy", "x", 2, (const int[]){1 << 30, 1 << 30}, 1));
    expect_last_error("big.npy", "out of memory allocating 4611686018427387904 bytes for tensor 'x'");
    qkv_tensor *small = qkv_tensor_try_create("small.npy", NULL, 1, (const int[]){3}, 1);
    ck_assert_ptr_nonnull(small);
    ck_assert(small->grad && small->data[2] == 0.0f && small->grad[2] == 0.0f);
    qkv_tensor_free(small);
    void *p = qkv_malloc(0, "nothing");
    ck_assert_ptr_nonnull(p);
    free(p);
}
END_TEST

START_TEST(qkv_out_of_memory_is_a_message_not_a_segfault) {
#if defined(__SANITIZE_ADDRESS__)
    return; /* ASan's shadow memory does not fit in a limited address space */
#endif
    scratch_dir_create();
    char err[64];
    snprintf(err, sizeof err, "%s", scratch_file("stderr"));
    /* 8 layers at width 4096 are ~6 GB of parameters; the child has 128 MB, in
     * which a small run fits (checked first), but not one 64 MB weight and its gradient. */
    ck_assert_int_eq(wait_qkv(spawn_qkv("train spirals --steps 3 --threads 1 --quiet", NULL, (size_t)128 << 20, NULL)), 0);
    pid_t pid = spawn_qkv("train reverse --dim 4096 --layers 8 --steps 1 --threads 1 --quiet", NULL,
                          (size_t)128 << 20, err);
    int status = wait_qkv(pid);
    ck_assert_msg(!(WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV), "qkv segfaulted");
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 2, "status %d: not exit 2", status); /* never abort() */
    size_t len = 0;
    char *text = (char *)read_file_bytes(err, &len);
    text[len] = '\0';
    ck_assert_msg(strstr(text, "qkv: out of memory allocating ") && strstr(text, " bytes for tensor '"), "%s", text);
    free(text);
    scratch_dir_remove();
}
END_TEST

Suite *suite_reliability(void) {
    Suite *s = suite_create("reliability");
    TCase *tc = tcase_create("reliability");
    tcase_set_timeout(tc, 0);
    tcase_add_test(tc, anomaly_mode_names_the_forward_op);
    tcase_add_test(tc, anomaly_mode_names_the_backward_op);
    tcase_add_test(tc, nan_loss_stops_training);
    tcase_add_test(tc, detect_nan_names_the_op_and_the_step);
    tcase_add_test(tc, a_diverged_update_is_never_checkpointed);
    tcase_add_test(tc, a_nonfinite_checkpoint_is_refused);
    tcase_add_test(tc, an_error_wrapping_the_last_one_is_not_garbled);
    tcase_add_test(tc, fast_exp_on_special_values);
    tcase_add_test(tc, nan_through_the_ops_is_defined);
    tcase_add_test(tc, sigkill_during_training_resumes_bitwise);
    tcase_add_test(tc, sigkill_during_checkpoint_write_keeps_the_previous_one);
    tcase_add_test(tc, a_directory_name_as_output_is_refused_up_front);
    tcase_add_test(tc, control_characters_in_errors_are_escaped);
    tcase_add_test(tc, a_measurement_between_the_thresholds_is_inconclusive);
    tcase_add_test(tc, data_detect_path_errors_are_exit_2_and_leave_nothing);
    tcase_add_test(tc, enc_layers_zero_is_refused_not_aborted);
    tcase_add_test(tc, allocation_failure_names_the_size);
    tcase_add_test(tc, qkv_out_of_memory_is_a_message_not_a_segfault);
    suite_add_tcase(s, tc);
    return s;
}
