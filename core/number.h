/* number.h — one parser for a number, wherever it comes from: a flag's value,
 * a checkpoint's metadata (its config, settings, step, optimizer state and
 * history), a list given on the command line.
 *
 * A number is written as a person types it and as qkv writes it ("%d", "%ld",
 * "%llu", "%g"): an optional '-', then the integer digits without a leading zero
 * ("0" itself, or a first digit 1-9), and for a real number an optional '.' and
 * fraction (".5" and "5." too) and an optional exponent (e, E, a sign, digits).
 * Refused: an empty text, a leading or trailing blank, '+', a leading zero
 * ("04", "-01", "00.5"), hex ("0x10", "0x1p3"), "inf" and "nan", a value out of
 * range (also one strtod/strtof would overflow or flush to zero), and anything
 * after the number. Each function returns 0 and the value, or -1 and leaves *out
 * alone; it sets no error: the caller names the flag or key in its own line.
 */
#ifndef QKV_NUMBER_H
#define QKV_NUMBER_H

/* An integer in lo..hi. */
int qkv_parse_int(const char *text, long long lo, long long hi, long long *out);
/* A non-negative integer in 0..hi, up to the full 64 bits ('-' refused). */
int qkv_parse_u64(const char *text, unsigned long long hi, unsigned long long *out);
/* A real number in [lo, hi], as a float (strtof: rounded once) or a double. */
int qkv_parse_float(const char *text, double lo, double hi, float *out);
int qkv_parse_double(const char *text, double lo, double hi, double *out);

#endif
