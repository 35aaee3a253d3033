/* points.h — synthetic point clouds of 10 shape classes, area-uniform sampling on
 * triangle meshes, and the point-set container that the mesh loader fills.
 *
 * Shapes (class id, name, base size before the random transform):
 *   0 sphere    radius 1
 *   1 cube      side 2
 *   2 cylinder  radius 0.5, height 2, with both caps
 *   3 cone      base radius 0.8, height 2, with the base
 *   4 torus     major radius 1, tube radius 0.35
 *   5 pyramid   square base of side 2, height 1.5, with the base
 *   6 ellipsoid semi-axes 1, 0.5, 0.25
 *   7 capsule   radius 0.5, straight part 1.2 long, hemispherical caps
 *   8 disk      flat disk of radius 1 (no thickness)
 *   9 helix     thin tube (radius 0.06) around a helix of radius 0.7, height 2, 3 turns
 *
 * A cloud is made in four steps:
 *   1. per-axis scale factors s drawn uniformly from [scale_min, scale_max];
 *   2. n_points drawn uniformly by area on the scaled surface diag(s) * shape
 *      (cube faces, caps and bases picked in proportion to their area; the torus and
 *      the helix tube use their true area element by rejection on the tube angle;
 *      the scaling's change of area, |det S| |S^-T n| for unit normal n, is
 *      corrected by rejection too, so density stays uniform on the scaled surface);
 *   3. a random rotation: uniform on SO(3) (a random unit quaternion), or about the
 *      z (up) axis by a uniform angle, or none (see qkv_points_rotation);
 *      then Gaussian jitter of standard deviation jitter on every coordinate;
 *   4. qkv_points_normalize: centered at the centroid, max norm 1.
 *
 * Data sets. Cloud index of a data set with seed s is a pure function of
 * (config, s, index): it draws from its own stream (the index-th split of the
 * data set's stream, as in data/sequence.c), so training step t can generate its
 * batch on the fly, a resumed run sees the same clouds, and train and test sets
 * built from different seeds never share a stream. The label of cloud index is
 * index % classes (not drawn): any classes consecutive indices hold each class
 * once, so batches are balanced.
 *
 * Invalid configs and arguments are programmer errors and stop through qkv_fatal
 * naming the function and the field.
 */
#ifndef QKV_POINTS_H
#define QKV_POINTS_H

#include <stdint.h>

#include "core/rng.h"
#include "data/pieces.h"

/* QKV_ROTATE_Z is ModelNet's usual augmentation (objects keep their up axis);
 * QKV_ROTATE_SO3 asks the model to learn full 3-D rotation invariance. */
enum qkv_points_rotation { QKV_ROTATE_NONE = 0, QKV_ROTATE_SO3 = 1, QKV_ROTATE_Z = 2 };

typedef struct qkv_points_config {
    int classes;                /* 2 .. qkv_points_class_count_max() */
    int n_points;               /* points per cloud, >= 1 */
    float jitter;               /* std of the Gaussian noise, >= 0 (base shapes span ~2) */
    float scale_min, scale_max; /* per-axis factors, 0 < min <= max <= 10 min */
    int rotate;                 /* enum qkv_points_rotation */
} qkv_points_config;

/* The defaults: jitter 0.01, scale [0.7, 1.3], rotate 1. */
qkv_points_config qkv_points_config_default(int classes, int n_points);

int qkv_points_class_count_max(void);
/* "sphere", "cube", ...; stops on a class outside [0, class_count_max). */
const char *qkv_points_class_name(int c);

/* Cloud index of the data set (seed): xyz [n_points, 3], *label its class. */
void qkv_points_example(const qkv_points_config *config, uint64_t seed, uint64_t index,
                        float *xyz, int32_t *label);

/* Clouds first .. first+n-1: xyz [n, n_points, 3], labels [n]. Clouds are made in
 * parallel, each by one thread, so the result does not depend on the thread count. */
void qkv_points_batch(const qkv_points_config *config, uint64_t seed, uint64_t first, int n,
                      float *xyz, int32_t *labels);

/* A held-out set is made in pieces (data/pieces.h) of about this many points
 * (at least one cloud): a few tens of milliseconds on one core, so that a
 * signal is answered well within a second even for clouds of 2^20 points. */
#define QKV_POINTS_PIECE_POINTS (1 << 18)
/* Clouds per piece for clouds of n_points. */
int qkv_points_piece(int n_points);

/* Clouds 0 .. n-1 of the data set (seed), the same bits as qkv_points_batch,
 * made qkv_points_piece(n_points) clouds at a time with stop asked between two
 * pieces: 0, or stop's nonzero answer (the clouds are then partly made). */
int qkv_points_make_set(const qkv_points_config *config, uint64_t seed, int n, float *xyz, int32_t *labels,
                        qkv_data_stop stop);

/* Centers xyz [n_points, 3] at its centroid and scales it so that the largest point
 * norm is 1 (computed in double). A cloud whose points all coincide becomes zeros. */
void qkv_points_normalize(float *xyz, int n_points);

/* ---- area-uniform sampling on a triangle mesh ------------------------------------- */

/* cumulative[t] = area of triangles 0..t (in double); returns the total area.
 * tris [n_tris, 3] holds vertex indices into verts [*, 3]; the caller has checked
 * them. n_tris >= 1. */
double qkv_trimesh_cumulative_area(const float *verts, const int32_t *tris, int n_tris,
                                   double *cumulative);

/* n_points points uniform by area: a triangle picked by cumulative area (binary
 * search, so zero-area triangles are never picked), then uniform barycentric
 * coordinates. Needs a total area > 0. Not normalized. */
void qkv_trimesh_sample(const float *verts, const int32_t *tris, const double *cumulative,
                        int n_tris, int n_points, qkv_rng *rng, float *xyz);

/* ---- a loaded set of clouds --------------------------------------------------------- */

typedef struct qkv_point_set {
    int count;          /* clouds */
    int n_points;       /* points per cloud */
    int classes;
    float *xyz;         /* [count, n_points, 3] */
    int32_t *labels;    /* [count], in [0, classes) */
    char **class_names; /* [classes], owned */
} qkv_point_set;

/* Frees everything and zeroes the struct; safe on a zeroed struct and twice. */
void qkv_point_set_free(qkv_point_set *set);

#endif
