/* thread_buffer.c — the calling thread's buffers; see thread_buffer.h. Each thread
 * lists the buffers it grew, and a key whose destructor runs at the thread's exit
 * frees them. */
#include "core/kernels/thread_buffer.h"

#include <pthread.h>
#include <stdlib.h>

#include "core/alloc.h"
#include "core/error.h"

static _Thread_local qkv_thread_buffer *owned[QKV_THREAD_BUFFERS];
static _Thread_local int n_owned;

static pthread_key_t exit_key;
static pthread_once_t exit_once = PTHREAD_ONCE_INIT;

static void free_owned(void *unused) {
    (void)unused;
    for (int i = 0; i < n_owned; i++) {
        free(owned[i]->data);
        *owned[i] = (qkv_thread_buffer){0};
    }
    n_owned = 0;
}

static void make_exit_key(void) { pthread_key_create(&exit_key, free_owned); }

float *qkv_thread_buffer_get(qkv_thread_buffer *buf, size_t floats, const char *what) {
    if (buf->cap >= floats) return buf->data;
    if (!buf->registered) {
        QKV_CHECK(n_owned < QKV_THREAD_BUFFERS, "thread buffers: more than %d on one thread", QKV_THREAD_BUFFERS);
        pthread_once(&exit_once, make_exit_key);
        pthread_setspecific(exit_key, owned); /* any non-NULL value: the destructor runs */
        owned[n_owned++] = buf;
        buf->registered = 1;
    }
    free(buf->data);
    buf->data = qkv_malloc_aligned(qkv_size_mul(floats, sizeof(float)), what);
    buf->cap = floats;
    return buf->data;
}
