/* identity.h — what a data set is, by content: its size in bytes and a 64-bit
 * hash, so that a checkpoint can tell its own data set from another one whatever
 * path either is reached by; and finding a checkpoint's data set again from the
 * path it stored.
 *
 * The hash is FNV-1a 64 (Fowler, Noll, Vo: h = (h ^ byte) * 0x100000001b3 from
 * 0xcbf29ce484222325, byte by byte), not a cryptographic one: it tells data sets
 * apart, it does not guard against someone who forges one.
 *   A file: its bytes; its name is not part of it (a copy or a rename is the
 *   same data). bytes = its size.
 *   A directory: every file under it whose name does not start with '.', in the
 *   subdirectories too, each directory's entries in strcmp order (qkv_list_dir),
 *   so the order readdir gives does not matter. For each file, its path relative
 *   to the directory ('/' between parts), a 0 byte, its size as 8 little-endian
 *   bytes, then its bytes, all through one hash. bytes = the sum of the sizes.
 *   Symlinks are followed (to at most QKV_IDENTITY_MAX_DEPTH directories deep: a
 *   loop is an error), entries that are neither files nor directories (FIFOs,
 *   sockets, devices) are skipped without being opened.
 * The whole path is read once, in 1 MiB pieces; FNV-1a is one multiply per byte,
 * about 2 ns a byte (the fortunes directory, 5.2 MB with the .u8 symlinks it
 * follows: 12 ms, up to 37 ms on a busy machine).
 *
 * Errors are input errors: -1 with a one-line qkv_last_error() naming the path or
 * the file of it that could not be read.
 */
#ifndef QKV_DATA_IDENTITY_H
#define QKV_DATA_IDENTITY_H

#include <stddef.h>
#include <stdint.h>

#define QKV_FNV1A64_OFFSET 0xcbf29ce484222325ULL
#define QKV_FNV1A64_PRIME 0x100000001b3ULL
#define QKV_IDENTITY_MAX_DEPTH 32

typedef struct qkv_data_identity {
    long bytes;        /* 0: unknown (a checkpoint written before identities, or data made by the task) */
    uint64_t hash;
} qkv_data_identity;

/* FNV-1a 64 of bytes[0..n) continued from h (QKV_FNV1A64_OFFSET to start). */
uint64_t qkv_fnv1a64(uint64_t h, const void *bytes, size_t n);

/* The identity of the file or directory at path: 0, or -1 with the error. */
int qkv_data_identity_of(const char *path, qkv_data_identity *out);

/* Whether a is known (bytes > 0) and equals b. */
int qkv_data_identity_same(const qkv_data_identity *a, const qkv_data_identity *b);

/* "N bytes, hash 0123456789abcdef" into out (len bytes), for messages. */
const char *qkv_data_identity_text(const qkv_data_identity *id, char *out, size_t len);

/* Finds the data set `want` (known: bytes > 0) that a checkpoint at anchor stored
 * as `stored`: stored as given if it holds want; else, for a relative stored
 * path, the first of DIR/stored for DIR the anchor's directory, then its parent,
 * and so on up to the root, that holds want (a run in A that read mytext/my.txt
 * and saved out/my.safetensors: A/out/mytext/my.txt, then A/mytext/my.txt). The
 * path found goes into out (len bytes). 0, or -1 with a one-line error: none of
 * them exists ("cannot open", as the loader says), or those that exist hold other
 * data (naming stored and the first one found, with both identities). */
int qkv_data_find(const char *stored, const char *anchor, const qkv_data_identity *want, char *out, size_t len);

#endif
