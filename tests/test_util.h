/* test_util.h — shared helpers for the Check suites.
 *
 * EXPECT_FATAL(stmt, "substring"): runs stmt with a test error hook installed and
 * asserts that it stopped through qkv_fatal() with a message containing the
 * substring. The hook longjmps back, so the suite runs without fork (CK_NOFORK),
 * which also keeps libgomp's thread pool usable.
 *
 * CHECK_GROUP_GRADIENTS(group): runs every gradient-check case of a group and
 * fails on the first one above its tolerance, naming the case and the error.
 */
#ifndef QKV_TEST_UTIL_H
#define QKV_TEST_UTIL_H

#include <check.h>
#include <math.h>
#include <setjmp.h>
#include <string.h>

#include "qkv.h"

extern jmp_buf qkv_test_jump;
extern char qkv_test_message[512];
void qkv_test_hook(const char *message);

#define EXPECT_FATAL(stmt, substring)                                                       \
    do {                                                                                    \
        qkv_error_hook previous_hook_ = qkv_set_error_hook(qkv_test_hook);                  \
        qkv_test_message[0] = '\0';                                                         \
        volatile int stopped_ = 0;                                                          \
        if (setjmp(qkv_test_jump) == 0) { stmt; } else { stopped_ = 1; }                    \
        qkv_set_error_hook(previous_hook_);                                                 \
        ck_assert_msg(stopped_, "expected a fatal error from: %s", #stmt);                  \
        ck_assert_msg(strstr(qkv_test_message, substring) != NULL,                          \
                      "error message \"%s\" lacks \"%s\"", qkv_test_message, substring);   \
    } while (0)

/* Asserts |a - b| <= tol * max(1, |b|). */
#define ck_assert_close(a, b, tol)                                                          \
    do {                                                                                    \
        double a_ = (a), b_ = (b);                                                          \
        ck_assert_msg(fabs(a_ - b_) <= (tol) * fmax(1.0, fabs(b_)),                         \
                      "%s = %.9g, expected %.9g (tol %g)", #a, a_, b_, (double)(tol));     \
    } while (0)

void check_group_gradients(const qkv_gradcheck_group *group);
#define CHECK_GROUP_GRADIENTS(group) check_group_gradients(&(group))

#endif
