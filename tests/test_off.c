/* test_off.c — the OFF reader, area-uniform sampling on meshes and the ModelNet
 * loader.
 *
 * A small ModelNet tree (a tetrahedron, a cube with quad faces, the glued
 * "OFF8 6 0" header, comments, CRLF and colours) is written to a scratch directory
 * and loaded: labels, class names, points on the mesh surfaces, determinism in the
 * seed and across thread counts. Then every kind of malformed file must fail with
 * its file name and line, the loader's directory errors and --skip-bad counting,
 * the area-proportional choice of triangles, and a mutation loop over valid bytes
 * that must never crash (also run under -fsanitize=address,undefined).
 */
#include "tests/test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "data/off.h"
#include "data/points.h"

static const char tetra_off[] =
    "OFF\n"
    "# a tetrahedron: faces x = 0, y = 0, z = 0 and x + y + z = 1\n"
    "4 4 6\n"
    "0 0 0\n1 0 0\n0 1 0\n0 0 1\n"
    "3 0 2 1\n3 0 1 3\n3 0 3 2\n3 1 2 3\n";

static const char cube_off[] =
    "OFF\n"
    "8 6 0\n"
    "-1 -1 -1\n1 -1 -1\n1 1 -1\n-1 1 -1\n-1 -1 1\n1 -1 1\n1 1 1\n-1 1 1\n"
    "4 0 3 2 1\n4 4 5 6 7\n4 0 1 5 4\n4 1 2 6 5\n4 2 3 7 6\n4 3 0 4 7\n";

/* The same cube: counts glued to the keyword, comments, blank lines, CRLF, tabs,
 * colours after some faces, no final newline. */
static const char glued_cube_off[] =
    "# written by some exporter\r\n"
    "OFF8 6 0\r\n"
    "\r\n"
    "-1 -1 -1   # corner 0\r\n1 -1 -1\r\n1 1 -1\r\n-1 1 -1\r\n"
    "\t-1 -1 1\r\n1 -1 1\r\n1.0 1e0 +1\r\n-1 1 1\r\n"
    "# faces\n"
    "4 0 3 2 1 255 0 0\n4 4 5 6 7\n4 0 1 5 4 0.5 0.5 0.5 1\n4 1 2 6 5\n4 2 3 7 6\n4 3 0 4 7";

/* ---- scratch tree --------------------------------------------------------------- */

static void make_dir(const char *relative) {
    const char *path = scratch_file(relative);
    ck_assert_msg(mkdir(path, 0755) == 0, "mkdir %s failed", path);
}

static void write_text(const char *relative, const char *text) {
    write_file_bytes(scratch_file(relative), text, strlen(text));
}

/* DIR = scratch_dir/mn: cube/{train/a.off, train/b.off, test/c.off} and
 * tetra/{train/t1.off, test/t2.off}, plus things the loader must ignore. */
static void write_tree(void) {
    const char *dirs[] = {"mn", "mn/cube", "mn/cube/train", "mn/cube/test", "mn/tetra",
                          "mn/tetra/train", "mn/tetra/test", "mn/.hidden"};
    for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++) make_dir(dirs[i]);
    write_text("mn/cube/train/b.off", glued_cube_off);
    write_text("mn/cube/train/a.off", cube_off);
    write_text("mn/cube/train/notes.txt", "not a mesh");
    write_text("mn/cube/test/c.OFF", cube_off);
    write_text("mn/tetra/train/t1.off", tetra_off);
    write_text("mn/tetra/test/t2.off", tetra_off);
    write_text("mn/README", "a file beside the classes");
}

static const char *tree(void) {
    static char path[128];
    snprintf(path, sizeof path, "%s/mn", scratch_dir);
    return path;
}

/* ---- geometry checks -------------------------------------------------------------- */

static void cloud_extent(const float *xyz, int n, float lo[3], float hi[3]) {
    for (int k = 0; k < 3; k++) lo[k] = INFINITY, hi[k] = -INFINITY;
    for (int i = 0; i < n; i++)
        for (int k = 0; k < 3; k++) {
            lo[k] = fminf(lo[k], xyz[3 * i + k]);
            hi[k] = fmaxf(hi[k], xyz[3 * i + k]);
        }
}

/* A normalized cube: equal extents, and every point has a coordinate at its
 * axis's lo or hi (the faces, moved and scaled by the normalization). */
static void assert_on_cube(const float *xyz, int n) {
    float lo[3], hi[3];
    cloud_extent(xyz, n, lo, hi);
    for (int k = 1; k < 3; k++) ck_assert_float_eq_tol(hi[k] - lo[k], hi[0] - lo[0], 1e-2);
    for (int i = 0; i < n; i++) {
        int on_face = 0;
        for (int k = 0; k < 3; k++)
            on_face |= fabsf(xyz[3 * i + k] - lo[k]) < 1e-5f || fabsf(xyz[3 * i + k] - hi[k]) < 1e-5f;
        ck_assert_msg(on_face, "point %d is on no cube face", i);
    }
}

/* The tetrahedron's faces x = 0, y = 0, z = 0, x + y + z = 1 become, after
 * centering and scaling, x = min x, y = min y, z = min z and x + y + z = its max. */
static void assert_on_tetrahedron(const float *xyz, int n) {
    float lo[3], hi[3], sum_max = -INFINITY;
    cloud_extent(xyz, n, lo, hi);
    for (int i = 0; i < n; i++) sum_max = fmaxf(sum_max, xyz[3 * i] + xyz[3 * i + 1] + xyz[3 * i + 2]);
    for (int i = 0; i < n; i++) {
        const float *p = xyz + 3 * i;
        int on_face = fabsf(p[0] + p[1] + p[2] - sum_max) < 1e-5f;
        for (int k = 0; k < 3; k++) on_face |= fabsf(p[k] - lo[k]) < 1e-5f;
        ck_assert_msg(on_face, "point %d is on no tetrahedron face", i);
    }
}

static void assert_normalized(const float *xyz, int n) {
    assert_all_finite(xyz, (size_t)n * 3, "cloud");
    double max_norm = 0, centroid[3] = {0, 0, 0};
    for (int i = 0; i < n; i++) {
        const float *p = xyz + 3 * i;
        max_norm = fmax(max_norm, sqrt((double)p[0] * p[0] + (double)p[1] * p[1] + (double)p[2] * p[2]));
        for (int k = 0; k < 3; k++) centroid[k] += p[k] / (double)n;
    }
    ck_assert_msg(fabs(max_norm - 1.0) < 1e-5, "max norm %.9g", max_norm);
    for (int k = 0; k < 3; k++) ck_assert_msg(fabs(centroid[k]) < 1e-5, "centroid %g", centroid[k]);
}

/* ---- the tree ---------------------------------------------------------------------- */

enum { P = 2000 };

START_TEST(modelnet_tree_loads) {
    write_tree();
    qkv_point_set train, test;
    char first[256] = "untouched";
    ck_assert_int_eq(qkv_modelnet_load(tree(), P, 1, 0, &train, &test, first, sizeof first), 0);
    ck_assert_str_eq(first, "");
    ck_assert_int_eq(train.count, 3);
    ck_assert_int_eq(test.count, 2);
    const int32_t train_labels[] = {0, 0, 1}, test_labels[] = {0, 1};
    for (int s = 0; s < 2; s++) {
        qkv_point_set *set = s ? &test : &train;
        ck_assert_int_eq(set->classes, 2);
        ck_assert_int_eq(set->n_points, P);
        ck_assert_str_eq(set->class_names[0], "cube");
        ck_assert_str_eq(set->class_names[1], "tetra");
        ck_assert_int_eq(memcmp(set->labels, s ? test_labels : train_labels,
                                (size_t)set->count * sizeof(int32_t)), 0);
        for (int i = 0; i < set->count; i++) {
            const float *cloud = set->xyz + (size_t)i * P * 3;
            assert_normalized(cloud, P);
            if (set->labels[i] == 0) assert_on_cube(cloud, P);
            else assert_on_tetrahedron(cloud, P);
        }
    }
    /* a.off and b.off are the same cube, sampled from different streams. */
    ck_assert(memcmp(train.xyz, train.xyz + P * 3, P * 3 * sizeof(float)) != 0);
    qkv_point_set_free(&train);
    qkv_point_set_free(&test);
    qkv_point_set_free(&train); /* twice is safe */
}
END_TEST

static void load_tree(float *out, void *ctx) {
    uint64_t seed = *(const uint64_t *)ctx;
    qkv_point_set train, test;
    ck_assert_int_eq(qkv_modelnet_load(tree(), 100, seed, 0, &train, &test, NULL, 0), 0);
    memcpy(out, train.xyz, sizeof(float) * 3 * 100 * 3);
    memcpy(out + 3 * 100 * 3, test.xyz, sizeof(float) * 2 * 100 * 3);
    qkv_point_set_free(&train);
    qkv_point_set_free(&test);
}

START_TEST(modelnet_load_is_deterministic) {
    write_tree();
    enum { N = 5 * 100 * 3 };
    float first[N], again[N], other[N];
    uint64_t seed = 7, other_seed = 8;
    load_tree(first, &seed);
    load_tree(again, &seed);
    load_tree(other, &other_seed);
    ck_assert_int_eq(memcmp(first, again, sizeof first), 0);
    ck_assert(memcmp(first, other, sizeof first) != 0);
    expect_same_for_1_and_2_threads(load_tree, &seed, N, "qkv_modelnet_load");
}
END_TEST

/* The glued header, comments, CRLF and colours change nothing: the same stream
 * gives the same points as the plain file. */
START_TEST(glued_header_parses_like_the_plain_file) {
    qkv_off_mesh plain, glued;
    ck_assert_int_eq(qkv_off_parse("plain", (const unsigned char *)cube_off, strlen(cube_off), &plain), 0);
    ck_assert_int_eq(qkv_off_parse("glued", (const unsigned char *)glued_cube_off,
                                   strlen(glued_cube_off), &glued), 0);
    ck_assert_int_eq(plain.n_verts, 8);
    ck_assert_int_eq(plain.n_tris, 12);
    ck_assert_int_eq(glued.n_tris, 12);
    ck_assert_double_eq_tol(plain.area, 24.0, 1e-9);
    ck_assert_int_eq(memcmp(plain.verts, glued.verts, 8 * 3 * sizeof(float)), 0);
    ck_assert_int_eq(memcmp(plain.tris, glued.tris, 12 * 3 * sizeof(int32_t)), 0);
    qkv_off_mesh_free(&plain);
    qkv_off_mesh_free(&glued);
    qkv_off_mesh_free(&glued);
}
END_TEST

/* Two triangles in the planes z = 0 (area 0.5) and z = 4 (area 1.5): a quarter of
 * the points land on the first. */
START_TEST(triangles_are_picked_by_area) {
    static const char two[] = "OFF\n6 2 0\n0 0 0\n1 0 0\n0 1 0\n0 0 4\n3 0 4\n0 1 4\n3 0 1 2\n3 3 4 5\n";
    enum { N = 40000 };
    qkv_off_mesh mesh;
    ck_assert_int_eq(qkv_off_parse("two.off", (const unsigned char *)two, strlen(two), &mesh), 0);
    float *xyz = malloc(sizeof(float) * N * 3), lo[3], hi[3];
    qkv_rng rng = qkv_rng_make(3);
    qkv_off_sample(&mesh, N, &rng, xyz);
    assert_normalized(xyz, N);
    cloud_extent(xyz, N, lo, hi);
    int low = 0;
    for (int i = 0; i < N; i++) {
        float z = xyz[3 * i + 2];
        ck_assert(fabsf(z - lo[2]) < 1e-5f || fabsf(z - hi[2]) < 1e-5f);
        low += fabsf(z - lo[2]) < 1e-5f;
    }
    ck_assert_msg(fabs((double)low / N - 0.25) < 0.01, "fraction on the small triangle %.4f",
                  (double)low / N);
    free(xyz);
    qkv_off_mesh_free(&mesh);
}
END_TEST

/* ---- malformed files ---------------------------------------------------------------- */

typedef struct bad_case {
    const char *text;
    size_t len;
    const char *where;  /* after the file name: ":LINE:" or ": " */
    const char *reason;
} bad_case;

#define V4 "0 0 0\n1 0 0\n0 1 0\n0 0 1\n"
/* Long lines, so that the counts fit the file size and the end comes early. */
#define V2_LONG "0.000000 0.000000 0.000000\n1.000000 0.000000 0.000000\n"
#define BAD(text, where, reason) {text, sizeof(text) - 1, where, reason}
static const bad_case bad_cases[] = {
    BAD("", ":1:", "empty file"),
    BAD("# only a comment\n\n", ":3:", "expected 'OFF'"),
    BAD("COFF\n4 1 0\n" V4 "3 0 1 2\n", ":1:", "expected 'OFF', found 'COFF'"),
    BAD("OFFX 4 1 0\n" V4 "3 0 1 2\n", ":1:", "expected 'OFF'"),
    BAD("OFF\n", ":2:", "missing vertex and face counts"),
    BAD("OFF\n4\n" V4, ":2:", "missing face count"),
    BAD("OFF\n-4 1 0\n" V4 "3 0 1 2\n", ":2:", "vertex count -4 is negative"),
    BAD("OFF\n4 -1 0\n" V4, ":2:", "face count -1 is negative"),
    BAD("OFF\nfour 1 0\n" V4, ":2:", "vertex count 'four' is not a number"),
    BAD("OFF\n4 1 0 9\n" V4 "3 0 1 2\n", ":2:", "counts: trailing '9'"),
    BAD("OFF1000000 1 0\n" V4 "3 0 1 2\n", ":1:", "cannot fit"),
    BAD("OFF\n4 99999999999 0\n" V4, ":2:", "face count 99999999999 is too large"),
    BAD("OFF\n4 1 0\n0 0 0\n1 nan 0\n0 1 0\n0 0 1\n3 0 1 2\n", ":4:", "vertex 1: coordinate 'nan' is not a finite float"),
    BAD("OFF\n4 1 0\n0 0 0\n1 0 0\ninf 1 0\n0 0 1\n3 0 1 2\n", ":5:", "vertex 2: coordinate 'inf'"),
    BAD("OFF\n4 1 0\n0 0 0\n1 0 0\n0 1 1e39\n0 0 1\n3 0 1 2\n", ":5:", "'1e39' is not a finite float"),
    BAD("OFF\n4 1 0\n0 0 0\n1 0 0\n0 1\n0 0 1\n3 0 1 2\n", ":5:", "vertex 2 has 2 coordinates (need 3)"),
    BAD("OFF\n4 1 0\n0 0 0 0\n1 0 0\n0 1 0\n0 0 1\n3 0 1 2\n", ":3:", "vertex 0: trailing '0'"),
    BAD("OFF\n4 1 0\n0 0 0\n1 x 0\n0 1 0\n0 0 1\n3 0 1 2\n", ":4:", "coordinate 'x'"),
    BAD("OFF\n4 2 0\n" V2_LONG, ":5:", "unexpected end of file: 2 of 4 vertices read"),
    BAD("OFF\n4 2 0\n" V4 "3 0 1 2\n", ":8:", "unexpected end of file: 1 of 2 faces read"),
    BAD("OFF\n4 2 0\n" V4 "3 0 1 2\n2 0 1\n", ":8:", "face 1 has 2 vertices (need >= 3)"),
    BAD("OFF\n4 1 0\n" V4 "-3 0 1 2\n", ":7:", "face 0: vertex count -3 is negative"),
    BAD("OFF\n4 1 0\n" V4 "3 0 1 4\n", ":7:", "face 0: index 4 out of range [0, 4)"),
    BAD("OFF\n4 1 0\n" V4 "3 0 -1 2\n", ":7:", "face 0: index -1 out of range"),
    BAD("OFF\n4 1 0\n" V4 "3 0 1.5 2\n", ":7:", "index '1.5' is not a number"),
    BAD("OFF\n4 1 0\n" V4 "4 0 1 2\n", ":7:", "face 0 has 3 of its 4 vertex indices"),
    BAD("OFF\n4 1 0\n" V4 "3 0 1 2 red\n", ":7:", "colour value 'red' is not a number"),
    BAD("OFF\n4 1 0\n" V4 "3 0 1 2 1 1 1 1 1\n", ":7:", "face 0: trailing '1'"),
    BAD("OFF\n4 1 0\n" V4 "3 0 1 2\n3 0 1 3\n", ":8:", "unexpected '3' after the last face"),
    BAD("OFF\n4 1 0\n0 0 0\n1 1 1\n2 2 2\n3 3 3\n4 0 1 2 3\n", ": ", "zero total area"),
    BAD("OFF\n4 0 0\n" V4, ": ", "no faces"),
    BAD("OFF\n4 1 0\n0 0\0 0\n1 0 0\n0 1 0\n0 0 1\n3 0 1 2\n", ":3:", "vertex 0: coordinate '0?'"),
};

/* Writes text[0..len) and expects qkv_off_read to fail with
 * "<path><where>...<reason>". */
static void expect_bad_file(const char *text, size_t len, const char *where, const char *reason) {
    const char *path = scratch_file("bad.off");
    write_file_bytes(path, text, len);
    qkv_off_mesh mesh;
    int status = qkv_off_read(path, &mesh);
    ck_assert_msg(status == -1, "accepted a file that needs \"%s\"", reason);
    ck_assert_ptr_null(mesh.verts);
    char prefix[300];
    snprintf(prefix, sizeof prefix, "%s%s", path, where);
    expect_last_error(prefix, reason);
}

START_TEST(malformed_files_name_file_and_line) {
    for (size_t i = 0; i < sizeof bad_cases / sizeof bad_cases[0]; i++) {
        const bad_case *c = &bad_cases[i];
        expect_bad_file(c->text, c->len, c->where, c->reason);
    }
}
END_TEST

START_TEST(loader_directory_errors) {
    qkv_point_set train, test;
    const char *missing = scratch_file("missing");
    ck_assert_int_eq(qkv_modelnet_load(missing, 10, 0, 0, &train, &test, NULL, 0), -1);
    expect_last_error(missing, "cannot open directory");
    ck_assert_ptr_null(train.xyz);

    make_dir("empty");
    write_text("empty/file.off", cube_off);
    ck_assert_int_eq(qkv_modelnet_load(scratch_file("empty"), 10, 0, 0, &train, &test, NULL, 0), -1);
    expect_last_error(scratch_file("empty"), "no class subdirectories");

    write_tree();
    ck_assert_int_eq(qkv_modelnet_load(tree(), 0, 0, 0, &train, &test, NULL, 0), -1);
    expect_last_error(tree(), "n_points 0");

    make_dir("mn/zebra");
    make_dir("mn/zebra/train");
    write_text("mn/zebra/train/z.off", tetra_off);
    ck_assert_int_eq(qkv_modelnet_load(tree(), 10, 0, 0, &train, &test, NULL, 0), -1);
    expect_last_error("mn/zebra/test", "cannot open directory");
    ck_assert_ptr_null(train.xyz);
    ck_assert_ptr_null(test.xyz);

    make_dir("mn/zebra/test");
    ck_assert_int_eq(qkv_modelnet_load(tree(), 10, 0, 0, &train, &test, NULL, 0), -1);
    expect_last_error("mn/zebra/test", "no .off files");

    /* A link to nowhere is an unreadable file, never skipped silently. */
    ck_assert_int_eq(symlink(scratch_file("nowhere.off"), scratch_file("mn/zebra/test/gone.off")), 0);
    ck_assert_int_eq(qkv_modelnet_load(tree(), 10, 0, 0, &train, &test, NULL, 0), -1);
    expect_last_error("mn/zebra/test/gone.off", "");
}
END_TEST

START_TEST(bad_files_stop_the_load_or_are_skipped_and_counted) {
    write_tree();
    /* Replaced by a good file first: the clouds every file gets when none is bad. */
    write_text("mn/cube/train/a2.off", cube_off);
    write_text("mn/tetra/test/t0.off", tetra_off);
    qkv_point_set train, test, train_all, test_all;
    ck_assert_int_eq(qkv_modelnet_load(tree(), 50, 0, 0, &train_all, &test_all, NULL, 0), 0);
    ck_assert_int_eq(train_all.count, 4);
    ck_assert_int_eq(test_all.count, 3);

    write_text("mn/cube/train/a2.off", "OFF\n4 2 0\n" V2_LONG V2_LONG "3 0 1 2\n"); /* truncated */
    write_text("mn/tetra/test/t0.off", "OFF\n4 1 0\n" V4 "2 0 1\n");               /* 2 vertices */
    char first[256];
    ck_assert_int_eq(qkv_modelnet_load(tree(), 50, 0, 0, &train, &test, first, sizeof first), -1);
    expect_last_error("mn/cube/train/a2.off:8:", "unexpected end of file: 1 of 2 faces read");
    ck_assert_ptr_null(train.xyz);

    int skipped = qkv_modelnet_load(tree(), 50, 0, 1, &train, &test, first, sizeof first);
    ck_assert_int_eq(skipped, 2);
    ck_assert_msg(strstr(first, "mn/cube/train/a2.off:8: unexpected end of file") != NULL,
                  "first skipped: %s", first);
    ck_assert_int_eq(train.count, 3);
    ck_assert_int_eq(test.count, 2);
    /* The good files keep their clouds: file k of a split draws from stream k,
     * bad files counted, so train = all but cloud 1 (a2.off), and test = all but
     * cloud 1 (t0.off, between c.OFF and t2.off). */
    size_t cloud = sizeof(float) * 50 * 3;
    ck_assert_int_eq(memcmp(train.xyz, train_all.xyz, cloud), 0);
    ck_assert_int_eq(memcmp(train.xyz + 50 * 3, train_all.xyz + 2 * 50 * 3, 2 * cloud), 0);
    ck_assert_int_eq(memcmp(test.xyz, test_all.xyz, cloud), 0);
    ck_assert_int_eq(memcmp(test.xyz + 50 * 3, test_all.xyz + 2 * 50 * 3, cloud), 0);
    qkv_point_set_free(&train_all);
    qkv_point_set_free(&test_all);
    qkv_point_set_free(&train);
    qkv_point_set_free(&test);

    /* A class whose only file is bad is an error even with skip_bad. */
    write_text("mn/tetra/train/t1.off", "OFF\n");
    ck_assert_int_eq(qkv_modelnet_load(tree(), 50, 0, 1, &train, &test, first, sizeof first), -1);
    expect_last_error("mn/tetra/train", "no readable .off files");
}
END_TEST

/* ---- never crash ---------------------------------------------------------------------- */

/* One random edit of buf[0..*len) (room for cap bytes): flip, insert or delete a
 * byte, insert a token that parsers trip on, duplicate or cut a span, truncate. */
static void mutate(unsigned char *buf, size_t *len, size_t cap, qkv_rng *rng) {
    static const char *const tokens[] = {"-", "#", "\n", " ", "nan", "1e999", "99999999999",
                                         "OFF", "\0", "0", "-1", "3", "\r", "0x1p3", "4294967296"};
    size_t n = *len, at = n ? qkv_rng_below(rng, (uint32_t)n) : 0;
    switch (qkv_rng_below(rng, 6)) {
    case 0:
        if (n) buf[at] = (unsigned char)qkv_rng_below(rng, 256);
        break;
    case 1: {
        const char *t = tokens[qkv_rng_below(rng, sizeof tokens / sizeof tokens[0])];
        size_t tl = t[0] ? strlen(t) : 1;
        if (n + tl > cap) break;
        memmove(buf + at + tl, buf + at, n - at);
        memcpy(buf + at, t, tl);
        *len = n + tl;
        break;
    }
    case 2:
        if (n) {
            size_t span = 1 + qkv_rng_below(rng, 8);
            if (span > n - at) span = n - at;
            memmove(buf + at, buf + at + span, n - at - span);
            *len = n - span;
        }
        break;
    case 3: {
        size_t span = 1 + qkv_rng_below(rng, 16);
        if (span > n - at) span = n - at;
        if (n + span > cap || !n) break;
        memmove(buf + at + span, buf + at, n - at);
        *len = n + span;
        break;
    }
    case 4:
        *len = at;
        break;
    default:
        if (n) buf[at] = "0123456789 -\n#."[qkv_rng_below(rng, 15)];
        break;
    }
}

/* A parsed mesh is consistent: indices in range, finite vertices, positive area. */
static void assert_mesh_sane(const qkv_off_mesh *mesh) {
    ck_assert(mesh->n_tris >= 1 && mesh->area > 0 && isfinite(mesh->area));
    for (int i = 0; i < 3 * mesh->n_tris; i++)
        ck_assert(mesh->tris[i] >= 0 && mesh->tris[i] < mesh->n_verts);
    assert_all_finite(mesh->verts, (size_t)mesh->n_verts * 3, "vertices");
}

START_TEST(mutated_files_never_crash) {
    enum { MUTATIONS = 4000, CAP = 1024 };
    const char *sources[] = {glued_cube_off, tetra_off};
    qkv_rng rng = qkv_rng_make(2024);
    unsigned char *buf = malloc(CAP);
    float xyz[16 * 3];
    int accepted = 0;
    for (int m = 0; m < MUTATIONS; m++) {
        const char *src = sources[m % 2];
        size_t len = strlen(src);
        memcpy(buf, src, len);
        for (int edits = 1 + (int)qkv_rng_below(&rng, 4); edits > 0; edits--) mutate(buf, &len, CAP, &rng);
        /* An exact-size copy, so a read past len is caught by the sanitizer. */
        unsigned char *exact = malloc(len ? len : 1);
        memcpy(exact, buf, len);
        qkv_off_mesh mesh;
        if (qkv_off_parse("mutant.off", exact, len, &mesh) == 0) {
            assert_mesh_sane(&mesh);
            qkv_off_sample(&mesh, 16, &rng, xyz);
            assert_all_finite(xyz, 16 * 3, "mutant points");
            qkv_off_mesh_free(&mesh);
            accepted++;
        } else {
            ck_assert_ptr_null(mesh.verts);
            expect_last_error("mutant.off", "");
        }
        free(exact);
    }
    /* Both outcomes happen: the loop exercises the parser, not just its first check. */
    ck_assert_int_gt(accepted, MUTATIONS / 50);
    ck_assert_int_lt(accepted, MUTATIONS - MUTATIONS / 50);
    free(buf);
}
END_TEST

Suite *suite_off(void) {
    Suite *s = suite_create("off");
    TCase *tc = tcase_create("off");
    tcase_add_checked_fixture(tc, scratch_dir_create, scratch_dir_remove);
    tcase_add_test(tc, modelnet_tree_loads);
    tcase_add_test(tc, modelnet_load_is_deterministic);
    tcase_add_test(tc, glued_header_parses_like_the_plain_file);
    tcase_add_test(tc, triangles_are_picked_by_area);
    tcase_add_test(tc, malformed_files_name_file_and_line);
    tcase_add_test(tc, loader_directory_errors);
    tcase_add_test(tc, bad_files_stop_the_load_or_are_skipped_and_counted);
    tcase_add_test(tc, mutated_files_never_crash);
    suite_add_tcase(s, tc);
    return s;
}
