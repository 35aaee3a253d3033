/* test_sampling.c — the token-choice layer (layers/sampling.h): greedy and its ties,
 * temperature against a softmax computed here, top-k and top-p masks on worked
 * distributions and at vocabulary size against a brute-force ranking, the draw
 * (one rng number per call, a seed fixes the sequence, the inverse of the
 * cumulative kept probabilities, frequencies within a few sigma), the settings'
 * messages, and the stops on bad logits. */
#include "tests/test_util.h"

#include "layers/sampling.h"

#define MAX_N 1536

static qkv_sampling sampling(float temperature, int top_k, float top_p) {
    return (qkv_sampling){temperature, top_k, top_p};
}

/* The softmax of logits / T over the tokens marked in keep (all when NULL), in double. */
static void reference_probs(const float *logits, int n, double temperature, const int *keep, double *out) {
    double z_max = -INFINITY, total = 0;
    for (int i = 0; i < n; i++)
        if (!keep || keep[i]) z_max = larger(z_max, logits[i] / temperature);
    for (int i = 0; i < n; i++) {
        out[i] = !keep || keep[i] ? exp(logits[i] / temperature - z_max) : 0.0;
        total += out[i];
    }
    for (int i = 0; i < n; i++) out[i] /= total;
}

static void assert_probs_near(const float *got, const double *expected, int n, double tol, const char *what) {
    for (int i = 0; i < n; i++)
        ck_assert_msg(fabs(got[i] - expected[i]) <= tol, "%s: probs[%d] = %.9g, expected %.9g", what, i,
                      (double)got[i], expected[i]);
}

/* The indices with a nonzero probability, as a 0/1 mask; returns how many. */
static int support_of(const float *probs, int n, int *mask) {
    int count = 0;
    for (int i = 0; i < n; i++) count += mask[i] = probs[i] != 0.0f;
    return count;
}

static void assert_sums_to_one(const float *probs, int n, const char *what) {
    double sum = 0;
    for (int i = 0; i < n; i++) {
        ck_assert_msg(probs[i] >= 0.0f && probs[i] <= 1.0f, "%s: probs[%d] = %g", what, i, (double)probs[i]);
        sum += probs[i];
    }
    ck_assert_msg(fabs(sum - 1.0) <= 1e-6, "%s: probabilities sum to %.9g", what, sum);
}

/* ---- greedy ------------------------------------------------------------------------------ */

START_TEST(test_greedy_and_ties) {
    const float logits[6] = {0.5f, 2.0f, -1.0f, 2.0f, -INFINITY, 2.0f};
    float probs[6];
    qkv_rng rng = qkv_rng_make(1);
    /* Greedy ignores top-k and top-p, takes the lowest of the tied maxima, draws nothing. */
    for (int k = 0; k <= 3; k++) {
        qkv_sampling g = sampling(0.0f, k, k ? 0.5f : 1.0f);
        ck_assert_int_eq(qkv_sample_token(&g, logits, 6, &rng, NULL), 1);
        qkv_sampling_probs(&g, logits, 6, probs, NULL);
        assert_floats_near(probs, (float[]){0, 1, 0, 0, 0, 0}, 6, 0);
    }
    ck_assert_uint_eq(rng.counter, 0);

    /* One token; the maximum last; all equal; a -inf first. */
    qkv_sampling g = sampling(0.0f, 0, 1.0f);
    ck_assert_int_eq(qkv_sample_token(&g, (float[]){-3.0f}, 1, &rng, NULL), 0);
    ck_assert_int_eq(qkv_sample_token(&g, (float[]){-3.0f, -2.0f, -1.0f}, 3, &rng, NULL), 2);
    ck_assert_int_eq(qkv_sample_token(&g, (float[]){7.0f, 7.0f, 7.0f}, 3, &rng, NULL), 0);
    ck_assert_int_eq(qkv_sample_token(&g, (float[]){-INFINITY, -1e30f}, 2, &rng, NULL), 1);
    ck_assert_uint_eq(rng.counter, 0);
}
END_TEST

/* ---- temperature -------------------------------------------------------------------------- */

START_TEST(test_temperature_scales_the_softmax) {
    const int n = 17;
    float logits[17], probs[17];
    double expected[17];
    fill_normal_seeded(logits, n, 11, 0.0f, 3.0f);
    const float temperatures[] = {1.0f, 0.5f, 2.0f, 0.05f, 100.0f};
    for (int t = 0; t < 5; t++) {
        qkv_sampling s = sampling(temperatures[t], 0, 1.0f);
        qkv_sampling_probs(&s, logits, n, probs, NULL);
        reference_probs(logits, n, temperatures[t], NULL, expected);
        assert_probs_near(probs, expected, n, 1e-7, "temperature");
        assert_sums_to_one(probs, n, "temperature");
    }

    /* Worked by hand: logits (0, ln 2, ln 4) at T = 1 are 1:2:4, at T = 2 1:sqrt 2:2. */
    float worked[3] = {0.0f, (float)log(2.0), (float)log(4.0)};
    qkv_sampling one = sampling(1.0f, 0, 1.0f), two = sampling(2.0f, 0, 1.0f);
    qkv_sampling_probs(&one, worked, 3, probs, NULL);
    assert_floats_near(probs, (float[]){1.0f / 7, 2.0f / 7, 4.0f / 7}, 3, 1e-7);
    qkv_sampling_probs(&two, worked, 3, probs, NULL);
    double z = 1 + sqrt(2.0) + 2;
    assert_floats_near(probs, (float[]){(float)(1 / z), (float)(sqrt(2.0) / z), (float)(2 / z)}, 3, 1e-7);

    /* Huge logits and a tiny temperature: the max is subtracted, nothing overflows. */
    float huge[4] = {3e38f, 3e38f, -3e38f, 1e38f};
    qkv_sampling cold = sampling(1e-3f, 0, 1.0f);
    qkv_sampling_probs(&cold, huge, 4, probs, NULL);
    assert_floats_near(probs, (float[]){0.5f, 0.5f, 0.0f, 0.0f}, 4, 0);
    /* -inf is a token that is never drawn. */
    float masked[3] = {1.0f, -INFINITY, 1.0f};
    qkv_sampling_probs(&one, masked, 3, probs, NULL);
    assert_floats_near(probs, (float[]){0.5f, 0.0f, 0.5f}, 3, 0);
}
END_TEST

/* ---- top-k ----------------------------------------------------------------------------------- */

START_TEST(test_top_k_masks) {
    const int n = 9;
    float logits[9], probs[9], off[9], greedy[9];
    int mask[9], scratch[9];
    double expected[9];
    fill_normal_seeded(logits, n, 5, 0.0f, 2.0f);
    qkv_sampling none = sampling(0.7f, 0, 1.0f), g = sampling(0.0f, 0, 1.0f);
    qkv_sampling_probs(&none, logits, n, off, NULL);
    qkv_sampling_probs(&g, logits, n, greedy, NULL);

    /* k = 1: all the mass on greedy's token. */
    qkv_sampling k1 = sampling(0.7f, 1, 1.0f);
    qkv_sampling_probs(&k1, logits, n, probs, scratch);
    assert_floats_near(probs, greedy, n, 0);

    /* k >= n is off, bitwise. */
    for (int k = n; k <= n + 2; k++) {
        qkv_sampling big = sampling(0.7f, k, 1.0f);
        qkv_sampling_probs(&big, logits, n, probs, scratch);
        ck_assert_mem_eq(probs, off, sizeof probs);
    }

    /* Every k in between keeps exactly the k largest, renormalized. */
    for (int k = 2; k < n; k++) {
        qkv_sampling top = sampling(0.7f, k, 1.0f);
        qkv_sampling_probs(&top, logits, n, probs, k % 2 ? scratch : NULL);
        ck_assert_int_eq(support_of(probs, n, mask), k);
        for (int i = 0; i < n; i++) {
            int larger = 0;
            for (int j = 0; j < n; j++) larger += logits[j] > logits[i];
            ck_assert_int_eq(mask[i], larger < k);
        }
        reference_probs(logits, n, 0.7f, mask, expected);
        assert_probs_near(probs, expected, n, 1e-7, "top-k");
        assert_sums_to_one(probs, n, "top-k");
    }

    /* Ties at the k-th: of the three 2s, the two lowest indices join the 3; weights 1:1:1. */
    float tied[6] = {2.0f, 1.0f, 3.0f, 2.0f, 2.0f, -5.0f};
    qkv_sampling k3 = sampling(1.0f, 3, 1.0f);
    qkv_sampling_probs(&k3, tied, 6, probs, NULL);
    double e = exp(-1.0), z = 1 + 2 * e;
    assert_floats_near(probs, (float[]){(float)(e / z), 0, (float)(1 / z), (float)(e / z), 0, 0}, 6, 1e-7);
}
END_TEST

/* ---- top-p ------------------------------------------------------------------------------------ */

/* How many tokens top-p keeps on logits (T = 1, no top-k), and their mask. */
static int nucleus_count(const float *logits, int n, float top_p, int *mask) {
    float probs[MAX_N];
    qkv_sampling s = sampling(1.0f, 0, top_p);
    qkv_sampling_probs(&s, logits, n, probs, NULL);
    assert_sums_to_one(probs, n, "top-p");
    return support_of(probs, n, mask);
}

START_TEST(test_top_p_on_uniform_rows) {
    /* Four equal tokens: cumulative sums 1/4, 1/2, 3/4, 1, exact in double. */
    const float four[4] = {0.5f, 0.5f, 0.5f, 0.5f};
    int mask[10];
    ck_assert_int_eq(nucleus_count(four, 4, 0.5f, mask), 2); /* exactly reaching p */
    ck_assert_int_eq(mask[0] && mask[1], 1);                   /* ties by the lower index */
    ck_assert_int_eq(nucleus_count(four, 4, nextafterf(0.5f, 1.0f), mask), 3); /* just above */
    ck_assert_int_eq(nucleus_count(four, 4, 0.25f, mask), 1);
    ck_assert_int_eq(nucleus_count(four, 4, 0.75f, mask), 3);
    ck_assert_int_eq(nucleus_count(four, 4, 0.76f, mask), 4);
    ck_assert_int_eq(nucleus_count(four, 4, 1.0f, mask), 4); /* off */
    ck_assert_int_eq(nucleus_count(four, 4, 1e-30f, mask), 1);
    ck_assert_int_eq(mask[0], 1);
    ck_assert_int_eq(nucleus_count(four, 4, 0.0f, mask), 1); /* the limit of p -> 0: greedy, not off */
    ck_assert_int_eq(mask[0], 1);

    /* Ten tokens of 0.1: the float 0.3f (0.300000012) stands for 0.3, which three reach. */
    float ten[10];
    for (int i = 0; i < 10; i++) ten[i] = 0.0f;
    ck_assert_int_eq(nucleus_count(ten, 10, 0.3f, mask), 3);
    ck_assert_int_eq(nucleus_count(ten, 10, 0.7f, mask), 7);
    ck_assert_int_eq(nucleus_count(ten, 10, 0.71f, mask), 8);
}
END_TEST

START_TEST(test_top_p_on_worked_rows) {
    /* Weights 1, 4, 1, 2 (probabilities 1/8, 1/2, 1/8, 1/4): by rank 1, 3, then 0 before 2. */
    const float logits[4] = {0.0f, (float)log(4.0), 0.0f, (float)log(2.0)};
    float probs[4];
    int mask[4];
    qkv_sampling s = sampling(1.0f, 0, 0.4f);
    qkv_sampling_probs(&s, logits, 4, probs, NULL);
    assert_floats_near(probs, (float[]){0, 1, 0, 0}, 4, 0);
    s.top_p = 0.6f; /* 1/2 < 0.6 <= 3/4 */
    qkv_sampling_probs(&s, logits, 4, probs, NULL);
    assert_floats_near(probs, (float[]){0, 2.0f / 3, 0, 1.0f / 3}, 4, 1e-7);
    s.top_p = 0.85f; /* 3/4 < 0.85 <= 7/8: token 0 wins the tie with token 2 */
    qkv_sampling_probs(&s, logits, 4, probs, NULL);
    assert_floats_near(probs, (float[]){1.0f / 7, 4.0f / 7, 0, 2.0f / 7}, 4, 1e-7);
    ck_assert_int_eq(nucleus_count(logits, 4, 0.9f, mask), 4);

    /* After top-k: k = 2 leaves 2/3 and 1/3, so 0.6 now keeps one token, not two. */
    s = sampling(1.0f, 2, 0.6f);
    qkv_sampling_probs(&s, logits, 4, probs, NULL);
    assert_floats_near(probs, (float[]){0, 1, 0, 0}, 4, 0);
    s.top_p = 0.7f;
    qkv_sampling_probs(&s, logits, 4, probs, NULL);
    assert_floats_near(probs, (float[]){0, 2.0f / 3, 0, 1.0f / 3}, 4, 1e-7);

    /* The temperature comes first: at T = 0.5 the weights are 1, 16, 1, 4 (16/22 > 0.6). */
    s = sampling(0.5f, 0, 0.6f);
    qkv_sampling_probs(&s, logits, 4, probs, NULL);
    assert_floats_near(probs, (float[]){0, 1, 0, 0}, 4, 0);
}
END_TEST

/* ---- at vocabulary size, against a brute-force ranking ---------------------------------------- */

/* rank[i] = how many tokens rank before i (larger logit, or equal and lower index). */
static void brute_force_ranks(const float *logits, int n, int *rank) {
    for (int i = 0; i < n; i++) {
        rank[i] = 0;
        for (int j = 0; j < n; j++) rank[i] += logits[j] > logits[i] || (logits[j] == logits[i] && j < i);
    }
}

START_TEST(test_masks_at_vocabulary_size) {
    enum { N = 1500 };
    static float logits[N], probs[N];
    static int rank[N], by_rank[N], mask[N], scratch[N];
    static double p[N], expected[N];
    fill_normal_seeded(logits, N, 21, 0.0f, 2.0f);
    for (int i = 0; i < N; i++) logits[i] = roundf(logits[i] * 8) / 8; /* many ties */
    brute_force_ranks(logits, N, rank);
    for (int i = 0; i < N; i++) by_rank[rank[i]] = i;

    const int ks[] = {0, 1, 40, 333, 1499};
    const float ps[] = {1.0f, 0.9f, 0.5f, 0.05f};
    for (int a = 0; a < 5; a++)
        for (int b = 0; b < 4; b++) {
            int k = ks[a] ? ks[a] : N;
            for (int i = 0; i < N; i++) mask[i] = rank[i] < k;
            reference_probs(logits, N, 0.9f, mask, p);
            int kept = k;
            if (ps[b] < 1.0f) {
                double cumulative = 0;
                for (kept = 0; kept < k && cumulative < ps[b] - 1e-9;) cumulative += p[by_rank[kept++]];
            }
            for (int i = 0; i < N; i++) mask[i] = rank[i] < kept;
            reference_probs(logits, N, 0.9f, mask, expected);

            qkv_sampling s = sampling(0.9f, ks[a], ps[b]);
            qkv_sampling_probs(&s, logits, N, probs, scratch);
            int support[N];
            ck_assert_int_eq(support_of(probs, N, support), kept);
            ck_assert_mem_eq(support, mask, sizeof support);
            assert_probs_near(probs, expected, N, 1e-7, "vocabulary");
            assert_sums_to_one(probs, N, "vocabulary");
        }
}
END_TEST

/* ---- the draw ------------------------------------------------------------------------------------ */

START_TEST(test_draw_fixed_by_seed) {
    enum { N = 64, DRAWS = 200 };
    float logits[N];
    int scratch[N], first[DRAWS];
    fill_normal_seeded(logits, N, 3, 0.0f, 1.5f);
    const qkv_sampling settings[] = {sampling(1.0f, 0, 1.0f), sampling(0.8f, 10, 1.0f), sampling(1.2f, 0, 0.9f),
                                     sampling(0.7f, 20, 0.8f), sampling(1.0f, 1, 1.0f)};
    for (int c = 0; c < 5; c++) {
        const qkv_sampling *s = &settings[c];
        qkv_rng a = qkv_rng_make(99), b = qkv_rng_make(99), other = qkv_rng_make(100);
        int differs = 0;
        for (int t = 0; t < DRAWS; t++) {
            first[t] = qkv_sample_token(s, logits, N, &a, scratch);
            ck_assert_uint_eq(a.counter, (uint64_t)t + 1); /* exactly one draw per token */
            ck_assert_int_eq(qkv_sample_token(s, logits, N, &b, NULL), first[t]);
            differs |= qkv_sample_token(s, logits, N, &other, scratch) != first[t];
        }
        ck_assert_int_eq(differs, s->top_k != 1); /* another seed, another text (unless forced) */
    }
}
END_TEST

/* Each token is the first, in index order, whose cumulative kept probability exceeds u. */
START_TEST(test_draw_inverts_the_cumulative) {
    enum { N = 40 };
    float logits[N], probs[N];
    fill_normal_seeded(logits, N, 8, 0.0f, 2.0f);
    qkv_sampling s = sampling(0.9f, 25, 0.95f);
    qkv_sampling_probs(&s, logits, N, probs, NULL);
    qkv_rng rng = qkv_rng_make(4);
    for (int t = 0; t < 5000; t++) {
        qkv_rng copy = rng;
        double u = qkv_rng_uniform(&copy), cumulative = 0;
        int expected = -1;
        for (int i = 0; i < N && expected < 0; i++)
            if ((cumulative += probs[i]) > u) expected = i;
        ck_assert_int_eq(qkv_sample_token(&s, logits, N, &rng, NULL), expected);
        ck_assert_float_ne(probs[expected], 0.0f);
    }
}
END_TEST

START_TEST(test_draw_frequencies_match_probs) {
    enum { N = 12, DRAWS = 200000 };
    float logits[N], probs[N];
    int scratch[N];
    fill_normal_seeded(logits, N, 17, 0.0f, 1.0f);
    const qkv_sampling settings[] = {sampling(1.0f, 0, 1.0f), sampling(0.6f, 7, 0.9f), sampling(2.5f, 0, 0.7f)};
    for (int c = 0; c < 3; c++) {
        long counts[N] = {0};
        qkv_rng rng = qkv_rng_make(2024 + (uint64_t)c);
        for (int t = 0; t < DRAWS; t++) counts[qkv_sample_token(&settings[c], logits, N, &rng, scratch)]++;
        qkv_sampling_probs(&settings[c], logits, N, probs, scratch);
        for (int i = 0; i < N; i++) {
            double mean = DRAWS * (double)probs[i], sigma = sqrt(mean * (1 - probs[i]));
            if (probs[i] == 0.0f) ck_assert_int_eq(counts[i], 0);
            ck_assert_msg(fabs(counts[i] - mean) <= 5 * sigma + 1,
                          "setting %d: token %d drawn %ld times, expected %.1f +- %.1f", c, i, counts[i], mean, sigma);
        }
    }
}
END_TEST

/* ---- settings and errors -------------------------------------------------------------------------- */

START_TEST(test_check_messages) {
    const qkv_sampling good[] = {sampling(0, 0, 0), sampling(100, 0, 1), sampling(0.8f, 1 << 30, 0.5f),
                                 sampling(1e-30f, 5, 1e-30f)};
    for (int i = 0; i < 4; i++) ck_assert_int_eq(qkv_sampling_check(&good[i]), 0);

    struct { qkv_sampling s; const char *what, *reason; } bad[] = {
        {sampling(-0.5f, 0, 1), "temperature -0.5", "[0, 100]"},
        {sampling(100.5f, 0, 1), "temperature 100.5", "[0, 100]"},
        {sampling(NAN, 0, 1), "temperature", "[0, 100]"},
        {sampling(INFINITY, 0, 1), "temperature inf", "[0, 100]"},
        {sampling(1, -1, 1), "top_k -1", "negative"},
        {sampling(1, 0, 1.5f), "top_p 1.5", "[0, 1]"},
        {sampling(1, 0, -0.25f), "top_p -0.25", "[0, 1]"},
        {sampling(1, 0, NAN), "top_p", "[0, 1]"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        qkv_set_error("%s", "");
        ck_assert_int_eq(qkv_sampling_check(&bad[i].s), -1);
        expect_last_error(bad[i].what, bad[i].reason);
    }
}
END_TEST

START_TEST(test_bad_calls_stop) {
    float logits[5] = {0.1f, 0.2f, 0.3f, NAN, 0.5f}, probs[5];
    qkv_rng rng = qkv_rng_make(1);
    qkv_sampling s = sampling(1.0f, 0, 1.0f), g = sampling(0.0f, 0, 1.0f);
    EXPECT_FATAL(qkv_sample_token(&s, logits, 5, &rng, NULL), "qkv_sample_token: logit 3 of 5 is NaN");
    EXPECT_FATAL(qkv_sample_token(&g, logits, 5, &rng, NULL), "logit 3 of 5 is NaN");
    EXPECT_FATAL(qkv_sampling_probs(&s, logits, 5, probs, NULL), "qkv_sampling_probs: logit 3 of 5 is NaN");
    logits[3] = INFINITY;
    EXPECT_FATAL(qkv_sample_token(&s, logits, 5, &rng, NULL), "logit 3 of 5 is +inf");
    for (int i = 0; i < 5; i++) logits[i] = -INFINITY;
    EXPECT_FATAL(qkv_sampling_probs(&s, logits, 5, probs, NULL), "all 5 logits are -inf");
    logits[0] = 1.0f;
    EXPECT_FATAL(qkv_sample_token(&s, logits, 0, &rng, NULL), "n = 0");
    qkv_sampling hot = sampling(101.0f, 0, 1.0f), neg = sampling(1.0f, -2, 1.0f);
    EXPECT_FATAL(qkv_sample_token(&hot, logits, 5, &rng, NULL), "qkv_sample_token: temperature 101");
    EXPECT_FATAL(qkv_sampling_probs(&neg, logits, 5, probs, NULL), "top_k -2");
    ck_assert_uint_eq(rng.counter, 0); /* a stopped call drew nothing */
}
END_TEST

Suite *suite_sampling(void) {
    Suite *s = suite_create("sampling");
    TCase *tc = tcase_create("sampling");
    tcase_add_test(tc, test_greedy_and_ties);
    tcase_add_test(tc, test_temperature_scales_the_softmax);
    tcase_add_test(tc, test_top_k_masks);
    tcase_add_test(tc, test_top_p_on_uniform_rows);
    tcase_add_test(tc, test_top_p_on_worked_rows);
    tcase_add_test(tc, test_masks_at_vocabulary_size);
    tcase_add_test(tc, test_draw_fixed_by_seed);
    tcase_add_test(tc, test_draw_inverts_the_cumulative);
    tcase_add_test(tc, test_draw_frequencies_match_probs);
    tcase_add_test(tc, test_check_messages);
    tcase_add_test(tc, test_bad_calls_stop);
    suite_add_tcase(s, tc);
    return s;
}
