/* test_util.c — see test_util.h. */
#include "tests/test_util.h"

#include <stdio.h>
#include <sys/wait.h>

#include <dirent.h>
#include <fcntl.h>
#include <glob.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

jmp_buf qkv_test_jump;
char qkv_test_message[512];

void qkv_test_hook(const char *message) {
    snprintf(qkv_test_message, sizeof qkv_test_message, "%s", message);
    longjmp(qkv_test_jump, 1);
}

/* ---- making tensors -------------------------------------------------------------- */

qkv_tensor *tensor_of(int ndim, const int *shape, const float *values, int requires_grad) {
    qkv_tensor *t = qkv_tensor_create(NULL, ndim, shape, requires_grad);
    if (values) qkv_tensor_copy_from(t, values);
    return t;
}

qkv_tensor *ramp_tensor(int ndim, const int *shape, float start, float step, int requires_grad) {
    qkv_tensor *t = qkv_tensor_create(NULL, ndim, shape, requires_grad);
    for (size_t i = 0; i < t->size; i++) t->data[i] = start + step * (float)i;
    return t;
}

qkv_tensor *random_tensor_from(qkv_rng *rng, int ndim, const int *shape, int requires_grad) {
    qkv_tensor *t = qkv_tensor_create(NULL, ndim, shape, requires_grad);
    qkv_fill_normal(t->data, t->size, rng, 0.0f, 1.0f);
    return t;
}

qkv_tensor *random_tensor(int ndim, const int *shape, uint64_t seed, int requires_grad) {
    qkv_rng rng = qkv_rng_make(seed);
    return random_tensor_from(&rng, ndim, shape, requires_grad);
}

qkv_tensor *random_uniform_tensor(int ndim, const int *shape, uint64_t seed, float lo, float hi,
                                  int requires_grad) {
    qkv_tensor *t = qkv_tensor_create(NULL, ndim, shape, requires_grad);
    qkv_rng rng = qkv_rng_make(seed);
    qkv_fill_uniform(t->data, t->size, &rng, lo, hi);
    return t;
}

qkv_tensor *random_tape_tensor(qkv_tape *tape, int ndim, const int *shape, uint64_t seed) {
    qkv_tensor *t = qkv_tape_tensor(tape, ndim, shape);
    fill_normal_seeded(t->data, t->size, seed, 0.0f, 1.0f);
    return t;
}

void fill_normal_seeded(float *x, size_t n, uint64_t seed, float mean, float std) {
    qkv_rng rng = qkv_rng_make(seed);
    qkv_fill_normal(x, n, &rng, mean, std);
}

/* ---- buffers and backward ------------------------------------------------------------ */

float *copy_floats(const float *x, size_t n) {
    float *copy = malloc(n * sizeof(float));
    ck_assert_ptr_nonnull(copy);
    memcpy(copy, x, n * sizeof(float));
    return copy;
}

float *append_floats(float *out, const float *x, size_t n) {
    memcpy(out, x, n * sizeof(float));
    return out + n;
}

void backward_ones(qkv_tape *tape, qkv_tensor *out) {
    float *ones = malloc(out->size * sizeof(float));
    ck_assert_ptr_nonnull(ones);
    for (size_t i = 0; i < out->size; i++) ones[i] = 1.0f;
    qkv_backward_seeded(tape, out, ones);
    free(ones);
}

void backward_random(qkv_tape *tape, qkv_tensor *out, uint64_t seed) {
    float *grad = malloc(out->size * sizeof(float));
    ck_assert_ptr_nonnull(grad);
    fill_normal_seeded(grad, out->size, seed, 0.0f, 1.0f);
    qkv_backward_seeded(tape, out, grad);
    free(grad);
}

/* ---- assertions ---------------------------------------------------------------------- */

void assert_shape(const qkv_tensor *t, int ndim, const int *shape) {
    int same = t->ndim == ndim;
    for (int d = 0; same && d < ndim; d++) same = t->shape[d] == shape[d];
    if (same) return;
    char got[QKV_SHAPE_STR_LEN], expected[QKV_SHAPE_STR_LEN] = "[";
    for (int d = 0; d < ndim; d++) {
        size_t len = strlen(expected);
        snprintf(expected + len, sizeof expected - len, d ? ",%d" : "%d", shape[d]);
    }
    strncat(expected, "]", sizeof expected - strlen(expected) - 1);
    ck_assert_msg(same, "shape %s, expected %s", qkv_shape_str(t, got, sizeof got), expected);
}

void assert_floats_near(const float *got, const float *expected, size_t n, double tol) {
    size_t bad = n;
    for (size_t i = 0; i < n && bad == n; i++)
        if (!(fabs((double)got[i] - expected[i]) <= tol)) bad = i;
    ck_assert_msg(bad == n, "element %zu: %.9g, expected %.9g (tol %g)", bad,
                  bad < n ? (double)got[bad] : 0.0, bad < n ? (double)expected[bad] : 0.0, tol);
}

void assert_values_near(const qkv_tensor *t, const float *expected, size_t n, double tol) {
    ck_assert_uint_eq(t->size, n);
    assert_floats_near(t->data, expected, n, tol);
}

void assert_floats_close(const float *got, const float *expected, size_t n, double tol,
                         const char *what) {
    double worst = 0.0;
    size_t worst_i = 0;
    for (size_t i = 0; i < n; i++) {
        double err = fabs((double)got[i] - expected[i]) / fmax(1.0, fabs((double)expected[i]));
        if (!(err <= worst)) { worst = err; worst_i = i; } /* NaN counts as worst */
    }
    ck_assert_msg(worst <= tol, "%s[%zu]: %.9g, expected %.9g (error %.3g > tol %g)", what, worst_i,
                  n ? (double)got[worst_i] : 0.0, n ? (double)expected[worst_i] : 0.0, worst, tol);
}

void assert_all_finite(const float *x, size_t n, const char *what) {
    size_t bad = n;
    for (size_t i = 0; i < n && bad == n; i++)
        if (!isfinite(x[i])) bad = i;
    ck_assert_msg(bad == n, "%s[%zu] = %g", what, bad, bad < n ? (double)x[bad] : 0.0);
}

/* ---- threads ----------------------------------------------------------------------- */

void expect_same_for_1_and_2_threads(void (*run)(float *out, void *ctx), void *ctx, size_t n,
                                     const char *what) {
    float *one = calloc(n, sizeof(float)), *two = calloc(n, sizeof(float));
    ck_assert_ptr_nonnull(one);
    ck_assert_ptr_nonnull(two);
    int saved = qkv_threads();
    qkv_set_threads(1);
    run(one, ctx);
    qkv_set_threads(2);
    run(two, ctx);
    qkv_set_threads(saved);
    size_t first = n;
    if (memcmp(one, two, n * sizeof(float)) != 0)
        for (size_t i = 0; i < n && first == n; i++)
            if (memcmp(one + i, two + i, sizeof(float)) != 0) first = i;
    free(one);
    free(two);
    ck_assert_msg(first == n, "%s: 1 and 2 threads differ, first at float %zu of %zu", what, first, n);
}

/* ---- scratch files --------------------------------------------------------------- */

char scratch_dir[64];

void scratch_dir_create(void) {
    snprintf(scratch_dir, sizeof scratch_dir, "/tmp/qkv_test_XXXXXX");
    ck_assert_msg(mkdtemp(scratch_dir) != NULL, "mkdtemp failed");
}

static void remove_tree(const char *path) {
    DIR *dir = opendir(path);
    if (!dir) {
        unlink(path);
        return;
    }
    struct dirent *e;
    while ((e = readdir(dir)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
        char child[512];
        snprintf(child, sizeof child, "%s/%s", path, e->d_name);
        remove_tree(child);
    }
    closedir(dir);
    rmdir(path);
}

void scratch_dir_remove(void) { remove_tree(scratch_dir); }

const char *scratch_file(const char *name) {
    static char paths[2][256];
    static int next;
    char *p = paths[next++ % 2];
    snprintf(p, sizeof paths[0], "%s/%s", scratch_dir, name);
    return p;
}

int count_dir_entries(const char *path) {
    DIR *dir = opendir(path);
    ck_assert_msg(dir != NULL, "cannot open directory %s", path);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(dir)) != NULL)
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) n++;
    closedir(dir);
    return n;
}

unsigned char *read_file_bytes(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "cannot open %s", path);
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    ck_assert_msg(size >= 0, "cannot size %s", path);
    unsigned char *buf = malloc((size_t)size + 1);
    ck_assert_ptr_nonnull(buf);
    ck_assert(fread(buf, 1, (size_t)size, f) == (size_t)size);
    fclose(f);
    *len = (size_t)size;
    return buf;
}

/* A file's bytes, '\0'-terminated (read_file_bytes leaves room for it). */
char *read_text(const char *path) {
    size_t len;
    char *text = (char *)read_file_bytes(path, &len);
    text[len] = '\0';
    return text;
}

/* A file's text with every "train_seconds" value (the wall clock) left out. */
char *without_times(const char *path) {
    char *text = read_text(path), *from = text, *to = text, *key;
    const char *name = "\"train_seconds\": ";
    while ((key = strstr(from, name))) {
        size_t keep = (size_t)(key - from) + strlen(name);
        memmove(to, from, keep);
        to += keep;
        from = key + strlen(name);
        while (*from && *from != ',') from++;
    }
    memmove(to, from, strlen(from) + 1);
    return text;
}

void write_file_bytes(const char *path, const void *bytes, size_t len) {
    FILE *f = fopen(path, "wb");
    ck_assert_msg(f != NULL, "cannot create %s", path);
    ck_assert(len == 0 || fwrite(bytes, 1, len, f) == len);
    ck_assert(fclose(f) == 0);
}

void expect_last_error(const char *what, const char *reason) {
    const char *msg = qkv_last_error();
    ck_assert_msg(strstr(msg, what) != NULL, "error \"%s\" does not name \"%s\"", msg, what);
    ck_assert_msg(strstr(msg, reason) != NULL, "error \"%s\" lacks \"%s\"", msg, reason);
    ck_assert_msg(strchr(msg, '\n') == NULL, "error \"%s\" is not one line", msg);
}

const char *qkv_binary(void) {
    const char *bin = getenv("QKV_BIN");
    return bin && *bin ? bin : "../qkv";
}

int run_qkv(const char *args, char *line, size_t len) {
    char command[1024];
    snprintf(command, sizeof command, "%s %s 2>&1 >/dev/null", qkv_binary(), args);
    FILE *p = popen(command, "r");
    ck_assert_ptr_nonnull(p);
    if (!fgets(line, (int)len, p)) line[0] = '\0';
    char sink[256];
    while (fgets(sink, sizeof sink, p)) {}
    int status = pclose(p);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* spawn_qkv and spawn_qkv_piped: the child's stdout is out (-1: /dev/null). */
static pid_t spawn_with_stdout(const char *args, const char *env, size_t as_limit, const char *err_path, int out_fd) {
    char copy[1024], limit_flag[48], *argv[64];
    int argc = 0;
    snprintf(copy, sizeof copy, "%s", args);
    if (as_limit > 0) {
        /* prlimit (util-linux, Essential in Debian) sets the limit in a fresh
         * process and then execs qkv. Setting it in the forked child instead
         * breaks under valgrind: the child is still valgrind until it execs, and
         * valgrind itself does not fit in 128 MB. */
        snprintf(limit_flag, sizeof limit_flag, "--as=%zu", as_limit);
        argv[argc++] = "/usr/bin/prlimit";
        argv[argc++] = limit_flag;
        argv[argc++] = "--";
    }
    argv[argc++] = (char *)qkv_binary();
    for (char *word = strtok(copy, " "); word && argc < 63; word = strtok(NULL, " ")) argv[argc++] = word;
    argv[argc] = NULL;
    extern char **environ;
    size_t n_env = 0;
    while (environ[n_env]) n_env++;
    char **envp = malloc((n_env + 2) * sizeof *envp); /* built before fork: the child only execs */
    ck_assert_ptr_nonnull(envp);
    memcpy(envp, environ, n_env * sizeof *envp);
    if (env) envp[n_env++] = (char *)env;
    envp[n_env] = NULL;
    fflush(NULL);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) { /* the child: only async-signal-safe calls until exec */
        int out = out_fd >= 0 ? out_fd : open("/dev/null", O_WRONLY),
            err = open(err_path ? err_path : "/dev/null", O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (out < 0 || err < 0 || dup2(out, 1) < 0 || dup2(err, 2) < 0) _exit(127);
        execve(argv[0], argv, envp);
        _exit(127);
    }
    free(envp);
    return pid;
}

pid_t spawn_qkv(const char *args, const char *env, size_t as_limit, const char *err_path) {
    return spawn_with_stdout(args, env, as_limit, err_path, -1);
}

pid_t spawn_qkv_piped(const char *args, const char *err_path, FILE **out) {
    int fds[2];
    ck_assert_int_eq(pipe(fds), 0);
    /* Neither end survives the exec (dup2 makes the child's stdout a copy without
     * the flag): the child must not hold the read end, or closing ours would not
     * give it a SIGPIPE. */
    fcntl(fds[0], F_SETFD, FD_CLOEXEC);
    fcntl(fds[1], F_SETFD, FD_CLOEXEC);
    pid_t pid = spawn_with_stdout(args, NULL, 0, err_path, fds[1]);
    close(fds[1]);
    *out = fdopen(fds[0], "r");
    ck_assert_ptr_nonnull(*out);
    return pid;
}

int wait_qkv(pid_t pid) {
    int status = 0;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    return status;
}

void write_sparse_file(const char *path, const void *bytes, size_t len, size_t size) {
    write_file_bytes(path, bytes, len);
    ck_assert_msg(truncate(path, (off_t)size) == 0, "cannot extend %s to %zu bytes", path, size);
}

/* ---- checkpoints and runs -------------------------------------------------------- */

long checkpoint_step(const char *path) {
    qkv_safetensors st;
    ck_assert_msg(qkv_safetensors_load(path, &st) == 0, "%s", qkv_last_error());
    const char *step = qkv_safetensors_meta(&st, "step");
    ck_assert_ptr_nonnull(step);
    long value = atol(step);
    qkv_safetensors_free(&st);
    return value;
}

int path_exists(const char *path) {
    struct stat st;
    return stat(path, &st) == 0;
}


/* The tensors of two checkpoints (parameters and optimizer state) are bitwise equal. */
void expect_same_checkpoints(const char *a_path, const char *b_path) {
    qkv_safetensors a, b;
    ck_assert_msg(qkv_safetensors_load(a_path, &a) == 0, "%s", qkv_last_error());
    ck_assert_msg(qkv_safetensors_load(b_path, &b) == 0, "%s", qkv_last_error());
    ck_assert_int_eq(a.n_tensors, b.n_tensors);
    for (int i = 0; i < a.n_tensors; i++) {
        const qkv_st_tensor *x = &a.tensors[i], *y = qkv_safetensors_find(&b, x->name);
        ck_assert_msg(y != NULL, "%s lacks %s", b_path, x->name);
        size_t n = 1;
        for (int d = 0; d < x->ndim; d++) n *= (size_t)x->shape[d];
        ck_assert_msg(memcmp(x->data, y->data, n * sizeof(float)) == 0, "%s differs after resuming", x->name);
    }
    ck_assert_str_eq(qkv_safetensors_meta(&a, "step"), qkv_safetensors_meta(&b, "step"));
    qkv_safetensors_free(&a);
    qkv_safetensors_free(&b);
}

/* Resumes from ck to `steps` and compares with a run that was never interrupted. */
void expect_resume_matches(const char *train, const char *ck, long steps) {
    char args[1024], line[512];
    snprintf(args, sizeof args, "%s --steps %ld --resume %s --save %s", train, steps, ck, scratch_file("resumed"));
    ck_assert_int_eq(run_qkv(args, line, sizeof line), 0);
    snprintf(args, sizeof args, "%s --steps %ld --save %s", train, steps, scratch_file("uninterrupted"));
    ck_assert_int_eq(run_qkv(args, line, sizeof line), 0);
    expect_same_checkpoints(scratch_file("resumed"), scratch_file("uninterrupted"));
}

/* The first line of a file (its one line of stderr), without the newline. */
void first_line(const char *path, char *line, size_t len) {
    FILE *f = fopen(path, "r");
    ck_assert_ptr_nonnull(f);
    if (!fgets(line, (int)len, f)) line[0] = '\0';
    line[strcspn(line, "\n")] = '\0';
    char more[8];
    ck_assert_msg(!fgets(more, sizeof more, f), "more than one line in %s after: %s", path, line);
    fclose(f);
}

/* ---- lists kept in step with the sources ------------------------------------------ */

static int listed_index(const char *name, size_t len, const char *const *listed, int n_listed) {
    for (int i = 0; i < n_listed; i++)
        if (strlen(listed[i]) == len && memcmp(listed[i], name, len) == 0) return i;
    return -1;
}

void assert_list_matches_sources(const char *what, const char *const *listed, int n_listed,
                                 const char *const *file_globs, const char *definition) {
    for (int i = 0; i < n_listed; i++)
        for (int j = i + 1; j < n_listed; j++)
            ck_assert_msg(strcmp(listed[i], listed[j]) != 0, "%s names %s twice", what, listed[i]);
    regex_t re;
    ck_assert_msg(regcomp(&re, definition, REG_EXTENDED) == 0, "bad regex %s", definition);
    glob_t files;
    for (int g = 0; file_globs[g]; g++)
        ck_assert_msg(glob(file_globs[g], g ? GLOB_APPEND : 0, NULL, &files) == 0,
                      "no file matches %s (the suites run from tests/)", file_globs[g]);
    char *defined = calloc((size_t)n_listed + 1, 1);
    for (size_t f = 0; f < files.gl_pathc; f++) {
        const char *path = files.gl_pathv[f];
        size_t len;
        char *text = (char *)read_file_bytes(path, &len);
        text[len] = '\0';
        int line_no = 1;
        for (char *line = text; line; line_no++) {
            char *end = strchr(line, '\n');
            if (end) *end = '\0';
            regmatch_t match[2];
            if (regexec(&re, line, 2, match, 0) == 0 && match[1].rm_so >= 0) {
                const char *name = line + match[1].rm_so;
                size_t name_len = (size_t)(match[1].rm_eo - match[1].rm_so);
                int i = listed_index(name, name_len, listed, n_listed);
                ck_assert_msg(i >= 0, "%s:%d defines %.*s, which %s does not name", path, line_no, (int)name_len,
                              name, what);
                defined[i] = 1;
            }
            line = end ? end + 1 : NULL;
        }
        free(text);
    }
    for (int i = 0; i < n_listed; i++)
        ck_assert_msg(defined[i], "%s names %s, which no line of the scanned files defines as %s", what, listed[i],
                      definition);
    free(defined);
    globfree(&files);
    regfree(&re);
}

/* ---- training ---------------------------------------------------------------------- */

int train_with(const qkv_trainer_config *config, qkv_task *task, qkv_train_result *result) {
    qkv_session session;
    memset(result, 0, sizeof *result);
    int rc = qkv_session_prepare(&session, &(qkv_session_spec){.config = *config, .task = task});
    if (rc != 0) return -1;
    rc = qkv_train(&session, result);
    qkv_session_close(&session);
    return rc;
}

size_t train_and_dump(qkv_task *task, int steps, qkv_optimizer_config optim, float *out) {
    qkv_trainer_config config = {.steps = steps, .quiet = 1, .seed = 7, .clip = 1.0f, .optim = optim};
    qkv_train_result result;
    ck_assert_int_eq(train_with(&config, task, &result), 0);
    size_t off = qkv_params_copy_values(task->params, out);
    if (out) out[off] = result.final_loss;
    return off + 1;
}
