/* docs_records.h — the results records that the docs' numbers come from.
 *
 * results/NAME.txt records one command and what it printed:
 *
 *     # <free comment lines: what the run is, where the docs use it>
 *     # cost: cheap | long | manual
 *     # machine: ...   (long and manual records: where and when it ran)
 *     # date: ...
 *     $ ./qkv gradcheck
 *     <its stdout and stderr, verbatim>
 *
 * cheap: `make test` runs the command again (seconds); long: `make results`
 * runs it again, one record at a time; manual: only `make results NAME` does
 * (the 86-minute preset). The command runs from the top of the tree, with
 * ./qkv and build/tutorial replaced by the binaries under test.
 *
 * Two outputs are the same when, timings masked (a number of seconds, steps/s,
 * examples/s, tokens/s, ms, min, or of threads becomes "#": they carry the
 * machine and the date, never the result), every line of the recorded one but
 * a line "..." appears, whole (indentation aside) and in order, in the other,
 * and a record without "..." has as many lines as the other. The docs' blocks
 * are compared with a record by the same in-order rule.
 */
#ifndef QKV_DOCS_RECORDS_H
#define QKV_DOCS_RECORDS_H

#include <stddef.h>

typedef struct record {
    char name[64];
    char cost[16];       /* cheap, long or manual */
    char command[1024];
    char *header;        /* the "# " lines as read, for rewriting */
    char *output;        /* what the command printed, verbatim */
} record;

/* Reads results/NAME.txt (dir: the results folder); 0, or -1 with why in
 * error (a missing file, no cost, no "$ " line, an unknown cost). */
int record_read(const char *dir, const char *name, record *r, char *error, size_t error_len);
void record_free(record *r);

/* Every record's name in dir, sorted; the count (at most max). */
int record_list(const char *dir, char names[][64], int max);

/* s with every timing replaced by "#" (malloc'd). */
char *mask_timings(const char *s);

/* NULL when every line of want (but "..." lines and blank ones) appears whole
 * (indentation and trailing blanks aside) and in order in have, both masked first; else the first
 * line that does not (in a static buffer). */
const char *first_missing_line(const char *want, const char *have);

/* The record's command run now from top (the tree's top folder): its stdout and
 * stderr (malloc'd) and exit status in *status. */
char *record_run(const record *r, const char *top, int *status);

/* NULL when what the record's command printed now (now) is the recorded output
 * by the rule above; else what differs (a static buffer). */
const char *record_compare(const record *r, const char *now);

/* Rewrites results/NAME.txt with the record's header and output now; long and
 * manual records get this machine and today's date. 0 or -1. */
int record_write(const char *dir, const record *r, const char *now);

#endif
