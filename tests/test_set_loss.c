/* test_set_loss.c — boxes and DETR's set loss: GIoU values by hand and against
 * PyTorch (ref/box_*.npy from make_box_reference.py), degenerate boxes without
 * NaN, invariance to the order of the targets, a one-query loss computed by hand,
 * empty images, the sum over decoder layers, errors, and thread independence of
 * the box op. */
#include <stdlib.h>

#include "tests/test_util.h"

START_TEST(test_giou_by_hand) {
    const float unit[4] = {0.5f, 0.5f, 1, 1};                     /* [0,1]^2 */
    struct { float b[4]; double iou, giou; } cases[] = {
        {{1.0f, 0.5f, 1, 1}, 1.0 / 3, 1.0 / 3},                   /* half overlap: I .5, U 1.5, E 1.5 */
        {{2.5f, 0.5f, 1, 1}, 0.0, -1.0 / 3},                      /* disjoint: U 2, E 3 */
        {{1.5f, 1.5f, 1, 1}, 0.0, -0.5},                          /* corners touch: U 2, E 4 */
        {{0.5f, 0.5f, 2, 2}, 0.25, 0.25},                         /* unit inside: I 1, U 4, E 4 */
        {{0.5f, 0.5f, 1, 1}, 1.0, 1.0},                           /* identical */
    };
    qkv_tape *tape = qkv_tape_create(1);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        ck_assert_close(qkv_box_iou(unit, cases[i].b), cases[i].iou, 1e-6);
        ck_assert_close(qkv_box_giou(unit, cases[i].b), cases[i].giou, 1e-6);
        ck_assert_close(qkv_box_giou(cases[i].b, unit), cases[i].giou, 1e-6);  /* symmetric */
        qkv_tensor *p = tensor_of(2, (int[]){1, 4}, unit, 0), *t = tensor_of(2, (int[]){1, 4}, cases[i].b, 0);
        ck_assert_close(qkv_giou_loss(tape, p, t)->data[0], 1.0 - cases[i].giou, 1e-6);
        qkv_tensor_free(p);
        qkv_tensor_free(t);
    }
    qkv_tape_free(tape);
}
END_TEST

static qkv_tensor *load_ref(const char *name, const char *part, int requires_grad) {
    char path[128];
    snprintf(path, sizeof path, "ref/box_%s_%s.npy", name, part);
    qkv_tensor *t = qkv_npy_load(path, requires_grad);
    ck_assert_msg(t != NULL, "%s: %s", path, qkv_last_error());
    return t;
}

static void compare_with_torch(const char *name) {
    qkv_tensor *pred = load_ref(name, "pred", 1), *target = load_ref(name, "target", 1);
    qkv_tensor *r = load_ref(name, "r", 0), *out_ref = load_ref(name, "out", 0);
    qkv_tensor *dpred = load_ref(name, "dpred", 0), *dtarget = load_ref(name, "dtarget", 0);
    qkv_tape *tape = qkv_tape_create(1);
    qkv_tensor *out = qkv_giou_loss(tape, pred, target);
    assert_floats_close(out->data, out_ref->data, out->size, 1e-6, name);
    qkv_backward_seeded(tape, out, r->data);
    assert_floats_close(pred->grad, dpred->data, pred->size, 1e-5, "dpred");
    assert_floats_close(target->grad, dtarget->data, target->size, 1e-5, "dtarget");
    qkv_tape_free(tape);
    qkv_tensor *all[] = {pred, target, r, out_ref, dpred, dtarget};
    for (int i = 0; i < 6; i++) qkv_tensor_free(all[i]);
}

START_TEST(test_giou_against_torch) {
    compare_with_torch("random");
    compare_with_torch("special");
}
END_TEST

START_TEST(test_giou_degenerate_finite) {
    const float boxes[][2][4] = {
        {{0.5f, 0.5f, 0.0f, 0.3f}, {0.5f, 0.5f, 0.2f, 0.3f}},   /* zero width, centered inside */
        {{0.5f, 0.5f, 0.3f, 0.0f}, {0.4f, 0.5f, 0.3f, 0.2f}},   /* zero height */
        {{0.5f, 0.5f, 0.0f, 0.0f}, {0.5f, 0.5f, 0.0f, 0.0f}},   /* identical points */
        {{0.3f, 0.3f, 0.0f, 0.4f}, {0.3f, 0.3f, 0.0f, 0.4f}},   /* identical zero-width */
        {{0.4f, 0.6f, 0.2f, 0.1f}, {0.4f, 0.6f, 0.2f, 0.1f}},   /* identical */
        {{0.0f, 0.0f, 0.1f, 0.1f}, {1000.f, 1000.f, 0.1f, 0.1f}}, /* far apart */
        {{0.2f, 0.2f, 0.0f, 0.0f}, {0.9f, 0.1f, 0.0f, 0.0f}},   /* two distant points */
    };
    int n = (int)(sizeof boxes / sizeof boxes[0]);
    qkv_tensor *pred = tensor_of(2, (int[]){n, 4}, NULL, 1), *target = tensor_of(2, (int[]){n, 4}, NULL, 1);
    for (int i = 0; i < n; i++) {
        memcpy(pred->data + 4 * i, boxes[i][0], sizeof boxes[i][0]);
        memcpy(target->data + 4 * i, boxes[i][1], sizeof boxes[i][1]);
        ck_assert(isfinite(qkv_box_iou(boxes[i][0], boxes[i][1])));
        ck_assert(isfinite(qkv_box_giou(boxes[i][0], boxes[i][1])));
    }
    qkv_tape *tape = qkv_tape_create(1);
    qkv_tensor *out = qkv_giou_loss(tape, pred, target);
    assert_all_finite(out->data, out->size, "giou loss");
    for (int i = 0; i < n; i++) ck_assert(out->data[i] >= 0.0f && out->data[i] <= 2.0f);
    ck_assert_float_eq_tol(out->data[4], 0.0f, 1e-5f);  /* identical: GIoU 1 */
    backward_ones(tape, out);
    assert_all_finite(pred->grad, pred->size, "dpred");
    assert_all_finite(target->grad, target->size, "dtarget");
    qkv_tape_free(tape);
    qkv_tensor_free(pred);
    qkv_tensor_free(target);
}
END_TEST

/* ---- the set loss ------------------------------------------------------------- */

enum { B = 2, N = 5, C1 = 4 };  /* 3 classes + no object */

/* logits [B,N,C1] and raw boxes [B,N,4] (sigmoid applied in loss_of) from a seed. */
typedef struct set_case {
    qkv_tensor *logits, *raw;
    int counts[B];
    int32_t classes[8];
    float boxes[8 * 4];
} set_case;

static set_case make_case(uint64_t seed) {
    set_case c;
    c.logits = random_tensor(3, (int[]){B, N, C1}, seed, 1);
    c.raw = random_tensor(3, (int[]){B, N, 4}, seed + 1, 1);
    c.counts[0] = 3;
    c.counts[1] = 2;
    qkv_rng rng = qkv_rng_make(seed + 2);
    for (int i = 0; i < 5; i++) {
        c.classes[i] = (int32_t)qkv_rng_below(&rng, C1 - 1);
        c.boxes[4 * i + 0] = 0.2f + 0.6f * qkv_rng_uniform(&rng);
        c.boxes[4 * i + 1] = 0.2f + 0.6f * qkv_rng_uniform(&rng);
        c.boxes[4 * i + 2] = 0.05f + 0.3f * qkv_rng_uniform(&rng);
        c.boxes[4 * i + 3] = 0.05f + 0.3f * qkv_rng_uniform(&rng);
    }
    return c;
}

static void free_case(set_case *c) {
    qkv_tensor_free(c->logits);
    qkv_tensor_free(c->raw);
}

/* Loss value and gradients (logits then raw boxes, appended to grads if not NULL). */
static float loss_of(set_case *c, int32_t *match, float *grads) {
    qkv_tape *tape = qkv_tape_create(1);
    qkv_tensor_zero_grad(c->logits);
    qkv_tensor_zero_grad(c->raw);
    qkv_set_targets t = {B, c->counts, c->classes, c->boxes};
    qkv_tensor *loss = qkv_set_loss(tape, c->logits, qkv_sigmoid(tape, c->raw), &t, NULL, match, NULL);
    ck_assert_ptr_nonnull(loss);
    float value = loss->data[0];
    qkv_backward(tape, loss);
    if (grads) append_floats(append_floats(grads, c->logits->grad, c->logits->size), c->raw->grad, c->raw->size);
    qkv_tape_free(tape);
    return value;
}

START_TEST(test_set_loss_target_order) {
    for (uint64_t seed = 10; seed < 15; seed++) {
        set_case c = make_case(seed);
        int32_t match[B * N], match_perm[B * N];
        float grads[B * N * (C1 + 4)], grads_perm[B * N * (C1 + 4)];
        float loss = loss_of(&c, match, grads);
        /* reverse image 0's three objects, swap image 1's two */
        const int perm[5] = {2, 1, 0, 4, 3};  /* new object i is old object perm[i] */
        set_case p = c;
        for (int i = 0; i < 5; i++) {
            p.classes[i] = c.classes[perm[i]];
            memcpy(p.boxes + 4 * i, c.boxes + 4 * perm[i], 4 * sizeof(float));
        }
        float loss_perm = loss_of(&p, match_perm, grads_perm);
        ck_assert_float_eq_tol(loss_perm, loss, 1e-6f);
        assert_floats_near(grads_perm, grads, B * N * (C1 + 4), 1e-6);
        const int first[B] = {0, 3};
        for (int b = 0; b < B; b++)
            for (int q = 0; q < N; q++) {
                int m = match[b * N + q], mp = match_perm[b * N + q];
                ck_assert_int_eq(mp < 0, m < 0);
                if (m >= 0) ck_assert_int_eq(perm[first[b] + mp], first[b] + m);
            }
        free_case(&c);
    }
}
END_TEST

START_TEST(test_set_loss_by_hand) {
    /* one image, 2 queries, 1 class + no object, one object of class 0 */
    qkv_tape *tape = qkv_tape_create(1);
    const float lg[4] = {2.0f, 0.0f, 0.0f, 1.0f};
    const float bx[8] = {0.5f, 0.5f, 0.2f, 0.2f, 0.1f, 0.1f, 0.1f, 0.1f};
    qkv_tensor *logits = tensor_of(3, (int[]){1, 2, 2}, lg, 1), *boxes = tensor_of(3, (int[]){1, 2, 4}, bx, 1);
    const int counts[1] = {1};
    const int32_t classes[1] = {0};
    const float target[4] = {0.55f, 0.5f, 0.2f, 0.3f};
    qkv_set_targets t = {1, counts, classes, target};
    int32_t match[2];
    qkv_set_loss_terms terms;
    qkv_tensor *loss = qkv_set_loss(tape, logits, boxes, &t, NULL, match, &terms);
    ck_assert_int_eq(match[0], 0);
    ck_assert_int_eq(match[1], -1);
    double ce0 = log(1 + exp(-2.0));        /* query 0, class 0 */
    double ce1 = log(1 + exp(-1.0));        /* query 1, no object, weight 0.1 */
    double ce = (ce0 + 0.1 * ce1) / 1.1;
    double l1 = 0.05 + 0.0 + 0.0 + 0.1;
    double giou = 3.0 / 7 - 1.0 / 15; /* by hand: intersection 0.03, union 0.07, enclosing 0.075 */
    ck_assert_close(qkv_box_giou(bx, target), giou, 1e-6);
    ck_assert_close(terms.ce->data[0], ce, 1e-6);
    ck_assert_close(terms.bbox->data[0], 5 * l1, 1e-6);
    ck_assert_close(terms.giou->data[0], 2 * (1 - giou), 1e-6);
    ck_assert_close(loss->data[0], ce + 5 * l1 + 2 * (1 - giou), 1e-6);
    qkv_backward(tape, loss);
    /* unmatched query's box gets no gradient; its logits get the weighted CE's */
    for (int k = 4; k < 8; k++) ck_assert_float_eq(boxes->grad[k], 0.0f);
    double p_obj1 = 1 / (1 + exp(-1.0));   /* query 1: softmax of (0, 1)[no object] */
    ck_assert_close(logits->grad[3], 0.1 / 1.1 * (p_obj1 - 1), 1e-6);
    /* matched box: 5 sign(pred - target) + 2 d(1 - GIoU), the latter from the op alone */
    qkv_tape *alone = qkv_tape_create(1);
    qkv_tensor *p = tensor_of(2, (int[]){1, 4}, bx, 1), *tt = tensor_of(2, (int[]){1, 4}, target, 0);
    backward_ones(alone, qkv_giou_loss(alone, p, tt));
    const float sign[4] = {-1, 0, 0, -1};
    for (int k = 0; k < 4; k++) ck_assert_close(boxes->grad[k], 5 * sign[k] + 2 * p->grad[k], 1e-6);
    qkv_tape_free(alone);
    qkv_tensor_free(p);
    qkv_tensor_free(tt);
    qkv_tape_free(tape);
    qkv_tensor_free(logits);
    qkv_tensor_free(boxes);
}
END_TEST

START_TEST(test_set_loss_no_objects) {
    qkv_tape *tape = qkv_tape_create(1);
    qkv_tensor *logits = random_tensor(3, (int[]){2, 3, 3}, 5, 1), *boxes = random_tensor(3, (int[]){2, 3, 4}, 6, 1);
    const int counts[2] = {0, 0};
    qkv_set_targets t = {2, counts, NULL, NULL};
    int32_t match[6];
    qkv_set_loss_terms terms;
    qkv_tensor *loss = qkv_set_loss(tape, logits, boxes, &t, NULL, match, &terms);
    for (int i = 0; i < 6; i++) ck_assert_int_eq(match[i], -1);
    ck_assert_float_eq(terms.bbox->data[0], 0.0f);
    ck_assert_float_eq(terms.giou->data[0], 0.0f);
    /* every row "no object" with the same weight: the plain mean cross-entropy */
    int32_t no_object[6] = {2, 2, 2, 2, 2, 2};
    ck_assert_close(loss->data[0], qkv_cross_entropy(tape, logits, no_object, -1, NULL)->data[0], 1e-6);
    qkv_backward(tape, loss);
    for (int i = 0; i < 24; i++) ck_assert_float_eq(boxes->grad[i], 0.0f);
    qkv_tape_free(tape);
    qkv_tensor_free(logits);
    qkv_tensor_free(boxes);
}
END_TEST

START_TEST(test_set_loss_layers_sum) {
    set_case c = make_case(30), d = make_case(40);
    qkv_tape *tape = qkv_tape_create(1);
    qkv_set_targets t = {B, c.counts, c.classes, c.boxes};
    qkv_tensor *logits[2] = {c.logits, d.logits};
    qkv_tensor *boxes[2] = {qkv_sigmoid(tape, c.raw), qkv_sigmoid(tape, d.raw)};
    int32_t match_sum[B * N], match_last[B * N];
    qkv_tensor *sum = qkv_set_loss_layers(tape, 2, logits, boxes, &t, NULL, match_sum);
    float first = qkv_set_loss(tape, logits[0], boxes[0], &t, NULL, NULL, NULL)->data[0];
    float last = qkv_set_loss(tape, logits[1], boxes[1], &t, NULL, match_last, NULL)->data[0];
    ck_assert_float_eq_tol(sum->data[0], first + last, 1e-6f);
    for (int i = 0; i < B * N; i++) ck_assert_int_eq(match_sum[i], match_last[i]);
    int32_t match_only[B * N];
    ck_assert_int_eq(qkv_set_match(tape, logits[1], boxes[1], &t, NULL, match_only), 0);
    for (int i = 0; i < B * N; i++) ck_assert_int_eq(match_only[i], match_last[i]);
    qkv_tape_free(tape);
    free_case(&c);
    free_case(&d);
}
END_TEST

START_TEST(test_set_loss_degenerate_finite) {
    /* predictions with zero width, zero height, exact copies of the targets, and
     * far-away boxes; targets with a zero-area box */
    qkv_tape *tape = qkv_tape_create(1);
    const float bx[4 * 4] = {0.5f, 0.5f, 0.0f, 0.2f, 0.3f, 0.3f, 0.2f, 0.0f,
                             0.7f, 0.7f, 0.1f, 0.1f, 50.0f, -50.0f, 0.1f, 0.1f};
    qkv_tensor *logits = random_tensor(3, (int[]){1, 4, 3}, 8, 1), *boxes = tensor_of(3, (int[]){1, 4, 4}, bx, 1);
    const int counts[1] = {3};
    const int32_t classes[3] = {0, 1, 1};
    const float target[12] = {0.5f, 0.5f, 0.0f, 0.2f, 0.7f, 0.7f, 0.1f, 0.1f, 0.2f, 0.8f, 0.0f, 0.0f};
    qkv_set_targets t = {1, counts, classes, target};
    qkv_tensor *loss = qkv_set_loss(tape, logits, boxes, &t, NULL, NULL, NULL);
    ck_assert(isfinite(loss->data[0]));
    qkv_backward(tape, loss);
    assert_all_finite(logits->grad, logits->size, "dlogits");
    assert_all_finite(boxes->grad, boxes->size, "dboxes");
    qkv_tape_free(tape);
    qkv_tensor_free(logits);
    qkv_tensor_free(boxes);
}
END_TEST

START_TEST(test_set_loss_errors) {
    qkv_tape *tape = qkv_tape_create(1);
    qkv_tensor *logits = random_tensor(3, (int[]){1, 2, 3}, 1, 1), *boxes = random_tensor(3, (int[]){1, 2, 4}, 2, 1);
    qkv_tensor *boxes3 = random_tensor(3, (int[]){1, 3, 4}, 3, 1);
    const int three[1] = {3}, one[1] = {1};
    const int32_t classes[3] = {0, 1, 0}, bad_class[1] = {2};
    const float tb[12] = {0.5f, 0.5f, 0.1f, 0.1f, 0.5f, 0.5f, 0.1f, 0.1f, 0.5f, 0.5f, 0.1f, 0.1f};
    qkv_set_targets too_many = {1, three, classes, tb}, wrong_class = {1, one, bad_class, tb};
    qkv_set_targets ok = {1, one, classes, tb}, two_images = {2, three, classes, tb};
    EXPECT_FATAL(qkv_set_loss(tape, logits, boxes, &too_many, NULL, NULL, NULL), "image 0 has 3 objects");
    EXPECT_FATAL(qkv_set_loss(tape, logits, boxes, &wrong_class, NULL, NULL, NULL), "class 2 outside [0,2)");
    EXPECT_FATAL(qkv_set_loss(tape, logits, boxes3, &ok, NULL, NULL, NULL), "boxes [1,3,4]");
    EXPECT_FATAL(qkv_set_loss(tape, logits, boxes, &two_images, NULL, NULL, NULL), "2 images, not 1");
    EXPECT_FATAL(qkv_giou_loss(tape, logits, logits), "giou_loss: pred [1,2,3]");
    /* diverged predictions: an error, not a matching of garbage */
    boxes->data[5] = NAN;
    ck_assert_ptr_null(qkv_set_loss(tape, logits, boxes, &ok, NULL, NULL, NULL));
    ck_assert_ptr_nonnull(strstr(qkv_last_error(), "set_loss: image 0"));
    ck_assert_ptr_nonnull(strstr(qkv_last_error(), "query 1, target 0"));
    qkv_tape_free(tape);
    qkv_tensor_free(logits);
    qkv_tensor_free(boxes);
    qkv_tensor_free(boxes3);
}
END_TEST

static void giou_threads_run(float *out, void *ctx) {
    (void)ctx;
    enum { M = 4096 };
    qkv_tensor *p = random_uniform_tensor(2, (int[]){M, 4}, 71, 0.1f, 1.0f, 1);
    qkv_tensor *t = random_uniform_tensor(2, (int[]){M, 4}, 72, 0.1f, 1.0f, 1);
    qkv_tape *tape = qkv_tape_create(1);
    qkv_tensor *loss = qkv_giou_loss(tape, p, t);
    backward_random(tape, loss, 73);
    append_floats(append_floats(append_floats(out, loss->data, M), p->grad, 4 * M), t->grad, 4 * M);
    qkv_tape_free(tape);
    qkv_tensor_free(p);
    qkv_tensor_free(t);
}

/* A batch large enough for the cross-entropy's parallel loop: 128 images of 16 queries. */
static void set_loss_threads_run(float *out, void *ctx) {
    (void)ctx;
    enum { NB = 128, NQ = 16, NC = 4 };
    qkv_tensor *logits = random_tensor(3, (int[]){NB, NQ, NC}, 81, 1);
    qkv_tensor *raw = random_tensor(3, (int[]){NB, NQ, 4}, 82, 1);
    int counts[NB];
    int32_t classes[NB * 4];
    float boxes[NB * 4 * 4];
    qkv_rng rng = qkv_rng_make(83);
    int total = 0;
    for (int b = 0; b < NB; b++) {
        counts[b] = 1 + (int)qkv_rng_below(&rng, 4);
        for (int j = 0; j < counts[b]; j++, total++) {
            classes[total] = (int32_t)qkv_rng_below(&rng, NC - 1);
            for (int k = 0; k < 4; k++) boxes[4 * total + k] = 0.1f + 0.5f * qkv_rng_uniform(&rng);
        }
    }
    qkv_set_targets t = {NB, counts, classes, boxes};
    qkv_tape *tape = qkv_tape_create(1);
    qkv_tensor *loss = qkv_set_loss(tape, logits, qkv_sigmoid(tape, raw), &t, NULL, NULL, NULL);
    qkv_backward(tape, loss);
    out[0] = loss->data[0];
    append_floats(append_floats(out + 1, logits->grad, logits->size), raw->grad, raw->size);
    qkv_tape_free(tape);
    qkv_tensor_free(logits);
    qkv_tensor_free(raw);
}

START_TEST(test_set_loss_threads) {
    expect_same_for_1_and_2_threads(set_loss_threads_run, NULL, 1 + 128 * 16 * 8, "set_loss");
}
END_TEST

START_TEST(test_giou_threads) { expect_same_for_1_and_2_threads(giou_threads_run, NULL, 9 * 4096, "giou_loss"); }
END_TEST

Suite *suite_set_loss(void) {
    Suite *s = suite_create("set_loss");
    TCase *tc = tcase_create("set_loss");
    tcase_add_test(tc, test_giou_by_hand);
    tcase_add_test(tc, test_giou_against_torch);
    tcase_add_test(tc, test_giou_degenerate_finite);
    tcase_add_test(tc, test_set_loss_target_order);
    tcase_add_test(tc, test_set_loss_by_hand);
    tcase_add_test(tc, test_set_loss_no_objects);
    tcase_add_test(tc, test_set_loss_layers_sum);
    tcase_add_test(tc, test_set_loss_degenerate_finite);
    tcase_add_test(tc, test_set_loss_errors);
    tcase_add_test(tc, test_giou_threads);
    tcase_add_test(tc, test_set_loss_threads);
    suite_add_tcase(s, tc);
    return s;
}
