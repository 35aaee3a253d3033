/* number.c — see number.h. */
#include "core/number.h"

#include <errno.h>
#include <stdlib.h>

static int is_digit(char c) { return c >= '0' && c <= '9'; }

/* Whether text is a number in the written form number.h gives (integer: digits
 * only after the sign; sign: whether a '-' may lead). The conversion that follows
 * then reads exactly these characters, so a form strto* alone would also take
 * (blanks, '+', hex, inf, nan) never reaches it. */
static int plain_number(const char *text, int integer, int sign) {
    const char *p = text + (sign && *text == '-');
    int digits = 0;
    if (p[0] == '0' && is_digit(p[1])) return 0;   /* a leading zero: "04" */
    while (is_digit(*p)) p++, digits++;
    if (integer) return digits > 0 && *p == '\0';
    if (*p == '.') {
        p++;
        while (is_digit(*p)) p++, digits++;
    }
    if (!digits) return 0;
    if (*p == 'e' || *p == 'E') {
        p++;
        if (*p == '-' || *p == '+') p++;
        if (!is_digit(*p)) return 0;
        while (is_digit(*p)) p++;
    }
    return *p == '\0';
}

int qkv_parse_int(const char *text, long long lo, long long hi, long long *out) {
    if (!text || !plain_number(text, 1, 1)) return -1;
    errno = 0;
    long long v = strtoll(text, NULL, 10);
    if (errno || v < lo || v > hi) return -1;
    *out = v;
    return 0;
}

int qkv_parse_u64(const char *text, unsigned long long hi, unsigned long long *out) {
    if (!text || !plain_number(text, 1, 0)) return -1;
    errno = 0;
    unsigned long long v = strtoull(text, NULL, 10);
    if (errno || v > hi) return -1;
    *out = v;
    return 0;
}

int qkv_parse_double(const char *text, double lo, double hi, double *out) {
    if (!text || !plain_number(text, 0, 1)) return -1;
    errno = 0;
    double v = strtod(text, NULL);
    if (errno || !(v >= lo && v <= hi)) return -1;   /* ERANGE: overflow, or underflow to zero */
    *out = v;
    return 0;
}

int qkv_parse_float(const char *text, double lo, double hi, float *out) {
    if (!text || !plain_number(text, 0, 1)) return -1;
    errno = 0;
    float v = strtof(text, NULL);
    if (errno || !(v >= lo && v <= hi)) return -1;
    *out = v;
    return 0;
}
