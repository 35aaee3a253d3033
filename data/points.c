/* points.c — synthetic point-cloud shapes and area-uniform sampling on triangle
 * meshes. See points.h for the contract.
 *
 * Every shape is a sampler that returns one point uniform by area on the base
 * surface together with its unit normal. The cloud's random per-axis scale S is
 * applied afterwards, and a linear map changes the area element by the factor
 * |det S| |S^-T n|; keeping each draw with probability |S^-1 n| * min(s) <= 1
 * makes the points uniform on the scaled surface again (the ellipsoid is the
 * sphere under a fixed stretch, corrected the same way). Geometry is computed in
 * double and stored as float.
 *
 * Cloud index of the data set (seed) draws from its own stream, split off the
 * data set's stream at counter index: scale factors, the rotation quaternion,
 * then per point the surface draws (with rejections) and three jitter normals.
 */
#include "data/points.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/mathfn.h"
#include "core/error.h"
#include "core/kernels/parallel.h"

#define PI 3.14159265358979323846

/* A rejection loop gives up after this many draws and keeps the last one. Every
 * acceptance rate here is above 1/100 (torus 0.48, helix 0.92, scale >= 1/10 with
 * the ellipsoid's 1/4 stretch), so the cap is never reached in practice. */
#define MAX_TRIES 100000

/* Rough flops per sampled point, for the parallel threshold. */
#define WORK_PER_POINT 200

typedef struct surface_point {
    double p[3]; /* on the surface */
    double n[3]; /* unit normal there (either orientation) */
} surface_point;

typedef void (*shape_sampler)(qkv_rng *rng, surface_point *out);

/* ---- small geometry helpers --------------------------------------------------- */

/* Uniform in [0, 1) with 53 random bits. */
static double uniform(qkv_rng *rng) {
    return (double)(qkv_rng_u64(rng) >> 11) * (1.0 / 9007199254740992.0);
}

static void set3(double v[3], double x, double y, double z) {
    v[0] = x;
    v[1] = y;
    v[2] = z;
}

static double norm3(const double v[3]) { return sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]); }

/* out = (b - a) x (c - a): twice the triangle's area, along its normal. */
static void triangle_cross(const double a[3], const double b[3], const double c[3], double out[3]) {
    double u[3] = {b[0] - a[0], b[1] - a[1], b[2] - a[2]};
    double v[3] = {c[0] - a[0], c[1] - a[1], c[2] - a[2]};
    set3(out, u[1] * v[2] - u[2] * v[1], u[2] * v[0] - u[0] * v[2], u[0] * v[1] - u[1] * v[0]);
}

static double triangle_area(const double a[3], const double b[3], const double c[3]) {
    double cr[3];
    triangle_cross(a, b, c, cr);
    return 0.5 * norm3(cr);
}

/* Uniform point in triangle abc: (u, v) uniform in the unit square, folded into
 * the lower triangle u + v <= 1, gives uniform barycentric coordinates. */
static void triangle_point(const double a[3], const double b[3], const double c[3], qkv_rng *rng,
                           double p[3]) {
    double u = uniform(rng), v = uniform(rng);
    if (u + v > 1.0) {
        u = 1.0 - u;
        v = 1.0 - v;
    }
    for (int k = 0; k < 3; k++) p[k] = a[k] + u * (b[k] - a[k]) + v * (c[k] - a[k]);
}

/* Index i with probability areas[i] / sum(areas). */
static int pick_by_area(qkv_rng *rng, const double *areas, int n) {
    double total = 0.0;
    for (int i = 0; i < n; i++) total += areas[i];
    double u = uniform(rng) * total;
    for (int i = 0; i < n - 1; i++) {
        if (u < areas[i]) return i;
        u -= areas[i];
    }
    return n - 1;
}

/* ---- base shapes ------------------------------------------------------------------ */

/* Disk of radius r in the plane z, normal +-z: radius r sqrt(u) is area-uniform. */
static void disk_point(qkv_rng *rng, double r, double z, surface_point *out) {
    double rho = r * sqrt(uniform(rng)), theta = 2.0 * PI * uniform(rng);
    set3(out->p, rho * qkv_math_cos(theta), rho * qkv_math_sin(theta), z);
    set3(out->n, 0.0, 0.0, 1.0);
}

/* Side of the cylinder of radius r about the z axis between z0 and z1. */
static void tube_side_point(qkv_rng *rng, double r, double z0, double z1, surface_point *out) {
    double theta = 2.0 * PI * uniform(rng), z = z0 + (z1 - z0) * uniform(rng);
    set3(out->p, r * qkv_math_cos(theta), r * qkv_math_sin(theta), z);
    set3(out->n, qkv_math_cos(theta), qkv_math_sin(theta), 0.0);
}

/* Unit sphere (Archimedes: z uniform in [-1, 1] is area-uniform). */
static void sphere(qkv_rng *rng, surface_point *out) {
    double z = 2.0 * uniform(rng) - 1.0, phi = 2.0 * PI * uniform(rng);
    double rho = sqrt(fmax(0.0, 1.0 - z * z));
    set3(out->p, rho * qkv_math_cos(phi), rho * qkv_math_sin(phi), z);
    memcpy(out->n, out->p, sizeof out->n);
}

/* Six equal faces: pick one, then a uniform point on it. */
static void cube(qkv_rng *rng, surface_point *out) {
    int face = (int)qkv_rng_below(rng, 6);
    int axis = face / 2;
    double side = face % 2 ? 1.0 : -1.0;
    for (int k = 0; k < 3; k++) {
        out->p[k] = k == axis ? side : 2.0 * uniform(rng) - 1.0;
        out->n[k] = k == axis ? 1.0 : 0.0;
    }
}

static void cylinder(qkv_rng *rng, surface_point *out) {
    const double r = 0.5, h = 2.0;
    const double areas[3] = {2.0 * PI * r * h, PI * r * r, PI * r * r};
    int part = pick_by_area(rng, areas, 3);
    if (part == 0) tube_side_point(rng, r, -h / 2, h / 2, out);
    else disk_point(rng, r, part == 1 ? h / 2 : -h / 2, out);
}

/* Apex at z = 1, base at z = -1. On the side, the distance from the apex is
 * l sqrt(u) (the circumference grows linearly with it). */
static void cone(qkv_rng *rng, surface_point *out) {
    const double r = 0.8, h = 2.0, slant = sqrt(r * r + h * h);
    const double areas[2] = {PI * r * slant, PI * r * r};
    if (pick_by_area(rng, areas, 2) == 1) {
        disk_point(rng, r, -h / 2, out);
        return;
    }
    double s = sqrt(uniform(rng)), theta = 2.0 * PI * uniform(rng);
    set3(out->p, r * s * qkv_math_cos(theta), r * s * qkv_math_sin(theta), h / 2 - h * s);
    set3(out->n, h * qkv_math_cos(theta) / slant, h * qkv_math_sin(theta) / slant, r / slant);
}

/* Area element (R + r cos v) du dv: v is drawn by rejection against R + r. */
static void torus(qkv_rng *rng, surface_point *out) {
    const double R = 1.0, r = 0.35;
    double v = 0.0;
    for (int tries = 0; tries < MAX_TRIES; tries++) {
        v = 2.0 * PI * uniform(rng);
        if (uniform(rng) * (R + r) < R + r * qkv_math_cos(v)) break;
    }
    double u = 2.0 * PI * uniform(rng);
    set3(out->p, (R + r * qkv_math_cos(v)) * qkv_math_cos(u), (R + r * qkv_math_cos(v)) * qkv_math_sin(u), r * qkv_math_sin(v));
    set3(out->n, qkv_math_cos(v) * qkv_math_cos(u), qkv_math_cos(v) * qkv_math_sin(u), qkv_math_sin(v));
}

/* Square base of side 2 at z = -0.75, apex at z = 0.75: four sides and the base
 * (two triangles), picked by area. */
static void pyramid(qkv_rng *rng, surface_point *out) {
    static const double corner[4][3] = {{-1, -1, -0.75}, {1, -1, -0.75}, {1, 1, -0.75}, {-1, 1, -0.75}};
    static const double apex[3] = {0, 0, 0.75};
    const double *tri[6][3];
    double areas[6];
    for (int k = 0; k < 4; k++) {
        tri[k][0] = corner[k];
        tri[k][1] = corner[(k + 1) % 4];
        tri[k][2] = apex;
    }
    for (int k = 0; k < 2; k++) {
        tri[4 + k][0] = corner[0];
        tri[4 + k][1] = corner[1 + k];
        tri[4 + k][2] = corner[2 + k];
    }
    for (int t = 0; t < 6; t++) areas[t] = triangle_area(tri[t][0], tri[t][1], tri[t][2]);
    int t = pick_by_area(rng, areas, 6);
    triangle_point(tri[t][0], tri[t][1], tri[t][2], rng, out->p);
    triangle_cross(tri[t][0], tri[t][1], tri[t][2], out->n);
    double len = norm3(out->n);
    for (int k = 0; k < 3; k++) out->n[k] /= len;
}

/* Cylinder side of length 1.2 and two hemispheres, radius 0.5. */
static void capsule(qkv_rng *rng, surface_point *out) {
    const double r = 0.5, half = 0.6;
    const double areas[2] = {2.0 * PI * r * 2.0 * half, 4.0 * PI * r * r};
    if (pick_by_area(rng, areas, 2) == 0) {
        tube_side_point(rng, r, -half, half, out);
        return;
    }
    sphere(rng, out);
    double shift = out->p[2] >= 0.0 ? half : -half;
    for (int k = 0; k < 3; k++) out->p[k] *= r;
    out->p[2] += shift;
}

static void disk(qkv_rng *rng, surface_point *out) { disk_point(rng, 1.0, 0.0, out); }

/* Tube of radius a around gamma(t) = (R cos t, R sin t, c t - 1), t in [0, 6 pi].
 * Arc length is proportional to t. With N the principal normal (towards the axis)
 * and B the binormal, the tube point at angle phi is gamma + a (cos phi N +
 * sin phi B), and its area element is a (1 - kappa a cos phi) ds dphi, kappa =
 * R / (R^2 + c^2): phi is drawn by rejection against 1 + kappa a. */
static void helix(qkv_rng *rng, surface_point *out) {
    const double R = 0.7, a = 0.06, t_max = 6.0 * PI, c = 2.0 / t_max;
    const double speed = sqrt(R * R + c * c), kappa = R / (speed * speed);
    double phi = 0.0;
    for (int tries = 0; tries < MAX_TRIES; tries++) {
        phi = 2.0 * PI * uniform(rng);
        if (uniform(rng) * (1.0 + kappa * a) < 1.0 - kappa * a * qkv_math_cos(phi)) break;
    }
    double t = t_max * uniform(rng);
    double N[3] = {-qkv_math_cos(t), -qkv_math_sin(t), 0.0};
    double B[3] = {c * qkv_math_sin(t) / speed, -c * qkv_math_cos(t) / speed, R / speed};
    double center[3] = {R * qkv_math_cos(t), R * qkv_math_sin(t), c * t - 1.0};
    for (int k = 0; k < 3; k++) {
        out->n[k] = qkv_math_cos(phi) * N[k] + qkv_math_sin(phi) * B[k];
        out->p[k] = center[k] + a * out->n[k];
    }
}

typedef struct shape {
    const char *name;
    shape_sampler sample;
    double stretch[3]; /* fixed per-axis factor before the random scale */
} shape;

static const shape shapes[] = {
    {"sphere", sphere, {1, 1, 1}},     {"cube", cube, {1, 1, 1}},
    {"cylinder", cylinder, {1, 1, 1}}, {"cone", cone, {1, 1, 1}},
    {"torus", torus, {1, 1, 1}},       {"pyramid", pyramid, {1, 1, 1}},
    {"ellipsoid", sphere, {1, 0.5, 0.25}}, {"capsule", capsule, {1, 1, 1}},
    {"disk", disk, {1, 1, 1}},         {"helix", helix, {1, 1, 1}},
};
#define SHAPE_COUNT ((int)(sizeof shapes / sizeof shapes[0]))

int qkv_points_class_count_max(void) { return SHAPE_COUNT; }

const char *qkv_points_class_name(int c) {
    QKV_CHECK(c >= 0 && c < SHAPE_COUNT, "qkv_points_class_name: class %d: must be in [0, %d)", c,
              SHAPE_COUNT);
    return shapes[c].name;
}

/* ---- one cloud ------------------------------------------------------------------------ */

/* A point uniform by area on diag(s) * shape: a base draw is kept with probability
 * |n / s| * min(s), the scaled surface's relative area element. */
static void scaled_surface_point(const shape *sh, const double s[3], qkv_rng *rng, double p[3]) {
    double s_min = fmin(s[0], fmin(s[1], s[2]));
    surface_point sp;
    for (int tries = 0; tries < MAX_TRIES; tries++) {
        sh->sample(rng, &sp);
        double inv_n[3] = {sp.n[0] / s[0], sp.n[1] / s[1], sp.n[2] / s[2]};
        if (uniform(rng) < norm3(inv_n) * s_min) break;
    }
    for (int k = 0; k < 3; k++) p[k] = sp.p[k] * s[k];
}

/* Rotation matrix of a random unit quaternion (four normals, normalized): uniform
 * on SO(3). */
static void random_rotation(qkv_rng *rng, double m[3][3]) {
    double q[4], len = 0.0;
    for (int k = 0; k < 4; k++) {
        q[k] = qkv_rng_normal(rng);
        len += q[k] * q[k];
    }
    len = sqrt(len);
    if (len < 1e-12) { /* four near-zero normals: never in practice */
        q[0] = len = 1.0;
        q[1] = q[2] = q[3] = 0.0;
    }
    double w = q[0] / len, x = q[1] / len, y = q[2] / len, z = q[3] / len;
    set3(m[0], 1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y));
    set3(m[1], 2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x));
    set3(m[2], 2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y));
}

/* Rotation by a uniform angle about the z (up) axis. */
static void random_z_rotation(qkv_rng *rng, double m[3][3]) {
    double a = 2.0 * PI * uniform(rng), c = qkv_math_cos(a), s = qkv_math_sin(a);
    set3(m[0], c, -s, 0);
    set3(m[1], s, c, 0);
    set3(m[2], 0, 0, 1);
}

static void make_cloud(const qkv_points_config *config, int c, qkv_rng *rng, float *xyz) {
    const shape *sh = &shapes[c];
    double s[3], rot[3][3] = {{1, 0, 0}, {0, 1, 0}, {0, 0, 1}};
    for (int k = 0; k < 3; k++)
        s[k] = sh->stretch[k] *
               (config->scale_min + (config->scale_max - config->scale_min) * uniform(rng));
    if (config->rotate == QKV_ROTATE_SO3) random_rotation(rng, rot);
    if (config->rotate == QKV_ROTATE_Z) random_z_rotation(rng, rot);
    for (int i = 0; i < config->n_points; i++) {
        double p[3];
        scaled_surface_point(sh, s, rng, p);
        for (int r = 0; r < 3; r++) {
            double rotated = rot[r][0] * p[0] + rot[r][1] * p[1] + rot[r][2] * p[2];
            xyz[3 * i + r] = (float)(rotated + (double)config->jitter * qkv_rng_normal(rng));
        }
    }
    qkv_points_normalize(xyz, config->n_points);
}

/* ---- data sets ------------------------------------------------------------------------- */

qkv_points_config qkv_points_config_default(int classes, int n_points) {
    qkv_points_config config = {classes, n_points, 0.01f, 0.7f, 1.3f, 1};
    return config;
}

static void check_config(const char *fn, const qkv_points_config *config) {
    QKV_CHECK(config != NULL, "%s: config is NULL", fn);
    QKV_CHECK(config->classes >= 2 && config->classes <= SHAPE_COUNT,
              "%s: classes %d: must be in [2, %d]", fn, config->classes, SHAPE_COUNT);
    QKV_CHECK(config->n_points >= 1, "%s: n_points %d: must be >= 1", fn, config->n_points);
    QKV_CHECK(isfinite(config->jitter) && config->jitter >= 0.0f,
              "%s: jitter %g: must be finite and >= 0", fn, (double)config->jitter);
    QKV_CHECK(isfinite(config->scale_min) && isfinite(config->scale_max) &&
                  config->scale_min > 0.0f && config->scale_min <= config->scale_max &&
                  config->scale_max <= 10.0f * config->scale_min,
              "%s: scale [%g, %g]: need 0 < scale_min <= scale_max <= 10 scale_min", fn,
              (double)config->scale_min, (double)config->scale_max);
    QKV_CHECK(config->rotate >= QKV_ROTATE_NONE && config->rotate <= QKV_ROTATE_Z,
              "%s: rotate %d: must be 0 (none), 1 (SO(3)) or 2 (about z)", fn, config->rotate);
}

static int32_t label_of(const qkv_points_config *config, uint64_t index) {
    return (int32_t)(index % (uint64_t)config->classes);
}

void qkv_points_example(const qkv_points_config *config, uint64_t seed, uint64_t index,
                        float *xyz, int32_t *label) {
    check_config("qkv_points_example", config);
    QKV_CHECK(xyz != NULL && label != NULL, "qkv_points_example: xyz or label is NULL");
    qkv_rng rng = qkv_rng_split_at(qkv_rng_make(seed), index);
    *label = label_of(config, index);
    make_cloud(config, *label, &rng, xyz);
}

void qkv_points_batch(const qkv_points_config *config, uint64_t seed, uint64_t first, int n,
                      float *xyz, int32_t *labels) {
    check_config("qkv_points_batch", config);
    QKV_CHECK(n >= 1, "qkv_points_batch: n %d: must be >= 1", n);
    QKV_CHECK(xyz != NULL && labels != NULL, "qkv_points_batch: xyz or labels is NULL");
    size_t cloud = (size_t)config->n_points * 3;
#pragma omp parallel for if (QKV_PARALLEL((size_t)n * config->n_points * WORK_PER_POINT)) schedule(static)
    for (int b = 0; b < n; b++) {
        uint64_t index = first + (uint64_t)b;
        qkv_rng rng = qkv_rng_split_at(qkv_rng_make(seed), index);
        labels[b] = label_of(config, index);
        make_cloud(config, labels[b], &rng, xyz + (size_t)b * cloud);
    }
}

int qkv_points_piece(int n_points) {
    QKV_CHECK(n_points >= 1, "qkv_points_piece: %d points", n_points);
    return n_points >= QKV_POINTS_PIECE_POINTS ? 1 : QKV_POINTS_PIECE_POINTS / n_points;
}

typedef struct set_piece {
    const qkv_points_config *config;
    uint64_t seed;
    float *xyz;
    int32_t *labels;
} set_piece;

static void make_set_piece(void *ctx, long first, long n) {
    const set_piece *p = ctx;
    size_t cloud = (size_t)p->config->n_points * 3;
    qkv_points_batch(p->config, p->seed, (uint64_t)first, (int)n, p->xyz + (size_t)first * cloud, p->labels + first);
}

int qkv_points_make_set(const qkv_points_config *config, uint64_t seed, int n, float *xyz, int32_t *labels,
                        qkv_data_stop stop) {
    check_config("qkv_points_make_set", config);
    set_piece p = {config, seed, xyz, labels};
    return qkv_data_pieces(n, qkv_points_piece(config->n_points), make_set_piece, &p, stop);
}

void qkv_points_normalize(float *xyz, int n_points) {
    QKV_CHECK(xyz != NULL && n_points >= 1, "qkv_points_normalize: %d points", n_points);
    double centroid[3] = {0, 0, 0}, max_norm = 0.0;
    for (int i = 0; i < n_points; i++)
        for (int k = 0; k < 3; k++) centroid[k] += xyz[3 * i + k];
    for (int k = 0; k < 3; k++) centroid[k] /= n_points;
    for (int i = 0; i < n_points; i++) {
        double d[3] = {xyz[3 * i] - centroid[0], xyz[3 * i + 1] - centroid[1],
                       xyz[3 * i + 2] - centroid[2]};
        double norm = norm3(d);
        if (norm > max_norm) max_norm = norm; /* if, not fmax: GCC 12 (aarch64) ICEs vectorizing an fmax reduction */
    }
    double scale = max_norm > 0.0 ? 1.0 / max_norm : 0.0;
    for (int i = 0; i < n_points; i++)
        for (int k = 0; k < 3; k++) xyz[3 * i + k] = (float)((xyz[3 * i + k] - centroid[k]) * scale);
}

/* ---- triangle meshes ---------------------------------------------------------------------- */

static void corners_of(const float *verts, const int32_t *tri, double a[3], double b[3],
                       double c[3]) {
    for (int k = 0; k < 3; k++) {
        a[k] = verts[3 * (size_t)tri[0] + k];
        b[k] = verts[3 * (size_t)tri[1] + k];
        c[k] = verts[3 * (size_t)tri[2] + k];
    }
}

double qkv_trimesh_cumulative_area(const float *verts, const int32_t *tris, int n_tris,
                                   double *cumulative) {
    QKV_CHECK(verts && tris && cumulative && n_tris >= 1,
              "qkv_trimesh_cumulative_area: %d triangles", n_tris);
    double total = 0.0;
    for (int t = 0; t < n_tris; t++) {
        double a[3], b[3], c[3];
        corners_of(verts, tris + 3 * (size_t)t, a, b, c);
        total += triangle_area(a, b, c);
        cumulative[t] = total;
    }
    return total;
}

/* The first triangle whose cumulative area exceeds u (u < total): its area is > 0. */
static int find_triangle(const double *cumulative, int n_tris, double u) {
    int lo = 0, hi = n_tris - 1;
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (cumulative[mid] > u) hi = mid;
        else lo = mid + 1;
    }
    return lo;
}

void qkv_trimesh_sample(const float *verts, const int32_t *tris, const double *cumulative,
                        int n_tris, int n_points, qkv_rng *rng, float *xyz) {
    QKV_CHECK(verts && tris && cumulative && rng && xyz && n_tris >= 1 && n_points >= 0,
              "qkv_trimesh_sample: %d triangles, %d points", n_tris, n_points);
    double total = cumulative[n_tris - 1];
    QKV_CHECK(total > 0.0 && isfinite(total), "qkv_trimesh_sample: total area %g: must be > 0",
              total);
    for (int i = 0; i < n_points; i++) {
        double u = uniform(rng) * total;
        if (u >= total) u = nextafter(total, 0.0); /* rounding of uniform * total */
        int t = find_triangle(cumulative, n_tris, u);
        double a[3], b[3], c[3], p[3];
        corners_of(verts, tris + 3 * (size_t)t, a, b, c);
        triangle_point(a, b, c, rng, p);
        for (int k = 0; k < 3; k++) xyz[3 * i + k] = (float)p[k];
    }
}

/* ---- point sets ---------------------------------------------------------------------------- */

void qkv_point_set_free(qkv_point_set *set) {
    if (!set) return;
    free(set->xyz);
    free(set->labels);
    if (set->class_names)
        for (int c = 0; c < set->classes; c++) free(set->class_names[c]);
    free(set->class_names);
    memset(set, 0, sizeof *set);
}
