/* test_mathfn.c — qkv's own exp, exp2, log, sin, cos and erf (core/mathfn.h) against
 * the C library's, over dense deterministic sweeps of the ranges qkv uses plus
 * special values: within 1 ulp in double, and after rounding to float the same
 * float as the C library's double function in every case swept (these are the
 * values that reach tensors, so a build on another C library, as the
 * WebAssembly one, computes the same bits). The C library's own float functions
 * are not always correctly rounded (glibc's sinf, cosf and erff differ from the
 * correctly rounded float in about 1.5% of arguments); qkv's float forms are
 * compared with the C library's double function rounded to float instead. */
#include "tests/test_util.h"

#include <glob.h>
#include <math.h>
#include <regex.h>
#include <stdlib.h>
#include <string.h>

#include "core/mathfn.h"

#define SWEEP 400000

static double ulps(double got, double want) {
    if (got == want || (got != got && want != want)) return 0.0;
    return fabs(got - want) / (nextafter(fabs(want), INFINITY) - fabs(want));
}

typedef struct sweep {
    const char *name;
    double (*own)(double);
    double (*libm)(double);
    double lo, hi;
} sweep;

START_TEST(double_functions_within_one_ulp_and_the_same_floats) {
    const sweep sweeps[] = {
        {"exp", qkv_math_exp, exp, -745.0, 709.0},     {"exp", qkv_math_exp, exp, -2.0, 2.0},
        {"exp2", qkv_math_exp2, exp2, -1000.0, 1000.0}, {"exp2", qkv_math_exp2, exp2, -16.0, 0.0},
        {"log", qkv_math_log, log, 1e-300, 1e300},     {"log", qkv_math_log, log, 0.25, 4.0},
        {"log", qkv_math_log, log, 1e-9, 1.0},         {"sin", qkv_math_sin, sin, -5000.0, 5000.0},
        {"sin", qkv_math_sin, sin, -7.0, 7.0},         {"cos", qkv_math_cos, cos, -5000.0, 5000.0},
        {"cos", qkv_math_cos, cos, -7.0, 7.0},
    };
    for (size_t s = 0; s < sizeof sweeps / sizeof sweeps[0]; s++) {
        const sweep *w = &sweeps[s];
        int log_scale = w->lo > 0 && w->hi / w->lo > 1e6;
        double worst = 0.0;
        long floats_differ = 0;
        for (int i = 0; i < SWEEP; i++) {
            double u = (i + 0.5) / SWEEP;
            double x = log_scale ? exp(log(w->lo) + u * (log(w->hi) - log(w->lo))) : w->lo + u * (w->hi - w->lo);
            double got = w->own(x), want = w->libm(x);
            double e = ulps(got, want);
            if (e > worst) worst = e;
            floats_differ += (float)got != (float)want;
        }
        if (worst > 2.0 || floats_differ)
            ck_abort_msg("%s on [%g, %g]: worst %.2f ulp, %ld floats differ", w->name, w->lo, w->hi, worst,
                         floats_differ);
    }
}
END_TEST

/* Every float in the ranges qkv's float call sites see, stepped. */
START_TEST(float_functions_are_the_correctly_rounded_floats) {
    long differ[5] = {0};
    for (float x = -10.0f; x <= 10.0f; x = nextafterf(x, INFINITY) + 1e-5f) {
        differ[0] += qkv_math_erff(x) != (float)erf(x);
        differ[1] += qkv_math_sinf(x * 3) != (float)sin(x * 3);
        differ[2] += qkv_math_cosf(x * 3) != (float)cos(x * 3);
        differ[3] += qkv_math_expf(x * 8) != (float)exp(x * 8);
        differ[4] += fabsf(x) > 0 && qkv_math_logf(fabsf(x) * 10) != (float)log(fabsf(x) * 10);
    }
    for (int f = 0; f < 5; f++) ck_assert_msg(differ[f] == 0, "function %d: %ld floats differ", f, differ[f]);
}
END_TEST

START_TEST(special_values) {
    ck_assert(qkv_math_exp(INFINITY) == INFINITY && qkv_math_exp(-INFINITY) == 0.0 && isnan(qkv_math_exp(NAN)));
    for (int k = -1074; k <= 1023; k++) ck_assert(qkv_math_exp2(k) == ldexp(1.0, k));
    ck_assert(qkv_math_exp2(1025.0) == INFINITY && qkv_math_exp2(-1100.0) == 0.0 && isnan(qkv_math_exp2(NAN)));
    ck_assert(qkv_math_exp(0.0) == 1.0 && qkv_math_exp(800.0) == INFINITY && qkv_math_exp(-800.0) == 0.0);
    ck_assert(qkv_math_log(0.0) == -INFINITY && isnan(qkv_math_log(-1.0)) && qkv_math_log(INFINITY) == INFINITY);
    ck_assert(qkv_math_log(1.0) == 0.0 && qkv_math_log(5e-324) == log(5e-324));
    ck_assert(isnan(qkv_math_sin(INFINITY)) && isnan(qkv_math_cos(-INFINITY)) && isnan(qkv_math_sin(NAN)));
    ck_assert(qkv_math_sin(0.0) == 0.0 && signbit(qkv_math_sin(-0.0)) && qkv_math_cos(0.0) == 1.0);
    ck_assert(qkv_math_erff(0.0f) == 0.0f && qkv_math_erff(7.0f) == 1.0f && qkv_math_erff(-INFINITY) == -1.0f);
    ck_assert(isnan(qkv_math_erff(NAN)) && qkv_math_erff(1e-30f) == (float)erf(1e-30));
}
END_TEST

/* ---- no C library math in the library ----------------------------------------------- */

/* The C library functions whose last bits differ between C libraries (docs/wasm.md,
 * "Math functions"), double and float forms; pow and sqrt (correctly rounded) aside. */
#define LIBM_CALL "(^|[^_A-Za-z0-9.>])((exp|exp2|expm1|log|log1p|log2|sin|cos|tan|erf|erfc|tanh|sinh|cosh|atan|atan2)f?)[ \t]*\\("

/* The first such call in a source text, comments and string literals blanked
 * (its text in call, the line's number returned), or 0. */
static int first_libm_call(const char *source, char *call, size_t len) {
    char *text = strdup(source);
    for (char *c = text; *c; c++) {   /* blank comments and literals, keeping newlines */
        char *end = NULL;
        if (c[0] == '/' && c[1] == '*') end = strstr(c + 2, "*/"), end = end ? end + 2 : c + strlen(c);
        else if (c[0] == '/' && c[1] == '/') end = c + strcspn(c, "\n");
        else if (*c == '"' || *c == '\'') {
            end = c + 1;
            while (*end && *end != *c && *end != '\n') end += end[0] == '\\' && end[1] ? 2 : 1;
            if (*end == *c) end++;
        }
        if (!end) continue;
        for (char *b = c; b < end; b++)
            if (*b != '\n') *b = ' ';
        c = end - 1;
    }
    regex_t re;
    ck_assert(regcomp(&re, LIBM_CALL, REG_EXTENDED | REG_NEWLINE) == 0);
    regmatch_t m[3];
    int line = 0;
    if (regexec(&re, text, 3, m, 0) == 0) {
        line = 1;
        for (const char *c = text; c < text + m[2].rm_so; c++) line += *c == '\n';
        snprintf(call, len, "%.*s", (int)(m[2].rm_eo - m[2].rm_so), text + m[2].rm_so);
    }
    regfree(&re);
    free(text);
    return line;
}

/* Every call in the library (core, layers, data, optim, train) whose result may
 * reach a tensor or a printed number goes through core/mathfn.h, not the C
 * library's exp, log, sin, cos, erf, tanh... (their bits differ under WebAssembly). */
START_TEST(the_library_calls_no_libm_math) {
    char call[32];
    ck_assert_int_eq(first_libm_call("float k = logf(2.0f);", call, sizeof call), 1);   /* the scan can fail */
    ck_assert_str_eq(call, "logf");
    ck_assert_int_eq(first_libm_call("/* exp(x) */ f(\"sin(t)\", '(');\n x = a->log(1) + qkv_math_exp(y);\n"
                                     "y = tanh (x);", call, sizeof call), 3);
    ck_assert_str_eq(call, "tanh");
    static const char *const globs[] = {"../core/*.[ch]", "../core/*/*.[ch]", "../layers/*.[ch]", "../layers/*/*.[ch]",
                                        "../data/*.[ch]", "../data/*/*.[ch]", "../optim/*.[ch]", "../train/*.[ch]",
                                        "../train/*/*.[ch]", NULL};
    glob_t files;
    for (int g = 0; globs[g]; g++) glob(globs[g], g ? GLOB_APPEND : 0, NULL, &files);
    ck_assert_int_gt((int)files.gl_pathc, 100);
    for (size_t f = 0; f < files.gl_pathc; f++) {
        if (strstr(files.gl_pathv[f], "core/mathfn.")) continue;   /* the functions themselves */
        size_t len;
        char *source = (char *)read_file_bytes(files.gl_pathv[f], &len);
        source[len] = '\0';
        int line = first_libm_call(source, call, sizeof call);
        ck_assert_msg(!line, "%s:%d calls the C library's %s: use core/mathfn.h's qkv_math_*", files.gl_pathv[f], line,
                      call);
        free(source);
    }
    globfree(&files);
}
END_TEST

Suite *suite_mathfn(void) {
    Suite *s = suite_create("mathfn");
    TCase *tc = tcase_create("sweeps");
    tcase_set_timeout(tc, 0);
    tcase_add_test(tc, double_functions_within_one_ulp_and_the_same_floats);
    tcase_add_test(tc, float_functions_are_the_correctly_rounded_floats);
    tcase_add_test(tc, special_values);
    tcase_add_test(tc, the_library_calls_no_libm_math);
    suite_add_tcase(s, tc);
    return s;
}
