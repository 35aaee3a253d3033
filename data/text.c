/* text.c — loading a text corpus from a file or a directory. See text.h.
 *
 * Sizes come from stat (lstat in a directory) before anything is allocated, so
 * an oversized corpus is refused without reserving it; each file is then read
 * through core/fileio.h's reader, capped at the room left, so a file that grows
 * meanwhile is an error rather than an overrun.
 */
#include "data/text.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/alloc.h"
#include "core/error.h"
#include "core/fileio.h"

void qkv_text_corpus_free(qkv_text_corpus *c) {
    if (!c) return;
    free(c->bytes);
    memset(c, 0, sizeof *c);
}

size_t qkv_text_split(size_t n, double val_fraction) {
    QKV_CHECK(val_fraction >= 0.0 && val_fraction <= 0.5, "text_split: val_fraction %g outside [0, 0.5]",
              val_fraction);
    return n - (size_t)floor((double)n * val_fraction);
}

/* c->bytes with room for size bytes and the terminator. */
static int reserve(qkv_text_corpus *c, size_t size, const char *path) {
    c->bytes = qkv_try_malloc(size + 1, path, "the text");
    return c->bytes ? 0 : -1;
}

/* Appends the file at path, at most room bytes, to c. */
static int append_file(qkv_text_corpus *c, const char *path, size_t room) {
    qkv_file_reader r;
    if (qkv_reader_open(&r, path, room)) return -1;
    int rc = qkv_reader_read(&r, c->bytes + c->n, r.size) || qkv_reader_end(&r) ? -1 : 0;
    if (rc == 0) c->n += r.size;
    qkv_reader_close(&r);
    return rc;
}

static int load_file(const char *path, size_t size, qkv_text_corpus *c) {
    if (size > QKV_TEXT_MAX_BYTES)
        return qkv_file_fail(path, "file too large (%zu bytes; the limit is %zu)", size, QKV_TEXT_MAX_BYTES);
    if (reserve(c, size, path) || append_file(c, path, size)) return -1;
    if (c->n == 0) return qkv_file_fail(path, "empty file");
    c->n_files = 1;
    return 0;
}

/* A directory's file to read: a regular file (not a symlink), not hidden, not ".dat". */
static int is_text_file(const char *path, const char *name, void *ctx) {
    (void)ctx;
    size_t n = strlen(name);
    struct stat st;
    if (name[0] == '.' || (n >= 4 && strcmp(name + n - 4, ".dat") == 0)) return 0;
    return lstat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* The sum of the sizes of dir's files names, or -1 (error set) past the limit. */
static int total_size(const char *dir, const qkv_name_list *names, size_t *total) {
    *total = 0;
    for (int i = 0; i < names->count; i++) {
        char *path = qkv_join_path(dir, names->names[i]);
        if (!path) return -1;
        struct stat st;
        int rc = lstat(path, &st) == 0 ? 0 : qkv_file_fail(path, "cannot stat: %s", strerror(errno));
        free(path);
        if (rc) return -1;
        if ((size_t)st.st_size > QKV_TEXT_MAX_BYTES - *total)
            return qkv_file_fail(dir, "its files hold more than %zu bytes (the limit)", QKV_TEXT_MAX_BYTES);
        *total += (size_t)st.st_size;
    }
    return 0;
}

static int load_directory(const char *dir, qkv_text_corpus *c) {
    qkv_name_list names = {0};
    size_t total;
    if (qkv_list_dir(dir, is_text_file, NULL, &names)) return -1;
    int rc = 0;
    if (names.count == 0)
        rc = qkv_file_fail(dir, "no file to read in the directory (hidden files, symlinks and .dat files are skipped)");
    if (rc == 0) rc = total_size(dir, &names, &total);
    if (rc == 0 && total == 0) rc = qkv_file_fail(dir, "the directory's %d files are all empty", names.count);
    if (rc == 0) rc = reserve(c, total, dir);
    for (int i = 0; rc == 0 && i < names.count; i++) {
        char *path = qkv_join_path(dir, names.names[i]);
        rc = path ? append_file(c, path, total - c->n) : -1;
        free(path);
    }
    if (rc == 0 && c->n == 0) rc = qkv_file_fail(dir, "the directory's %d files are all empty", names.count);
    if (rc == 0) c->n_files = names.count;
    qkv_name_list_free(&names);
    return rc;
}

int qkv_text_bytes(const char *path, size_t *bytes) {
    struct stat st;
    *bytes = 0;
    if (stat(path, &st) != 0) return qkv_file_fail(path, "cannot open: %s", strerror(errno));
    if (S_ISREG(st.st_mode)) {
        *bytes = (size_t)st.st_size;
        return 0;
    }
    if (!S_ISDIR(st.st_mode)) return qkv_file_fail(path, "not a regular file or a directory (a device, FIFO or socket?)");
    qkv_name_list names = {0};
    if (qkv_list_dir(path, is_text_file, NULL, &names)) return -1;
    int rc = total_size(path, &names, bytes);
    qkv_name_list_free(&names);
    return rc;
}

/* A text of one distinct byte (all NUL, all 'a') has nothing to predict: every
 * next byte is known, the loss falls to 0 and the model learns nothing. */
static int check_distinct_bytes(const char *path, const qkv_text_corpus *c) {
    for (size_t i = 1; i < c->n; i++)
        if (c->bytes[i] != c->bytes[0]) return 0;
    return qkv_file_fail(path, "every one of its %zu bytes is 0x%02x: a text needs at least 2 distinct bytes to "
                               "learn anything", c->n, c->bytes[0]);
}

int qkv_text_load(const char *path, qkv_text_corpus *out) {
    QKV_CHECK(path != NULL && out != NULL, "text_load: NULL argument");
    memset(out, 0, sizeof *out);
    struct stat st;
    int rc;
    if (stat(path, &st) != 0) rc = qkv_file_fail(path, "cannot open: %s", strerror(errno));
    else if (S_ISDIR(st.st_mode)) rc = load_directory(path, out);
    else if (S_ISREG(st.st_mode)) rc = load_file(path, (size_t)st.st_size, out);
    else rc = qkv_file_fail(path, "not a regular file or a directory (a device, FIFO or socket?)");
    if (rc == 0) rc = check_distinct_bytes(path, out);
    if (rc) qkv_text_corpus_free(out);
    else out->bytes[out->n] = '\0';
    return rc;
}
