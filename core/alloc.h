/* alloc.h — the one checked allocator every qkv module goes through.
 *
 * Running out of memory is never a segfault and never silent. Two flavours:
 *
 *  - qkv_malloc, qkv_calloc, qkv_realloc, qkv_malloc_aligned, qkv_strdup: for
 *    memory the program cannot go on without (parameters, the tape's arena,
 *    optimizer state, scratch). Failure stops through qkv_fatal_exit() with
 *        "out of memory allocating 6442450944 bytes for tensor 'enc.0.ff.w1'"
 *    (and, once a session has measured its run, "; the run was estimated to
 *    need about 612.4 MiB": qkv_alloc_note_estimate) and exit status 2: a run
 *    too big for this machine is refused as every input is, never abort() and
 *    its core dump, never the exit 1 of a failed computation.
 *  - qkv_try_malloc, qkv_try_realloc, qkv_try_malloc_aligned, qkv_try_strdup: for loaders of
 *    input files, where a size the file asks for is an input error. Failure
 *    returns NULL and records, for qkv_last_error(),
 *        "<file>: out of memory allocating N bytes for <what>"
 *    (just "out of memory ..." when file is NULL).
 *
 * what says what the memory is for (a static string or a short description).
 * Sizes of element counts are multiplied with an overflow check (qkv_calloc, and
 * the _n helpers): an overflowing size is reported as SIZE_MAX bytes, never
 * wrapped. Zero-byte requests return a valid unique pointer. Memory from any of
 * these is released with free(); the aligned ones are 64-byte aligned.
 */
#ifndef QKV_ALLOC_H
#define QKV_ALLOC_H

#include <stddef.h>

void *qkv_malloc(size_t bytes, const char *what);
/* The run's estimated peak (train/memory.h), named by a stop for memory from now
 * on; 0 forgets it (the run is over). */
void qkv_alloc_note_estimate(size_t bytes);
/* While a task is made (train/tasks/create.c): qkv_malloc, qkv_calloc and
 * qkv_malloc_aligned count the bytes they give (frees are not counted back), and
 * a request past `bytes` in all stops with exit 2 and "making the task takes more
 * memory than <limit>" (limit: what the bytes are, "the 23.5 GiB of physical
 * memory"), before the system has to refuse it or kill the process for touching
 * it. A flag's model of 50 GB is then one line, not the kernel's OOM killer.
 * bytes 0: no budget. */
void qkv_alloc_set_budget(size_t bytes, const char *limit);
void *qkv_calloc(size_t count, size_t size, const char *what);
void *qkv_realloc(void *p, size_t bytes, const char *what);
void *qkv_malloc_aligned(size_t bytes, const char *what);
char *qkv_strdup(const char *s, const char *what);

void *qkv_try_malloc(size_t bytes, const char *file, const char *what);
void *qkv_try_realloc(void *p, size_t bytes, const char *file, const char *what);
void *qkv_try_malloc_aligned(size_t bytes, const char *file, const char *what);
char *qkv_try_strdup(const char *s, const char *file, const char *what);

/* count * size, or SIZE_MAX when the product overflows (then any allocation of it fails). */
size_t qkv_size_mul(size_t count, size_t size);

#endif
