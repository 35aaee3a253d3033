/* gradcheck.h — finite-difference gradient checking, and the cases and groups
 * that `make test` and `./qkv gradcheck` both run (the list of every group is
 * QKV_GRADCHECK_GROUPS in layers/check/checks.h).
 *
 * For a function f(inputs) -> out of any shape, the checker draws fixed random
 * weights R of out's shape and checks the gradient of L = sum(out * R):
 *   analytic: one backward pass seeded with dL/dout = R;
 *   numeric:  central differences (L(x + eps) - L(x - eps)) / (2 eps), with L
 *             accumulated in double, for every element of every input that
 *             requires a gradient (a fixed sample of 256 per input when larger).
 * Error per element: |analytic - numeric| / max(1, |analytic|, |numeric|), i.e.
 * relative for large gradients and absolute for small ones. The function must be
 * deterministic; the tape's RNG is re-seeded before every evaluation so dropout
 * draws the same mask each time.
 */
#ifndef QKV_GRADCHECK_H
#define QKV_GRADCHECK_H

#include <stdint.h>

#include "core/ops/params.h"
#include "core/ops/tape.h"

typedef qkv_tensor *(*qkv_gradcheck_fn)(qkv_tape *tape, qkv_tensor *const *inputs, const void *ctx);

typedef struct qkv_gradcheck_result {
    double max_err;        /* the error defined above, maximized */
    int worst_input;       /* where it occurred */
    size_t worst_index;
    double worst_analytic, worst_numeric;
    size_t n_checked;      /* elements compared */
} qkv_gradcheck_result;

/* inputs are owned tensors; those with requires_grad are checked, and so is
 * every tensor of params (may be NULL). Values are restored afterwards;
 * gradients are overwritten. */
qkv_gradcheck_result qkv_gradcheck(qkv_gradcheck_fn fn, int n_inputs, qkv_tensor *const *inputs,
                                   const qkv_params *params, const void *ctx, float eps, uint64_t seed);

/* How a case fills its inputs. */
enum qkv_gradcheck_init {
    QKV_INIT_NORMAL = 0,   /* N(0, 1) */
    QKV_INIT_POSITIVE,     /* uniform [0.5, 2): for log, sqrt, div's denominator */
    QKV_INIT_SPREAD,       /* distinct values at least 0.05 apart (ties break max/relu) */
};

#define QKV_GRADCHECK_MAX_INPUTS 6

typedef struct qkv_gradcheck_case {
    const char *name;              /* e.g. "add [3,4]+[4] broadcast" */
    qkv_gradcheck_fn fn;
    int n_inputs;
    int ndim[QKV_GRADCHECK_MAX_INPUTS];
    int shape[QKV_GRADCHECK_MAX_INPUTS][4];
    int init[QKV_GRADCHECK_MAX_INPUTS];      /* enum qkv_gradcheck_init */
    int no_grad[QKV_GRADCHECK_MAX_INPUTS];   /* 1: input is data, not checked */
    const void *ctx;               /* extra arguments for fn (targets, axis, ...) */
    float eps;                     /* 0: 1e-3 */
    float tol;                     /* 0: 1e-2 */
    /* Layers: setup builds a module, registering its parameters in params; its
     * return value replaces ctx for fn, and every parameter is checked too.
     * teardown frees what setup allocated besides the parameters. */
    void *(*setup)(qkv_params *params, qkv_rng *rng, const void *ctx);
    void (*teardown)(void *module);
} qkv_gradcheck_case;

/* Makes the inputs, runs the check, frees the inputs. */
qkv_gradcheck_result qkv_gradcheck_run_case(const qkv_gradcheck_case *c, uint64_t seed);
float qkv_gradcheck_tolerance(const qkv_gradcheck_case *c);

/* A named group of cases (one per op family or layer file). */
typedef struct qkv_gradcheck_group {
    const char *name;
    const qkv_gradcheck_case *cases;
    int n_cases;
} qkv_gradcheck_group;

/* The groups themselves (core/checks_*.c, layers/checks_*.c) are declared from
 * one list, QKV_GRADCHECK_GROUPS in layers/check/checks.h: it names the layers' groups
 * too, so it sits above core. */

#endif
