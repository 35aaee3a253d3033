/* step.c — the parallel step: micro-batches on worker threads, their gradients
 * added in the fixed tree, the ranks' nodes gathered. See step.h. */
#include "train/step.h"

#include "core/kernels/omp_shim.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/cancel.h"
#include "core/error.h"
#include "core/kernels/gemm.h"
#include "core/kernels/parallel.h"
#include "train/dist.h"
#include "train/interrupt.h"

#define DEFAULT_MICRO_BATCH 8
/* Each parameter's part of a buffer starts on a 64-byte line. */
#define PAD_FLOATS 16
/* Elements per piece of the tree's parallel passes (the last one a piece of a
 * parameter, written into its gradient). */
#define TREE_CHUNK 8192

/* A task that does not say its batch (0) is one micro-batch of one "example". */
static int batch_of(const qkv_task *task) { return task->batch > 0 ? task->batch : 1; }

int qkv_step_default_micro_batch(const qkv_task *task) {
    int preferred = task->micro_batch > 0 ? task->micro_batch : DEFAULT_MICRO_BATCH, batch = batch_of(task);
    int best = 1;
    for (int d = 1; d <= preferred && d <= batch; d++)
        if (batch % d == 0) best = d;
    return best;
}

/* Is [lo, hi) a node of the tree over [0, m)? */
static int is_tree_node(int lo, int hi, int m) {
    int a = 0, b = m;
    while (b - a > 1 && !(a == lo && b == hi)) {
        int mid = a + (b - a) / 2;
        if (hi <= mid) b = mid;
        else if (lo >= mid) a = mid;
        else return 0;
    }
    return a == lo && b == hi;
}

static int check_split(const qkv_task *task, int micro_batch, int *micro_batches) {
    if (batch_of(task) % micro_batch != 0) {
        qkv_set_error("--micro-batch %d does not divide the batch of %d (try %d)", micro_batch, batch_of(task),
                      qkv_step_default_micro_batch(task));
        return -1;
    }
    int m = batch_of(task) / micro_batch, ranks = qkv_dist_size();
    *micro_batches = m;
    for (int r = 0; r < ranks; r++)
        if (m % ranks != 0 || !is_tree_node(r * m / ranks, (r + 1) * m / ranks, m)) {
            qkv_set_error("--micro-batch %d makes %d micro-batches, which do not split over %d MPI ranks "
                          "(a power-of-two rank count that divides the micro-batch count does)",
                          micro_batch, m, ranks);
            return -1;
        }
    return 0;
}

int qkv_step_settle(const qkv_task *task, int micro_batch) {
    if (micro_batch == 0) micro_batch = qkv_step_default_micro_batch(task);
    if (micro_batch < 1) {
        qkv_set_error("--micro-batch %d: must be at least 1", micro_batch);
        return -1;
    }
    int m;
    return check_split(task, micro_batch, &m) == 0 ? micro_batch : -1;
}

/* The micro-batch count of a settled micro_batch (qkv_step_settle). */
static int micro_batches(const qkv_task *task, int micro_batch) {
    int m;
    QKV_CHECK(micro_batch >= 1 && check_split(task, micro_batch, &m) == 0,
              "step: micro-batch %d is not settled for a batch of %d (qkv_step_settle)", micro_batch, batch_of(task));
    return m;
}

static size_t padded(size_t floats) { return (floats + PAD_FLOATS - 1) / PAD_FLOATS * PAD_FLOATS; }

size_t qkv_step_buffer_floats(const qkv_params *params) {
    size_t stride = 0;
    for (int i = 0; i < params->n; i++) stride += padded(params->items[i]->size);
    return stride;
}

int qkv_step_local_micro_batches(const qkv_task *task, int micro_batch) {
    int m = micro_batches(task, micro_batch), rank = qkv_dist_rank(), ranks = qkv_dist_size();
    return (rank + 1) * m / ranks - rank * m / ranks;
}

int qkv_step_workers(int local) {
    int threads = qkv_threads();
    return threads < 2 || local < threads ? 1 : threads;
}

/* The parameters as a keep window's constant ranges: their packed panels serve
 * every product that reads them until the window ends. */
static qkv_param_ranges ranges_of(const qkv_params *params) {
    qkv_param_ranges r = {params ? params->n : 0, NULL, NULL};
    r.data = qkv_malloc((size_t)(r.n > 0 ? r.n : 1) * sizeof *r.data, "the parameters' ranges");
    r.size = qkv_malloc((size_t)(r.n > 0 ? r.n : 1) * sizeof *r.size, "the parameters' ranges");
    for (int i = 0; i < r.n; i++) r.data[i] = params->items[i]->data, r.size[i] = params->items[i]->size;
    return r;
}

static void keep_begin(const qkv_param_ranges *r) { qkv_gemm_keep_begin(r->n, r->data, r->size); }

static void ranges_free(qkv_param_ranges *r) {
    free(r->data);
    free(r->size);
}

int qkv_step_init(qkv_step *s, qkv_task *task, int micro_batch, int detect_nan) {
    memset(s, 0, sizeof *s);
    int m = micro_batches(task, micro_batch);
    int rank = qkv_dist_rank(), ranks = qkv_dist_size();
    *s = (qkv_step){.task = task, .micro_batch = micro_batch, .micro_batches = m, .first = rank * m / ranks,
                    .last = (rank + 1) * m / ranks, .detect_nan = detect_nan};
    const qkv_params *params = task->params;
    s->offset = qkv_malloc((size_t)(params->n + 1) * sizeof *s->offset, "the step's buffer layout");
    s->pieces = qkv_params_pieces(params, TREE_CHUNK, &s->n_pieces);
    s->weights = ranges_of(params);
    for (int i = 0; i < params->n; i++) /* the trainer's parameters always have one */
        QKV_CHECK(params->items[i]->grad, "step: parameter %s has no gradient buffer", params->items[i]->name);
    for (int i = 0; i < params->n; i++) {
        s->offset[i] = s->stride;
        s->stride += padded(params->items[i]->size);
    }
    int local = s->last - s->first;
    size_t bytes = qkv_size_mul(qkv_size_mul((size_t)local, s->stride), sizeof(float));
    s->grad_memory = qkv_malloc_aligned(bytes, "the micro-batches' gradient buffers");
    memset(s->grad_memory, 0, bytes); /* the padding between parameters stays 0 in the tree's sums */
    s->grad_of = qkv_malloc(qkv_size_mul((size_t)local * (size_t)(params->n + 1), sizeof *s->grad_of),
                            "the micro-batches' gradient buffers");
    for (int b = 0; b < local; b++)
        for (int i = 0; i < params->n; i++)
            s->grad_of[(size_t)b * (size_t)(params->n + 1) + (size_t)i] =
                s->grad_memory + (size_t)b * s->stride + s->offset[i];
    s->weight = qkv_calloc((size_t)m, sizeof *s->weight, "the micro-batches' weights");
    s->loss = qkv_calloc((size_t)m, sizeof *s->loss, "the micro-batches' losses");
    s->error = qkv_calloc(512, 1, "the step's error");
    if (ranks > 1)
        s->gathered = qkv_malloc_aligned(qkv_size_mul(qkv_size_mul((size_t)ranks, s->stride), sizeof(float)),
                                         "the ranks' gradient sums");
    return 0;
}

void qkv_step_free(qkv_step *s) {
    for (int i = 0; i < s->n_tapes; i++) qkv_tape_free(s->tapes[i]);
    free(s->tapes);
    free(s->offset);
    free(s->pieces);
    ranges_free(&s->weights);
    free(s->grad_memory);
    free(s->grad_of);
    free(s->weight);
    free(s->loss);
    free(s->error);
    free(s->gathered);
    memset(s, 0, sizeof *s);
}

static float *buffer(const qkv_step *s, int m) { return s->grad_memory + (size_t)(m - s->first) * s->stride; }

/* At least n worker tapes. */
static void ensure_tapes(qkv_step *s, int n) {
    if (n <= s->n_tapes) return;
    s->tapes = qkv_realloc(s->tapes, (size_t)n * sizeof *s->tapes, "the workers' tapes");
    for (int i = s->n_tapes; i < n; i++) {
        s->tapes[i] = qkv_tape_create(0);
        qkv_tape_set_detect_nan(s->tapes[i], s->detect_nan);
    }
    s->n_tapes = n;
}

/* ---- one micro-batch --------------------------------------------------------------------- */

typedef struct step_job {
    qkv_step *s;
    long step;
    qkv_rng start;           /* the dropout stream at the step's start */
    qkv_rng after;           /* where micro-batch `first` left it */
    double total_weight;
    int failed;              /* the first failed micro-batch, or micro_batches */
    int anomaly_at;          /* the first micro-batch with an anomaly, or micro_batches */
    char anomaly[320];
    int diverged;
    int interrupted;         /* a signal came (train/interrupt.h): micro-batches were skipped */
    int (*inspect)(void *ctx, qkv_tape *tape);
    void *inspect_ctx;
} step_job;

/* Under job's lock: remembers micro-batch m's failure if it is the first by index. */
static void note_failure(step_job *job, int m, const char *message, int diverged) {
    #pragma omp critical(qkv_step_note)
    if (m < job->failed) {
        job->failed = m;
        job->diverged = diverged;
        snprintf(job->s->error, 512, "%s", message);
    }
}

static void note_anomaly(step_job *job, int m, const char *anomaly) {
    #pragma omp critical(qkv_step_note)
    if (m < job->anomaly_at) {
        job->anomaly_at = m;
        snprintf(job->anomaly, sizeof job->anomaly, "%s", anomaly);
    }
}

/* Micro-batch m on tape: forward, backward seeded with w_m / W into m's buffer. */
static void run_micro_batch(step_job *job, qkv_tape *tape, int m) {
    qkv_step *s = job->s;
    qkv_task *task = s->task;
    if (qkv_interrupt_poll()) { /* the step will be dropped: skip the rest of its work */
        job->interrupted = 1;   /* every writer stores the same 1 */
        return;
    }
    tape->rng = job->start;
    qkv_tape_set_slice(tape, m, s->micro_batches);
    qkv_tape_redirect_grads(tape, task->params, s->grad_of + (size_t)(m - s->first) * (size_t)(task->params->n + 1));
    qkv_tensor *loss = task->loss(task->self, tape, job->step);
    if (qkv_cancelled()) { /* a signal during the forward: its ops were cut short, no backward */
        job->interrupted = 1;
        return;
    }
    if (!loss) {
        note_failure(job, m, qkv_last_error(), task->diverged);
    } else {
        const float seed = (float)(s->weight[m] / job->total_weight);
        qkv_backward_seeded(tape, loss, &seed);
        qkv_tape_zero_unwritten_grads(tape);
        s->loss[m] = loss->data[0];
        if (tape->anomaly[0]) note_anomaly(job, m, tape->anomaly);
        if (m == 0 && job->inspect && job->inspect(job->inspect_ctx, tape) != 0) note_failure(job, m, qkv_last_error(), 0);
    }
    if (m == s->first) job->after = tape->rng;
    double flops = qkv_tape_flops(tape); /* whole numbers: the sum is exact in any order */
    #pragma omp atomic
    s->flops += flops;
    if (tape->anomaly[0]) qkv_tape_set_detect_nan(tape, s->detect_nan); /* clears it for the next */
    qkv_tape_reset(tape);
}

/* This rank's micro-batches: in parallel, one per worker thread, when there are
 * at least as many as threads (two or more); else in turn on the calling thread,
 * the ops threaded inside (a large model's few micro-batches). */
static void run_micro_batches(step_job *job) {
    qkv_step *s = job->s;
    int workers = job->inspect ? 1 : qkv_step_workers(s->last - s->first);
    ensure_tapes(s, workers);
    if (workers == 1) {
        keep_begin(&s->weights);
        for (int m = s->first; m < s->last && !job->interrupted; m++) run_micro_batch(job, s->tapes[0], m);
        qkv_gemm_keep_end();
    } else {
        #pragma omp parallel num_threads(workers)
        { /* each worker keeps the weights it packs for its next micro-batches */
            keep_begin(&s->weights);
            #pragma omp for schedule(dynamic, 1)
            for (int m = s->first; m < s->last; m++) run_micro_batch(job, s->tapes[omp_get_thread_num()], m);
            qkv_gemm_keep_end();
        }
    }
}

/* ---- the fixed tree ------------------------------------------------------------------------- */

/* Adds the tree over [lo, hi) for elements [begin, end): the sum ends in node(lo),
 * or, with dest, its last addition writes dest[0 .. end - begin) instead (the same
 * additions, one pass fewer than summing in place and copying out).
 * node(m) is the buffer holding the leaf (or given node) starting at m. */
typedef float *(*node_buffer)(const void *ctx, int lo, int hi, int *is_leaf);

static float *tree_sum(node_buffer node, const void *ctx, int lo, int hi, size_t begin, size_t end,
                       float *dest) {
    int leaf;
    float *given = node(ctx, lo, hi, &leaf);
    if (leaf) {
        if (dest) memcpy(dest, given + begin, (end - begin) * sizeof(float));
        return given;
    }
    int mid = lo + (hi - lo) / 2;
    float *left = tree_sum(node, ctx, lo, mid, begin, end, NULL);
    const float *right = tree_sum(node, ctx, mid, hi, begin, end, NULL);
    if (dest)
        for (size_t i = begin; i < end; i++) dest[i - begin] = left[i] + right[i];
    else
        for (size_t i = begin; i < end; i++) left[i] += right[i];
    return left;
}

/* The leaves of this rank's tree: its micro-batches' buffers. */
static float *local_node(const void *ctx, int lo, int hi, int *is_leaf) {
    const qkv_step *s = ctx;
    *is_leaf = hi - lo == 1;
    return buffer(s, lo);
}

/* The tree above the ranks: rank r's node is its gathered sum. */
static float *rank_node(const void *ctx, int lo, int hi, int *is_leaf) {
    const qkv_step *s = ctx;
    int ranks = qkv_dist_size(), m = s->micro_batches;
    for (int r = 0; r < ranks; r++)
        if (lo == r * m / ranks && hi == (r + 1) * m / ranks) {
            *is_leaf = 1;
            return s->gathered + (size_t)r * s->stride;
        }
    *is_leaf = 0;
    for (int r = 0; r < ranks; r++)
        if (lo == r * m / ranks) return s->gathered + (size_t)r * s->stride;
    return NULL; /* not reached: qkv_step_init checked the ranks are nodes */
}

/* The tree over [lo, hi) in parallel pieces of elements, its sum left in node(lo)
 * (this rank's part, to be gathered). */
static void tree(node_buffer node, const qkv_step *s, int lo, int hi) {
    size_t n = s->stride, pieces = (n + TREE_CHUNK - 1) / TREE_CHUNK;
    #pragma omp parallel for if (QKV_PARALLEL(n * (size_t)(hi - lo))) schedule(static)
    for (size_t p = 0; p < pieces; p++) {
        size_t begin = p * TREE_CHUNK, end = begin + TREE_CHUNK < n ? begin + TREE_CHUNK : n;
        tree_sum(node, s, lo, hi, begin, end, NULL);
    }
}

/* The tree over [lo, hi), its sum written into every parameter's gradient: a
 * piece (params.h) at a time, each its parameter's part of the buffers. */
static void tree_into_grads(node_buffer node, const qkv_step *s, int lo, int hi) {
    const qkv_params *params = s->task->params;
    #pragma omp parallel for if (QKV_PARALLEL(s->stride * (size_t)(hi - lo))) schedule(static)
    for (int k = 0; k < s->n_pieces; k++) {
        const qkv_param_piece *q = &s->pieces[k];
        size_t at = s->offset[q->param];
        tree_sum(node, s, lo, hi, at + q->begin, at + q->end, params->items[q->param]->grad + q->begin);
    }
}

/* ---- evaluation in chunks ------------------------------------------------------------------- */

void qkv_parallel_chunks(int n, void (*fn)(void *ctx, qkv_tape *tape, int i), void *ctx,
                         const qkv_params *params) {
    int threads = qkv_threads(), workers = n < 2 ? 1 : threads < n ? threads : n;
    qkv_param_ranges weights = ranges_of(params);
    qkv_tape **tapes = qkv_malloc((size_t)workers * sizeof *tapes, "the evaluation's tapes");
    for (int w = 0; w < workers; w++) tapes[w] = qkv_tape_create_inference(0);
    if (workers == 1) {
        keep_begin(&weights);
        for (int i = 0; i < n && !qkv_interrupt_poll(); i++) {
            fn(ctx, tapes[0], i);
            qkv_tape_reset(tapes[0]);
        }
        qkv_gemm_keep_end();
    } else {
        #pragma omp parallel num_threads(workers)
        { /* the weights packed by a worker's first call serve its next ones */
            keep_begin(&weights);
            #pragma omp for schedule(dynamic, 1)
            for (int i = 0; i < n; i++) {
                if (qkv_interrupt_poll()) continue; /* the caller drops the evaluation */
                qkv_tape *tape = tapes[omp_get_thread_num()];
                fn(ctx, tape, i);
                qkv_tape_reset(tape);
            }
            qkv_gemm_keep_end();
        }
    }
    for (int w = 0; w < workers; w++) qkv_tape_free(tapes[w]);
    free(tapes);
    ranges_free(&weights);
}

/* ---- the step ---------------------------------------------------------------------------- */

int qkv_step_run(qkv_step *s, long step, qkv_rng *rng, qkv_step_result *result,
                 int (*inspect)(void *ctx, qkv_tape *tape), void *inspect_ctx) {
    qkv_task *task = s->task;
    memset(result, 0, sizeof *result);
    if (task->prepare) task->prepare(task->self, step);
    step_job job = {.s = s, .step = step, .start = *rng, .after = *rng, .failed = s->micro_batches,
                    .anomaly_at = s->micro_batches, .inspect = qkv_dist_rank() == 0 ? inspect : NULL,
                    .inspect_ctx = inspect_ctx};
    for (int m = 0; m < s->micro_batches; m++) {
        s->weight[m] = task->weight ? task->weight(task->self, m * s->micro_batch, s->micro_batch) : s->micro_batch;
        job.total_weight += s->weight[m];
        s->loss[m] = 0;
    }
    if (job.total_weight <= 0) job.total_weight = 1; /* every target ignored: a zero gradient */
    s->flops = 0;
    run_micro_batches(&job);
    if (qkv_interrupt_signal()) job.interrupted = 1; /* during a micro-batch: its ops were cut short (core/cancel.h) */
    int signal = qkv_dist_max(job.interrupted ? qkv_interrupt_signal() : 0); /* every rank drops the step alike */
    if (signal) {
        qkv_set_error("the step was interrupted");
        result->interrupted = signal;
        return -1;
    }
    if (job.failed < s->micro_batches) {
        qkv_set_error("%s", s->error);
        result->diverged = job.diverged;
        return -1;
    }
    snprintf(result->anomaly, sizeof result->anomaly, "%s", job.anomaly);
    if (qkv_dist_size() > 1) {
        tree(local_node, s, s->first, s->last);
        qkv_dist_allgather(buffer(s, s->first), s->stride, s->gathered, step);
        qkv_dist_sum_doubles(s->loss, s->micro_batches);
        tree_into_grads(rank_node, s, 0, s->micro_batches);
    } else {
        tree_into_grads(local_node, s, s->first, s->last);
    }
    double loss = 0;
    for (int m = 0; m < s->micro_batches; m++) loss += s->weight[m] / job.total_weight * s->loss[m];
    result->loss = (float)loss;
    *rng = job.after;
    return 0;
}
