/* suggest.c — see suggest.h. */
#include "core/suggest.h"

#include <stdio.h>
#include <string.h>

/* Names longer than this are never suggested (the table row stays on the stack). */
#define MAX_NAME 64

/* Optimal string alignment distance: Levenshtein plus adjacent swaps, by rows
 * d[i][j] = distance between the first i chars of a and the first j of b. */
static int edit_distance(const char *a, const char *b) {
    int n = (int)strlen(a), m = (int)strlen(b);
    if (n > MAX_NAME || m > MAX_NAME) return MAX_NAME;
    int d[MAX_NAME + 1][MAX_NAME + 1];
    for (int i = 0; i <= n; i++) d[i][0] = i;
    for (int j = 0; j <= m; j++) d[0][j] = j;
    for (int i = 1; i <= n; i++)
        for (int j = 1; j <= m; j++) {
            int best = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
            if (d[i - 1][j] + 1 < best) best = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < best) best = d[i][j - 1] + 1;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] && d[i - 2][j - 2] + 1 < best)
                best = d[i - 2][j - 2] + 1;
            d[i][j] = best;
        }
    return d[n][m];
}

qkv_suggestion qkv_suggestion_begin(const char *typed) { return (qkv_suggestion){typed, NULL, MAX_NAME}; }

void qkv_suggestion_consider(qkv_suggestion *s, const char *name) {
    if (!s->typed || !name) return;
    size_t letters = strlen(s->typed + strspn(s->typed, "-"));
    int allowed = letters <= 4 ? 1 : 2, d = edit_distance(s->typed, name);
    if (d > 0 && d <= allowed && d < s->distance) {
        s->best = name;
        s->distance = d;
    }
}

const char *qkv_suggest_among(const char *typed, const char *const *names, char *buf, size_t len) {
    qkv_suggestion s = qkv_suggestion_begin(typed);
    for (int i = 0; names[i]; i++) qkv_suggestion_consider(&s, names[i]);
    return qkv_suggestion_hint(&s, buf, len);
}

const char *qkv_suggestion_hint(const qkv_suggestion *s, char *buf, size_t len) {
    if (!s->best) return "";
    snprintf(buf, len, "did you mean %s? ", s->best);
    return buf;
}
