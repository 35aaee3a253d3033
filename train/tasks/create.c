/* create.c — a task made with its data set inside the memory budget and the
 * signal's reach (registry.h: qkv_task_create).
 *
 * Before the kind's create makes or reads anything, its estimate of the data
 * set (qkv_task_kind.data_bytes) plus the memory in use is judged against the
 * memory available (train/memory.h): a set that does not fit is refused in one
 * line, before a byte of it is made (a small one is judged with the whole run
 * right after: SMALL_DATA_BYTES). The kinds make their sets in pieces that
 * ask qkv_interrupt_poll between them (data/pieces.h), so a signal ends the
 * making within a piece; and they take the set's memory with the allocators that
 * return (core/alloc.h), so a failure is one line with the estimate (exit 2 in
 * the command line), never the stop of exit 1.
 */
#include <stdio.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "train/interrupt.h"
#include "train/memory.h"
#include "train/tasks/registry.h"

/* A set smaller than this is judged with the rest of the run, right after it is
 * made (train/memory.h's check counts it in the memory in use): making it takes
 * well under a second, and the run's one line then names every part. */
#define SMALL_DATA_BYTES ((size_t)16 << 20)

qkv_task *qkv_task_create(const qkv_task_kind *kind, const void *config, int for_eval, size_t max_memory) {
    char what[160] = "";
    size_t bytes = kind->data_bytes ? kind->data_bytes(config, for_eval, what, sizeof what) : 0;
    if (bytes > SMALL_DATA_BYTES && qkv_memory_check_data(max_memory, bytes, what) != 0) return NULL;
    /* The model and whatever else create takes with the stopping allocators stay
     * within what the machine has left (core/alloc.h's budget): a model of 50 GB
     * from a flag is one line with exit 2, never the kernel's OOM killer. The
     * machine's limit, not --max-memory: the run's estimate judges that after. */
    const char *source;
    size_t limit = qkv_memory_available(&source), now = qkv_memory_resident(), unused = qkv_memory_unused();
    size_t left = limit > now ? limit - now : limit ? 1 : 0;
    char limit_text[128], left_size[32];
    if (unused && unused < left) { /* other programs hold the rest */
        left = unused;
        source = "memory the machine has free";
    }
    snprintf(limit_text, sizeof limit_text, "the %s of %s left", qkv_memory_size_text(left, left_size, sizeof left_size),
             source);
    qkv_alloc_set_budget(left, limit_text);
    qkv_task *task = kind->create(config, for_eval);
    qkv_alloc_set_budget(0, NULL);
    if (task) return task;
    char reason[512], size[32];
    snprintf(reason, sizeof reason, "%s", qkv_last_error());
    int signal = qkv_interrupt_signal();
    if (signal)
        qkv_set_error("stopped by %s while making the data set%s%s%s, before the first step; nothing was saved",
                      qkv_signal_name(signal), what[0] ? " (" : "", what, what[0] ? ")" : "");
    else if (bytes && strstr(reason, "out of memory allocating"))   /* core/alloc.h's try flavour */
        qkv_set_error("%s; the data set (%s) needs about %s", reason, what,
                      qkv_memory_size_text(bytes, size, sizeof size));
    return NULL;
}
