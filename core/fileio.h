/* fileio.h — the file helpers every qkv reader and writer shares.
 *
 * Atomic writes. qkv_atomic_open creates "<path>.tmp.<pid>" in the target's
 * directory; qkv_atomic_write / qkv_atomic_write_f32 append to it (buffered);
 * qkv_atomic_commit flushes, fsyncs and closes it, renames it over path and fsyncs
 * the directory, so a crash leaves either the old file or the new one. On any
 * failure the temporary file is removed, any previous file at path is untouched,
 * the call returns -1 and qkv_last_error() is "<path>: <step>: <strerror>". A write
 * that fails aborts the file itself: later writes and the commit just return -1.
 * qkv_atomic_abort (safe to call at any time, also twice) gives up a file that the
 * caller no longer wants to finish. Typical use:
 *
 *     qkv_atomic_file f;
 *     if (qkv_atomic_open(&f, path)) return -1;
 *     if (qkv_atomic_write(&f, header, n) || qkv_atomic_write_f32(&f, x, count)) return -1;
 *     return qkv_atomic_commit(&f);
 *
 * One writer per path at a time: two writers in one process would share the
 * temporary name. The temporary file is opened without following a symlink; a
 * path that is a symlink is written through (its target, existing or not, is
 * replaced; the link stays). Opening removes the "<path>.tmp.<pid>" files of
 * processes that no longer exist (a writer killed mid-file). qkv_atomic_flush
 * hands the buffered bytes to the kernel (a log written row by row).
 * qkv_atomic_remove_temps, async-signal-safe, unlinks every temporary file this
 * process has open: a signal handler that exits at once calls it.
 *
 * Reading. qkv_reader_open opens a regular file (anything else, a FIFO or a
 * directory, is refused without blocking) no larger than max_bytes and records its
 * size. qkv_reader_head buffers the file's first n bytes, so a format can check its
 * header against the file size before it reads or allocates for the rest;
 * qkv_reader_read reads the next bytes straight into the caller's memory;
 * qkv_reader_end checks that the file has not grown. A file that shrinks or grows
 * while being read is an error. qkv_read_file does all of it for a whole file.
 * Errors: NULL / -1 with qkv_last_error() = "<path>: <what was wrong>".
 *
 * Directories. qkv_list_dir lists a directory's entries that a filter keeps, in
 * strcmp order (the order every loader of a directory reads in).
 *
 * Float32 data in files is little-endian; the two converters below are the only
 * place that knows it.
 */
#ifndef QKV_FILEIO_H
#define QKV_FILEIO_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Records "<what>: <formatted reason>" with qkv_set_error and returns -1. */
int qkv_file_fail(const char *what, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The same for a text format: records "<name>:<line>: <reason>" and returns -1. */
int qkv_file_fail_line(const char *name, long line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Can a file be created in directory dir? Tries it: creates and removes
 * "<dir>/.qkv-probe.<pid>" (access(W_OK) says yes for root in /proc and on a
 * read-only mount). 0, or -1 with "<what>: cannot write in <dir>: <reason>". */
int qkv_probe_directory(const char *what, const char *dir);
/* A piece of an input for a message: its first 24 bytes with non-printable ones as
 * '?' and "..." if cut; writes into out and returns it. */
const char *qkv_quote_bytes(const void *bytes, size_t len, char out[32]);

/* ---- atomic writes -------------------------------------------------------------- */

typedef struct qkv_atomic_file {
    char *path;     /* the target (a copy); NULL once committed or aborted */
    char *tmp_path; /* "<path>.tmp.<pid>", in the same allocation as path */
    FILE *file;
    size_t written;    /* bytes handed to qkv_atomic_write so far */
    size_t kill_after; /* test hook (below); 0: off */
} qkv_atomic_file;

int qkv_atomic_open(qkv_atomic_file *f, const char *path);
int qkv_atomic_write(qkv_atomic_file *f, const void *bytes, size_t n);
/* n floats as little-endian float32. */
int qkv_atomic_write_f32(qkv_atomic_file *f, const float *values, size_t n);
int qkv_atomic_commit(qkv_atomic_file *f);
void qkv_atomic_abort(qkv_atomic_file *f);
int qkv_atomic_flush(qkv_atomic_file *f);
void qkv_atomic_remove_temps(void);
/* The whole file at once: open, write len bytes, commit. */
int qkv_write_file_atomic(const char *path, const void *bytes, size_t len);

/* Test hook, for the crash-safety tests only: the next file qkv_atomic_open opens
 * (in this process) raises SIGKILL as soon as at least `bytes` bytes have been
 * written to its temporary file, after flushing them, so a crash in the middle
 * of a write is reproducible. 0 disarms. Nothing in qkv calls it except the
 * checkpoint writer's QKV_TEST_KILL_SAVE (train/checkpoint.h). */
void qkv_atomic_test_kill_after(size_t bytes);

/* ---- reading -------------------------------------------------------------------- */

/* No cap beyond what a size_t buffer can hold. */
#define QKV_READ_ANY_SIZE (SIZE_MAX / 2)

typedef struct qkv_file_reader {
    const char *path;    /* not copied: must outlive the reader */
    int fd;              /* -1 once closed */
    size_t size;         /* the file's size when it was opened */
    unsigned char *head; /* the first head_len bytes, then a '\0' (owned) */
    size_t head_len;
    size_t pos;          /* bytes consumed from the file so far */
} qkv_file_reader;

int qkv_reader_open(qkv_file_reader *r, const char *path, size_t max_bytes);
/* The first n bytes (n <= r->size; reads only what is not buffered yet). The
 * pointer is valid until the next call on r. */
const unsigned char *qkv_reader_head(qkv_file_reader *r, size_t n);
/* The n bytes after everything read so far, into dst (not buffered in head). */
int qkv_reader_read(qkv_file_reader *r, void *dst, size_t n);
/* After all r->size bytes were consumed: -1 if the file has grown meanwhile. */
int qkv_reader_end(qkv_file_reader *r);
/* Frees the head buffer and closes; safe to call twice. */
void qkv_reader_close(qkv_file_reader *r);

/* The whole regular file, '\0'-terminated (*len excludes it), in a malloc'd
 * buffer the caller frees; NULL on error. */
unsigned char *qkv_read_file(const char *path, size_t max_bytes, size_t *len);

/* ---- directories ---------------------------------------------------------------- */

/* A growing list of malloc'd strings. Start from {0}; qkv_name_list_free frees. */
typedef struct qkv_name_list {
    char **names;
    int count, capacity;
} qkv_name_list;

/* Appends a copy of name: 0, or -1 when out of memory (the error names where). */
int qkv_name_list_push(qkv_name_list *list, const char *name, const char *where);
/* Frees every name and the list, and zeroes it; safe twice. */
void qkv_name_list_free(qkv_name_list *list);

/* "<a>/<b>" in a malloc'd string, or NULL when out of memory (the error names a). */
char *qkv_join_path(const char *a, const char *b);

/* The names of dir's entries ("." and ".." aside) for which keep(path, name,
 * ctx) is nonzero, path being "<dir>/<name>", appended to *out (empty at the
 * call) in strcmp order. 0, or -1 with the error naming dir and *out freed. */
int qkv_list_dir(const char *dir, int (*keep)(const char *path, const char *name, void *ctx), void *ctx,
                 qkv_name_list *out);

/* ---- little-endian float32 ------------------------------------------------------- */

/* dst[i] = the float32 stored little-endian at src + 4i. dst may be src itself
 * (in-place conversion of bytes read straight into a float buffer). */
void qkv_f32_from_le(float *dst, const unsigned char *src, size_t n);

#endif
