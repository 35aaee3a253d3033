/* test_util.h — shared helpers for the Check suites.
 *
 * EXPECT_FATAL(stmt, "substring"): runs stmt with a test error hook installed and
 * asserts that it stopped through qkv_fatal() with a message containing the
 * substring. The hook longjmps back, so the suite runs without fork (CK_NOFORK),
 * which also keeps libgomp's thread pool usable.
 *
 * The functions below make test tensors, compare float arrays and shapes, and run a
 * computation on 1 and 2 threads. Owned tensors they return are freed with
 * qkv_tensor_free(); tape tensors die at the tape's reset; malloc'd buffers are
 * freed with free(). Every assertion fails the running test with a message naming
 * the first (or worst) offending element.
 */
#ifndef QKV_TEST_UTIL_H
#define QKV_TEST_UTIL_H

#include <check.h>
#include <math.h>
#include <setjmp.h>
#include <sys/types.h>
#include <string.h>

#include "qkv_internal.h"

/* The larger of m and x, for running maxima (m = larger(m, x) over a loop): an
 * fmax reduction makes GCC 12's aarch64 vectorizer stop with an internal error
 * (make test-cross). NaN in x is skipped, as fmax skips it. */
static inline double larger(double m, double x) { return x > m ? x : m; }

extern jmp_buf qkv_test_jump;
extern char qkv_test_message[512];
void qkv_test_hook(const char *message);

#define EXPECT_FATAL(stmt, substring)                                                       \
    do {                                                                                    \
        qkv_error_hook previous_hook_ = qkv_set_error_hook(qkv_test_hook);                  \
        qkv_test_message[0] = '\0';                                                         \
        volatile int stopped_ = 0;                                                          \
        if (setjmp(qkv_test_jump) == 0) { stmt; } else { stopped_ = 1; }                    \
        qkv_set_error_hook(previous_hook_);                                                 \
        ck_assert_msg(stopped_, "expected a fatal error from: %s", #stmt);                  \
        ck_assert_msg(strstr(qkv_test_message, substring) != NULL,                          \
                      "error message \"%s\" lacks \"%s\"", qkv_test_message, substring);   \
    } while (0)

/* Asserts |a - b| <= tol * max(1, |b|). */
#define ck_assert_close(a, b, tol)                                                          \
    do {                                                                                    \
        double a_ = (a), b_ = (b);                                                          \
        ck_assert_msg(fabs(a_ - b_) <= (tol) * fmax(1.0, fabs(b_)),                         \
                      "%s = %.9g, expected %.9g (tol %g)", #a, a_, b_, (double)(tol));     \
    } while (0)

/* ---- making tensors -------------------------------------------------------------- */

/* Owned tensor holding a copy of values (its size of them), or zeros if values is NULL. */
qkv_tensor *tensor_of(int ndim, const int *shape, const float *values, int requires_grad);

/* Owned tensor holding start, start + step, start + 2 step, ... in row-major order. */
qkv_tensor *ramp_tensor(int ndim, const int *shape, float start, float step, int requires_grad);

/* Owned tensor of N(0, 1) draws from *rng, which advances: successive calls draw a
 * stream of tensors from one seed. */
qkv_tensor *random_tensor_from(qkv_rng *rng, int ndim, const int *shape, int requires_grad);

/* Owned tensor of N(0, 1) draws from a fresh RNG seeded with seed (same seed, same values). */
qkv_tensor *random_tensor(int ndim, const int *shape, uint64_t seed, int requires_grad);

/* Owned tensor of uniform [lo, hi) draws from a fresh RNG seeded with seed. */
qkv_tensor *random_uniform_tensor(int ndim, const int *shape, uint64_t seed, float lo, float hi,
                                  int requires_grad);

/* Activation on tape of N(0, 1) draws from a fresh RNG seeded with seed. */
qkv_tensor *random_tape_tensor(qkv_tape *tape, int ndim, const int *shape, uint64_t seed);

/* x[0..n) = N(mean, std^2) draws from a fresh RNG seeded with seed. */
void fill_normal_seeded(float *x, size_t n, uint64_t seed, float mean, float std);

/* ---- buffers and backward ------------------------------------------------------------ */

/* A malloc'd copy of x[0..n). */
float *copy_floats(const float *x, size_t n);

/* Copies x[0..n) to out and returns out + n: lays several results end to end. */
float *append_floats(float *out, const float *x, size_t n);

/* Backward from out with every output gradient 1. */
void backward_ones(qkv_tape *tape, qkv_tensor *out);

/* Backward from out with output gradients drawn from N(0, 1) with seed. */
void backward_random(qkv_tape *tape, qkv_tensor *out, uint64_t seed);

/* ---- assertions ---------------------------------------------------------------------- */

/* t has exactly ndim dims, of the given sizes. */
void assert_shape(const qkv_tensor *t, int ndim, const int *shape);

/* Absolute: |got[i] - expected[i]| <= tol for every i (tol 0: equal). NaN fails. */
void assert_floats_near(const float *got, const float *expected, size_t n, double tol);

/* t has n elements and assert_floats_near(t->data, expected, n, tol). */
void assert_values_near(const qkv_tensor *t, const float *expected, size_t n, double tol);

/* Relative, as ck_assert_close: |got[i] - expected[i]| <= tol * max(1, |expected[i]|)
 * for every i; NaN fails. The message names what and the worst element. */
void assert_floats_close(const float *got, const float *expected, size_t n, double tol,
                         const char *what);

/* Every x[i] is finite (no NaN or Inf). */
void assert_all_finite(const float *x, size_t n, const char *what);

/* ---- threads ----------------------------------------------------------------------- */

/* Runs run(out, ctx) on 1 thread, then on 2, each time into a zeroed buffer of n
 * floats, and asserts the two buffers are bitwise equal (memcmp), naming what and
 * the first float that differs. The previous thread count is restored. */
void expect_same_for_1_and_2_threads(void (*run)(float *out, void *ctx), void *ctx, size_t n,
                                     const char *what);

/* ---- scratch files --------------------------------------------------------------- */

/* scratch_dir is a fresh directory (mkdtemp) for one test's files: scratch_dir_create
 * makes it, scratch_dir_remove deletes it and everything in it. Use the pair as a
 * checked fixture (tcase_add_checked_fixture). */
extern char scratch_dir[64];
void scratch_dir_create(void);
void scratch_dir_remove(void);

/* "<scratch_dir>/<name>", valid until the call after next (two rotating buffers). */
const char *scratch_file(const char *name);

/* The number of entries in directory path, "." and ".." aside. */
int count_dir_entries(const char *path);

/* The whole file in a malloc'd buffer (one spare byte past the end); *len its size. */
unsigned char *read_file_bytes(const char *path, size_t *len);
/* A file's text, '\0'-terminated (malloc'd). */
char *read_text(const char *path);
/* The same with every JSON "train_seconds" value (the wall clock) left out. */
char *without_times(const char *path);

/* Creates or truncates path and writes bytes[0..len) into it. */
void write_file_bytes(const char *path, const void *bytes, size_t len);

/* Creates path holding bytes[0..len) followed by zeros up to size bytes in all: a
 * sparse file (ftruncate), so a header can claim gigabytes that cost nothing. */
void write_sparse_file(const char *path, const void *bytes, size_t len, size_t size);

/* qkv_last_error() is one line that names what and contains reason. */
void expect_last_error(const char *what, const char *reason);

/* The qkv binary the tests run: $QKV_BIN (make test-asan sets it to its own
 * build), else ../qkv (the suites run from tests/). */
const char *qkv_binary(void);

/* Runs qkv_binary() with args; returns its exit status and
 * the first line it printed to stderr in line. */
int run_qkv(const char *args, char *line, size_t len);

/* Starts qkv_binary() with args (split at spaces, no quoting) in a child process
 * (fork + exec), stdout to /dev/null and stderr to err_path (or /dev/null if
 * NULL). env, if not NULL, is one "NAME=value" added to the child's environment;
 * as_limit > 0 caps the child's address space (RLIMIT_AS, bytes, set through
 * /usr/bin/prlimit so that it holds for qkv alone). Returns the
 * child's pid; wait_qkv waits for it and returns the raw wait status. */
pid_t spawn_qkv(const char *args, const char *env, size_t as_limit, const char *err_path);
/* The same with the child's stdout readable from *out (a pipe; the caller
 * fcloses it): a test waits for a line of output instead of for a time. */
pid_t spawn_qkv_piped(const char *args, const char *err_path, FILE **out);
int wait_qkv(pid_t pid);

/* ---- checkpoints and runs -------------------------------------------------------- */

/* A small, fast spirals run; a constant schedule, so the lr of a step does not
 * depend on --steps and a run with more steps goes through the same states. */
#define SMALL_SPIRALS "train spirals --hidden 8 --batch 16 --points 50 --schedule constant --warmup 0 " \
                      "--eval-every 0 --target 0 --threads 1 --quiet"

/* The "step" of a checkpoint (asserting that it loads). */
long checkpoint_step(const char *path);
int path_exists(const char *path);
/* The tensors of two checkpoints (parameters and optimizer state) and their steps
 * are bitwise equal. */
void expect_same_checkpoints(const char *a_path, const char *b_path);
/* Resumes the run `train` (qkv arguments) from ck to `steps` and compares with the
 * same run never interrupted (files "resumed" and "uninterrupted" in scratch_dir). */
void expect_resume_matches(const char *train, const char *ck, long steps);
/* The only line of a file (a child's stderr), without the newline; a second line fails. */
void first_line(const char *path, char *line, size_t len);

/* ---- lists kept in step with the sources ------------------------------------------ */

/* A hand-kept list (listed[0..n_listed), named what in messages) and the sources
 * agree: every line of the files matching file_globs (NULL-terminated, paths from
 * tests/) that matches definition, a POSIX extended regex whose first group is
 * the defined name, names an entry of the list; every entry is defined by such a
 * line; and no entry is listed twice. Each glob must match some file, so a run
 * from the wrong directory fails rather than finding nothing. */
void assert_list_matches_sources(const char *what, const char *const *listed, int n_listed,
                                 const char *const *file_globs, const char *definition);

/* ---- training ---------------------------------------------------------------------- */

/* Trains task for steps (seed 7, clip 1) with the optimizer; writes the parameters
 * and the final loss to out (when not NULL) and returns how many floats that is. */
size_t train_and_dump(qkv_task *task, int steps, qkv_optimizer_config optim, float *out);
/* A session of task prepared with config (train/session.h), run and closed: qkv_train's result. */
int train_with(const qkv_trainer_config *config, qkv_task *task, qkv_train_result *result);

#endif
