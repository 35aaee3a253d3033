/* tape.c — arena, node list, backward walk and printing. See tape.h. */
#include "core/ops/tape.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"

void qkv__check_shape(const char *where, int ndim, const int *shape);

/* The arena is a list of chunks. Reset rewinds to the first chunk; if the step
 * needed more than one chunk, the chunks are merged into one big enough for the
 * peak, so the steady state is a single chunk and no malloc at all. */
struct qkv_arena_chunk {
    qkv_arena_chunk *next;
    size_t size, used;
    unsigned char *memory;
};

#define ARENA_MIN_CHUNK QKV_TAPE_MIN_CHUNK
#define ARENA_ALIGN 64

/* The budget (qkv_tape_set_arena_budget): every tape's chunks, in bytes, counted
 * when a chunk is made or freed (never per allocation), and the most they may
 * hold (0: no limit). Tapes of worker threads make chunks at once: atomics. */
static size_t arena_chunk_bytes;
static size_t arena_budget;

size_t qkv_tape_set_arena_budget(size_t bytes) {
    return __atomic_exchange_n(&arena_budget, bytes, __ATOMIC_RELAXED);
}

size_t qkv_tape_arena_chunk_bytes(void) { return __atomic_load_n(&arena_chunk_bytes, __ATOMIC_RELAXED); }

/* The largest chunk the budget lets a tape make now: want, cut down to what is
 * left (never below need, the bytes the allocation asking for it needs). need
 * beyond what is left stops the program: the estimate before training
 * (train/memory.h) did not foresee it, and asking the system anyway is what the
 * budget is there to prevent. */
static size_t chunk_size_within_budget(size_t want, size_t need) {
    size_t budget = __atomic_load_n(&arena_budget, __ATOMIC_RELAXED);
    if (!budget) return want;
    size_t used = qkv_tape_arena_chunk_bytes(), left = used < budget ? budget - used : 0;
    if (need > left)
        qkv_fatal_exit(2, "the memory budget is exhausted: a tape arena needs %zu bytes more, and only %zu of the "
                       "%zu bytes the budget leaves to tape arenas are free (the estimate made before training was "
                       "too low; --max-memory raises the budget)", need, left, budget);
    return want < left ? want : left;
}

static qkv_arena_chunk *chunk_new(size_t size) {
    qkv_arena_chunk *c = qkv_calloc(1, sizeof *c, "a tape arena chunk");
    c->memory = qkv_malloc_aligned(size, "a tape arena chunk"); /* ARENA_ALIGN == its 64 */
    c->size = size;
    __atomic_add_fetch(&arena_chunk_bytes, size, __ATOMIC_RELAXED);
    return c;
}

static void chunks_free(qkv_arena_chunk *c) {
    while (c) {
        qkv_arena_chunk *next = c->next;
        __atomic_sub_fetch(&arena_chunk_bytes, c->size, __ATOMIC_RELAXED);
        free(c->memory);
        free(c);
        c = next;
    }
}

size_t qkv_tape_arena_footprint(size_t peak) {
    size_t merged = peak + peak / 4;   /* room to spare, so a slightly larger step needs no new chunk */
    return merged > ARENA_MIN_CHUNK ? merged : ARENA_MIN_CHUNK;
}

qkv_tape *qkv_tape_create(unsigned long long seed) {
    qkv_tape *tape = qkv_calloc(1, sizeof *tape, "a tape");
    tape->chunks = chunk_new(chunk_size_within_budget(ARENA_MIN_CHUNK, ARENA_MIN_CHUNK));
    tape->grad_enabled = 1;
    tape->training = 1;
    tape->rng = qkv_rng_make(seed);
    tape->slice_count = 1;
    tape->generation = 1;
    return tape;
}

void qkv_tape_set_slice(qkv_tape *tape, int index, int count) {
    QKV_CHECK(count >= 1 && index >= 0 && index < count, "tape_set_slice: slice %d of %d", index, count);
    tape->slice_index = index;
    tape->slice_count = count;
}

void qkv_tape_batch_slice(const qkv_tape *tape, int batch, int *first, int *count) {
    QKV_CHECK(batch >= 1 && batch % tape->slice_count == 0, "tape_batch_slice: batch %d over %d slices", batch,
              tape->slice_count);
    *count = batch / tape->slice_count;
    *first = tape->slice_index * *count;
}

qkv_tape *qkv_tape_create_inference(unsigned long long seed) {
    qkv_tape *tape = qkv_tape_create(seed);
    qkv_tape_set_grad(tape, 0);
    qkv_tape_set_training(tape, 0);
    return tape;
}

void qkv_tape_free(qkv_tape *tape) {
    if (!tape) return;
    free(tape->shadows);
    free(tape->redirect_table);
    chunks_free(tape->chunks);
    free(tape->nodes);
    free(tape);
}

void qkv_tape_reset(qkv_tape *tape) {
    if (tape->chunks->next) {
        chunks_free(tape->chunks);
        size_t merged = chunk_size_within_budget(qkv_tape_arena_footprint(tape->arena_peak), ARENA_MIN_CHUNK);
        tape->chunks = chunk_new(merged);
    }
    tape->chunks->used = 0;
    tape->arena_used = 0;
    tape->n_nodes = 0;
    tape->backward_passes = 0;
    tape->generation++;
}

double qkv_tape_flops(const qkv_tape *tape) {
    double total = 0;
    for (int i = 0; i < tape->n_nodes; i++) total += tape->nodes[i].flops;
    return total;
}

int qkv_tape_n_chunks(const qkv_tape *tape) {
    int n = 0;
    for (const qkv_arena_chunk *c = tape->chunks; c; c = c->next) n++;
    return n;
}

int qkv_tape_set_grad(qkv_tape *tape, int enabled) {
    int previous = tape->grad_enabled;
    tape->grad_enabled = enabled;
    return previous;
}

int qkv_tape_set_training(qkv_tape *tape, int training) {
    int previous = tape->training;
    tape->training = training;
    return previous;
}

int qkv_tape_set_detect_nan(qkv_tape *tape, int enabled) {
    int previous = tape->detect_nan;
    tape->detect_nan = enabled;
    tape->anomaly[0] = '\0';
    return previous;
}

/* ---- gradient redirection ------------------------------------------------------------ */

static size_t address_hash(const qkv_tensor *t, int cap) {
    uint64_t h = (uint64_t)(uintptr_t)t * 0x9e3779b97f4a7c15ull; /* Fibonacci hashing */
    return (size_t)(h >> 32) & (size_t)(cap - 1);
}

/* (Re)builds the copies and the table for a new parameter list. */
static void redirect_build(qkv_tape *tape, const qkv_params *params) {
    free(tape->shadows);
    free(tape->redirect_table);
    int cap = 16;
    while (cap < 2 * params->n) cap *= 2;
    tape->shadows = qkv_calloc((size_t)(params->n > 0 ? params->n : 1), sizeof *tape->shadows, "a tape's parameter copies");
    tape->redirect_table = qkv_calloc((size_t)cap, sizeof *tape->redirect_table, "a tape's parameter table");
    tape->redirect_cap = cap;
    for (int i = 0; i < params->n; i++) {
        size_t slot = address_hash(params->items[i], cap);
        while (tape->redirect_table[slot]) slot = (slot + 1) & (size_t)(cap - 1);
        tape->redirect_table[slot] = i + 1;
    }
}

void qkv_tape_redirect_grads(qkv_tape *tape, const qkv_params *params, float *const *grads) {
    if (params && params != tape->redirect_params) redirect_build(tape, params);
    tape->redirect_params = params;
    for (int i = 0; params && i < params->n; i++) {
        tape->shadows[i] = *params->items[i];
        tape->shadows[i].grad = NULL;   /* the first write assigns (tensor.h: grad_home) */
        tape->shadows[i].grad_home = grads[i];
    }
}

void qkv_tape_zero_unwritten_grads(qkv_tape *tape) {
    for (int i = 0; tape->redirect_params && i < tape->redirect_params->n; i++) {
        qkv_tensor *copy = &tape->shadows[i];
        if (!copy->grad) memset(copy->grad_home, 0, copy->size * sizeof(float));
    }
}

/* The tensor a node records for input t: its copy when t is a redirected parameter. */
static qkv_tensor *redirected(const qkv_tape *tape, qkv_tensor *t) {
    if (!tape->redirect_params || !t || !t->owned) return t;
    size_t mask = (size_t)(tape->redirect_cap - 1);
    for (size_t slot = address_hash(t, tape->redirect_cap); tape->redirect_table[slot]; slot = (slot + 1) & mask) {
        int i = tape->redirect_table[slot] - 1;
        if (tape->redirect_params->items[i] == t) return &tape->shadows[i];
    }
    return t;
}

/* ---- anomaly mode ------------------------------------------------------------------ */

/* Index of the first NaN or Inf in x[0..n), or n. */
static size_t first_non_finite(const float *x, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (!isfinite(x[i])) return i;
    return n;
}

/* If values (what, of tensor t) hold a NaN/Inf, describes it with the op and its
 * input shapes in tape->anomaly. */
static void check_finite(qkv_tape *tape, const char *pass, const char *op, int n_inputs,
                         qkv_tensor *const *inputs, const char *what, const qkv_tensor *t, const float *values) {
    size_t i = first_non_finite(values, t->size);
    if (i == t->size) return;
    char list[192] = "", shape[QKV_SHAPE_STR_LEN];
    for (int j = 0; j < n_inputs; j++) {
        size_t used = strlen(list);
        snprintf(list + used, sizeof list - used, "%s%s", j ? ", " : "",
                 inputs[j] ? qkv_shape_str(inputs[j], shape, sizeof shape) : "-");
    }
    snprintf(tape->anomaly, sizeof tape->anomaly, "%s of %s (inputs %s): %s %s has %s at element %zu", pass, op,
             list, what, qkv_shape_str(t, shape, sizeof shape), isnan(values[i]) ? "NaN" : "Inf", i);
}

/* After node's backward: the gradient of each input that has one. */
static void check_backward(qkv_tape *tape, const qkv_node *node) {
    for (int j = 0; j < node->n_inputs && !tape->anomaly[0]; j++) {
        const qkv_tensor *x = node->inputs[j];
        if (!x || !x->requires_grad || !x->grad) continue;
        char what[48];
        snprintf(what, sizeof what, "the gradient of input %d", j);
        check_finite(tape, "backward", node->op, node->n_inputs, node->inputs, what, x, x->grad);
    }
}

void *qkv_tape_alloc(qkv_tape *tape, size_t bytes) {
    size_t rounded = (bytes + ARENA_ALIGN - 1) & ~(size_t)(ARENA_ALIGN - 1);
    qkv_arena_chunk *c = tape->chunks;
    if (c->used + rounded > c->size) {
        size_t size = chunk_size_within_budget(c->size * 2 > rounded ? c->size * 2 : rounded, rounded);
        qkv_arena_chunk *fresh = chunk_new(size);
        fresh->next = c;
        tape->chunks = c = fresh;
    }
    void *p = c->memory + c->used;
    c->used += rounded;
    tape->arena_used += rounded;
    if (tape->arena_used > tape->arena_peak) tape->arena_peak = tape->arena_used;
    return p;
}

void *qkv_tape_calloc(qkv_tape *tape, size_t bytes) {
    void *p = qkv_tape_alloc(tape, bytes);
    memset(p, 0, bytes);
    return p;
}

qkv_tensor *qkv_tape_view(qkv_tape *tape, int ndim, const int *shape, float *data) {
    qkv__check_shape("tape_tensor", ndim, shape);
    qkv_tensor *t = qkv_tape_calloc(tape, sizeof *t);
    t->ndim = ndim;
    if (ndim > 0) memcpy(t->shape, shape, (size_t)ndim * sizeof(int)); /* a scalar may pass shape NULL */
    t->size = qkv_shape_size(ndim, shape);
    t->data = data;
    t->tape = tape;
    t->generation = tape->generation;
    return t;
}

qkv_tensor *qkv_tape_tensor(qkv_tape *tape, int ndim, const int *shape) {
    qkv_tensor *t = qkv_tape_view(tape, ndim, shape, NULL);
    t->data = qkv_tape_alloc(tape, t->size * sizeof(float));
    return t;
}

qkv_tensor *qkv_tape_zeros(qkv_tape *tape, int ndim, const int *shape) {
    qkv_tensor *t = qkv_tape_tensor(tape, ndim, shape);
    memset(t->data, 0, t->size * sizeof(float));
    return t;
}

qkv_node *qkv_tape_record(qkv_tape *tape, const char *op, qkv_tensor *out,
                          qkv_backward_fn backward, int n_inputs, qkv_tensor *const *inputs) {
    int any = 0;
    for (int i = 0; i < n_inputs; i++) {
        if (!inputs[i]) continue; /* optional inputs (a NULL bias) */
        qkv_tensor_check_live(inputs[i], op);
        any |= inputs[i]->requires_grad;
    }
    if (tape->detect_nan && !tape->anomaly[0])
        check_finite(tape, "forward", op, n_inputs, inputs, "output", out, out->data);
    if (!tape->grad_enabled || !any) return NULL;
    if (tape->n_nodes == tape->cap_nodes) {
        int cap = tape->cap_nodes ? tape->cap_nodes * 2 : 256;
        tape->nodes = qkv_realloc(tape->nodes, (size_t)cap * sizeof *tape->nodes, "the tape's nodes");
        tape->cap_nodes = cap;
    }
    qkv_node *node = &tape->nodes[tape->n_nodes++];
    memset(node, 0, sizeof *node);
    node->op = op;
    node->n_inputs = n_inputs;
    node->inputs = qkv_tape_alloc(tape, (size_t)n_inputs * sizeof(qkv_tensor *));
    for (int i = 0; i < n_inputs; i++) node->inputs[i] = redirected(tape, inputs[i]);
    node->out = out;
    node->backward = backward;
    out->requires_grad = 1;
    return node;
}

void qkv_backward_seeded(qkv_tape *tape, qkv_tensor *out, const float *seed_grad) {
    qkv_tensor_check_live(out, "backward");
    QKV_CHECK(out->requires_grad, "backward: output does not depend on any tensor that requires a gradient");
    /* Activation gradients left by an earlier pass on this tape start again at 0
     * (before the first pass, any that exist were made zero by qkv_tensor_grad). */
    for (int i = 0; tape->backward_passes > 0 && i < tape->n_nodes; i++) {
        qkv_tensor *t = tape->nodes[i].out;
        if (t->grad && !t->owned) memset(t->grad, 0, t->size * sizeof(float));
    }
    tape->backward_passes++;
    float *g = qkv_tensor_grad(out);
    for (size_t i = 0; i < out->size; i++) g[i] += seed_grad[i];
    /* Walk back from the node that produced out; later nodes cannot affect it. */
    int last = tape->n_nodes - 1;
    while (last >= 0 && tape->nodes[last].out != out) last--;
    QKV_CHECK(last >= 0 || out->owned, "backward: output was not produced on this tape");
    for (int i = last; i >= 0; i--) {
        qkv_node *node = &tape->nodes[i];
        if (!node->out->grad) continue; /* no gradient reached it: skip */
        node->backward(node);
        if (tape->detect_nan && !tape->anomaly[0]) check_backward(tape, node);
    }
}

void qkv_backward(qkv_tape *tape, qkv_tensor *loss) {
    char shape[QKV_SHAPE_STR_LEN];
    QKV_CHECK(loss->size == 1, "backward: loss must be a scalar, got %s",
              qkv_shape_str(loss, shape, sizeof shape));
    const float one = 1.0f;
    qkv_backward_seeded(tape, loss, &one);
}

/* ---- an activation's liveness and gradient ----------------------------------------
 * Tensor functions that read the tape (its generation) or allocate from its arena:
 * they live here, so tensor.c knows nothing of tapes (tape.c -> tensor.c, one way). */

void qkv_tensor_check_live(const qkv_tensor *t, const char *op) {
    QKV_CHECK(t != NULL, "%s: input tensor is NULL", op);
    if (t->owned) return;
    QKV_CHECK(t->tape && t->generation == t->tape->generation,
              "%s: activation %s used after its tape was reset", op, t->name ? t->name : "");
}

float *qkv_tensor_grad(qkv_tensor *t) {
    if (!t->grad && t->grad_of) t->grad = qkv_tensor_grad(t->grad_of); /* a view: one buffer */
    if (!t->grad && t->grad_home) { /* a redirected parameter's first write: from zero */
        t->grad = t->grad_home;
        memset(t->grad, 0, t->size * sizeof(float));
    }
    if (!t->grad) {
        QKV_CHECK(!t->owned, "tensor_grad: owned tensor %s has no gradient (requires_grad 0)",
                  t->name ? t->name : "");
        t->grad = qkv_tape_calloc(t->tape, t->size * sizeof(float));
    }
    return t->grad;
}

float *qkv_tensor_grad_to_write(qkv_tensor *t, float *beta) {
    if (!t->grad && t->grad_of) return t->grad = qkv_tensor_grad_to_write(t->grad_of, beta);
    *beta = t->grad ? 1.0f : 0.0f;
    if (!t->grad && t->grad_home) t->grad = t->grad_home;
    if (!t->grad) {
        QKV_CHECK(!t->owned, "tensor_grad: owned tensor %s has no gradient (requires_grad 0)",
                  t->name ? t->name : "");
        t->grad = qkv_tape_alloc(t->tape, t->size * sizeof(float));
    }
    return t->grad;
}
