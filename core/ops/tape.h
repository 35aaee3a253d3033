/* tape.h — the reverse-mode tape: an arena plus a list of nodes.
 *
 * Every op that runs while the tape records, with at least one input that requires
 * a gradient, appends a node: the op's name, its inputs, its output, what it saved
 * for backward, and its backward function. qkv_backward(tape, loss) seeds
 * dloss = 1 and walks the nodes in reverse; each backward function ADDS (+=) into
 * the gradients of those inputs that require one. Parameter gradients therefore
 * accumulate across calls until qkv_tensor_zero_grad().
 *
 * qkv_tape_reset() frees every activation at once (the arena is rewound, not
 * returned to malloc) and clears the node list; one reset per training step.
 * In no-grad mode (qkv_tape_set_grad(tape, 0)) nothing is recorded.
 *
 * The tape also carries the training flag (dropout is active only when training)
 * and the RNG stream dropout draws from.
 *
 * Data parallelism: a tape may compute one of `count` equal slices of every batch
 * (train/dist.h sets it). Slice `index` holds examples [index*B/count,
 * (index+1)*B/count) of a batch of B; dropout then draws element i of a batch-major
 * tensor from the position the whole batch would give it (index * size + i) and
 * advances the stream by the whole batch's size, so the slices together draw exactly
 * the masks of one process running the whole batch. Default: slice 0 of 1.
 * Gradient redirection (the parallel step, train/step.h, where several tapes
 * compute parts of one step at once): after qkv_tape_redirect_grads(tape, params,
 * grads), a node recorded on this tape that reads params->items[i] holds, in its
 * inputs, a copy of that tensor's header with the same data and grads[i] as its
 * gradient buffer; backward adds there and never touches the parameter's own
 * gradient, which another tape may be writing. The first backward write into
 * grads[i] assigns (no memset of a buffer about to be overwritten), so after the
 * backward, qkv_tape_zero_unwritten_grads zeroes those no node wrote. The copies
 * live as long as the tape; a later call re-points them (the same params: no
 * allocation) and starts their buffers over.
 * Anomaly mode (qkv_tape_set_detect_nan, off by default; off costs one branch per
 * op): every op's output is checked for NaN/Inf when the op records (forward,
 * with or without gradients), and every input gradient after each backward
 * function. The first non-finite value is described in tape->anomaly ("forward
 * of mul (inputs [4,8], [4,8]): output [4,8] has NaN at element 3"), and later
 * checks are skipped; the computation itself goes on, so the caller (the
 * trainer) decides what to do: it stops before the optimizer step. The message
 * survives qkv_tape_reset; qkv_tape_set_detect_nan clears it.
 */
#ifndef QKV_TAPE_H
#define QKV_TAPE_H

#include "core/ops/params.h"
#include "core/rng.h"
#include "core/ops/tensor.h"

typedef struct qkv_node qkv_node;
typedef void (*qkv_backward_fn)(qkv_node *node);

struct qkv_node {
    const char *op;         /* static string, e.g. "matmul" */
    qkv_tensor **inputs;    /* arena array of n_inputs */
    int n_inputs;
    qkv_tensor *out;
    qkv_backward_fn backward;
    void *saved;            /* op-specific, arena-allocated */
    /* What each input is, for the printed tape and its graph (static strings, e.g.
     * attention's {"q", "k", "v", "bias"}); NULL when the position says enough. */
    const char *const *input_names;
    const char *note;       /* static, printed after the output: e.g. attention's "causal" */
    int iarg[8];            /* small op arguments (axis, flags, ...) */
    float farg[4];
    /* The products' floating-point operations, forward and backward, counted from
     * the shapes (matmul, affine, attention; 0 for other ops): the FLOP floor's
     * numerator (qkv_tape_flops, `qkv bench train`). */
    double flops;
};

typedef struct qkv_arena_chunk qkv_arena_chunk;

typedef struct qkv_tape {
    qkv_arena_chunk *chunks;     /* singly linked; the first is the one in use */
    size_t arena_used;           /* bytes handed out since the last reset */
    size_t arena_peak;
    qkv_node *nodes;
    int n_nodes, cap_nodes;
    int grad_enabled;            /* 1: record nodes */
    int training;                /* 1: dropout active */
    qkv_rng rng;                 /* dropout stream */
    int slice_index, slice_count; /* this tape's slice of each batch: 0 of 1 */
    unsigned long generation;    /* incremented by each reset */
    int backward_passes;         /* backward calls since the last reset */
    int detect_nan;              /* anomaly mode */
    char anomaly[320];           /* the first NaN/Inf found; "" if none */
    /* gradient redirection (qkv_tape_redirect_grads): NULL params when off */
    const qkv_params *redirect_params;
    qkv_tensor *shadows;         /* one header per parameter, in list order */
    int *redirect_table;         /* open addressing on the tensor's address: index + 1, or 0 */
    int redirect_cap;            /* the table's size, a power of two >= 2 n */
} qkv_tape;

qkv_tape *qkv_tape_create(unsigned long long seed);
/* A tape for evaluation and generation: gradients off, training mode off. */
qkv_tape *qkv_tape_create_inference(unsigned long long seed);
void qkv_tape_free(qkv_tape *tape);
void qkv_tape_reset(qkv_tape *tape);

/* Returns the previous value. */
int qkv_tape_set_grad(qkv_tape *tape, int enabled);
int qkv_tape_set_training(qkv_tape *tape, int training);
/* Anomaly mode on or off; clears tape->anomaly. Returns the previous value. */
int qkv_tape_set_detect_nan(qkv_tape *tape, int enabled);

/* Which of count equal slices of each batch this tape computes (0 <= index < count). */
void qkv_tape_set_slice(qkv_tape *tape, int index, int count);
/* The examples of a batch of `batch` this tape computes: [*first, *first + *count).
 * batch must divide by the slice count (train/dist.c checks it as a flag error). */
void qkv_tape_batch_slice(const qkv_tape *tape, int batch, int *first, int *count);

/* From now on, gradients of params->items[i] reached through this tape go to
 * grads[i] (items[i]->size floats each; see above). params NULL: off. */
void qkv_tape_redirect_grads(qkv_tape *tape, const qkv_params *params, float *const *grads);
/* After a backward on a redirecting tape: the parameters' buffers that no node
 * wrote are set to 0 (the others hold their gradient). */
void qkv_tape_zero_unwritten_grads(qkv_tape *tape);

/* Arena allocation, 64-byte aligned, uninitialized (qkv_tape_calloc zeroes). */
void *qkv_tape_alloc(qkv_tape *tape, size_t bytes);
void *qkv_tape_calloc(qkv_tape *tape, size_t bytes);

/* An activation of the given shape from the arena; data uninitialized. */
qkv_tensor *qkv_tape_tensor(qkv_tape *tape, int ndim, const int *shape);
/* Same, zero-filled. */
qkv_tensor *qkv_tape_zeros(qkv_tape *tape, int ndim, const int *shape);
/* An activation header over existing data (which must outlive the tape's step):
 * reshape's output shares its input's data this way. */
qkv_tensor *qkv_tape_view(qkv_tape *tape, int ndim, const int *shape, float *data);

/* For op implementations: checks that each input is live, then, if the tape is
 * recording and some input requires a gradient, appends a node, marks out as
 * requiring a gradient and returns the node (to fill saved/iarg/farg).
 * Otherwise returns NULL. */
qkv_node *qkv_tape_record(qkv_tape *tape, const char *op, qkv_tensor *out,
                          qkv_backward_fn backward, int n_inputs, qkv_tensor *const *inputs);

/* Backward from a scalar (size-1) loss: seeds dloss = 1. Each call starts from
 * zero activation gradients, so calling it again on the same tape (a second loss,
 * or the same loss twice) adds exactly that pass's gradient to the parameters. */
void qkv_backward(qkv_tape *tape, qkv_tensor *loss);
/* Backward from any output with a given seed gradient (out->size floats). */
void qkv_backward_seeded(qkv_tape *tape, qkv_tensor *out, const float *seed_grad);

/* The sum of the recorded nodes' flops: a step's products, forward and backward. */
double qkv_tape_flops(const qkv_tape *tape);

/* The memory budget of the tape arenas (train/memory.h sets it for a run):
 * every tape's chunks together may hold at most `bytes` (0: no limit). A chunk
 * that would pass it is made smaller when the allocation asking for it fits in
 * what is left; otherwise the program stops (qkv_fatal_exit, status 1) with a
 * line naming the bytes asked and left: the arenas then outgrew the estimate
 * made before training, and asking the system anyway risks the OOM killer.
 * Process-wide; returns the previous budget. */
#define QKV_TAPE_MIN_CHUNK ((size_t)1 << 22)
size_t qkv_tape_set_arena_budget(size_t bytes);
/* The bytes all tapes' arena chunks hold now. */
size_t qkv_tape_arena_chunk_bytes(void);
/* The chunk bytes a tape whose arena peaked at `peak` holds after its reset: one
 * chunk of the peak and a quarter (at least QKV_TAPE_MIN_CHUNK, the first chunk). */
size_t qkv_tape_arena_footprint(size_t peak);

/* Arena chunks in use: 1 in the steady state (for tests and stats). */
int qkv_tape_n_chunks(const qkv_tape *tape);

/* One line per node (core/ops/tape_show.c): index, op, inputs, output shape. An
 * input made by an earlier node is that node's number (#3), a parameter its name,
 * any other tensor its name or "input"; each with its shape, and prefixed by its
 * role where the op names its inputs (q=#7[...]; an absent optional one: bias=none):
 *     #9   attention      q=#7[2,8,4,16], k=#5[2,8,4,16], v=#8[2,8,4,16], bias=none, key_padding=none,
 *                         keep=none -> [2,8,4,16] causal
 * (one line; an op's note, e.g. attention's "causal", comes after the output). */
void qkv_tape_print(const qkv_tape *tape, FILE *out);

/* The tape as a Graphviz digraph (core/ops/tape_show.c), written atomically: one line
 * "  op<i> [...]" per node, one "  leaf<j> [...]" per tensor read but not produced
 * on the tape (parameters by name as boxes, other inputs as ellipses; j in order
 * of first use), and an edge "a -> op<i>" per node input, labeled with the
 * input's role where the op names it ([label="q"]). Each label gives the op (or
 * the leaf's name), the shape, the values' mean, min and max and, once a
 * backward has run, the gradient's norm: "#3 matmul\n[4,2]\nmean 0.1 [-1, 2]\n|grad| 0.5"
 * (qkv_tape_describe's entries). Render with `dot -Tsvg FILE` (Graphviz).
 * 0, or -1 with qkv_last_error() naming path. */
int qkv_tape_write_dot(const qkv_tape *tape, const char *path);

/* ---- the tape described for other callers (core/ops/tape_graph.c) ----------------
 *
 * The graph qkv_tape_write_dot draws, as data: entries 0..n_nodes-1 are the nodes'
 * outputs in tape order (entry i is node i); entries n_nodes.. are the leaves
 * (tensors read but not produced on the tape: parameters and other inputs), in
 * order of first use. Each entry has its inputs as entry indices (node entries
 * only; -1 for an absent optional input such as attention's bias), their roles
 * where the op names them, its shape, a value summary and, after a backward, its
 * gradient's norm. values and grad point at the tensors' own buffers: valid until
 * the tape's reset (and, for parameters, while the model lives); grad is NULL when
 * the tensor has none. The dot labels are made from these entries. */
typedef struct qkv_tape_entry {
    int index;                     /* this entry's index */
    int leaf;                      /* 0: a node's output; 1: a parameter; 2: another input */
    const char *op;                /* node: its op ("matmul"); leaf: its name ("enc.0.attn.wq",
                                    * or "input") */
    const char *note;              /* node: its note (attention's "causal") or NULL */
    int n_inputs;
    const int *inputs;             /* n_inputs entry indices (-1: absent) */
    const char *const *input_names;/* n_inputs roles ("q", "k", ...) or NULL */
    int ndim, shape[QKV_MAX_DIMS];
    size_t size;
    double mean, norm;             /* of the values: mean and L2 norm, in double */
    float min, max;
    double grad_norm;              /* L2 norm of the gradient; -1 when there is none */
    const float *values, *grad;    /* size floats each (see above) */
} qkv_tape_entry;

typedef struct qkv_tape_graph {
    int n_nodes, n_leaves;         /* entries: n_nodes + n_leaves */
    qkv_tape_entry *entries;
    int *input_storage;            /* private */
} qkv_tape_graph;

/* Describes tape (after its backward, for gradient norms) into *graph; free with
 * qkv_tape_graph_free. Stops only when out of memory. */
void qkv_tape_describe(const qkv_tape *tape, qkv_tape_graph *graph);
void qkv_tape_graph_free(qkv_tape_graph *graph);

/* ---- activations: liveness and the lazily allocated gradient (tensor.h's lifetimes) ---- */

/* Stops if t is an activation whose tape has been reset since it was made. */
void qkv_tensor_check_live(const qkv_tensor *t, const char *op);

/* The gradient buffer, allocated (zeroed) from the tape arena on first use. */
float *qkv_tensor_grad(qkv_tensor *t);

/* The gradient buffer for a backward step that writes every element of it:
 * *beta = 0 if the buffer is new (allocated, not zeroed: the caller assigns, as
 * gemm's beta = 0 does, instead of a memset and an add), else 1 (add into the sum
 * so far). Either way the caller's result is bitwise what it would be after a
 * memset: a sum that starts from 0 gives the same bits as one that starts empty. */
float *qkv_tensor_grad_to_write(qkv_tensor *t, float *beta);

#endif
