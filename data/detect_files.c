/* detect_files.c — the detection set on disk: writing a generated set, parsing
 * annotations.txt, and loading a set's images. See detect.h for the format.
 *
 * The parser walks text[0..len) line by line and copies every number into a small
 * terminated buffer before strtof, so it never reads past len whatever the bytes
 * are. Its arrays grow by doubling; on any error everything is freed. */
#include "data/detect.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/alloc.h"
#include "core/error.h"
#include "core/fileio.h"
#include "core/ops/tensor.h"
#include "data/image.h"

#define MAX_NAME 255       /* bytes in an image file name */
#define BOX_SLACK 1e-4f    /* a box may poke out of [0, 1] by this much (rounding) */
#define MAX_FIELDS 7       /* one more than a line may have, to report extras */

/* ---- writing ------------------------------------------------------------------------ */

int qkv_detect_check_out(const char *dir) {
    struct stat st;
    size_t len = strlen(dir);
    if (len == 0 || len > 4000) return qkv_file_fail(dir, "not a usable directory name");
    if (stat(dir, &st) == 0) {
        if (!S_ISDIR(st.st_mode)) return qkv_file_fail(dir, "exists and is not a directory");
        DIR *d = opendir(dir);
        if (!d) return qkv_file_fail(dir, "cannot open directory: %s", strerror(errno));
        int entries = 0;
        for (struct dirent *e; (e = readdir(d));)
            if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) entries++;
        closedir(d);
        if (entries) return qkv_file_fail(dir, "directory is not empty (%d entries); refusing to overwrite", entries);
    } else if (errno != ENOENT) {
        return qkv_file_fail(dir, "cannot use: %s", strerror(errno));
    }
    char parent[4096];
    snprintf(parent, sizeof parent, "%s", dir);
    while (len > 1 && parent[len - 1] == '/') parent[--len] = '\0';
    char *slash = strrchr(parent, '/');
    if (!slash) strcpy(parent, ".");
    else if (slash == parent) parent[1] = '\0';
    else *slash = '\0';
    if (stat(parent, &st) != 0 || !S_ISDIR(st.st_mode))
        return qkv_file_fail(dir, "the parent directory %s does not exist", parent);
    if (access(parent, W_OK | X_OK) != 0) return qkv_file_fail(dir, "the parent directory %s is not writable", parent);
    return qkv_probe_directory(dir, parent); /* /proc, a read-only mount: access() says yes to root */
}

/* Removes dir and the files in it (the temporary directory of a failed write). */
static void remove_tree(const char *dir) {
    DIR *d = opendir(dir);
    if (d) {
        char path[8192];
        for (struct dirent *e; (e = readdir(d));)
            if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) {
                snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
                unlink(path);
            }
        closedir(d);
    }
    rmdir(dir);
}

/* "<dir>/<name>" into buf, or -1 naming dir if it does not fit. */
static int join(char *buf, size_t size, const char *dir, const char *name) {
    if ((size_t)snprintf(buf, size, "%s/%s", dir, name) >= size) return qkv_file_fail(dir, "path too long");
    return 0;
}

int qkv_detect_write(const char *dir, const qkv_detect_config *config, uint64_t seed, int n) {
    QKV_CHECK(n >= 1, "detect_write: n %d < 1", n);
    qkv_detect_config_check(config);
    qkv_detect_example ex;
    qkv_tensor *image = qkv_tensor_create(NULL, 3, (int[]){3, config->size, config->size}, 0);
    char path[4096], line[512], tmp_dir[4096 + 32];
    qkv_atomic_file annotations = {0};
    int rc = qkv_detect_check_out(dir);
    size_t dir_len = strlen(dir);
    while (dir_len > 1 && dir[dir_len - 1] == '/') dir_len--;
    snprintf(tmp_dir, sizeof tmp_dir, "%.*s.tmp.%ld", (int)dir_len, dir, (long)getpid());
    int made = !rc && mkdir(tmp_dir, 0777) == 0;
    if (!rc && !made) rc = qkv_file_fail(tmp_dir, "cannot create directory: %s", strerror(errno));
    const char *out = dir;
    dir = tmp_dir; /* everything goes into the temporary directory, renamed into place at the end */
    if (!rc) rc = join(path, sizeof path, dir, QKV_DETECT_ANNOTATIONS);
    if (!rc) rc = qkv_atomic_open(&annotations, path);
    if (!rc) {
        int len = snprintf(line, sizeof line, "# qkv detect: %d images of %dx%d, %d to %d objects, seed %llu\n"
                           "# <image file> <class> <cx> <cy> <w> <h>, box relative to the image size\n",
                           n, config->size, config->size, config->min_objects, config->max_objects,
                           (unsigned long long)seed);
        rc = qkv_atomic_write(&annotations, line, (size_t)len);
    }
    for (int i = 0; i < n && !rc; i++) {
        char name[32];
        snprintf(name, sizeof name, "img_%05d.png", i);
        qkv_detect_example_make(config, seed, (uint64_t)i, image->data, &ex);
        rc = join(path, sizeof path, dir, name);
        if (!rc) rc = qkv_image_save_png(path, image);
        if (!rc && ex.n_objects == 0) { /* a line of just the file name */
            int len = snprintf(line, sizeof line, "%s\n", name);
            rc = qkv_atomic_write(&annotations, line, (size_t)len);
        }
        for (int o = 0; o < ex.n_objects && !rc; o++) {
            const float *b = ex.boxes[o];
            int len = snprintf(line, sizeof line, "%s %s %.9g %.9g %.9g %.9g\n", name,
                               qkv_detect_class_names[ex.classes[o]], b[0], b[1], b[2], b[3]);
            rc = qkv_atomic_write(&annotations, line, (size_t)len);
        }
    }
    if (!rc) rc = qkv_atomic_commit(&annotations);
    else qkv_atomic_abort(&annotations);
    /* rename(2) replaces an empty directory: the one the check allowed, if any. */
    if (!rc && rename(tmp_dir, out) != 0) rc = qkv_file_fail(out, "cannot rename %s into place: %s", tmp_dir, strerror(errno));
    if (rc && made) remove_tree(tmp_dir);
    qkv_tensor_free(image);
    return rc;
}

/* ---- parsing ------------------------------------------------------------------------ */

typedef struct field {
    const char *s;
    size_t len;
} field;

typedef struct parser {
    const char *name;
    int line;
    int capacity;
    qkv_detect_set *set;
} parser;

/* "name:line: message" (core/fileio.h), and a field quoted for a message. */
#define fail_at(p, ...) qkv_file_fail_line((p)->name, (p)->line, __VA_ARGS__)
#define shown(f, buf) qkv_quote_bytes((f).s, (f).len, buf)

static int is_space(char ch) { return ch == ' ' || ch == '\t' || ch == '\r' || ch == '\v' || ch == '\f'; }

/* Splits line[0..len) into at most MAX_FIELDS fields; returns their count. */
static int split(const char *s, size_t len, field *fields) {
    int n = 0;
    size_t i = 0;
    while (n < MAX_FIELDS) {
        while (i < len && is_space(s[i])) i++;
        if (i == len) break;
        size_t start = i;
        while (i < len && !is_space(s[i])) i++;
        fields[n++] = (field){s + start, i - start};
    }
    return n;
}

static int check_file_name(const parser *p, field f) {
    char buf[32];
    if (f.len > MAX_NAME) return fail_at(p, "image file name longer than %d bytes", MAX_NAME);
    for (size_t i = 0; i < f.len; i++)
        if (!isgraph((unsigned char)f.s[i]) || f.s[i] == '/' || f.s[i] == '\\')
            return fail_at(p, "image file name '%s' must be a plain name in the set's directory", shown(f, buf));
    int dots = f.s[0] == '.';
    for (size_t i = 1; i < f.len; i++) dots |= f.s[i - 1] == '.' && f.s[i] == '.';
    if (dots)
        return fail_at(p, "image file name '%s' must not start with '.' or hold '..'", shown(f, buf));
    return 0;
}

static int parse_number(const parser *p, field f, const char *what, float *out) {
    char buf[64], shown_buf[32];
    if (f.len >= sizeof buf) return fail_at(p, "%s '%s' is not a number", what, shown(f, shown_buf));
    memcpy(buf, f.s, f.len);
    buf[f.len] = '\0';
    char *end;
    *out = strtof(buf, &end);
    if (end != buf + f.len || !isfinite(*out)) return fail_at(p, "%s '%s' is not a number", what, shown(f, shown_buf));
    if (*out < 0.0f || *out > 1.0f) return fail_at(p, "%s %g is outside [0, 1]", what, (double)*out);
    return 0;
}

/* A new image named f at the end of the set (arrays doubled when full). */
static int add_image(parser *p, field f) {
    qkv_detect_set *s = p->set;
    if (s->n == p->capacity) {
        int cap = p->capacity ? 2 * p->capacity : 64;
        size_t ucap = (size_t)cap;
        int32_t *n_objects = qkv_try_realloc(s->n_objects, ucap * sizeof *n_objects, NULL, "the annotations");
        if (n_objects) s->n_objects = n_objects;
        int32_t *classes = qkv_try_realloc(s->classes, ucap * QKV_DETECT_MAX_OBJECTS * sizeof *classes, NULL, "the annotations");
        if (classes) s->classes = classes;
        float *boxes = qkv_try_realloc(s->boxes, ucap * QKV_DETECT_MAX_OBJECTS * 4 * sizeof *boxes, NULL, "the annotations");
        if (boxes) s->boxes = boxes;
        char **files = qkv_try_realloc(s->files, ucap * sizeof *files, NULL, "the annotations");
        if (files) s->files = files;
        int *lines = qkv_try_realloc(s->lines, ucap * sizeof *lines, NULL, "the annotations");
        if (lines) s->lines = lines;
        if (!n_objects || !classes || !boxes || !files || !lines) return fail_at(p, "%s", qkv_last_error());
        p->capacity = cap;
    }
    int i = s->n;
    s->files[i] = strndup(f.s, f.len);
    if (!s->files[i]) return fail_at(p, "out of memory");
    s->n++;
    s->n_objects[i] = 0;
    s->lines[i] = p->line;
    for (int o = 0; o < QKV_DETECT_MAX_OBJECTS; o++) s->classes[(size_t)i * QKV_DETECT_MAX_OBJECTS + (size_t)o] = -1;
    memset(s->boxes + (size_t)i * QKV_DETECT_MAX_OBJECTS * 4, 0, QKV_DETECT_MAX_OBJECTS * 4 * sizeof(float));
    return 0;
}

static int add_object(parser *p, const field *fields) {
    qkv_detect_set *s = p->set;
    int i = s->n - 1, cls = 0;
    char buf[32];
    while (qkv_detect_class_names[cls] && (strlen(qkv_detect_class_names[cls]) != fields[1].len ||
                                          memcmp(qkv_detect_class_names[cls], fields[1].s, fields[1].len) != 0))
        cls++;
    if (!qkv_detect_class_names[cls])
        return fail_at(p, "unknown class '%s' (expected square, disk or triangle)", shown(fields[1], buf));
    static const char *const names[4] = {"cx", "cy", "w", "h"};
    float b[4];
    for (int k = 0; k < 4; k++)
        if (parse_number(p, fields[2 + k], names[k], &b[k])) return -1;
    if (b[2] <= 0.0f || b[3] <= 0.0f) return fail_at(p, "box size %g x %g is not positive", (double)b[2], (double)b[3]);
    if (b[0] - b[2] / 2 < -BOX_SLACK || b[0] + b[2] / 2 > 1 + BOX_SLACK || b[1] - b[3] / 2 < -BOX_SLACK ||
        b[1] + b[3] / 2 > 1 + BOX_SLACK)
        return fail_at(p, "box (%g, %g, %g, %g) reaches outside the image", (double)b[0], (double)b[1], (double)b[2],
                       (double)b[3]);
    if (s->n_objects[i] == QKV_DETECT_MAX_OBJECTS)
        return fail_at(p, "%s has more than %d objects", s->files[i], QKV_DETECT_MAX_OBJECTS);
    int o = s->n_objects[i]++;
    s->classes[(size_t)i * QKV_DETECT_MAX_OBJECTS + (size_t)o] = cls;
    memcpy(s->boxes + ((size_t)i * QKV_DETECT_MAX_OBJECTS + (size_t)o) * 4, b, sizeof b);
    return 0;
}

static int parse_line(parser *p, const char *s, size_t len) {
    field fields[MAX_FIELDS];
    int n = split(s, len, fields);
    if (n == 0 || fields[0].s[0] == '#') return 0;
    if (n != 1 && n != 6)
        return fail_at(p, "%d fields; expected '<image file> <class> <cx> <cy> <w> <h>' or '<image file>'", n);
    if (check_file_name(p, fields[0])) return -1;
    qkv_detect_set *set = p->set;
    const char *last = set->n ? set->files[set->n - 1] : NULL;
    int same = last && strlen(last) == fields[0].len && memcmp(last, fields[0].s, fields[0].len) == 0;
    if (!same && add_image(p, fields[0])) return -1;
    return n == 6 ? add_object(p, fields) : 0;
}

static int compare_names(const void *a, const void *b) {
    return strcmp(**(char **const *)a, **(char **const *)b);
}

/* An image listed in two separate runs of lines: its lines must be consecutive. */
static int check_unique(parser *p) {
    qkv_detect_set *s = p->set;
    char ***sorted = qkv_try_malloc((size_t)s->n * sizeof *sorted, p->name, "the image names");
    if (!sorted) return -1;
    for (int i = 0; i < s->n; i++) sorted[i] = &s->files[i];
    qsort(sorted, (size_t)s->n, sizeof *sorted, compare_names);
    int rc = 0;
    for (int k = 1; k < s->n && !rc; k++)
        if (strcmp(*sorted[k - 1], *sorted[k]) == 0) {
            int a = s->lines[sorted[k - 1] - s->files], b = s->lines[sorted[k] - s->files];
            p->line = a > b ? a : b;
            rc = fail_at(p, "%s was listed before, at line %d (an image's lines must be consecutive)", *sorted[k],
                         a < b ? a : b);
        }
    free(sorted);
    return rc;
}

int qkv_detect_annotations_parse(const char *name, const char *text, size_t len, qkv_detect_set *set) {
    memset(set, 0, sizeof *set);
    parser p = {.name = name, .line = 0, .capacity = 0, .set = set};
    size_t pos = 0;
    int rc = 0;
    while (pos < len && !rc) {
        const char *nl = memchr(text + pos, '\n', len - pos);
        size_t end = nl ? (size_t)(nl - text) : len;
        p.line++;
        rc = parse_line(&p, text + pos, end - pos);
        pos = end + 1;
    }
    if (!rc && set->n == 0) rc = qkv_file_fail(name, "no images listed");
    if (!rc) rc = check_unique(&p);
    if (rc) qkv_detect_set_free(set);
    return rc;
}

/* ---- loading ------------------------------------------------------------------------ */

/* Image i into set->pixels (allocated at the first image, whose size all share). */
static int load_image(const char *dir, const char *annotations, qkv_detect_set *set, int i) {
    char path[4096];
    if (join(path, sizeof path, dir, set->files[i])) return -1;
    qkv_tensor *t = qkv_image_load(path, 3);
    if (!t) {
        char reason[512];
        snprintf(reason, sizeof reason, "%s", qkv_last_error());
        qkv_set_error("%s:%d: %s", annotations, set->lines[i], reason);
        return -1;
    }
    int rc = 0;
    if (i == 0) {
        set->height = t->shape[1];
        set->width = t->shape[2];
        set->pixels = qkv_try_malloc(qkv_size_mul((size_t)set->n * t->size, sizeof(float)), dir, "the images");
        if (!set->pixels) rc = -1;
    } else if (t->shape[1] != set->height || t->shape[2] != set->width) {
        qkv_set_error("%s:%d: %s is %dx%d but %s is %dx%d (all images must have one size)", annotations, set->lines[i],
                      set->files[i], t->shape[2], t->shape[1], set->files[0], set->width, set->height);
        rc = -1;
    }
    if (!rc) memcpy(set->pixels + (size_t)i * t->size, t->data, t->size * sizeof(float));
    qkv_tensor_free(t);
    return rc;
}

int qkv_detect_load(const char *dir, qkv_detect_set *set) {
    memset(set, 0, sizeof *set);
    char path[4096];
    if (join(path, sizeof path, dir, QKV_DETECT_ANNOTATIONS)) return -1;
    size_t len = 0;
    unsigned char *text = qkv_read_file(path, QKV_DETECT_MAX_ANNOTATION_BYTES, &len);
    if (!text) return -1;
    int rc = qkv_detect_annotations_parse(path, (const char *)text, len, set);
    free(text);
    for (int i = 0; i < set->n && !rc; i++) rc = load_image(dir, path, set, i);
    if (rc) qkv_detect_set_free(set);
    return rc;
}

int qkv_detect_dir_size(const char *dir, int *n, int *width, int *height) {
    *n = *width = *height = 0;
    char path[4096];
    if (join(path, sizeof path, dir, QKV_DETECT_ANNOTATIONS)) return -1;
    size_t len = 0;
    unsigned char *text = qkv_read_file(path, QKV_DETECT_MAX_ANNOTATION_BYTES, &len);
    if (!text) return -1;
    qkv_detect_set set;
    int rc = qkv_detect_annotations_parse(path, (const char *)text, len, &set);
    free(text);
    qkv_tensor *first = NULL;
    if (!rc && !join(path, sizeof path, dir, set.files[0]) && (first = qkv_image_load(path, 3))) {
        *n = set.n;
        *height = first->shape[1];
        *width = first->shape[2];
        qkv_tensor_free(first);
    } else if (!rc) {
        rc = -1;
    }
    qkv_detect_set_free(&set);
    return rc;
}
