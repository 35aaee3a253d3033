/* alloc.c — checked allocation. See alloc.h.
 *
 * Every request goes through raw(): one place that calls the C allocator. The
 * stopping and the returning flavours differ only in what they do with a NULL. */
#include "core/alloc.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"

#define ALIGN 64

enum kind { KIND_MALLOC, KIND_CALLOC, KIND_REALLOC, KIND_ALIGNED };

/* NULL on failure; a zero-byte request gets a real (1-byte or ALIGN-byte) block. */
static void *raw(enum kind kind, void *old, size_t bytes) {
    if (bytes == SIZE_MAX) return NULL; /* an overflowed size (qkv_size_mul) */
    size_t n = bytes ? bytes : 1;
    switch (kind) {
    case KIND_MALLOC: return malloc(n);
    case KIND_CALLOC: return calloc(1, n);
    case KIND_REALLOC: return realloc(old, n);
    default: {
        void *p = NULL;
        return posix_memalign(&p, ALIGN, (n + ALIGN - 1) / ALIGN * ALIGN) == 0 ? p : NULL;
    }
    }
}

size_t qkv_size_mul(size_t count, size_t size) {
    size_t bytes;
    return __builtin_mul_overflow(count, size, &bytes) ? SIZE_MAX : bytes;
}

static size_t run_estimate; /* the session's, or 0 */

void qkv_alloc_note_estimate(size_t bytes) { run_estimate = bytes; }

/* Exit status 2, as every input the machine cannot take (alloc.h). */
static void *or_stop(void *p, size_t bytes, const char *what) {
    if (p) return p;
    if (!run_estimate) qkv_fatal_exit(2, "out of memory allocating %zu bytes for %s", bytes, what ? what : "data");
    double mib = (double)run_estimate / (1 << 20);
    qkv_fatal_exit(2, "out of memory allocating %zu bytes for %s; the run was estimated to need about %.1f %s", bytes,
                   what ? what : "data", mib >= 1024 ? mib / 1024 : mib, mib >= 1024 ? "GiB" : "MiB");
}

static size_t budget, budget_used; /* qkv_alloc_set_budget's, and what was given since */
static char budget_limit[128];

void qkv_alloc_set_budget(size_t bytes, const char *limit) {
    budget = bytes;
    __atomic_store_n(&budget_used, 0, __ATOMIC_RELAXED);
    snprintf(budget_limit, sizeof budget_limit, "%s", limit ? limit : "the memory available");
}

/* Counts a request against the budget; past it, the stop (exit 2). */
static void charge(size_t bytes, const char *what) {
    if (!budget) return;
    size_t used = __atomic_add_fetch(&budget_used, bytes < SIZE_MAX / 2 ? bytes : SIZE_MAX / 2, __ATOMIC_RELAXED);
    if (used > budget)
        qkv_fatal_exit(2, "making the task takes more memory than %s (%zu bytes for %s on top of %zu); nothing was "
                       "made", budget_limit, bytes, what ? what : "data", used - bytes);
}

void *qkv_malloc(size_t bytes, const char *what) {
    charge(bytes, what);
    return or_stop(raw(KIND_MALLOC, NULL, bytes), bytes, what);
}

void *qkv_calloc(size_t count, size_t size, const char *what) {
    size_t bytes = qkv_size_mul(count, size);
    charge(bytes, what);
    return or_stop(raw(KIND_CALLOC, NULL, bytes), bytes, what);
}

void *qkv_realloc(void *p, size_t bytes, const char *what) { return or_stop(raw(KIND_REALLOC, p, bytes), bytes, what); }

void *qkv_malloc_aligned(size_t bytes, const char *what) {
    charge(bytes, what);
    return or_stop(raw(KIND_ALIGNED, NULL, bytes), bytes, what);
}

char *qkv_strdup(const char *s, const char *what) {
    size_t n = strlen(s) + 1;
    return memcpy(qkv_malloc(n, what), s, n);
}

static void *or_fail(void *p, size_t bytes, const char *file, const char *what) {
    if (!p)
        qkv_set_error("%s%sout of memory allocating %zu bytes for %s", file ? file : "", file ? ": " : "", bytes,
                      what ? what : "data");
    return p;
}

void *qkv_try_malloc(size_t bytes, const char *file, const char *what) {
    return or_fail(raw(KIND_MALLOC, NULL, bytes), bytes, file, what);
}

void *qkv_try_realloc(void *p, size_t bytes, const char *file, const char *what) {
    return or_fail(raw(KIND_REALLOC, p, bytes), bytes, file, what);
}

void *qkv_try_malloc_aligned(size_t bytes, const char *file, const char *what) {
    return or_fail(raw(KIND_ALIGNED, NULL, bytes), bytes, file, what);
}

char *qkv_try_strdup(const char *s, const char *file, const char *what) {
    size_t n = strlen(s) + 1;
    char *copy = qkv_try_malloc(n, file, what);
    return copy ? memcpy(copy, s, n) : NULL;
}
