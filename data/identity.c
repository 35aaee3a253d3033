/* identity.c — a data set's size and FNV-1a 64 hash, and finding a stored data
 * path again. See identity.h. */
#include "data/identity.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/alloc.h"
#include "core/error.h"
#include "core/fileio.h"

#define PIECE ((size_t)1 << 20)

uint64_t qkv_fnv1a64(uint64_t h, const void *bytes, size_t n) {
    const unsigned char *p = bytes;
    for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * QKV_FNV1A64_PRIME;
    return h;
}

/* Walking a path: the running hash, the bytes so far, one reading buffer (NULL:
 * only the sizes are added up, nothing is read). */
typedef struct walk {
    uint64_t hash;
    long bytes;
    unsigned char *piece;
} walk;

/* The file's bytes into the hash (after its name and size if name is not NULL). */
static int hash_file(walk *w, const char *path, const char *name) {
    if (!w->piece) { /* sizes only */
        struct stat st;
        if (stat(path, &st) != 0) return qkv_file_fail(path, "cannot open: %s", strerror(errno));
        w->bytes += (long)st.st_size;
        return 0;
    }
    qkv_file_reader r;
    if (qkv_reader_open(&r, path, QKV_READ_ANY_SIZE)) return -1;
    if (name) {
        unsigned char size[8];
        for (int i = 0; i < 8; i++) size[i] = (unsigned char)((uint64_t)r.size >> (8 * i));
        w->hash = qkv_fnv1a64(w->hash, name, strlen(name) + 1);   /* with its 0 byte */
        w->hash = qkv_fnv1a64(w->hash, size, sizeof size);
    }
    int rc = 0;
    for (size_t left = r.size; rc == 0 && left > 0;) {
        size_t n = left < PIECE ? left : PIECE;
        rc = qkv_reader_read(&r, w->piece, n);
        if (rc == 0) w->hash = qkv_fnv1a64(w->hash, w->piece, n);
        left -= n;
    }
    if (rc == 0) rc = qkv_reader_end(&r);
    if (rc == 0) w->bytes += (long)r.size;
    qkv_reader_close(&r);
    return rc;
}

static int not_hidden(const char *path, const char *name, void *ctx) {
    (void)path, (void)ctx;
    return name[0] != '.';
}

/* dir's files (name: dir's path relative to the top, "" for the top), depth deep. */
static int hash_dir(walk *w, const char *dir, const char *name, int depth) {
    if (depth > QKV_IDENTITY_MAX_DEPTH)
        return qkv_file_fail(dir, "more than %d directories deep (a symlink loop?)", QKV_IDENTITY_MAX_DEPTH);
    qkv_name_list entries = {0};
    if (qkv_list_dir(dir, not_hidden, NULL, &entries)) return -1;
    int rc = 0;
    for (int i = 0; rc == 0 && i < entries.count; i++) {
        char *path = qkv_join_path(dir, entries.names[i]);
        char *relative = path ? (name[0] ? qkv_join_path(name, entries.names[i])
                                         : qkv_strdup(entries.names[i], "a file name")) : NULL;
        struct stat st;
        int found = path && stat(path, &st) == 0, err = errno;
        /* A symlink to nothing holds no data: skipped, as the loaders skip it. */
        int dangling = path && !found && err == ENOENT && lstat(path, &st) == 0 && S_ISLNK(st.st_mode);
        if (!relative) rc = -1;
        else if (dangling) rc = 0;
        else if (!found) rc = qkv_file_fail(path, "cannot open: %s", strerror(err));
        else if (S_ISDIR(st.st_mode)) rc = hash_dir(w, path, relative, depth + 1);
        else if (S_ISREG(st.st_mode)) rc = hash_file(w, path, relative);
        free(relative);
        free(path);
    }
    qkv_name_list_free(&entries);
    return rc;
}

/* The identity of path, or with sizes_only its size alone (hash 0), nothing read. */
static int identity_of(const char *path, int sizes_only, qkv_data_identity *out) {
    memset(out, 0, sizeof *out);
    struct stat st;
    if (stat(path, &st) != 0) return qkv_file_fail(path, "cannot open: %s", strerror(errno));
    walk w = {QKV_FNV1A64_OFFSET, 0, sizes_only ? NULL : qkv_malloc(PIECE, "a piece of the data set")};
    int rc = S_ISDIR(st.st_mode) ? hash_dir(&w, path, "", 0)
             : S_ISREG(st.st_mode) ? hash_file(&w, path, NULL)
                                   : qkv_file_fail(path, "not a regular file or a directory");
    free(w.piece);
    if (rc == 0) *out = (qkv_data_identity){w.bytes, sizes_only ? 0 : w.hash};
    return rc;
}

int qkv_data_identity_of(const char *path, qkv_data_identity *out) { return identity_of(path, 0, out); }

int qkv_data_identity_same(const qkv_data_identity *a, const qkv_data_identity *b) {
    return a->bytes > 0 && a->bytes == b->bytes && a->hash == b->hash;
}

const char *qkv_data_identity_text(const qkv_data_identity *id, char *out, size_t len) {
    snprintf(out, len, "%ld bytes, hash %016llx", id->bytes, (unsigned long long)id->hash);
    return out;
}

/* ---- finding a stored path ------------------------------------------------------------ */

/* The candidates for stored, one at a time: k = 0 stored itself, k = 1 the
 * anchor's directory, k = 2 its parent, ...; 0 and the candidate in out, or -1
 * when there are no more (or it does not fit out). */
static int candidate(const char *stored, const char *anchor, int k, char *out, size_t len) {
    if (k == 0) return (size_t)snprintf(out, len, "%s", stored) < len ? 0 : -1;
    if (stored[0] == '/') return -1;
    char dir[4096];
    const char *slash = strrchr(anchor, '/');
    if ((size_t)snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash - anchor) : 1, slash ? anchor : ".") >=
        sizeof dir)
        return -1;
    if (slash == anchor) snprintf(dir, sizeof dir, "/");
    char absolute[4096];
    if (!realpath(dir, absolute)) return -1;
    for (int up = 1; up < k; up++) {   /* k - 1 steps up from the anchor's directory */
        char *last = strrchr(absolute, '/');
        if (!last || strcmp(absolute, "/") == 0) return -1;
        if (last == absolute) last[1] = '\0';
        else *last = '\0';
    }
    const char *sep = strcmp(absolute, "/") == 0 ? "" : "/";
    return (size_t)snprintf(out, len, "%s%s%s", absolute, sep, stored) < len ? 0 : -1;
}

int qkv_data_find(const char *stored, const char *anchor, const qkv_data_identity *want, char *out, size_t len) {
    char path[4096], first_found[4096] = "", cannot_open[512] = "", text[2][64];
    qkv_data_identity first_id = {0};
    for (int k = 0; candidate(stored, anchor, k, path, sizeof path) == 0; k++) {
        struct stat st;
        if (stat(path, &st) != 0) {
            if (k == 0) snprintf(cannot_open, sizeof cannot_open, "%s", strerror(errno));
            continue;
        }
        /* The size first: a set of another size is not read (a stored path may name a huge file) */
        qkv_data_identity id;
        if (identity_of(path, 1, &id) != 0) return -1;   /* names the file */
        if (id.bytes == want->bytes && identity_of(path, 0, &id) != 0) return -1;
        if (qkv_data_identity_same(want, &id)) {
            if ((size_t)snprintf(out, len, "%s", path) >= len) return qkv_file_fail(path, "path too long");
            return 0;
        }
        if (!first_found[0]) {
            snprintf(first_found, sizeof first_found, "%s", path);
            first_id = id;
        }
    }
    if (!first_found[0])
        return qkv_file_fail(stored, "cannot open: %s%s", cannot_open[0] ? cannot_open : "no such file",
                             stored[0] == '/' ? "" : " (nor relative to the checkpoint's directory or its parents)");
    int moved = strcmp(first_found, stored) != 0;
    if (first_id.bytes != want->bytes) /* not hashed */
        snprintf(text[0], sizeof text[0], "%ld bytes", first_id.bytes);
    else
        qkv_data_identity_text(&first_id, text[0], sizeof text[0]);
    qkv_set_error("%s%s%s: the data differs from the set the model was trained on (%s here; trained on %s)", stored,
                  moved ? ", found as " : "", moved ? first_found : "", text[0],
                  qkv_data_identity_text(want, text[1], sizeof text[1]));
    return -1;
}
