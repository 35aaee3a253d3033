/* off.h — OFF meshes (the ModelNet10/40 format): a strict reader, area-uniform
 * point sampling, and the ModelNet directory loader.
 *
 * Format accepted:
 *     OFF                      keyword; the counts may follow on the same line,
 *     nv nf [ne]               also glued to it ("OFF490 518 0"); ne is ignored
 *     x y z                    nv lines, exactly three finite numbers each
 *     k i1 .. ik [colour]      nf lines, k >= 3 indices in [0, nv), then at most
 *                              four numbers (a colour) and nothing else
 * '#' starts a comment that runs to the end of its line; blank lines, spaces, tabs
 * and CR are allowed anywhere; nothing but comments may follow the last face.
 * Polygons are triangulated as fans (i1 ij ij+1). Counts are checked against the
 * file size before anything is allocated (a vertex takes at least 6 bytes, a face
 * at least 8), so allocation is bounded by the file's size whatever its bytes.
 *
 * Errors are input errors: -1 and a one-line qkv_last_error() naming the file and,
 * where there is one, the line: "chair_0001.off:3: face 7 has 2 vertices (need
 * >= 3)". Vertices and faces are numbered from 0, lines from 1. A mesh whose
 * total area is zero (or overflows) is an error too, since it cannot be sampled.
 *
 * Sampling picks a triangle by cumulative area and a uniform barycentric point on
 * it (qkv_trimesh_sample), then normalizes the cloud to the unit sphere (centroid
 * at 0, max norm 1).
 *
 * ModelNet layout: DIR/CLASS/train/ *.off and DIR/CLASS/test/ *.off; the classes
 * are DIR's subdirectories (names starting with '.' are ignored) in strcmp order,
 * and the files of a split are taken class by class, each class's files in strcmp
 * order (the ".off" suffix in any case). File k of a split (counting bad files
 * too) gets its own stream, so its cloud depends on (seed, split, k) only.
 */
#ifndef QKV_OFF_H
#define QKV_OFF_H

#include <stddef.h>
#include <stdint.h>

#include "core/rng.h"
#include "data/points.h"

/* Largest OFF file read (ModelNet40's largest is about 60 MB). */
#define QKV_OFF_MAX_BYTES ((size_t)1 << 30)

typedef struct qkv_off_mesh {
    int n_verts, n_tris;
    float *verts;       /* [n_verts, 3] */
    int32_t *tris;      /* [n_tris, 3] vertex indices */
    double *cumulative; /* [n_tris] running sum of triangle areas */
    double area;        /* total, > 0 */
} qkv_off_mesh;

/* Parses bytes[0..len) (any bytes; no terminator needed); name is used in error
 * messages only. 0, or -1 with the mesh zeroed. */
int qkv_off_parse(const char *name, const unsigned char *bytes, size_t len, qkv_off_mesh *mesh);

/* Reads and parses the file at path (at most QKV_OFF_MAX_BYTES). */
int qkv_off_read(const char *path, qkv_off_mesh *mesh);

/* Frees and zeroes; safe on a zeroed mesh and twice. */
void qkv_off_mesh_free(qkv_off_mesh *mesh);

/* n_points points uniform by area, normalized to the unit sphere: xyz [n_points, 3]. */
void qkv_off_sample(const qkv_off_mesh *mesh, int n_points, qkv_rng *rng, float *xyz);

/* Loads DIR's train and test splits with n_points points per mesh, sampled once
 * (file k of split s draws from stream (seed, s, k); s = 0 train, 1 test). Both
 * sets get the class names. Returns the number of skipped files (0 unless
 * skip_bad), or -1 with a one-line error and both sets zeroed.
 *
 * Without skip_bad, the first bad file (in the order above, train before test) is
 * the error. With skip_bad, bad files are left out and counted, and the first one's
 * message is copied into first_skipped (if not NULL, truncated to its size), so the
 * caller can say "skipped 2 bad files (first: ...)". Errors either way: DIR
 * missing or not a directory, no class directories or only one (nothing to
 * classify), a class whose train or test
 * directory is missing or holds no .off file (or only bad ones), n_points < 1. */
int qkv_modelnet_load(const char *dir, int n_points, uint64_t seed, int skip_bad,
                      qkv_point_set *train, qkv_point_set *test, char *first_skipped,
                      size_t first_skipped_size);

/* The .off files qkv_modelnet_load would read from DIR (both splits), from the
 * directory listings alone, reading no file: 0 and *files, or -1 with the error
 * the load would give. */
int qkv_modelnet_count(const char *dir, long *files);

#endif
