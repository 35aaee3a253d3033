/* test_hungarian.c — the assignment solver: optimal total cost against brute force
 * over all injections (random real costs, and integer costs from a small range so
 * that ties abound), square and rectangular up to 7 queries; a valid injection with
 * both outputs agreeing; the documented tie-breaking; a planted permutation at a
 * size brute force cannot reach; no targets; non-finite costs and bad sizes. */
#include <stdlib.h>

#include "tests/test_util.h"

/* Minimum over injections target -> query of the summed cost, by recursion. */
static double brute_force(int nq, int nt, const double *cost, int t, unsigned used) {
    if (t == nt) return 0.0;
    double best = INFINITY;
    for (int q = 0; q < nq; q++) {
        if (used & (1u << q)) continue;
        double c = cost[q * nt + t] + brute_force(nq, nt, cost, t + 1, used | (1u << q));
        if (c < best) best = c;
    }
    return best;
}

/* Checks that the outputs form an injection, agree, and reach the optimum. */
static void check_against_brute_force(int nq, int nt, const double *cost, const char *what) {
    int query_of[8], target_of[8];
    ck_assert_int_eq(qkv_hungarian(nq, nt, cost, query_of, target_of), 0);
    double total = 0.0;
    int matched = 0;
    for (int t = 0; t < nt; t++) {
        ck_assert_msg(query_of[t] >= 0 && query_of[t] < nq, "%s: target %d got query %d", what, t, query_of[t]);
        ck_assert_msg(target_of[query_of[t]] == t, "%s: outputs disagree at target %d", what, t);
        total += cost[query_of[t] * nt + t];
    }
    for (int q = 0; q < nq; q++) matched += target_of[q] >= 0;
    ck_assert_msg(matched == nt, "%s: %d queries matched, %d targets", what, matched, nt);
    double best = brute_force(nq, nt, cost, 0, 0);
    ck_assert_msg(fabs(total - best) <= 1e-9 * fmax(1.0, fabs(best)), "%s [%dx%d]: total %.17g, optimum %.17g",
                  what, nq, nt, total, best);
}

START_TEST(test_hungarian_brute_force) {
    qkv_rng rng = qkv_rng_make(606);
    double cost[64];
    int cases = 0;
    for (int nq = 1; nq <= 7; nq++)
        for (int nt = 1; nt <= nq; nt++)
            for (int rep = 0; rep < 12; rep++) {
                int integer = rep % 2;  /* half of them: costs in {0, 1, 2}, many ties */
                for (int i = 0; i < nq * nt; i++)
                    cost[i] = integer ? (double)qkv_rng_below(&rng, 3) : 10.0 * qkv_rng_normal(&rng);
                check_against_brute_force(nq, nt, cost, integer ? "integer costs" : "real costs");
                cases++;
            }
    /* every entry equal, and two-valued costs (the most ties) */
    for (int nq = 1; nq <= 7; nq++)
        for (int nt = 0; nt <= nq; nt++) {
            for (int i = 0; i < nq * nt; i++) cost[i] = 1.0;
            check_against_brute_force(nq, nt, cost, "equal costs");
            for (int i = 0; i < nq * nt; i++) cost[i] = (double)qkv_rng_below(&rng, 2);
            check_against_brute_force(nq, nt, cost, "0/1 costs");
            cases += 2;
        }
    ck_assert_int_ge(cases, 300);
}
END_TEST

START_TEST(test_hungarian_ties_lowest_query) {
    /* all costs equal: target t gets query t (the lowest free index), every time */
    double cost[6 * 4];
    for (int i = 0; i < 24; i++) cost[i] = 2.5;
    int query_of[4], target_of[6];
    for (int rep = 0; rep < 2; rep++) {
        ck_assert_int_eq(qkv_hungarian(6, 4, cost, query_of, target_of), 0);
        for (int t = 0; t < 4; t++) ck_assert_int_eq(query_of[t], t);
        ck_assert_int_eq(target_of[4], -1);
        ck_assert_int_eq(target_of[5], -1);
    }
}
END_TEST

START_TEST(test_hungarian_planted_permutation) {
    /* 40 queries, 30 targets: cost 0 on a planted injection, 1 elsewhere */
    enum { NQ = 40, NT = 30 };
    qkv_rng rng = qkv_rng_make(7);
    int perm[NQ];
    for (int q = 0; q < NQ; q++) perm[q] = q;
    for (int q = NQ - 1; q > 0; q--) {
        int j = (int)qkv_rng_below(&rng, (uint32_t)q + 1), tmp = perm[q];
        perm[q] = perm[j];
        perm[j] = tmp;
    }
    double *cost = malloc(NQ * NT * sizeof *cost);
    for (int q = 0; q < NQ; q++)
        for (int t = 0; t < NT; t++) cost[q * NT + t] = perm[t] == q ? 0.0 : 1.0 + 0.01 * (q + t);
    int query_of[NT];
    ck_assert_int_eq(qkv_hungarian(NQ, NT, cost, query_of, NULL), 0);
    for (int t = 0; t < NT; t++) ck_assert_int_eq(query_of[t], perm[t]);
    free(cost);
}
END_TEST

START_TEST(test_hungarian_no_targets) {
    int target_of[3] = {7, 7, 7};
    ck_assert_int_eq(qkv_hungarian(3, 0, NULL, NULL, target_of), 0);
    for (int q = 0; q < 3; q++) ck_assert_int_eq(target_of[q], -1);
}
END_TEST

START_TEST(test_hungarian_non_finite) {
    double cost[3 * 2] = {1, 2, 3, 4, 5, 6};
    int query_of[2] = {9, 9}, target_of[3] = {9, 9, 9};
    cost[1 * 2 + 1] = NAN;
    ck_assert_int_eq(qkv_hungarian(3, 2, cost, query_of, target_of), -1);
    ck_assert_ptr_nonnull(strstr(qkv_last_error(), "query 1, target 1"));
    ck_assert_ptr_nonnull(strstr(qkv_last_error(), "nan"));
    ck_assert_int_eq(query_of[0], 9);
    ck_assert_int_eq(target_of[2], 9);
    cost[1 * 2 + 1] = 0.0;
    cost[2 * 2 + 0] = -INFINITY;
    ck_assert_int_eq(qkv_hungarian(3, 2, cost, query_of, target_of), -1);
    ck_assert_ptr_nonnull(strstr(qkv_last_error(), "query 2, target 0"));
}
END_TEST

START_TEST(test_hungarian_bad_sizes) {
    double cost[6] = {0};
    int query_of[3];
    EXPECT_FATAL(qkv_hungarian(2, 3, cost, query_of, NULL), "[2 queries x 3 targets]");
    EXPECT_FATAL(qkv_hungarian(2, -1, cost, query_of, NULL), "[2 queries x -1 targets]");
    EXPECT_FATAL(qkv_hungarian(3, 2, NULL, query_of, NULL), "is NULL");
}
END_TEST

Suite *suite_hungarian(void) {
    Suite *s = suite_create("hungarian");
    TCase *tc = tcase_create("hungarian");
    tcase_add_test(tc, test_hungarian_brute_force);
    tcase_add_test(tc, test_hungarian_ties_lowest_query);
    tcase_add_test(tc, test_hungarian_planted_permutation);
    tcase_add_test(tc, test_hungarian_no_targets);
    tcase_add_test(tc, test_hungarian_non_finite);
    tcase_add_test(tc, test_hungarian_bad_sizes);
    suite_add_tcase(s, tc);
    return s;
}
