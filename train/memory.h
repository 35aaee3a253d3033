/* memory.h — the memory budget of a training run: what it will need, judged
 * before it is taken, against what the machine has.
 *
 * The estimate of a run's peak, on this rank (docs/reliability.md):
 *
 *   now          the process when estimated (resident pages, /proc/self/statm):
 *                the program, the data set, the parameters;
 *   gradients    the parameters' own gradient buffers, plus one buffer per
 *                local micro-batch (train/step.h; M x the padded parameter
 *                count), plus, under MPI, the ranks' gathered sums;
 *   optimizer    its state buffers (qkv_optimizer_slot_count) x parameters;
 *   activations  one micro-batch's tape arena, MEASURED: one forward and
 *                backward of micro-batch 0 of step 0 on a scratch tape (at the
 *                run's micro-batch size, or at its largest divisor <= 32 scaled
 *                linearly when larger), its arena peak as the tape then keeps it
 *                (qkv_tape_arena_footprint), times the worker tapes of a step;
 *   evaluation   rank 0: the evaluation chunk's arena, bounded by the measured
 *                bytes per training example (a forward and backward keep more
 *                than a forward alone) times the task's eval_chunk examples,
 *                times the chunks run at once (task.h).
 *
 * The measurement is deterministic and changes no result: the task's prepare()
 * and loss() are pure functions of the step, the scratch tape draws dropout
 * from its own stream, and the gradients go to a scratch buffer (tape.h's
 * redirection), never the parameters'. It costs one micro-batch's forward and
 * backward (about 1/M of one step) and one parameter-sized buffer for a moment.
 *
 * The memory available: --max-memory when given; else the smaller of physical
 * memory (MemTotal) and the cgroup's limit (v2 memory.max, v1
 * memory.limit_in_bytes, of this process's cgroup and its parents). A run whose
 * estimate is larger is refused before anything is allocated for it. Once
 * accepted, the tape arenas grow within what the rest leaves them
 * (qkv_tape_set_arena_budget, tape.h): past it, the program stops instead of
 * asking the system.
 */
#ifndef QKV_MEMORY_H
#define QKV_MEMORY_H

#include <stddef.h>

#include "train/task.h"
#include "train/trainer_config.h"

typedef struct qkv_memory_estimate {
    size_t now;              /* resident when estimated: program, data, parameters */
    size_t gradients;        /* the parameters' and the local micro-batches' buffers */
    int micro_batches;       /* local micro-batches (buffers) */
    size_t optimizer;
    size_t activations;      /* one worker tape, for one micro-batch */
    size_t packed;           /* the weights one worker keeps packed (core/kernels/gemm.h) */
    int tapes;               /* worker tapes of a step */
    size_t evaluation;       /* the evaluation's tapes together (0 on ranks other than 0) */
    size_t total;
    size_t available;        /* the limit the total is judged against */
    const char *limit;       /* where it comes from: "--max-memory", "the cgroup's limit", "physical memory" */
} qkv_memory_estimate;

/* "2G", "512M", "64k", "1048576": a size in bytes, with an optional K, M, G or T
 * (powers of 1024, either case), digits only otherwise; "0" is 0 (auto). 0, or
 * -1 with qkv_last_error() naming --max-memory and the text. */
int qkv_memory_parse_size(const char *text, size_t *bytes);

/* The memory this process may use, from the one source the build chooses:
 * natively the smaller of MemTotal and the cgroup limits found (0 if neither
 * can be read); in WebAssembly (__EMSCRIPTEN__) the heap's maximum
 * (emscripten_get_heap_max). *source says which. QKV_TEST_MEMORY=SIZE stands in
 * for the machine's (the tests of a too-small machine). */
size_t qkv_memory_available(const char **source);
/* The process's resident bytes now (/proc/self/statm); 0 if unknown. */
size_t qkv_memory_resident(void);
/* What the machine can still give without swapping (MemAvailable); 0 if unknown. */
size_t qkv_memory_unused(void);

/* The estimate of a run of task with config (its settled micro_batch,
 * train/step.h, and its optimizer), measured as above (once per task: a second
 * call reuses the measurement), judged against limit (--max-memory parsed, in
 * bytes) or, 0, qkv_memory_available. 0, or -1 with qkv_last_error() (a signal
 * during the measurement: qkv_interrupt_signal() then says which). */
int qkv_memory_estimate_run(const qkv_trainer_config *config, size_t limit, qkv_task *task, qkv_memory_estimate *out);

/* Sets the error of a run stopped by `signal` during the measurement (one line:
 * "stopped by SIGINT while measuring the run's memory, before its first step;
 * nothing was saved"); returns -1. */
int qkv_memory_stopped(int signal);

/* The estimate judged: 0 when it fits (*out filled); else -1 with one line in
 * qkv_last_error(): "this run needs about 21.9 GiB (now 0.1 GiB; gradients
 * 20.1 GiB for 25000 micro-batches; ...), more than the 23.5 GiB available
 * (physical memory; --max-memory to change)". */
int qkv_memory_check(const qkv_trainer_config *config, size_t limit, qkv_task *task, qkv_memory_estimate *out);

/* The data set a run is about to make or read, judged before it is (the task
 * kind's estimate, train/tasks/registry.h): 0 when the memory in use now
 * (resident) plus data_bytes fits the memory available (max_memory: --max-memory
 * in bytes, as the session parsed it, or 0 for the machine's); else -1 with one
 * line naming the estimate: "the data set (2000 test clouds of 100000 points)
 * needs about 2.2 GiB, with the 12.0 MiB in use more than the 1.0 GiB available
 * (--max-memory); nothing was made". what says what the set is. */
int qkv_memory_check_data(size_t max_memory, size_t data_bytes, const char *what);

/* Formats bytes as "1.5 GiB", "12.0 MiB", "640 KiB" into out. */
const char *qkv_memory_size_text(size_t bytes, char *out, size_t len);

#endif
