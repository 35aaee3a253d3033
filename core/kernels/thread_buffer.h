/* thread_buffer.h — float buffers that belong to the calling thread: grown on
 * demand, kept across calls (libgomp keeps its pool threads, so the steady state
 * allocates nothing), freed when the thread exits (one of a team that shrank, a
 * thread of the caller's). The gemm's packing scratch and its kept operands
 * (kernel_gemm.c, gemm_keep.c) live in them.
 *
 *     static _Thread_local qkv_thread_buffer buf;
 *     float *x = qkv_thread_buffer_get(&buf, floats, "what it holds");
 *
 * The buffer's first growth registers it with the thread; its contents are not
 * kept when it grows. A thread may register at most QKV_THREAD_BUFFERS of them.
 */
#ifndef QKV_THREAD_BUFFER_H
#define QKV_THREAD_BUFFER_H

#include <stddef.h>

#define QKV_THREAD_BUFFERS 256

typedef struct qkv_thread_buffer {
    float *data;
    size_t cap; /* floats */
    int registered;
} qkv_thread_buffer;

/* At least `floats` floats, 64-byte aligned (what: the out-of-memory message). */
float *qkv_thread_buffer_get(qkv_thread_buffer *buf, size_t floats, const char *what);

#endif
