/* suggest.h — "did you mean ...?" for a misspelled command, task, flag or value.
 *
 * A suggestion walks a table once: begin with what was typed, consider every
 * name the table holds, then ask for the hint. The closest name by edit
 * distance (insertions, deletions, substitutions and swaps of two neighbours,
 * each 1: `trian` is 1 from `train`, `--step` 1 from `--steps`) is suggested
 * when it is at most 1 away for a word of up to 4 letters (leading dashes not
 * counted) and at most 2 for a longer one; otherwise nothing is suggested.
 */
#ifndef QKV_SUGGEST_H
#define QKV_SUGGEST_H

#include <stddef.h>

typedef struct qkv_suggestion {
    const char *typed;
    const char *best;   /* NULL until a name close enough is considered */
    int distance;
} qkv_suggestion;

qkv_suggestion qkv_suggestion_begin(const char *typed);
void qkv_suggestion_consider(qkv_suggestion *s, const char *name);
/* "did you mean NAME? " when there is a suggestion, else "" (buf holds it): it
 * opens a message's parenthesis, "unknown flag '--step' (did you mean --steps? try --help)". */
const char *qkv_suggestion_hint(const qkv_suggestion *s, char *buf, size_t len);
/* The hint for typed among names[] (NULL-terminated): the three calls in one. */
const char *qkv_suggest_among(const char *typed, const char *const *names, char *buf, size_t len);

#endif
