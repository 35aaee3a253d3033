/* tape_show.c — the tape shown to a reader: as text, one line per node; as data
 * (qkv_tape_describe: every node and leaf with its inputs, shape, value summary and
 * gradient norm, for the page); and as a Graphviz digraph drawn from that data
 * (all declared in tape.h).
 *
 * All name an input the same way: by the latest earlier node that produced it
 * (#3 / op3), else as a leaf: a parameter (owned, shown with its name; a box in
 * the graph) or another input (data, targets, masks: its name or "input"; an
 * ellipse). Where the op names its inputs (node->input_names), the text prefixes
 * the role (q=#7[...]) and the graph labels the edge. The graph has one line per
 * op node, "  op<i> [label=\"#<i> <op>\\n<shape>\\nmean ..\"...];", in tape
 * order; one line per leaf, "  leaf<j> [...];", in order of first use; then one
 * edge per node input. The last node (the loss, when the tape ends with it) has a
 * double border. */
#include "core/ops/tape.h"

#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/fileio.h"

typedef struct tensor_ref {
    const qkv_tensor *tensor;
    int index; /* producing node, or leaf number */
} tensor_ref;

static int ref_compare(const void *a, const void *b) {
    const tensor_ref *x = a, *y = b;
    uintptr_t px = (uintptr_t)x->tensor, py = (uintptr_t)y->tensor;
    if (px != py) return px < py ? -1 : 1;
    return x->index - y->index;
}

/* First entry for tensor t in the sorted refs[0..n), or n. */
static int ref_find(const tensor_ref *refs, int n, const qkv_tensor *t) {
    int lo = 0, hi = n;
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if ((uintptr_t)refs[mid].tensor < (uintptr_t)t) lo = mid + 1;
        else hi = mid;
    }
    return lo < n && refs[lo].tensor == t ? lo : n;
}

/* The latest node before `before` that produced t, or -1. */
static int producer(const tensor_ref *outs, int n, const qkv_tensor *t, int before) {
    int best = -1;
    for (int i = ref_find(outs, n, t); i < n && outs[i].tensor == t && outs[i].index < before; i++)
        best = outs[i].index;
    return best;
}

/* The nodes' outputs sorted by address, to find an input's producer in log time. */
static tensor_ref *sorted_outputs(const qkv_tape *tape) {
    int n = tape->n_nodes;
    tensor_ref *outs = malloc(((size_t)n + 1) * sizeof *outs);
    if (!outs) qkv_fatal("tape: out of memory for %d nodes", n);
    for (int i = 0; i < n; i++) outs[i] = (tensor_ref){tape->nodes[i].out, i};
    qsort(outs, (size_t)n, sizeof *outs, ref_compare);
    return outs;
}

static const char *input_name(const qkv_node *node, int j) {
    return node->input_names ? node->input_names[j] : NULL;
}

/* ---- text ---------------------------------------------------------------------- */

static void print_input(const qkv_node *node, int j, int from, FILE *out) {
    const qkv_tensor *t = node->inputs[j];
    char shape[QKV_SHAPE_STR_LEN];
    if (input_name(node, j)) fprintf(out, "%s=", input_name(node, j));
    if (!t) { fputs("none", out); return; }
    if (from >= 0) fprintf(out, "#%d", from);
    else fputs(t->name ? t->name : "input", out);
    fputs(qkv_shape_str(t, shape, sizeof shape), out);
}

void qkv_tape_print(const qkv_tape *tape, FILE *out) {
    tensor_ref *outs = sorted_outputs(tape);
    char shape[QKV_SHAPE_STR_LEN];
    for (int i = 0; i < tape->n_nodes; i++) {
        const qkv_node *node = &tape->nodes[i];
        fprintf(out, "#%-3d %-14s ", i, node->op);
        for (int j = 0; j < node->n_inputs; j++) {
            if (j) fputs(", ", out);
            const qkv_tensor *t = node->inputs[j];
            print_input(node, j, t ? producer(outs, tape->n_nodes, t, i) : -1, out);
        }
        fprintf(out, " -> %s%s%s\n", qkv_shape_str(node->out, shape, sizeof shape), node->note ? " " : "",
                node->note ? node->note : "");
    }
    free(outs);
}

/* ---- the graph as data (qkv_tape_describe) ------------------------------------- */

/* Mean, L2 norm, min and max of x[0..n), in double; a gradient's norm (-1 if none). */
static void summarize(qkv_tape_entry *e, const qkv_tensor *t) {
    double sum = 0, squares = 0;
    float lo = t->size ? t->data[0] : 0, hi = lo;
    for (size_t i = 0; i < t->size; i++) {
        float x = t->data[i];
        sum += x;
        squares += (double)x * x;
        if (x < lo) lo = x;
        if (x > hi) hi = x;
    }
    e->mean = t->size ? sum / (double)t->size : 0;
    e->norm = sqrt(squares);
    e->min = lo;
    e->max = hi;
    e->grad = t->grad;
    e->grad_norm = -1;
    if (t->grad) {
        double g = 0;
        for (size_t i = 0; i < t->size; i++) g += (double)t->grad[i] * t->grad[i];
        e->grad_norm = sqrt(g);
    }
    e->values = t->data;
    e->size = t->size;
    e->ndim = t->ndim;
    memcpy(e->shape, t->shape, sizeof e->shape);
}

void qkv_tape_describe(const qkv_tape *tape, qkv_tape_graph *graph) {
    int n = tape->n_nodes, n_inputs = 0;
    for (int i = 0; i < n; i++) n_inputs += tape->nodes[i].n_inputs;
    memset(graph, 0, sizeof *graph);
    tensor_ref *outs = sorted_outputs(tape);
    /* leaves: inputs with no earlier producer, each tensor once, in order of first use */
    tensor_ref *seen = malloc(((size_t)n_inputs + 1) * sizeof *seen);
    graph->entries = calloc((size_t)n + (size_t)n_inputs + 1, sizeof *graph->entries);
    graph->input_storage = malloc(((size_t)n_inputs + 1) * sizeof *graph->input_storage);
    if (!seen || !graph->entries || !graph->input_storage) qkv_fatal("tape: out of memory for %d nodes", n);
    int n_seen = 0, at = 0;
    for (int i = 0; i < n; i++) {
        const qkv_node *node = &tape->nodes[i];
        qkv_tape_entry *e = &graph->entries[i];
        e->index = i;
        e->op = node->op;
        e->note = node->note;
        e->n_inputs = node->n_inputs;
        e->inputs = graph->input_storage + at;
        e->input_names = node->input_names;
        summarize(e, node->out);
        for (int j = 0; j < node->n_inputs; j++) {
            const qkv_tensor *t = node->inputs[j];
            int from = t ? producer(outs, n, t, i) : -1;
            if (t && from < 0) {   /* a leaf: its entry, made at first use (a linear search: leaves are few) */
                int k = 0;
                while (k < n_seen && seen[k].tensor != t) k++;
                if (k == n_seen) seen[n_seen++] = (tensor_ref){t, n + k};
                from = seen[k].index;
            }
            graph->input_storage[at++] = from;
        }
    }
    for (int k = 0; k < n_seen; k++) {
        const qkv_tensor *t = seen[k].tensor;
        qkv_tape_entry *e = &graph->entries[n + k];
        e->index = n + k;
        e->leaf = t->owned && t->requires_grad ? 1 : 2;
        e->op = t->name ? t->name : e->leaf == 1 ? "param" : "input";
        summarize(e, t);
    }
    graph->n_nodes = n;
    graph->n_leaves = n_seen;
    free(seen);
    free(outs);
}

void qkv_tape_graph_free(qkv_tape_graph *graph) {
    free(graph->entries);
    free(graph->input_storage);
    memset(graph, 0, sizeof *graph);
}

/* ---- Graphviz ------------------------------------------------------------------ */

static int dot_printf(qkv_atomic_file *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int dot_printf(qkv_atomic_file *f, const char *fmt, ...) {
    char line[768];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (n < 0) n = 0;
    if (n >= (int)sizeof line) n = (int)sizeof line - 1;
    return qkv_atomic_write(f, line, (size_t)n);
}

/* A name safe inside a double-quoted DOT string: quotes and backslashes dropped. */
static void dot_name(const char *name, char *out, size_t len) {
    size_t k = 0;
    for (; name && *name && k + 1 < len; name++)
        if (*name != '"' && *name != '\\' && (unsigned char)*name >= 32) out[k++] = *name;
    out[k] = '\0';
}

/* An entry's label after its name: "\n[4,2]\nmean 0.1 [min -1, max 2]\n|grad| 0.5" (the
 * gradient's line only when it has one: after a backward). */
static void dot_label(const qkv_tape_entry *e, char *out, size_t len) {
    char shape[QKV_SHAPE_STR_LEN], grad[48] = "";
    if (e->grad_norm >= 0) snprintf(grad, sizeof grad, "\\n|grad| %.4g", e->grad_norm);
    snprintf(out, len, "%s\\nmean %.4g [%.4g, %.4g]%s", qkv_dims_str(e->ndim, e->shape, shape, sizeof shape),
             e->mean, (double)e->min, (double)e->max, grad);
}

int qkv_tape_write_dot(const qkv_tape *tape, const char *path) {
    if (!path || !*path) return qkv_file_fail("dot", "empty output path");
    qkv_atomic_file f;
    if (qkv_atomic_open(&f, path)) return -1;
    qkv_tape_graph g;
    qkv_tape_describe(tape, &g);
    char label[256], name[160];
    int n = g.n_nodes;
    dot_printf(&f, "digraph tape {\n  rankdir=TB;\n  node [fontname=\"monospace\", fontsize=10];\n");
    for (int i = 0; i < n; i++) {
        dot_name(g.entries[i].op, name, sizeof name);
        dot_label(&g.entries[i], label, sizeof label);
        dot_printf(&f, "  op%d [label=\"#%d %s\\n%s\", shape=box, style=rounded%s];\n", i, i, name, label,
                   i == n - 1 ? ", peripheries=2" : "");
    }
    for (int k = 0; k < g.n_leaves; k++) {
        const qkv_tape_entry *e = &g.entries[n + k];
        int param = e->leaf == 1;
        dot_name(e->op, name, sizeof name);
        dot_label(e, label, sizeof label);
        dot_printf(&f, "  leaf%d [label=\"%s\\n%s\", shape=%s%s];\n", k, name, label, param ? "box" : "ellipse",
                   param ? ", style=filled, fillcolor=\"#dde8f5\"" : "");
    }
    for (int i = 0; i < n; i++) {
        const qkv_tape_entry *e = &g.entries[i];
        for (int j = 0; j < e->n_inputs; j++) {
            int from = e->inputs[j];
            if (from < 0) continue;
            char role[sizeof name + 16] = "";
            if (e->input_names && e->input_names[j]) {
                dot_name(e->input_names[j], name, sizeof name);
                snprintf(role, sizeof role, " [label=\"%s\"]", name);
            }
            if (from < n) dot_printf(&f, "  op%d -> op%d%s;\n", from, i, role);
            else dot_printf(&f, "  leaf%d -> op%d%s;\n", from - n, i, role);
        }
    }
    dot_printf(&f, "}\n");
    qkv_tape_graph_free(&g);
    return qkv_atomic_commit(&f); /* -1 if any write failed */
}
