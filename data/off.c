/* off.c — the OFF reader, area-uniform sampling and the ModelNet loader. See off.h
 * for the contract.
 *
 * The parser walks the bytes with a cursor that knows its line: a token is a run
 * of bytes other than whitespace and '#', and never crosses a newline, so every
 * error can name the line it was found on. Numbers are copied into a small
 * terminated buffer before strtod, so parsing never reads past len whatever the
 * bytes are (embedded NULs included: they make the token invalid).
 *
 * The loader reads a split's files in parallel (each file into its own slot, its
 * own error message kept), then walks them in order to report or skip the bad
 * ones, so the result and the error do not depend on the thread count.
 */
#include "data/off.h"

#include <ctype.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "core/alloc.h"
#include "core/error.h"
#include "core/fileio.h"
#include "core/kernels/parallel.h"

/* Fewest bytes a vertex line ("0 0 0\n") and a face line ("3 0 1 2\n") can take. */
#define MIN_VERTEX_BYTES 6
#define MIN_FACE_BYTES 8
/* Colour values allowed after a face's indices (r g b a). */
#define MAX_COLOUR_VALUES 4

/* ---- cursor and tokens -------------------------------------------------------------- */

typedef struct cursor {
    const char *name; /* for messages */
    const unsigned char *p, *end;
    long line;        /* line of p, from 1 */
} cursor;

typedef struct token {
    const unsigned char *s;
    size_t len;
} token;

static int is_blank(unsigned char ch) { return ch == ' ' || ch == '\t' || ch == '\r' || ch == '\v' || ch == '\f'; }

/* "name:line: message" (core/fileio.h), and a token quoted for a message. */
#define fail_at(c, ...) qkv_file_fail_line((c)->name, (c)->line, __VA_ARGS__)
#define shown(t, buf) qkv_quote_bytes((t).s, (t).len, buf)

/* The next token on the current line, or 0 at the line's end (or a comment). */
static int next_token(cursor *c, token *t) {
    while (c->p < c->end && is_blank(*c->p)) c->p++;
    if (c->p == c->end || *c->p == '\n' || *c->p == '#') return 0;
    t->s = c->p;
    while (c->p < c->end && !is_blank(*c->p) && *c->p != '\n' && *c->p != '#') c->p++;
    t->len = (size_t)(c->p - t->s);
    return 1;
}

/* Moves to the first token of the next line that has one; 0 at the end of the
 * bytes. Call it at a line's start or after the line's tokens were consumed. */
static int next_content_line(cursor *c) {
    for (;;) {
        while (c->p < c->end && is_blank(*c->p)) c->p++;
        if (c->p == c->end) return 0;
        if (*c->p == '#')
            while (c->p < c->end && *c->p != '\n') c->p++;
        else if (*c->p != '\n') return 1;
        if (c->p < c->end) {
            c->p++;
            c->line++;
        }
    }
}

/* Fails unless the current line has no token left; what names the line's item. */
static int expect_line_end(cursor *c, const char *what) {
    token t;
    char buf[32];
    if (next_token(c, &t)) return fail_at(c, "%s: trailing '%s'", what, shown(t, buf));
    return 0;
}

/* ---- numbers ------------------------------------------------------------------------ */

/* A finite number (strtod syntax, the whole token). */
static int parse_number(token t, double *out) {
    char buf[64];
    if (t.len >= sizeof buf) return -1;
    memcpy(buf, t.s, t.len);
    buf[t.len] = '\0';
    char *end;
    *out = strtod(buf, &end);
    return end == buf + t.len && isfinite(*out) ? 0 : -1;
}

/* A decimal integer in [0, max] (digits only). -1: not an integer; -2: negative;
 * -3: above max. */
static int parse_count(token t, long long max, long long *out) {
    size_t i = t.s[0] == '+' || t.s[0] == '-' ? 1 : 0;
    if (i == t.len) return -1;
    long long v = 0;
    for (; i < t.len; i++) {
        if (t.s[i] < '0' || t.s[i] > '9') return -1;
        if (v <= max) v = v * 10 + (t.s[i] - '0'); /* max <= LLONG_MAX / 16: no overflow */
    }
    if (t.s[0] == '-' && v > 0) return -2;
    if (v > max) return -3;
    *out = v;
    return 0;
}

/* Parses a count into *out or fails naming what and why. */
static int read_count(cursor *c, token t, const char *what, long long max, long long *out) {
    char buf[32];
    switch (parse_count(t, max, out)) {
    case 0: return 0;
    case -2: return fail_at(c, "%s %s is negative", what, shown(t, buf));
    case -3: return fail_at(c, "%s %s is too large (max %lld)", what, shown(t, buf), max);
    default: return fail_at(c, "%s '%s' is not a number", what, shown(t, buf));
    }
}

/* ---- the parser --------------------------------------------------------------------- */

typedef struct tri_list {
    int32_t *tris;
    size_t count, capacity; /* triangles */
} tri_list;

static int push_triangle(cursor *c, tri_list *list, int32_t a, int32_t b, int32_t d) {
    if (list->count == list->capacity) {
        size_t grown = list->capacity ? 2 * list->capacity : 256;
        int32_t *tris = qkv_try_realloc(list->tris, qkv_size_mul(grown, 3 * sizeof *tris), NULL, "triangles");
        if (!tris) return fail_at(c, "%s", qkv_last_error());
        list->tris = tris;
        list->capacity = grown;
    }
    int32_t *t = list->tris + 3 * list->count++;
    t[0] = a;
    t[1] = b;
    t[2] = d;
    return 0;
}

/* "OFF" with the counts after it (glued or not) or on the next line:
 * nv nf [ne]. Checks them against the bytes that follow. */
static int parse_header(cursor *c, int *n_verts, int *n_faces) {
    token t, counts[3];
    char buf[32];
    if (!next_content_line(c)) return fail_at(c, "empty file: expected 'OFF'");
    next_token(c, &t);
    if (t.len < 3 || memcmp(t.s, "OFF", 3) != 0 || (t.len > 3 && !isdigit(t.s[3]) && t.s[3] != '-' && t.s[3] != '+'))
        return fail_at(c, "expected 'OFF', found '%s'", shown(t, buf));
    int n = 0;
    if (t.len > 3) counts[n++] = (token){t.s + 3, t.len - 3};
    while (n < 3 && next_token(c, &counts[n])) n++;
    if (n == 0) { /* the counts have a line of their own */
        if (!next_content_line(c)) return fail_at(c, "missing vertex and face counts");
        while (n < 3 && next_token(c, &counts[n])) n++;
    }
    if (expect_line_end(c, "counts")) return -1;
    if (n < 2) return fail_at(c, "missing face count (need 'vertices faces [edges]')");
    long long nv, nf, ne;
    if (read_count(c, counts[0], "vertex count", INT_MAX / 3, &nv) ||
        read_count(c, counts[1], "face count", INT_MAX, &nf) ||
        (n == 3 && read_count(c, counts[2], "edge count", LLONG_MAX / 16, &ne)))
        return -1;
    size_t rest = (size_t)(c->end - c->p);
    if ((unsigned long long)nv * MIN_VERTEX_BYTES + (unsigned long long)nf * MIN_FACE_BYTES >
        rest + MIN_FACE_BYTES)
        return fail_at(c, "%lld vertices and %lld faces cannot fit in the %zu bytes that follow",
                       nv, nf, rest);
    *n_verts = (int)nv;
    *n_faces = (int)nf;
    return 0;
}

static int parse_vertex(cursor *c, int v, int n_verts, float *xyz) {
    char what[48], buf[32];
    snprintf(what, sizeof what, "vertex %d", v);
    if (!next_content_line(c))
        return fail_at(c, "unexpected end of file: %d of %d vertices read", v, n_verts);
    for (int k = 0; k < 3; k++) {
        token t;
        double value;
        if (!next_token(c, &t)) return fail_at(c, "%s has %d coordinates (need 3)", what, k);
        if (parse_number(t, &value) || fabs(value) > FLT_MAX)
            return fail_at(c, "%s: coordinate '%s' is not a finite float", what, shown(t, buf));
        xyz[k] = (float)value;
    }
    return expect_line_end(c, what);
}

/* "k i1 .. ik [colour]": appends the fan (i1, ij, ij+1) to list. */
static int parse_face(cursor *c, int f, int n_faces, int n_verts, tri_list *list) {
    char what[48], buf[32];
    snprintf(what, sizeof what, "face %d", f);
    token t;
    long long k, index, first = 0, previous = 0;
    if (!next_content_line(c))
        return fail_at(c, "unexpected end of file: %d of %d faces read", f, n_faces);
    next_token(c, &t);
    snprintf(what, sizeof what, "face %d: vertex count", f);
    if (read_count(c, t, what, INT_MAX, &k)) return -1;
    snprintf(what, sizeof what, "face %d", f);
    if (k < 3) return fail_at(c, "%s has %lld vertices (need >= 3)", what, k);
    for (long long j = 0; j < k; j++) {
        if (!next_token(c, &t))
            return fail_at(c, "%s has %lld of its %lld vertex indices", what, j, k);
        int status = parse_count(t, (long long)n_verts - 1, &index);
        if (status == -1) return fail_at(c, "%s: index '%s' is not a number", what, shown(t, buf));
        if (status < 0)
            return fail_at(c, "%s: index %s out of range [0, %d)", what, shown(t, buf), n_verts);
        if (j == 0) first = index;
        else if (j >= 2 && push_triangle(c, list, (int32_t)first, (int32_t)previous, (int32_t)index))
            return -1;
        previous = index;
    }
    for (int colour = 0; colour < MAX_COLOUR_VALUES && next_token(c, &t); colour++) {
        double value;
        if (parse_number(t, &value))
            return fail_at(c, "%s: colour value '%s' is not a number", what, shown(t, buf));
    }
    return expect_line_end(c, what);
}

void qkv_off_mesh_free(qkv_off_mesh *mesh) {
    if (!mesh) return;
    free(mesh->verts);
    free(mesh->tris);
    free(mesh->cumulative);
    memset(mesh, 0, sizeof *mesh);
}

/* Parses the counts, vertices, faces and the end of the file into mesh. */
static int parse_mesh(cursor *c, qkv_off_mesh *mesh, tri_list *list) {
    int n_faces = 0;
    if (parse_header(c, &mesh->n_verts, &n_faces)) return -1;
    mesh->verts = qkv_try_malloc((size_t)mesh->n_verts * 3 * sizeof *mesh->verts + 1, NULL, "vertices");
    if (!mesh->verts) return fail_at(c, "%s", qkv_last_error());
    for (int v = 0; v < mesh->n_verts; v++)
        if (parse_vertex(c, v, mesh->n_verts, mesh->verts + 3 * (size_t)v)) return -1;
    for (int f = 0; f < n_faces; f++)
        if (parse_face(c, f, n_faces, mesh->n_verts, list)) return -1;
    if (next_content_line(c)) {
        token t;
        char buf[32];
        next_token(c, &t);
        return fail_at(c, "unexpected '%s' after the last face", shown(t, buf));
    }
    return 0;
}

/* Sets the triangles and their cumulative areas; fails on a zero or infinite total. */
static int measure_mesh(const char *name, qkv_off_mesh *mesh, tri_list *list) {
    mesh->tris = list->tris;
    mesh->n_tris = (int)list->count;
    list->tris = NULL;
    if (mesh->n_tris == 0) {
        qkv_set_error("%s: mesh has no faces (zero total area)", name);
        return -1;
    }
    mesh->cumulative = qkv_try_malloc((size_t)mesh->n_tris * sizeof *mesh->cumulative, name, "triangle areas");
    if (!mesh->cumulative) return -1;
    mesh->area = qkv_trimesh_cumulative_area(mesh->verts, mesh->tris, mesh->n_tris, mesh->cumulative);
    if (!(mesh->area > 0.0) || !isfinite(mesh->area)) {
        qkv_set_error("%s: mesh has zero total area (%d triangles)", name, mesh->n_tris);
        return -1;
    }
    return 0;
}

int qkv_off_parse(const char *name, const unsigned char *bytes, size_t len, qkv_off_mesh *mesh) {
    QKV_CHECK(name != NULL && mesh != NULL && (bytes != NULL || len == 0),
              "qkv_off_parse: name, bytes or mesh is NULL");
    memset(mesh, 0, sizeof *mesh);
    if (len > QKV_OFF_MAX_BYTES) {
        qkv_set_error("%s: %zu bytes: larger than %zu", name, len, (size_t)QKV_OFF_MAX_BYTES);
        return -1;
    }
    cursor c = {name, bytes, bytes + len, 1};
    tri_list list = {NULL, 0, 0};
    int status = parse_mesh(&c, mesh, &list);
    if (status == 0) status = measure_mesh(name, mesh, &list);
    free(list.tris);
    if (status) qkv_off_mesh_free(mesh);
    return status;
}

int qkv_off_read(const char *path, qkv_off_mesh *mesh) {
    QKV_CHECK(path != NULL && mesh != NULL, "qkv_off_read: path or mesh is NULL");
    memset(mesh, 0, sizeof *mesh);
    size_t len;
    unsigned char *bytes = qkv_read_file(path, QKV_OFF_MAX_BYTES, &len);
    if (!bytes) return -1;
    int status = qkv_off_parse(path, bytes, len, mesh);
    free(bytes);
    return status;
}

void qkv_off_sample(const qkv_off_mesh *mesh, int n_points, qkv_rng *rng, float *xyz) {
    QKV_CHECK(mesh != NULL && mesh->n_tris >= 1 && n_points >= 1,
              "qkv_off_sample: a parsed mesh and n_points >= 1 needed (n_points %d)", n_points);
    qkv_trimesh_sample(mesh->verts, mesh->tris, mesh->cumulative, mesh->n_tris, n_points, rng, xyz);
    qkv_points_normalize(xyz, n_points);
}

/* ---- directories ---------------------------------------------------------------------- */

static int has_off_suffix(const char *name) {
    size_t n = strlen(name);
    return n > 4 && strcasecmp(name + n - 4, ".off") == 0;
}

static int is_directory(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* qkv_list_dir filters: a class is a subdirectory; a mesh is an .off entry that
 * is not a directory (a broken link stays in, to be reported when read). Names
 * starting with '.' are neither. */
static int is_class_dir(const char *path, const char *name, void *ctx) {
    (void)ctx;
    return name[0] != '.' && is_directory(path);
}

static int is_off_entry(const char *path, const char *name, void *ctx) {
    (void)ctx;
    return name[0] != '.' && has_off_suffix(name) && !is_directory(path);
}

/* ---- the ModelNet loader ------------------------------------------------------------- */

static const char *const split_names[2] = {"train", "test"};

/* A split's files in load order and the class of each. */
typedef struct split_files {
    qkv_name_list paths;
    int32_t *labels; /* [paths.count] */
} split_files;

static void free_split(split_files *files) {
    qkv_name_list_free(&files->paths);
    free(files->labels);
    memset(files, 0, sizeof *files);
}

/* Lists DIR/CLASS/<split>/ *.off for every class, in order. */
static int list_split(const char *dir, const qkv_name_list *classes, int split, split_files *files) {
    for (int c = 0; c < classes->count; c++) {
        char *class_dir = qkv_join_path(dir, classes->names[c]);
        char *split_dir = class_dir ? qkv_join_path(class_dir, split_names[split]) : NULL;
        qkv_name_list names = {NULL, 0, 0};
        int status = split_dir ? qkv_list_dir(split_dir, is_off_entry, NULL, &names) : -1;
        if (status == 0 && names.count == 0) status = qkv_file_fail(split_dir, "no .off files");
        int first = files->paths.count;
        for (int i = 0; status == 0 && i < names.count; i++) {
            char *path = qkv_join_path(split_dir, names.names[i]);
            status = path ? qkv_name_list_push(&files->paths, path, split_dir) : -1;
            free(path);
        }
        int32_t *labels = status ? NULL : qkv_try_realloc(files->labels, (size_t)files->paths.count * sizeof *labels,
                                                          split_dir, "labels");
        if (status == 0 && !labels) status = -1;
        if (labels) {
            files->labels = labels;
            for (int k = first; k < files->paths.count; k++) labels[k] = c;
        }
        qkv_name_list_free(&names);
        free(split_dir);
        free(class_dir);
        if (status) return -1;
    }
    return 0;
}

/* File k of split s: the k-th split of the split's stream, itself the s-th split
 * of the seed's stream. */
static qkv_rng file_rng(uint64_t seed, int split, int k) {
    return qkv_rng_split_at(qkv_rng_split_at(qkv_rng_make(seed), (uint64_t)split), (uint64_t)k);
}

/* Reads every file of the split into its slot of xyz; errors[k] gets file k's
 * message (malloc'd) or stays NULL. Each file is independent of the others and of
 * the thread that reads it. */
static void read_split(const split_files *files, int split, int n_points, uint64_t seed,
                       float *xyz, char **errors) {
    int n = files->paths.count;
    size_t cloud = (size_t)n_points * 3;
#pragma omp parallel for if (n > 1 && qkv_threads() > 1) schedule(dynamic)
    for (int k = 0; k < n; k++) {
        qkv_off_mesh mesh;
        if (qkv_off_read(files->paths.names[k], &mesh) == 0) {
            qkv_rng rng = file_rng(seed, split, k);
            qkv_off_sample(&mesh, n_points, &rng, xyz + (size_t)k * cloud);
            qkv_off_mesh_free(&mesh);
        } else {
            errors[k] = qkv_strdup(qkv_last_error(), "an error message");
        }
    }
}

/* Drops the bad files from set (or fails on the first one unless skip_bad),
 * counting them into *skipped and keeping the first message; then fails if a
 * class is left without files. */
static int keep_good_files(const char *dir, const qkv_name_list *classes, int split, char **errors,
                           int skip_bad, qkv_point_set *set, int *skipped, char *first_skipped,
                           size_t first_size) {
    size_t cloud = (size_t)set->n_points * 3;
    int kept = 0, n = set->count;
    for (int k = 0; k < n; k++) {
        if (errors[k]) {
            if (!skip_bad) {
                qkv_set_error("%s", errors[k]);
                return -1;
            }
            if (*skipped == 0 && first_skipped && first_size > 0)
                snprintf(first_skipped, first_size, "%s", errors[k]);
            ++*skipped;
            continue;
        }
        if (kept != k) memmove(set->xyz + (size_t)kept * cloud, set->xyz + (size_t)k * cloud, cloud * sizeof *set->xyz);
        set->labels[kept++] = set->labels[k];
    }
    set->count = kept;
    for (int c = 0; c < classes->count; c++) {
        int found = 0;
        for (int k = 0; k < kept && !found; k++) found = set->labels[k] == c;
        if (!found) {
            qkv_set_error("%s/%s/%s: no readable .off files (all skipped as bad)", dir,
                          classes->names[c], split_names[split]);
            return -1;
        }
    }
    return 0;
}

/* Lists, reads and filters one split into set (which owns no class names yet). */
static int load_split(const char *dir, const qkv_name_list *classes, int split, int n_points,
                      uint64_t seed, int skip_bad, qkv_point_set *set, int *skipped,
                      char *first_skipped, size_t first_size) {
    split_files files = {{NULL, 0, 0}, NULL};
    if (list_split(dir, classes, split, &files)) {
        free_split(&files);
        return -1;
    }
    int n = files.paths.count;
    set->n_points = n_points;
    set->count = n;
    set->xyz = qkv_try_malloc(qkv_size_mul(qkv_size_mul((size_t)n, (size_t)n_points), 3 * sizeof *set->xyz), dir,
                              "the point clouds");
    char **errors = qkv_calloc((size_t)n, sizeof *errors, "the per-file errors");
    set->labels = files.labels;
    files.labels = NULL;
    int status = 0;
    if (!set->xyz) {
        status = -1;
    } else {
        read_split(&files, split, n_points, seed, set->xyz, errors);
        status = keep_good_files(dir, classes, split, errors, skip_bad, set, skipped,
                                 first_skipped, first_size);
    }
    for (int k = 0; errors && k < n; k++) free(errors[k]);
    free(errors);
    free_split(&files);
    return status;
}

/* Gives set its own copy of the class names. */
static void copy_class_names(const qkv_name_list *classes, qkv_point_set *set) {
    set->class_names = qkv_calloc((size_t)classes->count, sizeof *set->class_names, "the class names");
    set->classes = classes->count;
    for (int c = 0; c < classes->count; c++) set->class_names[c] = qkv_strdup(classes->names[c], "a class name");
}

int qkv_modelnet_load(const char *dir, int n_points, uint64_t seed, int skip_bad,
                      qkv_point_set *train, qkv_point_set *test, char *first_skipped,
                      size_t first_skipped_size) {
    QKV_CHECK(dir != NULL && train != NULL && test != NULL,
              "qkv_modelnet_load: dir, train or test is NULL");
    memset(train, 0, sizeof *train);
    memset(test, 0, sizeof *test);
    if (first_skipped && first_skipped_size > 0) first_skipped[0] = '\0';
    if (n_points < 1) return qkv_file_fail(dir, "n_points %d: must be >= 1", n_points);
    qkv_name_list classes = {NULL, 0, 0};
    if (qkv_list_dir(dir, is_class_dir, NULL, &classes)) return -1;
    int skipped = 0;
    int status = classes.count == 0 ? qkv_file_fail(dir, "no class subdirectories") : 0;
    if (classes.count == 1) /* every label the same: nothing to learn, and a test accuracy of 1 that means nothing */
        status = qkv_file_fail(dir, "one class subdirectory (%s): a classifier needs at least 2", classes.names[0]);
    if (status == 0)
        status = load_split(dir, &classes, 0, n_points, seed, skip_bad, train, &skipped,
                            first_skipped, first_skipped_size);
    if (status == 0)
        status = load_split(dir, &classes, 1, n_points, seed, skip_bad, test, &skipped,
                            first_skipped, first_skipped_size);
    if (status == 0) {
        copy_class_names(&classes, train);
        copy_class_names(&classes, test);
    }
    qkv_name_list_free(&classes);
    if (status) {
        qkv_point_set_free(train);
        qkv_point_set_free(test);
        return -1;
    }
    return skipped;
}

int qkv_modelnet_count(const char *dir, long *files) {
    *files = 0;
    qkv_name_list classes = {NULL, 0, 0};
    if (qkv_list_dir(dir, is_class_dir, NULL, &classes)) return -1;
    int status = 0;
    for (int split = 0; split < 2 && status == 0; split++) {
        split_files listed = {{NULL, 0, 0}, NULL};
        status = list_split(dir, &classes, split, &listed);
        *files += listed.paths.count;
        free_split(&listed);
    }
    qkv_name_list_free(&classes);
    return status;
}
