/* docs_records.c — reading, running, comparing and rewriting the results
 * records (results/NAME.txt) that the docs' numbers come from. The contract,
 * the file layout and the comparison rule are in docs_records.h. */
#include "tests/docs_records.h"

#include "tests/test_util.h"

#include <ctype.h>
#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const char *const costs[] = {"cheap", "long", "manual", NULL};

int record_read(const char *dir, const char *name, record *r, char *error, size_t error_len) {
    memset(r, 0, sizeof *r);
    snprintf(r->name, sizeof r->name, "%s", name);
    char path[1024];
    snprintf(path, sizeof path, "%s/%s.txt", dir, name);
    FILE *f = fopen(path, "rb");
    if (!f) return snprintf(error, error_len, "no record results/%s.txt", name), -1;
    fclose(f);
    size_t len;
    char *bytes = (char *)read_file_bytes(path, &len), *at = bytes;
    bytes[len] = '\0';
    size_t header_len = 0;
    while (strncmp(at, "# ", 2) == 0) {
        char *end = strchr(at, '\n');
        if (!end) break;
        if (strncmp(at, "# cost: ", 8) == 0) snprintf(r->cost, sizeof r->cost, "%.*s", (int)(end - at - 8), at + 8);
        header_len += (size_t)(end - at) + 1;
        at = end + 1;
    }
    r->header = strndup(bytes, header_len);
    int known = 0;
    for (int i = 0; costs[i]; i++) known |= strcmp(r->cost, costs[i]) == 0;
    char *end = strchr(at, '\n');
    if (!known || strncmp(at, "$ ", 2) != 0 || !end) {
        snprintf(error, error_len, "results/%s.txt: %s", name,
                 !known ? "no \"# cost: cheap|long|manual\" line" : "no \"$ command\" line after the # lines");
        free(bytes);
        return -1;
    }
    snprintf(r->command, sizeof r->command, "%.*s", (int)(end - at - 2), at + 2);
    r->output = strdup(end + 1);
    free(bytes);
    return 0;
}

void record_free(record *r) {
    free(r->header);
    free(r->output);
    r->header = r->output = NULL;
}

static int by_name(const void *a, const void *b) { return strcmp((const char *)a, (const char *)b); }

int record_list(const char *dir, char names[][64], int max) {
    DIR *d = opendir(dir);
    ck_assert_msg(d != NULL, "cannot open %s", dir);
    int n = 0;
    for (struct dirent *e; (e = readdir(d)) && n < max;) {
        size_t len = strlen(e->d_name);
        if (e->d_name[0] != '.' && len > 4 && len < 64 && strcmp(e->d_name + len - 4, ".txt") == 0)
            snprintf(names[n++], 64, "%.*s", (int)(len - 4), e->d_name);
    }
    closedir(d);
    qsort(names, (size_t)n, 64, by_name);
    return n;
}

/* ---- timings ------------------------------------------------------------------------ */

/* A number followed by one of these (after at most one blank) is a timing or a
 * thread count; one right after one of the keys too. */
static const char *const timing_units[] = {"steps/s", "examples/s", "tokens/s", "ms", "min", "s", "threads",
                                           "thread", NULL};
static const char *const timing_keys[] = {"seconds=", "steps_per_s=", NULL};

static int word_char(char c) { return isalnum((unsigned char)c) || c == '_' || c == '.'; }

static int is_timing(const char *start, const char *after, const char *line_start) {
    for (int i = 0; timing_keys[i]; i++) {
        size_t n = strlen(timing_keys[i]);
        if ((size_t)(start - line_start) >= n && strncmp(start - n, timing_keys[i], n) == 0) return 1;
    }
    if (*after == ' ') after++;
    for (int i = 0; timing_units[i]; i++) {
        size_t n = strlen(timing_units[i]);
        if (strncmp(after, timing_units[i], n) == 0 && !isalnum((unsigned char)after[n]) && after[n] != '/')
            return 1;
    }
    return 0;
}

char *mask_timings(const char *s) {
    size_t n = strlen(s);
    char *out = malloc(2 * n + 1), *o = out; /* "1 thread" grows to "# threads" */
    ck_assert_ptr_nonnull(out);
    const char *line_start = s;
    for (const char *p = s; *p;) {
        if (isdigit((unsigned char)*p) && (p == s || !word_char(p[-1]))) {
            const char *q = p;
            while (isdigit((unsigned char)*q) || (*q == '.' && isdigit((unsigned char)q[1]))) q++;
            if (!isalpha((unsigned char)*q) && is_timing(p, q, line_start)) {
                *o++ = '#';
                p = q;
                const char *unit = p + (*p == ' ');
                if (strncmp(unit, "thread", 6) == 0) { /* 1 thread, 2 threads: one text */
                    o += sprintf(o, " threads");
                    p = unit + 6 + (unit[6] == 's');
                }
                continue;
            }
            while (p < q) *o++ = *p++;
            continue;
        }
        if (*p == '\n') line_start = p + 1;
        *o++ = *p++;
    }
    *o = '\0';
    return out;
}

/* ---- comparing ---------------------------------------------------------------------- */

const char *first_missing_line(const char *want, const char *have) {
    static char missing[512];
    char *w = mask_timings(want), *h = mask_timings(have), *save = NULL;
    const char *search = h, *result = NULL;
    for (char *l = strtok_r(w, "\n", &save); l && !result; l = strtok_r(NULL, "\n", &save)) {
        char *line = l + strspn(l, " ");
        size_t n = strlen(line);
        while (n > 0 && line[n - 1] == ' ') line[--n] = '\0';
        if (n == 0 || strcmp(line, "...") == 0) continue;
        const char *found = NULL;
        for (const char *f = strstr(search, line); f && !found; f = strstr(f + 1, line)) {
            const char *b = f; /* the whole line, but its indentation */
            while (b > h && b[-1] == ' ') b--;
            const char *after = f + n + strspn(f + n, " "); /* trailing blanks aside too */
            if ((b == h || b[-1] == '\n') && (*after == '\n' || *after == '\0')) found = f;
        }
        if (found) search = strchr(found, '\n') ? strchr(found, '\n') : found + n;
        else result = strncpy(missing, line, sizeof missing - 1);
    }
    free(w);
    free(h);
    return result;
}

static int count_lines(const char *s, int *dots) {
    int n = 0;
    *dots = 0;
    for (const char *l = s; *l;) {
        const char *end = strchr(l, '\n');
        size_t len = end ? (size_t)(end - l) : strlen(l);
        const char *t = l + strspn(l, " ");
        if ((size_t)(t - l) + 3 == len && strncmp(t, "...", 3) == 0) (*dots)++;
        n++;
        l += len + (end != NULL);
    }
    return n;
}

const char *record_compare(const record *r, const char *now) {
    static char what[768];
    const char *missing = first_missing_line(r->output, now);
    if (missing) {
        snprintf(what, sizeof what, "results/%s.txt: `%.200s` no longer prints (in order): %.400s", r->name,
                 r->command, missing);
        return what;
    }
    int dots, dots_now, lines = count_lines(r->output, &dots), lines_now = count_lines(now, &dots_now);
    if (dots == 0 && lines != lines_now) {
        snprintf(what, sizeof what, "results/%s.txt: `%.200s` printed %d lines, the record has %d", r->name,
                 r->command, lines_now, lines);
        return what;
    }
    return NULL;
}

/* ---- running and rewriting ------------------------------------------------------------ */

/* The binary under test that stands for a word of a recorded command, or NULL. */
static const char *stand_in(const char *word, char *real, size_t len) {
    const char *path = NULL;
    if (strcmp(word, "./qkv") == 0) path = qkv_binary();
    else if (strcmp(word, "build/tutorial") == 0) path = getenv("QKV_TUTORIAL") ? getenv("QKV_TUTORIAL") : "../build/tutorial";
    if (!path) return NULL;
    char resolved[PATH_MAX];
    ck_assert_msg(realpath(path, resolved) != NULL, "no %s for `%s`", path, word);
    snprintf(real, len, "%s", resolved);
    return real;
}

char *record_run(const record *r, const char *top, int *status) {
    char command[4096], copy[1024], *save = NULL, real[PATH_MAX];
    int used = snprintf(command, sizeof command, "cd %s && {", top);
    snprintf(copy, sizeof copy, "%s", r->command);
    for (char *w = strtok_r(copy, " ", &save); w; w = strtok_r(NULL, " ", &save)) {
        const char *word = stand_in(w, real, sizeof real);
        used += snprintf(command + used, sizeof command - (size_t)used, " %s", word ? word : w);
    }
    snprintf(command + used, sizeof command - (size_t)used, "; } 2>&1"); /* every command's stderr too */
    FILE *p = popen(command, "r");
    ck_assert_ptr_nonnull(p);
    size_t cap = 1 << 16, len = 0, got;
    char *out = malloc(cap);
    ck_assert_ptr_nonnull(out);
    while ((got = fread(out + len, 1, cap - len - 1, p)) > 0)
        if ((len += got) + 1 == cap) ck_assert_ptr_nonnull(out = realloc(out, cap *= 2));
    out[len] = '\0';
    *status = pclose(p);
    return out;
}

/* "model name" of /proc/cpuinfo, the cores, the instruction-set path, the load. */
static void machine(char *s, size_t len) {
    char model[256] = "unknown CPU", line[512];
    FILE *f = fopen("/proc/cpuinfo", "r");
    while (f && fgets(line, sizeof line, f))
        if (strncmp(line, "model name", 10) == 0 && strchr(line, ':')) {
            snprintf(model, sizeof model, "%s", strchr(line, ':') + 2);
            model[strcspn(model, "\n")] = '\0';
            break;
        }
    if (f) fclose(f);
    double load = 0;
    f = fopen("/proc/loadavg", "r");
    if (f && fscanf(f, "%lf", &load) != 1) load = 0;
    if (f) fclose(f);
    snprintf(s, len, "%s, %ld cores, %s path, load %.1f when recorded", model, sysconf(_SC_NPROCESSORS_ONLN),
             qkv_isa_name(), load);
}

int record_write(const char *dir, const record *r, const char *now) {
    char path[1024], tmp[1100], line[512];
    snprintf(path, sizeof path, "%s/%s.txt", dir, r->name);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "wb");
    if (!f) return -1;
    for (const char *l = r->header; *l;) { /* the header, but its machine and date */
        const char *end = strchr(l, '\n');
        size_t n = end ? (size_t)(end - l) + 1 : strlen(l);
        if (strncmp(l, "# machine: ", 11) != 0 && strncmp(l, "# date: ", 8) != 0) fwrite(l, 1, n, f);
        l += n;
    }
    if (strcmp(r->cost, "cheap") != 0) {
        time_t t = time(NULL);
        char date[64];
        strftime(date, sizeof date, "%Y-%m-%d %H:%M UTC", gmtime(&t));
        machine(line, sizeof line);
        fprintf(f, "# machine: %s\n# date: %s\n", line, date);
    }
    fprintf(f, "$ %s\n%s", r->command, now);
    return fclose(f) == 0 && rename(tmp, path) == 0 ? 0 : -1;
}
