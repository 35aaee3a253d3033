/* ops_box.c — IoU, GIoU and the GIoU loss op on (cx, cy, w, h) boxes; forward and
 * backward side by side (see boxes.h for the definitions and the eps).
 *
 * One routine, giou_of, computes every intermediate of GIoU for a pair of boxes;
 * the plain functions read its values and the op's backward differentiates
 * through the same intermediates:
 *   x1 = cx - w/2, x2 = cx + w/2 (same for y);
 *   iw = max(0, min(ax2, bx2) - max(ax1, bx1)), ih likewise, I = iw ih;
 *   U = aw ah + bw bh - I;  ew = max(ax2, bx2) - min(ax1, bx1), eh likewise, E = ew eh;
 *   GIoU = I / (U + eps) - (E - U) / (E + eps).
 * Where min/max tie, the gradient goes to the first box (pred). Each box pair is
 * independent, so the loops are parallel over boxes and thread-independent.
 */
#include <math.h>

#include "core/ops/boxes.h"
#include "core/error.h"
#include "core/ops/ops.h"
#include "core/kernels/parallel.h"

/* Rough flops per box pair, for the parallel threshold. */
#define BOX_WORK 64

typedef struct giou_parts {
    double a1[2], a2[2], b1[2], b2[2];  /* corners per axis (0: x, 1: y) */
    double inter_len[2];                /* iw, ih: clamped at 0 */
    double encl_len[2];                 /* ew, eh */
    double area_a, area_b, inter, uni, encl;
    double iou, giou;
} giou_parts;

static giou_parts giou_of(const float *a, const float *b) {
    giou_parts g;
    for (int k = 0; k < 2; k++) {
        g.a1[k] = (double)a[k] - 0.5 * a[k + 2];
        g.a2[k] = (double)a[k] + 0.5 * a[k + 2];
        g.b1[k] = (double)b[k] - 0.5 * b[k + 2];
        g.b2[k] = (double)b[k] + 0.5 * b[k + 2];
        double len = fmin(g.a2[k], g.b2[k]) - fmax(g.a1[k], g.b1[k]);
        g.inter_len[k] = len > 0.0 ? len : 0.0;
        g.encl_len[k] = fmax(g.a2[k], g.b2[k]) - fmin(g.a1[k], g.b1[k]);
    }
    g.area_a = (double)a[2] * a[3];
    g.area_b = (double)b[2] * b[3];
    g.inter = g.inter_len[0] * g.inter_len[1];
    g.uni = g.area_a + g.area_b - g.inter;
    g.encl = g.encl_len[0] * g.encl_len[1];
    g.iou = g.inter / (g.uni + QKV_BOX_EPS);
    g.giou = g.iou - (g.encl - g.uni) / (g.encl + QKV_BOX_EPS);
    return g;
}

double qkv_box_iou(const float *a, const float *b) { return giou_of(a, b).iou; }

double qkv_box_giou(const float *a, const float *b) { return giou_of(a, b).giou; }

/* Gradient of GIoU w.r.t. a's and b's (cx, cy, w, h), scaled by dgiou, added into
 * da and db (either may be NULL). With R = (E - U) / (E + eps):
 *   dU = -I / (U + eps)^2 dIoU - dR / (E + eps),   dE = (U + eps) / (E + eps)^2 dR,
 *   dI = dIoU / (U + eps) - dU,   with dIoU = dgiou and dR = -dgiou;
 *   I = iw ih, U's areas = w h, E = ew eh; then through min/max to the corners,
 *   and corners x1 = c - w/2, x2 = c + w/2:  dc = dx1 + dx2, dw = (dx2 - dx1) / 2. */
static void giou_backward_pair(const float *a, const float *b, double dgiou, float *da, float *db) {
    giou_parts g = giou_of(a, b);
    double ue = g.uni + QKV_BOX_EPS, ee = g.encl + QKV_BOX_EPS;
    double d_iou = dgiou, d_r = -dgiou;
    double d_uni = -g.inter / (ue * ue) * d_iou - d_r / ee;
    double d_encl = ue / (ee * ee) * d_r;
    double d_inter = d_iou / ue - d_uni;
    double d_area_a = d_uni, d_area_b = d_uni;
    double d_a1[2] = {0, 0}, d_a2[2] = {0, 0}, d_b1[2] = {0, 0}, d_b2[2] = {0, 0};
    double d_aw[2], d_bw[2];  /* through the areas: d(w h)/dw = h */
    d_aw[0] = d_area_a * a[3];
    d_aw[1] = d_area_a * a[2];
    d_bw[0] = d_area_b * b[3];
    d_bw[1] = d_area_b * b[2];
    for (int k = 0; k < 2; k++) {
        int other = 1 - k;
        /* intersection side: I = iw ih, zero gradient where clamped */
        if (g.inter_len[k] > 0.0) {
            double d_len = d_inter * g.inter_len[other];
            if (g.a2[k] <= g.b2[k]) d_a2[k] += d_len; else d_b2[k] += d_len;
            if (g.a1[k] >= g.b1[k]) d_a1[k] -= d_len; else d_b1[k] -= d_len;
        }
        /* enclosing side: E = ew eh */
        double d_elen = d_encl * g.encl_len[other];
        if (g.a2[k] >= g.b2[k]) d_a2[k] += d_elen; else d_b2[k] += d_elen;
        if (g.a1[k] <= g.b1[k]) d_a1[k] -= d_elen; else d_b1[k] -= d_elen;
    }
    for (int k = 0; k < 2; k++) {
        if (da) {
            da[k] += (float)(d_a1[k] + d_a2[k]);
            da[k + 2] += (float)(0.5 * (d_a2[k] - d_a1[k]) + d_aw[k]);
        }
        if (db) {
            db[k] += (float)(d_b1[k] + d_b2[k]);
            db[k + 2] += (float)(0.5 * (d_b2[k] - d_b1[k]) + d_bw[k]);
        }
    }
}

/* out_i = 1 - GIoU(p_i, t_i)  =>  d(p_i, t_i) += -dout_i * dGIoU/d(p_i, t_i). */
static void giou_loss_backward(qkv_node *node) {
    qkv_tensor *pred = node->inputs[0], *target = node->inputs[1];
    float *dp = pred->requires_grad ? qkv_tensor_grad(pred) : NULL;
    float *dt = target->requires_grad ? qkv_tensor_grad(target) : NULL;
    const float *dout = node->out->grad;
    size_t n = node->out->size;
    QKV_FOR(QKV_PARALLEL(n * BOX_WORK), schedule(static), (size_t i = 0; i < n; i++), {
        giou_backward_pair(pred->data + 4 * i, target->data + 4 * i, -(double)dout[i],
            dp ? dp + 4 * i : NULL, dt ? dt + 4 * i : NULL);
    });
}

qkv_tensor *qkv_giou_loss(qkv_tape *tape, qkv_tensor *pred, qkv_tensor *target) {
    char ps[QKV_SHAPE_STR_LEN], ts[QKV_SHAPE_STR_LEN];
    qkv_tensor_check_live(pred, "giou_loss");
    qkv_tensor_check_live(target, "giou_loss");
    qkv_shape_str(pred, ps, sizeof ps);
    qkv_shape_str(target, ts, sizeof ts);
    QKV_CHECK(pred->ndim == 2 && pred->shape[1] == 4 && qkv_same_shape(pred, target),
              "giou_loss: pred %s vs target %s: both must be [N,4]", ps, ts);
    int n = pred->shape[0];
    qkv_tensor *out = qkv_tape_tensor(tape, 1, &n);
    QKV_FOR(QKV_PARALLEL((size_t)n * BOX_WORK), schedule(static), (int i = 0; i < n; i++), {
        out->data[i] = (float)(1.0 - giou_of(pred->data + 4 * (size_t)i, target->data + 4 * (size_t)i).giou);
    });
    qkv_tensor *inputs[2] = {pred, target};
    qkv_tape_record(tape, "giou_loss", out, giou_loss_backward, 2, inputs);
    return out;
}
