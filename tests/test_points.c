/* test_points.c — the synthetic point clouds and the max-regression toy.
 *
 * Clouds: shapes, label range and order, finite points, unit-sphere normalization,
 * determinism in (seed, index) and across thread counts, a nearest-centroid
 * classifier on rotation-invariant statistics that tells every class apart, and
 * area-uniformity checks on untransformed shapes (sphere heights, cube faces, the
 * cylinder's caps, the torus's area element, the anisotropic-scale correction).
 * Max regression: sizes, value range, targets, padding and mask, determinism.
 */
#include "tests/test_util.h"

#include <stdlib.h>

#include "data/points.h"
#include "data/maxreg.h"

enum { SPHERE, CUBE, CYLINDER, CONE, TORUS, PYRAMID, ELLIPSOID, CAPSULE, DISK, HELIX };

/* A config that keeps the shape as it is: no scale, rotation or jitter. */
static qkv_points_config plain_config(int n_points) {
    qkv_points_config config = qkv_points_config_default(10, n_points);
    config.jitter = 0.0f;
    config.scale_min = config.scale_max = 1.0f;
    config.rotate = 0;
    return config;
}

/* Cloud of class c from config (classes 10): the first index with that label. */
static float *cloud_of_class(const qkv_points_config *config, int c, uint64_t seed) {
    float *xyz = malloc((size_t)config->n_points * 3 * sizeof *xyz);
    int32_t label;
    qkv_points_example(config, seed, (uint64_t)c, xyz, &label);
    ck_assert_int_eq(label, c);
    return xyz;
}

/* ---- statistics ----------------------------------------------------------------- */

/* Eigenvalues of the symmetric 3x3 matrix a (destroyed), largest first (Jacobi). */
static void eigenvalues3(double a[3][3], double ev[3]) {
    for (int sweep = 0; sweep < 30; sweep++)
        for (int p = 0; p < 2; p++)
            for (int q = p + 1; q < 3; q++) {
                if (fabs(a[p][q]) < 1e-300) continue;
                double th = 0.5 * atan2(2 * a[p][q], a[q][q] - a[p][p]), c = cos(th), s = sin(th);
                for (int k = 0; k < 3; k++) {
                    double x = a[k][p], y = a[k][q];
                    a[k][p] = c * x - s * y;
                    a[k][q] = s * x + c * y;
                }
                for (int k = 0; k < 3; k++) {
                    double x = a[p][k], y = a[q][k];
                    a[p][k] = c * x - s * y;
                    a[q][k] = s * x + c * y;
                }
            }
    for (int k = 0; k < 3; k++) ev[k] = a[k][k];
    for (int i = 0; i < 3; i++)
        for (int j = i + 1; j < 3; j++)
            if (ev[j] > ev[i]) {
                double t = ev[i];
                ev[i] = ev[j];
                ev[j] = t;
            }
}

/* Sorted eigenvalues of the (second-moment) covariance of a centered cloud. */
static void covariance_eigenvalues(const float *xyz, int n, double ev[3]) {
    double cov[3][3] = {{0}};
    for (int i = 0; i < n; i++)
        for (int a = 0; a < 3; a++)
            for (int b = 0; b < 3; b++) cov[a][b] += (double)xyz[3 * i + a] * xyz[3 * i + b] / n;
    eigenvalues3(cov, ev);
}

enum { NORM_BINS = 10, FEATURES = 3 + NORM_BINS };

/* Rotation-invariant statistics: covariance eigenvalues (weighted up) and the
 * histogram of point norms. */
static void cloud_features(const float *xyz, int n, double f[FEATURES]) {
    covariance_eigenvalues(xyz, n, f);
    for (int k = 0; k < 3; k++) f[k] *= 3.0;
    for (int b = 0; b < NORM_BINS; b++) f[3 + b] = 0.0;
    for (int i = 0; i < n; i++) {
        const float *p = xyz + 3 * i;
        int bin = (int)(NORM_BINS * sqrt(p[0] * p[0] + p[1] * p[1] + p[2] * p[2]));
        f[3 + (bin < NORM_BINS ? bin : NORM_BINS - 1)] += 1.0 / n;
    }
}

/* ---- shapes, labels, normalization ------------------------------------------------ */

START_TEST(class_names_and_count) {
    ck_assert_int_ge(qkv_points_class_count_max(), 10);
    const char *expected[] = {"sphere", "cube", "cylinder", "cone", "torus",
                              "pyramid", "ellipsoid", "capsule", "disk", "helix"};
    for (int c = 0; c < 10; c++) ck_assert_str_eq(qkv_points_class_name(c), expected[c]);
}
END_TEST

START_TEST(labels_cycle_and_clouds_are_normalized) {
    enum { N = 23, P = 300 };
    for (int classes = 2; classes <= 10; classes += 4) {
        qkv_points_config config = qkv_points_config_default(classes, P);
        float *xyz = malloc(sizeof(float) * N * P * 3);
        int32_t labels[N];
        qkv_points_batch(&config, 5, 1000, N, xyz, labels);
        assert_all_finite(xyz, (size_t)N * P * 3, "batch points");
        for (int b = 0; b < N; b++) {
            ck_assert_int_eq(labels[b], (1000 + b) % classes);
            double centroid[3] = {0, 0, 0}, max_norm = 0;
            for (int i = 0; i < P; i++) {
                const float *p = xyz + ((size_t)b * P + i) * 3;
                for (int k = 0; k < 3; k++) centroid[k] += p[k] / (double)P;
                max_norm = fmax(max_norm, sqrt((double)p[0] * p[0] + (double)p[1] * p[1] + (double)p[2] * p[2]));
            }
            ck_assert_msg(fabs(max_norm - 1.0) <= 1e-5, "cloud %d: max norm %.9g", b, max_norm);
            for (int k = 0; k < 3; k++)
                ck_assert_msg(fabs(centroid[k]) <= 1e-5, "cloud %d: centroid[%d] = %g", b, k, centroid[k]);
        }
        free(xyz);
    }
}
END_TEST

START_TEST(examples_are_a_function_of_seed_and_index) {
    enum { N = 12, P = 64 };
    qkv_points_config config = qkv_points_config_default(10, P);
    float batch[N * P * 3], shifted[(N - 3) * P * 3], one[P * 3], other[P * 3];
    int32_t labels[N], shifted_labels[N - 3], label;
    qkv_points_batch(&config, 9, 40, N, batch, labels);
    qkv_points_batch(&config, 9, 43, N - 3, shifted, shifted_labels);
    ck_assert_int_eq(memcmp(batch + 3 * P * 3, shifted, sizeof shifted), 0);
    ck_assert_int_eq(memcmp(labels + 3, shifted_labels, sizeof shifted_labels), 0);
    for (int b = 0; b < N; b++) {
        qkv_points_example(&config, 9, 40 + (uint64_t)b, one, &label);
        ck_assert_int_eq(label, labels[b]);
        ck_assert_msg(memcmp(one, batch + b * P * 3, sizeof one) == 0, "cloud %d differs", b);
        /* Another seed, or a neighbouring index of the same class, differs. */
        qkv_points_example(&config, 10, 40 + (uint64_t)b, other, &label);
        ck_assert(memcmp(one, other, sizeof one) != 0);
        qkv_points_example(&config, 9, 50 + (uint64_t)b, other, &label);
        ck_assert_int_eq(label, labels[b]);
        ck_assert(memcmp(one, other, sizeof one) != 0);
    }
}
END_TEST

static void make_points_batch(float *out, void *ctx) {
    (void)ctx;
    qkv_points_config config = qkv_points_config_default(10, 256);
    int32_t labels[20];
    qkv_points_batch(&config, 77, 3, 20, out, labels);
}

START_TEST(batch_is_thread_independent) {
    expect_same_for_1_and_2_threads(make_points_batch, NULL, 20 * 256 * 3, "qkv_points_batch");
}
END_TEST

/* A nearest-centroid classifier on rotation-invariant statistics, fitted on one
 * seed and scored on another: every class must be recognized well above chance
 * (1 in 10), so no two classes are the same shape in disguise. */
START_TEST(classes_are_told_apart_by_simple_statistics) {
    enum { PER_CLASS = 40, P = 512, C = 10 };
    qkv_points_config config = qkv_points_config_default(C, P);
    float *xyz = malloc(sizeof(float) * P * 3);
    double centroid[C][FEATURES] = {{0}}, f[FEATURES];
    int32_t label;
    for (int i = 0; i < PER_CLASS * C; i++) {
        qkv_points_example(&config, 1, (uint64_t)i, xyz, &label);
        cloud_features(xyz, P, f);
        for (int k = 0; k < FEATURES; k++) centroid[label][k] += f[k] / PER_CLASS;
    }
    int correct[C] = {0};
    for (int i = 0; i < PER_CLASS * C; i++) {
        qkv_points_example(&config, 2, (uint64_t)i, xyz, &label);
        cloud_features(xyz, P, f);
        int best = 0;
        double best_dist = INFINITY;
        for (int c = 0; c < C; c++) {
            double d = 0;
            for (int k = 0; k < FEATURES; k++) d += (f[k] - centroid[c][k]) * (f[k] - centroid[c][k]);
            if (d < best_dist) best_dist = d, best = c;
        }
        correct[label] += best == label;
    }
    int total = 0;
    for (int c = 0; c < C; c++) {
        ck_assert_msg(correct[c] >= PER_CLASS * 3 / 10, "%s: only %d of %d recognized",
                      qkv_points_class_name(c), correct[c], PER_CLASS);
        total += correct[c];
    }
    ck_assert_msg(total >= PER_CLASS * C * 6 / 10, "accuracy %d of %d", total, PER_CLASS * C);
    free(xyz);
}
END_TEST

/* The disk is planar (smallest covariance eigenvalue ~ jitter^2) and the sphere is
 * not; both under the default random scale, rotation and jitter. */
START_TEST(disk_is_flat_and_sphere_is_round) {
    qkv_points_config config = qkv_points_config_default(10, 1000);
    for (int rep = 0; rep < 5; rep++) {
        double disk_ev[3], sphere_ev[3];
        float *disk = cloud_of_class(&config, DISK, 100 + rep);
        float *sphere = cloud_of_class(&config, SPHERE, 100 + rep);
        covariance_eigenvalues(disk, 1000, disk_ev);
        covariance_eigenvalues(sphere, 1000, sphere_ev);
        ck_assert_msg(disk_ev[2] < 1e-3 && disk_ev[1] > 0.1, "disk eigenvalues %g %g %g",
                      disk_ev[0], disk_ev[1], disk_ev[2]);
        ck_assert_msg(sphere_ev[2] > 0.08, "sphere eigenvalues %g %g %g", sphere_ev[0],
                      sphere_ev[1], sphere_ev[2]);
        free(disk);
        free(sphere);
    }
}
END_TEST

/* ---- uniformity on untransformed shapes -------------------------------------------- */

/* Archimedes: a sphere's heights are uniform in [-1, 1]. */
START_TEST(sphere_heights_are_uniform) {
    enum { P = 20000, BINS = 10 };
    qkv_points_config config = plain_config(P);
    float *xyz = cloud_of_class(&config, SPHERE, 3);
    int counts[BINS] = {0};
    for (int i = 0; i < P; i++) {
        int bin = (int)((xyz[3 * i + 2] + 1.0f) * 0.5f * BINS);
        counts[bin < 0 ? 0 : bin >= BINS ? BINS - 1 : bin]++;
    }
    for (int b = 0; b < BINS; b++) /* expected 2000, binomial std ~42 */
        ck_assert_msg(abs(counts[b] - P / BINS) < 200, "height bin %d has %d points", b, counts[b]);
    free(xyz);
}
END_TEST

/* Which face of an axis-aligned box each point lies on: the axis where it touches
 * the cloud's extent (lo or hi), as face = 2 axis + (hi); -1 if none. */
static int box_face(const float *p, const float lo[3], const float hi[3]) {
    for (int k = 0; k < 3; k++) {
        if (fabsf(p[k] - lo[k]) <= 1e-5f) return 2 * k;
        if (fabsf(p[k] - hi[k]) <= 1e-5f) return 2 * k + 1;
    }
    return -1;
}

static void extent(const float *xyz, int n, float lo[3], float hi[3]) {
    for (int k = 0; k < 3; k++) lo[k] = INFINITY, hi[k] = -INFINITY;
    for (int i = 0; i < n; i++)
        for (int k = 0; k < 3; k++) lo[k] = fminf(lo[k], xyz[3 * i + k]), hi[k] = fmaxf(hi[k], xyz[3 * i + k]);
}

/* Cube points lie on the faces, in proportion to the faces' areas: equal for the
 * plain cube; s_j s_k for the face across axis i under a random anisotropic scale
 * (the scale's area correction at work). */
START_TEST(cube_points_lie_on_faces_by_area) {
    enum { P = 30000 };
    for (int scaled = 0; scaled <= 1; scaled++) {
        qkv_points_config config = plain_config(P);
        if (scaled) config.scale_min = 0.4f, config.scale_max = 2.0f;
        float *xyz = cloud_of_class(&config, CUBE, 11), lo[3], hi[3];
        extent(xyz, P, lo, hi);
        int counts[6] = {0};
        for (int i = 0; i < P; i++) {
            int face = box_face(xyz + 3 * i, lo, hi);
            ck_assert_msg(face >= 0, "point %d (%g %g %g) is on no face", i, xyz[3 * i],
                          xyz[3 * i + 1], xyz[3 * i + 2]);
            counts[face]++;
        }
        double side[3], area[3], total = 0;
        for (int k = 0; k < 3; k++) side[k] = hi[k] - lo[k];
        for (int k = 0; k < 3; k++) total += 2 * (area[k] = side[(k + 1) % 3] * side[(k + 2) % 3]);
        if (scaled) ck_assert(fmax(side[0], fmax(side[1], side[2])) > 1.3 * fmin(side[0], fmin(side[1], side[2])));
        for (int f = 0; f < 6; f++) {
            double expected = area[f / 2] / total, got = (double)counts[f] / P;
            ck_assert_msg(fabs(got - expected) < 0.01, "scaled %d face %d: fraction %.4f, area %.4f",
                          scaled, f, got, expected);
        }
        free(xyz);
    }
}
END_TEST

/* Cylinder (radius 0.5, height 2): the caps hold 2 pi r^2 / (2 pi r^2 + 2 pi r h)
 * = 0.2 of the area. Cap points sit at the extreme heights. */
START_TEST(cylinder_caps_by_area) {
    enum { P = 20000 };
    qkv_points_config config = plain_config(P);
    float *xyz = cloud_of_class(&config, CYLINDER, 4), lo[3], hi[3];
    extent(xyz, P, lo, hi);
    int on_caps = 0;
    for (int i = 0; i < P; i++) {
        float z = xyz[3 * i + 2];
        on_caps += fabsf(z - lo[2]) <= 1e-5f || fabsf(z - hi[2]) <= 1e-5f;
    }
    ck_assert_msg(fabs((double)on_caps / P - 0.2) < 0.01, "cap fraction %.4f", (double)on_caps / P);
    free(xyz);
}
END_TEST

/* Torus (R 1, r 0.35): the outer half (distance from the axis > R) has area
 * pi R + 2 r out of 2 pi R, 0.611, not the 0.5 of a uniform tube angle. */
START_TEST(torus_uses_its_area_element) {
    enum { P = 20000 };
    qkv_points_config config = plain_config(P);
    float *xyz = cloud_of_class(&config, TORUS, 6);
    double rho_min = INFINITY, rho_max = 0;
    for (int i = 0; i < P; i++) {
        double rho = hypot(xyz[3 * i], xyz[3 * i + 1]);
        rho_min = fmin(rho_min, rho), rho_max = fmax(rho_max, rho);
    }
    double middle = 0.5 * (rho_min + rho_max); /* R, scaled */
    int outer = 0;
    for (int i = 0; i < P; i++) outer += hypot(xyz[3 * i], xyz[3 * i + 1]) > middle;
    double expected = (M_PI + 0.7) / (2 * M_PI);
    ck_assert_msg(fabs((double)outer / P - expected) < 0.015, "outer fraction %.4f, expected %.4f",
                  (double)outer / P, expected);
    ck_assert_msg(fabs(rho_min / rho_max - 0.65 / 1.35) < 0.01, "radii %g %g", rho_min, rho_max);
    free(xyz);
}
END_TEST

/* Helix: a thin tube, so every point is between R - a and R + a from the axis. */
START_TEST(helix_is_a_thin_tube) {
    enum { P = 5000 };
    qkv_points_config config = plain_config(P);
    float *xyz = cloud_of_class(&config, HELIX, 8), lo[3], hi[3];
    double rho_min = INFINITY, rho_max = 0;
    for (int i = 0; i < P; i++) {
        double rho = hypot(xyz[3 * i], xyz[3 * i + 1]);
        rho_min = fmin(rho_min, rho), rho_max = fmax(rho_max, rho);
    }
    ck_assert_msg(rho_min / rho_max > 0.6 / 0.78, "radii %g %g", rho_min, rho_max);
    extent(xyz, P, lo, hi);
    ck_assert(hi[2] - lo[2] > 1.2 * (hi[0] - lo[0]));
    free(xyz);
}
END_TEST

START_TEST(bad_configs_stop_naming_the_field) {
    float xyz[30];
    int32_t label;
    qkv_points_config config = qkv_points_config_default(1, 10);
    EXPECT_FATAL(qkv_points_example(&config, 0, 0, xyz, &label), "classes 1");
    config = qkv_points_config_default(11, 10);
    EXPECT_FATAL(qkv_points_batch(&config, 0, 0, 1, xyz, &label), "classes 11");
    config = qkv_points_config_default(4, 0);
    EXPECT_FATAL(qkv_points_example(&config, 0, 0, xyz, &label), "n_points 0");
    config = qkv_points_config_default(4, 10);
    config.jitter = -1.0f;
    EXPECT_FATAL(qkv_points_example(&config, 0, 0, xyz, &label), "jitter");
    config.jitter = 0.0f;
    config.scale_min = 0.0f;
    EXPECT_FATAL(qkv_points_example(&config, 0, 0, xyz, &label), "scale");
    config.scale_min = 0.1f, config.scale_max = 5.0f;
    EXPECT_FATAL(qkv_points_example(&config, 0, 0, xyz, &label), "scale");
    config = qkv_points_config_default(4, 10);
    EXPECT_FATAL(qkv_points_batch(&config, 0, 0, 0, xyz, &label), "n 0");
    EXPECT_FATAL(qkv_points_class_name(10), "class 10");
}
END_TEST

/* ---- max regression ----------------------------------------------------------------- */

START_TEST(maxreg_batches_hold_sets_and_their_maxima) {
    enum { N = 500, W = 10 };
    qkv_maxreg_config config = qkv_maxreg_config_default();
    float *x = malloc(sizeof(float) * N * W), *mask = malloc(sizeof(float) * N * W), targets[N];
    int32_t sizes[N];
    int seen[W + 1] = {0};
    qkv_maxreg_batch(&config, 3, 0, N, x, mask, targets, sizes);
    for (int b = 0; b < N; b++) {
        ck_assert_int_ge(sizes[b], 1);
        ck_assert_int_le(sizes[b], W);
        seen[sizes[b]]++;
        float best = -1.0f;
        for (int i = 0; i < W; i++) {
            float v = x[b * W + i], m = mask[b * W + i];
            if (i < sizes[b]) {
                ck_assert(m == 1.0f);
                ck_assert_msg(v >= 0.0f && v < 100.0f, "value %g", (double)v);
                best = fmaxf(best, v);
            } else {
                ck_assert(m == 0.0f && v == 0.0f);
            }
        }
        ck_assert(targets[b] == best);
    }
    for (int s = 1; s <= W; s++) ck_assert_msg(seen[s] > 20, "size %d seen %d times", s, seen[s]);
    free(x);
    free(mask);
}
END_TEST

START_TEST(maxreg_is_a_function_of_seed_and_index) {
    enum { N = 16, W = 10 };
    qkv_maxreg_config config = qkv_maxreg_config_default();
    float x[N * W], mask[N * W], targets[N], one[W], target, x2[N * W], mask2[N * W], targets2[N];
    qkv_maxreg_batch(&config, 5, 100, N, x, mask, targets, NULL);
    for (int b = 0; b < N; b++) {
        int size = qkv_maxreg_example(&config, 5, 100 + (uint64_t)b, one, &target);
        ck_assert_int_eq(memcmp(one, x + b * W, sizeof one), 0);
        ck_assert(target == targets[b]);
        ck_assert(mask[b * W + size - 1] == 1.0f && (size == W || mask[b * W + size] == 0.0f));
    }
    qkv_maxreg_batch(&config, 6, 100, N, x2, mask2, targets2, NULL);
    ck_assert(memcmp(x, x2, sizeof x) != 0);
    /* A larger max_size keeps the stream layout: the size is drawn from the wider
     * range, and the values the two sets share are the same. */
    qkv_maxreg_config wide = {1, 20, 0.0f, 100.0f};
    float wide_x[20];
    for (int b = 0; b < N; b++) {
        int size = qkv_maxreg_example(&config, 5, 100 + (uint64_t)b, one, &target);
        int wide_size = qkv_maxreg_example(&wide, 5, 100 + (uint64_t)b, wide_x, &target);
        int shared = size < wide_size ? size : wide_size;
        ck_assert_int_eq(memcmp(wide_x, one, (size_t)shared * sizeof *one), 0);
    }
}
END_TEST

START_TEST(maxreg_bad_configs_stop) {
    float x[10], mask[10], target;
    qkv_maxreg_config config = {0, 10, 0.0f, 100.0f};
    EXPECT_FATAL(qkv_maxreg_example(&config, 0, 0, x, &target), "min_size 0");
    config = (qkv_maxreg_config){5, 4, 0.0f, 100.0f};
    EXPECT_FATAL(qkv_maxreg_batch(&config, 0, 0, 1, x, mask, &target, NULL), "min_size 5 > max_size 4");
    config = (qkv_maxreg_config){1, 10, 1.0f, 1.0f};
    EXPECT_FATAL(qkv_maxreg_example(&config, 0, 0, x, &target), "range");
}
END_TEST

Suite *suite_points(void) {
    Suite *s = suite_create("points");
    TCase *tc = tcase_create("points");
    tcase_add_test(tc, class_names_and_count);
    tcase_add_test(tc, labels_cycle_and_clouds_are_normalized);
    tcase_add_test(tc, examples_are_a_function_of_seed_and_index);
    tcase_add_test(tc, batch_is_thread_independent);
    tcase_add_test(tc, classes_are_told_apart_by_simple_statistics);
    tcase_add_test(tc, disk_is_flat_and_sphere_is_round);
    tcase_add_test(tc, sphere_heights_are_uniform);
    tcase_add_test(tc, cube_points_lie_on_faces_by_area);
    tcase_add_test(tc, cylinder_caps_by_area);
    tcase_add_test(tc, torus_uses_its_area_element);
    tcase_add_test(tc, helix_is_a_thin_tube);
    tcase_add_test(tc, bad_configs_stop_naming_the_field);
    suite_add_tcase(s, tc);
    TCase *maxreg = tcase_create("maxreg");
    tcase_add_test(maxreg, maxreg_batches_hold_sets_and_their_maxima);
    tcase_add_test(maxreg, maxreg_is_a_function_of_seed_and_index);
    tcase_add_test(maxreg, maxreg_bad_configs_stop);
    suite_add_tcase(s, maxreg);
    return s;
}
