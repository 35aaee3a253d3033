/* test_reference.c — qkv's ops against PyTorch's values.
 *
 * tests/make_reference.py writes, for each case below, the inputs, the forward
 * output, a fixed random R and torch's gradients of L = sum(out * R) with respect
 * to each differentiable input (torch computes in float64 from the float32
 * inputs). Here each case loads them from ref/ (paths relative to tests/, where
 * `make test` runs), runs the qkv op, seeds backward with R and requires
 *     |qkv - torch| <= 1e-5 * max(1, |torch|)
 * for the output and every gradient, shapes included. */
#include <stdio.h>
#include <stdlib.h>

#include "tests/test_util.h"

#define REF_TOL 1e-5
#define LAYER_NORM_EPS 1e-5f /* the value make_reference.py uses */
#define MAX_REF_INPUTS 3

typedef struct ref_case ref_case;
typedef qkv_tensor *(*ref_forward)(qkv_tape *tape, qkv_tensor *const *in, const ref_case *c);

struct ref_case {
    const char *name;                      /* file prefix: ref/<name>_<tensor>.npy */
    ref_forward forward;
    int n_inputs;                          /* differentiable: <name>_<in>.npy, <name>_d<in>.npy */
    const char *inputs[MAX_REF_INPUTS];
    int trans_a, trans_b;                  /* matmul only */
    int has_weights;                       /* cross-entropy only */
};

/* ref/<case>_<tensor>.npy; fails the test if missing or malformed. */
static qkv_tensor *load_ref(const ref_case *c, const char *tensor, int requires_grad) {
    char path[256];
    snprintf(path, sizeof path, "ref/%s_%s.npy", c->name, tensor);
    qkv_tensor *t = qkv_npy_load(path, requires_grad);
    ck_assert_msg(t != NULL, "%s (regenerate with make_reference.py)", qkv_last_error());
    return t;
}

static void expect_same_shape(const ref_case *c, const char *what, const qkv_tensor *got,
                              const qkv_tensor *ref) {
    char got_shape[QKV_SHAPE_STR_LEN], ref_shape[QKV_SHAPE_STR_LEN];
    ck_assert_msg(qkv_same_shape(got, ref), "%s %s: shape %s, torch has %s", c->name, what,
                  qkv_shape_str(got, got_shape, sizeof got_shape), qkv_shape_str(ref, ref_shape, sizeof ref_shape));
}

/* Compares values (ref->size of them) with ref, naming the case and the worst element. */
static void expect_close_to_ref(const ref_case *c, const char *what, const float *values,
                                const qkv_tensor *ref) {
    char label[96];
    snprintf(label, sizeof label, "%s %s", c->name, what);
    assert_floats_close(values, ref->data, ref->size, REF_TOL, label);
}

/* ---- the ops under test ------------------------------------------------------- */

static qkv_tensor *fwd_matmul(qkv_tape *tape, qkv_tensor *const *in, const ref_case *c) {
    return qkv_matmul(tape, in[0], in[1], c->trans_a, c->trans_b);
}

static qkv_tensor *fwd_softmax(qkv_tape *tape, qkv_tensor *const *in, const ref_case *c) {
    (void)c;
    return qkv_softmax(tape, in[0]);
}

static qkv_tensor *fwd_log_softmax(qkv_tape *tape, qkv_tensor *const *in, const ref_case *c) {
    (void)c;
    return qkv_log_softmax(tape, in[0]);
}

static qkv_tensor *fwd_gelu(qkv_tape *tape, qkv_tensor *const *in, const ref_case *c) {
    (void)c;
    return qkv_gelu(tape, in[0]);
}

static qkv_tensor *fwd_gelu_exact(qkv_tape *tape, qkv_tensor *const *in, const ref_case *c) {
    (void)c;
    return qkv_gelu_exact(tape, in[0]);
}

static qkv_tensor *fwd_silu(qkv_tape *tape, qkv_tensor *const *in, const ref_case *c) {
    (void)c;
    return qkv_silu(tape, in[0]);
}

/* gamma and beta are the 2nd and 3rd inputs when the case has them. */
static qkv_tensor *fwd_layer_norm(qkv_tape *tape, qkv_tensor *const *in, const ref_case *c) {
    return qkv_layer_norm(tape, in[0], c->n_inputs > 1 ? in[1] : NULL, c->n_inputs > 2 ? in[2] : NULL,
                          LAYER_NORM_EPS);
}

/* An integer stored as float32 by make_reference.py. */
static int32_t ref_int(const ref_case *c, float value) {
    ck_assert_msg(value == floorf(value) && fabsf(value) < 1e9f, "%s: %g is not an integer", c->name, value);
    return (int32_t)value;
}

/* Targets, ignore_index and weights come from files; targets and weights are
 * copied into the tape's arena so they live as long as the graph. */
static qkv_tensor *fwd_cross_entropy(qkv_tape *tape, qkv_tensor *const *in, const ref_case *c) {
    qkv_tensor *targets = load_ref(c, "targets", 0), *ignore = load_ref(c, "ignore_index", 0);
    ck_assert_msg(targets->size * (size_t)in[0]->shape[in[0]->ndim - 1] == in[0]->size,
                  "%s: %zu targets for %zu logits", c->name, targets->size, in[0]->size);
    int32_t *ids = qkv_tape_alloc(tape, targets->size * sizeof *ids);
    for (size_t i = 0; i < targets->size; i++) ids[i] = ref_int(c, targets->data[i]);
    int32_t ignore_index = ref_int(c, ignore->data[0]);
    float *weights = NULL;
    if (c->has_weights) {
        qkv_tensor *w = load_ref(c, "weights", 0);
        ck_assert(w->size == targets->size);
        weights = qkv_tape_alloc(tape, w->size * sizeof *weights);
        memcpy(weights, w->data, w->size * sizeof *weights);
        qkv_tensor_free(w);
    }
    qkv_tensor_free(targets);
    qkv_tensor_free(ignore);
    return qkv_cross_entropy(tape, in[0], ids, ignore_index, weights);
}

#define MATMUL(name, ta, tb) {name, fwd_matmul, 2, {"a", "b"}, ta, tb, 0}
#define UNARY(name, fn) {name, fn, 1, {"x"}, 0, 0, 0}

static const ref_case ref_cases[] = {
    MATMUL("matmul_nn", 0, 0),
    MATMUL("matmul_nt", 0, 1),
    MATMUL("matmul_tn", 1, 0),
    MATMUL("matmul_tt", 1, 1),
    MATMUL("matmul_batched", 0, 0),
    MATMUL("matmul_batched_nt", 0, 1),
    MATMUL("matmul_batched_4d", 0, 0),
    MATMUL("matmul_shared_b", 0, 0),    /* a [2,4,3] x b [3,5]: b shared across the batch */
    MATMUL("matmul_shared_a_tn", 1, 0), /* a [3,4]^T x b [2,3,5] */
    UNARY("softmax_2d", fwd_softmax),   /* one row of logits near +-1000 */
    UNARY("softmax_3d", fwd_softmax),
    UNARY("softmax_width1", fwd_softmax),
    UNARY("log_softmax_2d", fwd_log_softmax),
    UNARY("log_softmax_3d", fwd_log_softmax),
    {"cross_entropy_basic", fwd_cross_entropy, 1, {"logits"}, 0, 0, 0},
    {"cross_entropy_ignore", fwd_cross_entropy, 1, {"logits"}, 0, 0, 0},  /* 2 rows ignored, one large row */
    {"cross_entropy_weighted", fwd_cross_entropy, 1, {"logits"}, 0, 0, 1}, /* [2,3,5], weights, ignore -1 */
    {"layer_norm_affine", fwd_layer_norm, 3, {"x", "gamma", "beta"}, 0, 0, 0},
    {"layer_norm_3d", fwd_layer_norm, 3, {"x", "gamma", "beta"}, 0, 0, 0},
    {"layer_norm_plain", fwd_layer_norm, 1, {"x"}, 0, 0, 0},
    UNARY("gelu_tanh", fwd_gelu),
    UNARY("gelu_exact", fwd_gelu_exact),
    UNARY("silu", fwd_silu),            /* torch.nn.functional.silu: make_silu_reference.py */
};
#define N_REF_CASES ((int)(sizeof ref_cases / sizeof ref_cases[0]))

/* Forward, compare, backward from R, compare each input's gradient. */
START_TEST(test_matches_torch) {
    const ref_case *c = &ref_cases[_i];
    qkv_tape *tape = qkv_tape_create(7);
    qkv_tensor *in[MAX_REF_INPUTS] = {NULL};
    for (int k = 0; k < c->n_inputs; k++) in[k] = load_ref(c, c->inputs[k], 1);

    qkv_tensor *out = c->forward(tape, in, c);
    qkv_tensor *ref_out = load_ref(c, "out", 0);
    expect_same_shape(c, "out", out, ref_out);
    expect_close_to_ref(c, "out", out->data, ref_out);

    qkv_tensor *r = load_ref(c, "r", 0);
    expect_same_shape(c, "r", out, r);
    qkv_backward_seeded(tape, out, r->data);
    for (int k = 0; k < c->n_inputs; k++) {
        char what[32];
        snprintf(what, sizeof what, "d%s", c->inputs[k]);
        qkv_tensor *ref_grad = load_ref(c, what, 0);
        expect_same_shape(c, what, in[k], ref_grad);
        expect_close_to_ref(c, what, in[k]->grad, ref_grad);
        qkv_tensor_free(ref_grad);
    }

    qkv_tensor_free(r);
    qkv_tensor_free(ref_out);
    for (int k = 0; k < c->n_inputs; k++) qkv_tensor_free(in[k]);
    qkv_tape_free(tape);
}
END_TEST

Suite *suite_reference(void) {
    Suite *s = suite_create("reference");
    TCase *tc = tcase_create("torch");
    tcase_add_loop_test(tc, test_matches_torch, 0, N_REF_CASES);
    suite_add_tcase(s, tc);
    return s;
}
