/* text.h — a text corpus: the bytes of one file, or of a directory's files.
 *
 * A directory is read as its regular files concatenated (nothing between them)
 * in strcmp order of their names, without recursing; skipped are hidden files
 * (names starting with '.'), symlinks, anything that is not a regular file, and
 * names ending in ".dat" (the index files of the fortunes package, which sit
 * beside the texts). A path given directly may be a symlink to a file or a
 * directory.
 *
 * Errors are input errors: -1 and a one-line qkv_last_error() naming the path
 * (or, for a file of a directory that cannot be read, that file): it is missing
 * or unreadable, a device, FIFO or socket (refused without opening it, so
 * nothing blocks), an empty file, a directory with no file to read or whose
 * files are all empty, or more than QKV_TEXT_MAX_BYTES in all (refused before
 * anything is allocated for it).
 */
#ifndef QKV_TEXT_H
#define QKV_TEXT_H

#include <stddef.h>
#include <stdint.h>

#define QKV_TEXT_MAX_BYTES ((size_t)1 << 30) /* 1 GiB: more is refused, not allocated */

typedef struct qkv_text_corpus {
    uint8_t *bytes; /* n bytes, then a '\0' not counted in n (handy for printing a piece) */
    size_t n;       /* >= 1 */
    int n_files;    /* 1 for a file; for a directory, the files read, empty ones included */
} qkv_text_corpus;

/* Reads path into out: 0, or -1 with *out zeroed (also for a text of one
 * distinct byte, which has nothing to teach). */
int qkv_text_load(const char *path, qkv_text_corpus *out);

/* The bytes qkv_text_load would read from path (a file's size, a directory's
 * files' sum), from stat alone: 0, or -1 with the error the load would give. */
int qkv_text_bytes(const char *path, size_t *bytes);

/* Frees and zeroes; safe on a zeroed corpus and twice. */
void qkv_text_corpus_free(qkv_text_corpus *c);

/* The number of tokens of n that train, when val_fraction (in [0, 0.5]) of them
 * validate: n - floor(n * val_fraction), the product taken in double. The train
 * part comes first; tests and the text task share this one rule. */
size_t qkv_text_split(size_t n, double val_fraction);

#endif
