/* fileio.c — atomic writes, careful reads, little-endian floats. See fileio.h.
 *
 * The write path is the classic one: temporary file in the same directory (so the
 * rename cannot cross file systems), write, fflush, fsync, fclose, rename, then
 * fsync the directory so that the rename itself is durable. Every failure before
 * the rename removes the temporary file; after the rename there is nothing left
 * to undo, and a failed directory fsync is reported as such.
 */
#include "core/fileio.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/alloc.h"
#include "core/error.h"

int qkv_file_fail(const char *what, const char *fmt, ...) {
    char reason[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(reason, sizeof reason, fmt, ap);
    va_end(ap);
    qkv_set_error("%s: %s", what ? what : "(unnamed)", reason);
    return -1;
}

int qkv_probe_directory(const char *what, const char *dir) {
    char probe[4200];
    if ((size_t)snprintf(probe, sizeof probe, "%s/.qkv-probe.%ld", dir, (long)getpid()) >= sizeof probe)
        return qkv_file_fail(what, "path too long");
    int fd = open(probe, O_WRONLY | O_CREAT | O_EXCL, 0600);
    if (fd < 0 && errno != EEXIST) return qkv_file_fail(what, "cannot write in %s: %s", dir, strerror(errno));
    if (fd >= 0) close(fd);
    if (fd >= 0) unlink(probe);
    return 0;
}

int qkv_file_fail_line(const char *name, long line, const char *fmt, ...) {
    char reason[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(reason, sizeof reason, fmt, ap);
    va_end(ap);
    qkv_set_error("%s:%ld: %s", name ? name : "(unnamed)", line, reason);
    return -1;
}

const char *qkv_quote_bytes(const void *bytes, size_t len, char out[32]) {
    const unsigned char *b = bytes;
    size_t n = len < 24 ? len : 24;
    for (size_t i = 0; i < n; i++) out[i] = isprint(b[i]) ? (char)b[i] : '?';
    strcpy(out + n, len > n ? "..." : "");
    return out;
}

/* ---- atomic writes -------------------------------------------------------------- */

/* The temporary files this process has open, for qkv_atomic_remove_temps (a signal
 * handler): a slot holds a name from its creation until just before it is renamed
 * or removed, and is cleared before the name is freed. */
#define MAX_LIVE_TEMPS 8
static char *volatile live_temps[MAX_LIVE_TEMPS];

static void track_temp(const char *name, char *replace_with) {
    for (int i = 0; i < MAX_LIVE_TEMPS; i++)
        if (live_temps[i] == name) {
            live_temps[i] = replace_with;
            return;
        }
}

void qkv_atomic_remove_temps(void) {
    for (int i = 0; i < MAX_LIVE_TEMPS; i++) {
        char *name = live_temps[i];
        if (name) unlink(name); /* async-signal-safe */
    }
}

/* Closes and removes the temporary file (if this writer created it) and frees f. */
static void discard(qkv_atomic_file *f) {
    if (!f->path) return;
    track_temp(f->tmp_path, NULL);
    if (f->file) {
        fclose(f->file);
        remove(f->tmp_path);
    }
    free(f->path);
    memset(f, 0, sizeof *f);
}

/* Removes "<path>.tmp.<pid>" files of processes that no longer exist: what a killed
 * writer of the same file left behind. A live process's file is its own business. */
static void remove_stale_temps(const char *path) {
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    size_t dir_len = slash ? (size_t)(slash - path) + 1 : 0, base_len = strlen(base);
    char dir[4096];
    if (dir_len + 1 > sizeof dir) return;
    memcpy(dir, dir_len ? path : ".", dir_len ? dir_len : 1);
    dir[dir_len ? dir_len : 1] = '\0';
    DIR *d = opendir(dir);
    if (!d) return;
    for (struct dirent *e; (e = readdir(d));) {
        const char *name = e->d_name;
        if (strncmp(name, base, base_len) != 0 || strncmp(name + base_len, ".tmp.", 5) != 0) continue;
        const char *digits = name + base_len + 5;
        char *end = NULL;
        long pid = strtol(digits, &end, 10);
        if (end == digits || *end || pid <= 0 || pid == (long)getpid()) continue;
        if (kill((pid_t)pid, 0) == 0 || errno != ESRCH) continue;
        char full[4096 + 256];
        snprintf(full, sizeof full, "%s%s", dir_len ? dir : "", name);
        unlink(full);
    }
    closedir(d);
}

/* "<path>: <step>: <strerror(err)>", then discard. */
static int atomic_fail(qkv_atomic_file *f, const char *step, int err) {
    qkv_file_fail(f->path, "%s: %s", step, strerror(err ? err : EIO));
    discard(f);
    return -1;
}

static size_t test_kill_after; /* armed for the next qkv_atomic_open */

void qkv_atomic_test_kill_after(size_t bytes) { test_kill_after = bytes; }

/* The file a symlink at path names, in a malloc'd string: realpath when it exists,
 * else the link's own text (one level), relative to the link's directory. NULL when
 * path is not a symlink or the name cannot be made. */
static char *symlink_target(const char *path) {
    struct stat st;
    if (lstat(path, &st) != 0 || !S_ISLNK(st.st_mode)) return NULL;
    char *resolved = realpath(path, NULL);
    if (resolved) return resolved;
    char target[4096];
    ssize_t n = readlink(path, target, sizeof target - 1);
    if (n <= 0) return NULL;
    target[n] = '\0';
    const char *slash = strrchr(path, '/');
    size_t dir_len = target[0] == '/' || !slash ? 0 : (size_t)(slash - path) + 1;
    char *out = malloc(dir_len + (size_t)n + 1);
    if (!out) return NULL;
    memcpy(out, path, dir_len);
    memcpy(out + dir_len, target, (size_t)n + 1);
    return out;
}

int qkv_atomic_open(qkv_atomic_file *f, const char *path) {
    QKV_CHECK(f != NULL && path != NULL, "atomic_open: NULL argument");
    memset(f, 0, sizeof *f);
    f->kill_after = test_kill_after;
    test_kill_after = 0;
    /* A symlink is written through: its target is the file replaced. */
    char *resolved = symlink_target(path);
    if (resolved) path = resolved;
    remove_stale_temps(path);
    size_t path_len = strlen(path), tmp_cap = path_len + 32;
    char *block = qkv_try_malloc(path_len + 1 + tmp_cap, path, "the temporary file's name");
    if (!block) {
        free(resolved);
        return -1;
    }
    f->path = memcpy(block, path, path_len + 1);
    free(resolved);
    f->tmp_path = block + path_len + 1;
    snprintf(f->tmp_path, tmp_cap, "%s.tmp.%ld", f->path, (long)getpid());

    track_temp(NULL, f->tmp_path); /* before it exists: a signal may come at any moment */
    int fd = open(f->tmp_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0666);
    if (fd < 0) return atomic_fail(f, "cannot create temporary file", errno);
    f->file = fdopen(fd, "wb");
    if (!f->file) {
        int err = errno;
        close(fd);
        remove(f->tmp_path);
        return atomic_fail(f, "cannot create temporary file", err);
    }
    return 0;
}

int qkv_atomic_write(qkv_atomic_file *f, const void *bytes, size_t n) {
    if (!f->path) return -1; /* failed or aborted earlier: the error is recorded */
    if (n && fwrite(bytes, 1, n, f->file) != n) return atomic_fail(f, "write failed", errno);
    f->written += n;
    if (f->kill_after && f->written >= f->kill_after) { /* the test hook: die mid-file */
        fflush(f->file);
        raise(SIGKILL);
    }
    return 0;
}

int qkv_atomic_write_f32(qkv_atomic_file *f, const float *values, size_t n) {
    unsigned char chunk[4096];
    for (size_t i = 0; i < n;) {
        size_t len = 0;
        for (; len + 4 <= sizeof chunk && i < n; i++, len += 4) {
            uint32_t u;
            memcpy(&u, &values[i], sizeof u);
            for (int b = 0; b < 4; b++) chunk[len + (size_t)b] = (unsigned char)(u >> (8 * b));
        }
        if (qkv_atomic_write(f, chunk, len)) return -1;
    }
    return f->path ? 0 : -1;
}

/* fsync the directory holding path (written into scratch, which has room). EINVAL
 * means the file system cannot sync directories: nothing more can be done there. */
static int fsync_directory(const char *path, char *scratch) {
    const char *slash = strrchr(path, '/');
    if (!slash) strcpy(scratch, ".");
    else if (slash == path) strcpy(scratch, "/");
    else {
        memcpy(scratch, path, (size_t)(slash - path));
        scratch[slash - path] = '\0';
    }
    int fd = open(scratch, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return -1;
    int rc = fsync(fd) == 0 || errno == EINVAL ? 0 : -1;
    int err = errno;
    close(fd);
    errno = err;
    return rc;
}

int qkv_atomic_commit(qkv_atomic_file *f) {
    if (!f->path) return -1;
    if (fflush(f->file) != 0) return atomic_fail(f, "write failed", errno);
    if (fsync(fileno(f->file)) != 0) return atomic_fail(f, "fsync failed", errno);
    FILE *file = f->file;
    f->file = NULL; /* closed below whatever happens; discard must not close it again */
    if (fclose(file) != 0) {
        int err = errno;
        remove(f->tmp_path);
        return atomic_fail(f, "close failed", err);
    }
    track_temp(f->tmp_path, NULL); /* from here on the name is the real file's */
    if (rename(f->tmp_path, f->path) != 0) {
        int err = errno;
        remove(f->tmp_path);
        return atomic_fail(f, "cannot rename the temporary file into place", err);
    }
    int rc = 0;
    if (fsync_directory(f->path, f->tmp_path) != 0)
        rc = qkv_file_fail(f->path, "written, but fsync of its directory failed (the rename may not survive "
                           "a crash): %s", strerror(errno));
    discard(f);
    return rc;
}

int qkv_atomic_flush(qkv_atomic_file *f) {
    if (!f->path) return -1;
    return fflush(f->file) == 0 ? 0 : atomic_fail(f, "write failed", errno);
}

void qkv_atomic_abort(qkv_atomic_file *f) {
    if (f) discard(f);
}

int qkv_write_file_atomic(const char *path, const void *bytes, size_t len) {
    qkv_atomic_file f;
    if (qkv_atomic_open(&f, path) != 0) return -1;
    if (qkv_atomic_write(&f, bytes, len) != 0) return -1; /* the failed write removed the file */
    return qkv_atomic_commit(&f);
}

/* ---- reading -------------------------------------------------------------------- */

int qkv_reader_open(qkv_file_reader *r, const char *path, size_t max_bytes) {
    QKV_CHECK(r != NULL && path != NULL, "reader_open: NULL argument");
    memset(r, 0, sizeof *r);
    r->fd = -1;
    r->path = path;
    if (max_bytes > QKV_READ_ANY_SIZE) max_bytes = QKV_READ_ANY_SIZE;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK); /* a FIFO must not block the open */
    if (fd < 0) return qkv_file_fail(path, "cannot open: %s", strerror(errno));
    struct stat st;
    int rc = -1;
    if (fstat(fd, &st) != 0)
        qkv_file_fail(path, "cannot stat: %s", strerror(errno));
    else if (!S_ISREG(st.st_mode))
        qkv_file_fail(path, "not a regular file");
    else if (st.st_size < 0 || (uintmax_t)st.st_size > max_bytes)
        qkv_file_fail(path, "file too large (%jd bytes; the limit is %zu)", (intmax_t)st.st_size, max_bytes);
    else if (st.st_size == 0 && pread(fd, &(char){0}, 1, 0) > 0) /* a kernel file: size 0, content made on reading */
        qkv_file_fail(path, "a special file (it says 0 bytes but has content, as files in /proc and /sys do), "
                            "not a data file: copy it to a regular file first");
    else
        rc = 0;
    if (rc) {
        close(fd);
        return -1;
    }
    r->fd = fd;
    r->size = (size_t)st.st_size;
    return 0;
}

/* Exactly n more bytes from the file into dst. */
static int read_exactly(qkv_file_reader *r, unsigned char *dst, size_t n) {
    size_t got = 0;
    while (got < n) {
        ssize_t k = read(r->fd, dst + got, n - got);
        if (k < 0 && errno == EINTR) continue;
        if (k < 0) return qkv_file_fail(r->path, "read failed: %s", strerror(errno));
        if (k == 0) return qkv_file_fail(r->path, "file shrank while being read");
        got += (size_t)k;
    }
    r->pos += n;
    return 0;
}

const unsigned char *qkv_reader_head(qkv_file_reader *r, size_t n) {
    QKV_CHECK(r->fd >= 0 && n <= r->size, "reader_head: %zu bytes of a %zu-byte file", n, r->size);
    if (r->head && n <= r->head_len) return r->head;
    QKV_CHECK(r->pos == r->head_len, "reader_head: called after reader_read");
    unsigned char *grown = qkv_try_realloc(r->head, n + 1, r->path, "the file's header");
    if (!grown) return NULL;
    r->head = grown;
    if (read_exactly(r, r->head + r->head_len, n - r->head_len)) return NULL;
    r->head_len = n;
    r->head[n] = '\0';
    return r->head;
}

int qkv_reader_read(qkv_file_reader *r, void *dst, size_t n) {
    QKV_CHECK(r->fd >= 0 && n <= r->size - r->pos, "reader_read: %zu bytes at %zu of a %zu-byte file", n,
              r->pos, r->size);
    return read_exactly(r, dst, n);
}

int qkv_reader_end(qkv_file_reader *r) {
    QKV_CHECK(r->fd >= 0 && r->pos == r->size, "reader_end: %zu of %zu bytes consumed", r->pos, r->size);
    unsigned char extra;
    ssize_t k;
    do k = read(r->fd, &extra, 1);
    while (k < 0 && errno == EINTR);
    if (k < 0) return qkv_file_fail(r->path, "read failed: %s", strerror(errno));
    if (k > 0) return qkv_file_fail(r->path, "file grew while being read");
    return 0;
}

void qkv_reader_close(qkv_file_reader *r) {
    free(r->head);
    r->head = NULL;
    r->head_len = 0;
    if (r->fd >= 0) close(r->fd);
    r->fd = -1;
}

unsigned char *qkv_read_file(const char *path, size_t max_bytes, size_t *len) {
    qkv_file_reader r;
    if (qkv_reader_open(&r, path, max_bytes)) return NULL;
    unsigned char *bytes = NULL;
    if (qkv_reader_head(&r, r.size) && qkv_reader_end(&r) == 0) {
        bytes = r.head;
        r.head = NULL;
        *len = r.size;
    }
    qkv_reader_close(&r);
    return bytes;
}

/* ---- directories ---------------------------------------------------------------- */

int qkv_name_list_push(qkv_name_list *list, const char *name, const char *where) {
    if (list->count == list->capacity) {
        int grown = list->capacity ? 2 * list->capacity : 16;
        char **names = qkv_try_realloc(list->names, (size_t)grown * sizeof *names, where, "file names");
        if (!names) return -1;
        list->names = names;
        list->capacity = grown;
    }
    if (!(list->names[list->count] = qkv_try_strdup(name, where, "a file name"))) return -1;
    list->count++;
    return 0;
}

void qkv_name_list_free(qkv_name_list *list) {
    for (int i = 0; i < list->count; i++) free(list->names[i]);
    free(list->names);
    memset(list, 0, sizeof *list);
}

char *qkv_join_path(const char *a, const char *b) {
    size_t n = strlen(a) + strlen(b) + 2;
    char *path = qkv_try_malloc(n, a, "a path");
    if (path) snprintf(path, n, "%s/%s", a, b);
    return path;
}

static int compare_names(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

int qkv_list_dir(const char *dir, int (*keep)(const char *path, const char *name, void *ctx), void *ctx,
                 qkv_name_list *out) {
    DIR *d = opendir(dir);
    if (!d) return qkv_file_fail(dir, "cannot open directory: %s", strerror(errno));
    struct dirent *e;
    int status = 0;
    while (status == 0 && (e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
        char *path = qkv_join_path(dir, e->d_name);
        if (!path) status = -1;
        else if (keep(path, e->d_name, ctx)) status = qkv_name_list_push(out, e->d_name, dir);
        free(path);
    }
    closedir(d);
    if (status) qkv_name_list_free(out);
    else if (out->count > 1) qsort(out->names, (size_t)out->count, sizeof *out->names, compare_names);
    return status;
}

/* ---- little-endian float32 ------------------------------------------------------- */

void qkv_f32_from_le(float *dst, const unsigned char *src, size_t n) {
    for (size_t i = 0; i < n; i++) {
        const unsigned char *p = src + 4 * i;
        uint32_t u = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
        memcpy(&dst[i], &u, sizeof u);
    }
}
