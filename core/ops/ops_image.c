/* ops_image.c — image ops: patchify (forward and backward side by side).
 *
 * patchify splits images [B,C,H,W] into non-overlapping PxP patches and makes
 * each patch a token: out [B, T, C*P*P] with T = (H/P) * (W/P).
 *   - patches are numbered row-major over the grid: token t = pr * (W/P) + pc;
 *   - a patch is flattened channel-major, then its rows, then its columns:
 *         out[b, t, (c * P + i) * P + j] = x[b, c, pr * P + i, pc * P + j].
 * This is the order of a stride-P Conv2d's weight [D, C, P, P] flattened, so a
 * linear layer on the tokens equals ViT's patch-embedding convolution.
 * H or W not divisible by P is a programmer error naming the shapes.
 *
 * Both directions only move elements and every destination element is written
 * by exactly one iteration (one token per iteration), so the loops are parallel
 * and bitwise independent of the thread count.
 */
#include "core/error.h"
#include "core/ops/ops.h"
#include "core/kernels/parallel.h"

#define OP "patchify"

/* The move between x [B,C,H,W] and out [B,T,C*P*P], one token (b, t) at a time:
 * to_tokens 1 copies x into out; 0 adds out's gradient into x's gradient. */
static void patch_move(const int *xs, int p, float *x, float *out, int to_tokens) {
    int b_n = xs[0], c_n = xs[1], h = xs[2], w = xs[3];
    int gw = w / p, tokens = (h / p) * gw, dim = c_n * p * p;
    size_t n_tokens = (size_t)b_n * (size_t)tokens;
    QKV_FOR(QKV_PARALLEL(n_tokens * (size_t)dim), schedule(static), (size_t bt = 0; bt < n_tokens; bt++), {
        size_t b = bt / (size_t)tokens;
        int t = (int)(bt % (size_t)tokens), pr = t / gw, pc = t % gw;
        float *tok = out + bt * (size_t)dim;
        for (int c = 0; c < c_n; c++)
            for (int i = 0; i < p; i++) {
                float *img = x + ((b * (size_t)c_n + (size_t)c) * (size_t)h + (size_t)(pr * p + i)) * (size_t)w +
                             (size_t)(pc * p);
                float *row = tok + (size_t)(c * p + i) * (size_t)p;
                if (to_tokens)
                    for (int j = 0; j < p; j++) row[j] = img[j];
                else
                    for (int j = 0; j < p; j++) img[j] += row[j];
            }
    });
}

/* Each x element lands in exactly one token slot: dx[b,c,y,x] += dout[b,t,k]. */
static void patchify_backward(qkv_node *node) {
    qkv_tensor *x = node->inputs[0];
    if (!x->requires_grad) return;
    patch_move(x->shape, node->iarg[0], qkv_tensor_grad(x), node->out->grad, 0);
}

qkv_tensor *qkv_patchify(qkv_tape *tape, qkv_tensor *images, int p) {
    char s[QKV_SHAPE_STR_LEN];
    qkv_tensor_check_live(images, OP);
    QKV_CHECK(images->ndim == 4, OP ": images %s must be [B,C,H,W]", qkv_shape_str(images, s, sizeof s));
    QKV_CHECK(p >= 1, OP ": images %s: patch size %d must be >= 1", qkv_shape_str(images, s, sizeof s), p);
    int h = images->shape[2], w = images->shape[3];
    QKV_CHECK(h % p == 0 && w % p == 0, OP ": images %s: H %d and W %d must be multiples of the patch size %d",
              qkv_shape_str(images, s, sizeof s), h, w, p);
    int shape[3] = {images->shape[0], (h / p) * (w / p), images->shape[1] * p * p};
    qkv_tensor *out = qkv_tape_tensor(tape, 3, shape);
    patch_move(images->shape, p, images->data, out->data, 1);
    qkv_node *node = qkv_tape_record(tape, OP, out, patchify_backward, 1, &images);
    if (node) node->iarg[0] = p;
    return out;
}
