/* tape_show.c — the tape shown to a reader: as text, one line per node, and as a
 * Graphviz digraph (both declared in tape.h).
 *
 * Both name an input the same way: by the latest earlier node that produced it
 * (#3 / op3), else as a leaf: a parameter (owned, shown with its name; a box in
 * the graph) or another input (data, targets, masks: its name or "input"; an
 * ellipse). Where the op names its inputs (node->input_names), the text prefixes
 * the role (q=#7[...]) and the graph labels the edge. The graph has one line per
 * op node, "  op<i> [label=\"#<i> <op>\\n<shape>\"...];", in tape order; one line
 * per leaf, "  leaf<j> [...];"; then one edge per node input. The last node (the
 * loss, when the tape ends with it) has a double border. */
#include "core/ops/tape.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

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

/* ---- Graphviz ------------------------------------------------------------------ */

static int dot_printf(qkv_atomic_file *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int dot_printf(qkv_atomic_file *f, const char *fmt, ...) {
    char line[512];
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

int qkv_tape_write_dot(const qkv_tape *tape, const char *path) {
    if (!path || !*path) return qkv_file_fail("dot", "empty output path");
    int n = tape->n_nodes, n_inputs = 0, widest = 1;
    for (int i = 0; i < n; i++) {
        n_inputs += tape->nodes[i].n_inputs;
        if (tape->nodes[i].n_inputs > widest) widest = tape->nodes[i].n_inputs;
    }
    tensor_ref *outs = sorted_outputs(tape);
    tensor_ref *leaves = malloc(((size_t)n_inputs + 1) * sizeof *leaves);
    if (!leaves) qkv_fatal("tape_dot: out of memory for %d nodes", n);
    /* Leaves: inputs with no earlier producer, each tensor once, numbered in order of first use. */
    int n_leaves = 0;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < tape->nodes[i].n_inputs; j++) {
            const qkv_tensor *t = tape->nodes[i].inputs[j];
            if (t && producer(outs, n, t, i) < 0) leaves[n_leaves++] = (tensor_ref){t, i * widest + j};
        }
    qsort(leaves, (size_t)n_leaves, sizeof *leaves, ref_compare);
    int unique = 0;
    for (int i = 0; i < n_leaves; i++)
        if (unique == 0 || leaves[unique - 1].tensor != leaves[i].tensor) leaves[unique++] = leaves[i];
    n_leaves = unique;
    /* Sorted by (tensor, first use), so each kept entry's index is its first use. */
    int *order = malloc(((size_t)n_leaves + 1) * sizeof *order);
    if (!order) qkv_fatal("tape_dot: out of memory for %d leaves", n_leaves);

    qkv_atomic_file f;
    if (qkv_atomic_open(&f, path)) {
        free(outs);
        free(leaves);
        free(order);
        return -1;
    }
    char shape[QKV_SHAPE_STR_LEN], name[160];
    dot_printf(&f, "digraph tape {\n  rankdir=TB;\n  node [fontname=\"monospace\", fontsize=10];\n");
    for (int i = 0; i < n; i++) {
        const qkv_node *node = &tape->nodes[i];
        dot_name(node->op, name, sizeof name);
        dot_printf(&f, "  op%d [label=\"#%d %s\\n%s\", shape=box, style=rounded%s];\n", i, i, name,
                   qkv_shape_str(node->out, shape, sizeof shape), i == n - 1 ? ", peripheries=2" : "");
    }
    /* Leaves are numbered by their sorted position; lines list them by first use. */
    for (int i = 0; i < n_leaves; i++) order[i] = i;
    for (int i = 1; i < n_leaves; i++) /* insertion sort by first use: leaves are few */
        for (int k = i; k > 0 && leaves[order[k]].index < leaves[order[k - 1]].index; k--) {
            int tmp = order[k];
            order[k] = order[k - 1];
            order[k - 1] = tmp;
        }
    for (int k = 0; k < n_leaves; k++) {
        const qkv_tensor *t = leaves[order[k]].tensor;
        int param = t->owned && t->requires_grad;
        dot_name(t->name ? t->name : (param ? "param" : "input"), name, sizeof name);
        dot_printf(&f, "  leaf%d [label=\"%s\\n%s\", shape=%s%s];\n", order[k], name,
                   qkv_shape_str(t, shape, sizeof shape), param ? "box" : "ellipse",
                   param ? ", style=filled, fillcolor=\"#dde8f5\"" : "");
    }
    for (int i = 0; i < n; i++) {
        const qkv_node *node = &tape->nodes[i];
        for (int j = 0; j < node->n_inputs; j++) {
            const qkv_tensor *t = node->inputs[j];
            if (!t) continue;
            int from = producer(outs, n, t, i);
            char label[sizeof name + 16] = "";
            if (input_name(node, j)) {
                dot_name(input_name(node, j), name, sizeof name);
                snprintf(label, sizeof label, " [label=\"%s\"]", name);
            }
            if (from >= 0) dot_printf(&f, "  op%d -> op%d%s;\n", from, i, label);
            else dot_printf(&f, "  leaf%d -> op%d%s;\n", ref_find(leaves, n_leaves, t), i, label);
        }
    }
    dot_printf(&f, "}\n");
    free(outs);
    free(leaves);
    free(order);
    return qkv_atomic_commit(&f); /* -1 if any write failed */
}
