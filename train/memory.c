/* memory.c — a run's memory estimate, measured before training, and the memory
 * the machine has (physical memory, cgroup limits, --max-memory). See memory.h. */
#include "train/memory.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/alloc.h"
#include "core/cancel.h"
#include "core/error.h"
#include "core/kernels/gemm.h"
#include "core/kernels/parallel.h"
#include "train/dist.h"
#include "train/interrupt.h"
#include "train/step.h"

/* The largest micro-batch measured as it is; a larger one is measured at its
 * largest divisor up to this and scaled linearly (a huge micro-batch's own
 * probe would take the memory the budget is there to judge). */
#define PROBE_MAX_EXAMPLES 32

/* ---- sizes ---------------------------------------------------------------------------- */

int qkv_memory_parse_size(const char *text, size_t *bytes) {
    const char *p = text;
    size_t value = 0;
    int digits = 0;
    for (; *p >= '0' && *p <= '9'; p++, digits++) {
        if (value > (SIZE_MAX - 9) / 10) digits = -1000; /* overflow: reported below */
        value = value * 10 + (size_t)(*p - '0');
    }
    int shift = 0;
    switch (*p) {
    case 'k': case 'K': shift = 10; p++; break;
    case 'm': case 'M': shift = 20; p++; break;
    case 'g': case 'G': shift = 30; p++; break;
    case 't': case 'T': shift = 40; p++; break;
    default: break;
    }
    if (digits <= 0 || *p || (shift && value > (SIZE_MAX >> shift))) {
        qkv_set_error("--max-memory '%s': not a size (bytes, or whole K, M, G or T: 2G, 512M; 0: the machine's)", text);
        return -1;
    }
    *bytes = value << shift;
    return 0;
}

const char *qkv_memory_size_text(size_t bytes, char *out, size_t len) {
    double b = (double)bytes;
    if (b >= 1024.0 * 1024 * 1024) snprintf(out, len, "%.1f GiB", b / (1024.0 * 1024 * 1024));
    else if (b >= 1024.0 * 1024) snprintf(out, len, "%.1f MiB", b / (1024.0 * 1024));
    else snprintf(out, len, "%.0f KiB", b / 1024.0);
    return out;
}

/* ---- the memory available --------------------------------------------------------------- */

#ifdef __EMSCRIPTEN__
#include <emscripten/heap.h>

/* In the browser the one limit is the WebAssembly heap's maximum (the memory can
 * grow to it and no further). */
size_t qkv_memory_available(const char **source) {
    *source = "the WebAssembly heap's maximum";
    return (size_t)emscripten_get_heap_max();
}

size_t qkv_memory_unused(void) { return 0; } /* no other program shares the heap */
#else
/* The number a limit file holds, or 0 (absent, "max", not a number). */
static size_t read_limit(const char *path) {
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    char line[64] = "";
    size_t value = 0;
    if (fgets(line, sizeof line, f)) {
        char *end;
        errno = 0;
        unsigned long long v = strtoull(line, &end, 10);
        if (end != line && (*end == '\n' || !*end) && !errno) value = (size_t)v;
    }
    fclose(f);
    return value;
}

/* The smallest limit `file` sets on cgroup `path` (under base) or a parent of it; 0: none. */
static size_t limit_up_the_tree(const char *base, char *path, const char *file) {
    size_t smallest = 0;
    for (;;) {
        char full[1024];
        snprintf(full, sizeof full, "%s%s/%s", base, strcmp(path, "/") == 0 ? "" : path, file);
        size_t v = read_limit(full);
        if (v && (!smallest || v < smallest)) smallest = v;
        char *slash = strrchr(path, '/');
        if (!slash || slash == path) {
            if (strcmp(path, "/") == 0) break;
            strcpy(path, "/");
        } else {
            *slash = '\0';
        }
    }
    return smallest;
}

/* The cgroup memory limits of this process (/proc/self/cgroup: v2's "0::/path",
 * v1's "N:...memory...:/path"), the smallest; 0: none found. */
static size_t cgroup_limit(void) {
    FILE *f = fopen("/proc/self/cgroup", "r");
    if (!f) return 0;
    char line[1024];
    size_t smallest = 0;
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = '\0';
        char *controllers = strchr(line, ':'), *path = controllers ? strchr(controllers + 1, ':') : NULL;
        if (!path) continue;
        *path++ = '\0';
        *controllers++ = '\0';
        size_t v = 0;
        if (strcmp(line, "0") == 0 && !*controllers)
            v = limit_up_the_tree("/sys/fs/cgroup", path, "memory.max");
        else if (strstr(controllers, "memory"))
            v = limit_up_the_tree("/sys/fs/cgroup/memory", path, "memory.limit_in_bytes");
        if (v && (!smallest || v < smallest)) smallest = v;
    }
    fclose(f);
    return smallest;
}

/* /proc/meminfo's line `key` ("MemTotal:"), in bytes; 0 if unknown. */
static size_t meminfo(const char *key) {
    FILE *f = fopen("/proc/meminfo", "r");
    if (!f) return 0;
    char line[256];
    unsigned long long kb = 0;
    size_t n = strlen(key);
    while (fgets(line, sizeof line, f))
        if (strncmp(line, key, n) == 0 && sscanf(line + n, " %llu kB", &kb) == 1) break;
    fclose(f);
    return (size_t)kb * 1024;
}

static size_t physical_memory(void) { return meminfo("MemTotal:"); }

size_t qkv_memory_unused(void) { return meminfo("MemAvailable:"); }

size_t qkv_memory_available(const char **source) {
    /* The tests' stand-in for a small machine: a model too big for it must be
     * refused before the kernel kills the process, without taking gigabytes. */
    const char *test = getenv("QKV_TEST_MEMORY");
    size_t bytes;
    if (test && qkv_memory_parse_size(test, &bytes) == 0 && bytes) {
        *source = "QKV_TEST_MEMORY";
        return bytes;
    }
    size_t physical = physical_memory(), cgroup = cgroup_limit();
    *source = "physical memory";
    if (cgroup && (!physical || cgroup < physical)) {
        *source = "the cgroup's memory limit";
        return cgroup;
    }
    return physical;
}
#endif

/* The process's resident bytes now (/proc/self/statm's second field); 0 if unknown.
 * In WebAssembly: the heap's top (static data, stack and what malloc holds), the
 * part of the heap's maximum already taken. */
size_t qkv_memory_resident(void) {
#ifdef __EMSCRIPTEN__
    return (size_t)(uintptr_t)sbrk(0);
#else
    FILE *f = fopen("/proc/self/statm", "r");
    unsigned long long size = 0, resident = 0;
    if (f) {
        if (fscanf(f, "%llu %llu", &size, &resident) != 2) resident = 0;
        fclose(f);
    }
    return (size_t)resident * (size_t)sysconf(_SC_PAGESIZE);
#endif
}

/* ---- the measurement ------------------------------------------------------------------------ */

int qkv_memory_stopped(int signal) {
    qkv_set_error("stopped by %s while measuring the run's memory, before its first step; nothing was saved",
                  qkv_signal_name(signal));
    return -1;
}

/* The largest divisor of micro_batch up to PROBE_MAX_EXAMPLES. */
static int probe_examples(int micro_batch) {
    for (int d = micro_batch < PROBE_MAX_EXAMPLES ? micro_batch : PROBE_MAX_EXAMPLES; d > 1; d--)
        if (micro_batch % d == 0) return d;
    return 1;
}

/* One forward and backward of the first `examples` examples of step 0 on a
 * scratch tape, the gradients into a scratch buffer: the arena's peak, and the
 * bytes of its node list in *node_bytes. The task and its parameters are left
 * as they were (memory.h). Measured once per task and size (task->memory_probe).
 * -1 with qkv_last_error() when a signal came (train/interrupt.h): the forward's
 * ops were cut short (core/cancel.h), no backward, nothing measured. */
static int measure_micro_batch(qkv_task *task, int examples, size_t *peak, size_t *node_bytes) {
    if (task->memory_probe.examples == examples) {
        *peak = task->memory_probe.peak;
        *node_bytes = task->memory_probe.node_bytes;
        return 0;
    }
    if (qkv_interrupt_poll()) /* the measurement is one unit of work (interrupt.h): a signal before it ends here */
        return qkv_memory_stopped(qkv_interrupt_signal());
    const qkv_params *params = task->params;
    int batch = task->batch > 0 ? task->batch : 1;
    float *scratch = qkv_malloc_aligned(qkv_size_mul(qkv_step_buffer_floats(params) + 1, sizeof(float)),
                                        "the memory estimate's gradients");
    float **grads = qkv_malloc((size_t)(params->n + 1) * sizeof *grads, "the memory estimate's gradients");
    size_t at = 0;
    for (int i = 0; i < params->n; at += params->items[i]->size, i++) grads[i] = scratch + at;
    qkv_tape *tape = qkv_tape_create(0);
    qkv_tape_set_slice(tape, 0, batch / examples);
    qkv_tape_redirect_grads(tape, params, grads);
    if (task->prepare) task->prepare(task->self, 0);   /* a pure function of the step: step 0 remade later */
    int diverged = task->diverged;
    qkv_tensor *loss = task->loss(task->self, tape, 0);
    int cancelled = qkv_cancelled();
    if (loss && !cancelled) { /* a loss that fails here fails in the first step too, which says why */
        const float seed = 1.0f;
        qkv_backward_seeded(tape, loss, &seed);
    }
    task->diverged = diverged;
    *peak = tape->arena_peak;
    *node_bytes = (size_t)tape->cap_nodes * sizeof(qkv_node);
    qkv_tape_free(tape);
    free(grads);
    free(scratch);
    if (cancelled || qkv_interrupt_signal()) return qkv_memory_stopped(qkv_interrupt_signal());
    task->memory_probe.examples = examples;
    task->memory_probe.peak = *peak;
    task->memory_probe.node_bytes = *node_bytes;
    return 0;
}

/* The most a worker's keep window holds (core/kernels/gemm.h): every parameter of
 * two or more dims as a matrix of its first dim's rows. */
static size_t packed_weights(const qkv_params *params) {
    size_t floats = 0;
    for (int i = 0; i < params->n; i++) {
        const qkv_tensor *p = params->items[i];
        if (p->ndim >= 2) floats += qkv_gemm_keep_floats(p->shape[0], (int)(p->size / (size_t)p->shape[0]));
    }
    return (floats < QKV_GEMM_KEEP_MAX_FLOATS ? floats : QKV_GEMM_KEEP_MAX_FLOATS) * sizeof(float);
}

int qkv_memory_estimate_run(const qkv_trainer_config *config, size_t limit, qkv_task *task, qkv_memory_estimate *out) {
    memset(out, 0, sizeof *out);
    int micro_batch = config->micro_batch; /* settled (train/step.h) */
    int local = qkv_step_local_micro_batches(task, micro_batch);
    const qkv_params *params = task->params;
    size_t n_params = qkv_params_count(params), buffer = qkv_step_buffer_floats(params) * sizeof(float);
    int ranks = qkv_dist_size(), threads = qkv_threads();

    out->now = qkv_memory_resident();
    out->micro_batches = local;
    out->gradients = n_params * sizeof(float) + (size_t)local * buffer + (ranks > 1 ? (size_t)ranks * buffer : 0);
    out->optimizer = (size_t)qkv_optimizer_slot_count(&config->optim) * n_params * sizeof(float);

    int examples = probe_examples(micro_batch);
    size_t node_bytes, peak;
    if (measure_micro_batch(task, examples, &peak, &node_bytes) != 0) return -1;
    double per_example = (double)peak / examples;
    out->activations = qkv_tape_arena_footprint((size_t)(per_example * micro_batch)) + node_bytes;
    out->tapes = qkv_step_workers(local);
    out->packed = packed_weights(params);

    /* The trainer's own tape, which sequential evaluations use; rank 0 evaluates. */
    size_t chunk = qkv_tape_arena_footprint((size_t)(per_example * (task->eval_chunk ? task->eval_chunk
                                                                                      : task->batch > 0 ? task->batch : 1)));
    if (qkv_dist_rank() != 0) out->evaluation = QKV_TAPE_MIN_CHUNK;
    else if (task->eval_chunks > 0) /* qkv_parallel_chunks: a tape per worker, besides the trainer's */
        out->evaluation = QKV_TAPE_MIN_CHUNK + (size_t)(task->eval_chunks < threads ? task->eval_chunks : threads) * chunk;
    else out->evaluation = chunk;

    out->total = out->now + out->gradients + out->optimizer + (size_t)out->tapes * (out->activations + out->packed) +
                 out->evaluation;
    if (limit) {
        out->available = limit;
        out->limit = "--max-memory";
    } else {
        out->available = qkv_memory_available(&out->limit);
    }
    return 0;
}

int qkv_memory_check(const qkv_trainer_config *config, size_t max_memory, qkv_task *task, qkv_memory_estimate *out) {
    if (qkv_memory_estimate_run(config, max_memory, task, out) != 0) return -1;
    if (!out->available || out->total <= out->available) return 0; /* 0: the machine did not say */
    char total[32], now[32], grads[32], optim[32], act[32], packed[32], eval[32], available[32], limit[96];
    int by_flag = strcmp(out->limit, "--max-memory") == 0;
    snprintf(limit, sizeof limit, by_flag ? "--max-memory %s" : "%s; --max-memory to change",
             by_flag ? config->max_memory : out->limit);
    qkv_set_error("this run needs about %s (now %s: program, data, parameters; gradients %s for %d micro-batch%s; "
                  "optimizer %s; activations %s per micro-batch and packed weights %s x %d tape%s; evaluation %s), "
                  "more than the %s "
                  "available (%s)",
                  qkv_memory_size_text(out->total, total, sizeof total), qkv_memory_size_text(out->now, now, sizeof now),
                  qkv_memory_size_text(out->gradients, grads, sizeof grads), out->micro_batches,
                  out->micro_batches == 1 ? "" : "es", qkv_memory_size_text(out->optimizer, optim, sizeof optim),
                  qkv_memory_size_text(out->activations, act, sizeof act),
                  qkv_memory_size_text(out->packed, packed, sizeof packed), out->tapes, out->tapes == 1 ? "" : "s",
                  qkv_memory_size_text(out->evaluation, eval, sizeof eval),
                  qkv_memory_size_text(out->available, available, sizeof available), limit);
    return -1;
}

/* ---- the data set, before it is made ---------------------------------------------------- */

int qkv_memory_check_data(size_t max_memory, size_t data_bytes, const char *what) {
    size_t limit = max_memory;
    const char *source = "--max-memory";
    if (!limit) limit = qkv_memory_available(&source);
    size_t now = qkv_memory_resident(), total = now + data_bytes;
    if (!limit || total <= limit) return 0;   /* 0: the machine did not say */
    char data[32], in_use[32], available[32], where[96];
    snprintf(where, sizeof where, max_memory ? "--max-memory" : "%s; --max-memory to change", source);
    qkv_set_error("the data set (%s) needs about %s, with the %s in use more than the %s available (%s); nothing "
                  "was made", what, qkv_memory_size_text(data_bytes, data, sizeof data),
                  qkv_memory_size_text(now, in_use, sizeof in_use), qkv_memory_size_text(limit, available, sizeof available),
                  where);
    return -1;
}
