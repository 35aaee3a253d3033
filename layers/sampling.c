/* sampling.c — see sampling.h.
 *
 * Both entry points share one description of the kept set (kept_set): the scaled
 * maximum, the lowest-ranked kept token and the kept weights' sum. Token i is kept
 * when it ranks at or before that token, so the set needs no sorting back into
 * index order, and weights are recomputed from the logits where they are needed:
 * the only work space is the n ints of the ranking, and only top-k or top-p sort.
 */
#include "layers/sampling.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/mathfn.h"
#include "core/alloc.h"
#include "core/error.h"

/* ---- settings ----------------------------------------------------------------------- */

/* Describes the first setting out of range in message and returns 1; 0 when all are
 * in range. The tests read !(in range), so that NaN is out of range. */
static int describe_bad_setting(const qkv_sampling *s, char *message, size_t len) {
    if (!(s->temperature >= 0.0f && s->temperature <= 100.0f))
        snprintf(message, len, "temperature %g is outside [0, 100] (0: greedy)", (double)s->temperature);
    else if (s->top_k < 0)
        snprintf(message, len, "top_k %d is negative (0: off)", s->top_k);
    else if (!(s->top_p >= 0.0f && s->top_p <= 1.0f))
        snprintf(message, len, "top_p %g is outside [0, 1] (0 or 1: off)", (double)s->top_p);
    else
        return 0;
    return 1;
}

int qkv_sampling_check(const qkv_sampling *s) {
    char message[128];
    if (!describe_bad_setting(s, message, sizeof message)) return 0;
    qkv_set_error("%s", message);
    return -1;
}

/* ---- logits and their ranking --------------------------------------------------------- */

/* Stops unless the call is well formed (settings in range; no NaN or +inf logit; some
 * logit above -inf) and returns the argmax, ties to the lowest index. */
static int checked_argmax(const char *who, const qkv_sampling *s, const float *logits, int n) {
    QKV_CHECK(s && logits && n > 0, "%s: needs settings, logits and n > 0 (n = %d)", who, n);
    char message[128];
    QKV_CHECK(!describe_bad_setting(s, message, sizeof message), "%s: %s", who, message);
    int best = 0;
    for (int i = 0; i < n; i++) {
        QKV_CHECK(!isnan(logits[i]), "%s: logit %d of %d is NaN", who, i, n);
        QKV_CHECK(logits[i] != INFINITY, "%s: logit %d of %d is +inf", who, i, n);
        if (logits[i] > logits[best]) best = i;
    }
    QKV_CHECK(logits[best] > -INFINITY, "%s: all %d logits are -inf", who, n);
    return best;
}

/* Token a ranks before token b: a larger logit, or an equal one and a lower index.
 * Without NaN this is a total order, so any correct sort gives the same ranking. */
static int ranks_before(const float *logits, int a, int b) {
    return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
}

/* Sifts order[root] down the heap order[0..size), whose every parent ranks after its
 * children (the last-ranked token on top). */
static void sift_down(const float *logits, int *order, int root, int size) {
    for (int child; (child = 2 * root + 1) < size; root = child) {
        if (child + 1 < size && ranks_before(logits, order[child], order[child + 1])) child++;
        if (!ranks_before(logits, order[root], order[child])) return;
        int t = order[root];
        order[root] = order[child];
        order[child] = t;
    }
}

/* order[0..n) = the tokens by rank, first first. Heapsort: in place and O(n log n). */
static void sort_by_rank(const float *logits, int *order, int n) {
    for (int i = 0; i < n; i++) order[i] = i;
    for (int i = n / 2 - 1; i >= 0; i--) sift_down(logits, order, i, n);
    for (int end = n - 1; end > 0; end--) {
        int t = order[0];
        order[0] = order[end];
        order[end] = t;
        sift_down(logits, order, 0, end);
    }
}

/* ---- the kept set ----------------------------------------------------------------------- */

typedef struct kept_set {
    const float *logits;
    double temperature;
    double z_max; /* max_j logit_j / T */
    int last;     /* the lowest-ranked kept token, or -1: all are kept */
    double total; /* the sum of the kept weights, in index order */
} kept_set;

/* w_i = exp(logit_i / T - max_j logit_j / T): the temperature first, then the max
 * subtracted, so the top token weighs exactly 1 and no weight overflows. */
static double token_weight(const kept_set *k, int i) {
    return qkv_math_exp((double)k->logits[i] / k->temperature - k->z_max);
}

static double kept_weight(const kept_set *k, int i) {
    int kept = k->last < 0 || i == k->last || ranks_before(k->logits, i, k->last);
    return kept ? token_weight(k, i) : 0.0;
}

/* The smallest m <= kept whose first m tokens' probabilities (renormalized over the
 * first kept, summed in rank order) reach top_p. top_p is a float standing for the
 * decimal a user wrote: a sum reaches it from the midpoint with the float below on,
 * so that ten tokens of 0.1 reach 0.3f (0.300000012) with three, not four. */
static int nucleus_size(const kept_set *k, const int *order, int kept, float top_p) {
    double reach = ((double)top_p + (double)nextafterf(top_p, 0.0f)) / 2;
    double total = 0, cumulative = 0;
    for (int j = 0; j < kept; j++) total += token_weight(k, order[j]);
    for (int j = 0; j < kept; j++) {
        cumulative += token_weight(k, order[j]) / total;
        if (cumulative >= reach) return j + 1;
    }
    return kept;
}

/* The lowest-ranked token kept by top-k then top-p, or -1 when neither is on. */
static int find_last_kept(const kept_set *k, const qkv_sampling *s, int n, int *scratch) {
    int use_k = s->top_k > 0 && s->top_k < n;
    int use_p = s->top_p > 0.0f && s->top_p < 1.0f;
    if (!use_k && !use_p) return -1;
    int *order = scratch ? scratch : qkv_malloc(sizeof *order * (size_t)n, "sampling ranks");
    sort_by_rank(k->logits, order, n);
    int kept = use_k ? s->top_k : n;
    if (use_p) kept = nucleus_size(k, order, kept, s->top_p);
    int last = order[kept - 1];
    if (!scratch) free(order);
    return last;
}

static kept_set find_kept_set(const qkv_sampling *s, const float *logits, int n, int top, int *scratch) {
    kept_set k = {logits, s->temperature, (double)logits[top] / s->temperature, -1, 0.0};
    k.last = find_last_kept(&k, s, n, scratch);
    for (int i = 0; i < n; i++) k.total += kept_weight(&k, i);
    return k;
}

/* ---- entry points ------------------------------------------------------------------------ */

void qkv_sampling_probs(const qkv_sampling *s, const float *logits, int n, float *probs, int *scratch) {
    int top = checked_argmax("qkv_sampling_probs", s, logits, n);
    QKV_CHECK(probs, "qkv_sampling_probs: probs is NULL (n = %d)", n);
    if (s->temperature == 0.0f) {
        memset(probs, 0, sizeof *probs * (size_t)n);
        probs[top] = 1.0f;
        return;
    }
    kept_set k = find_kept_set(s, logits, n, top, scratch);
    for (int i = 0; i < n; i++) probs[i] = (float)(kept_weight(&k, i) / k.total);
}

int qkv_sample_token(const qkv_sampling *s, const float *logits, int n, qkv_rng *rng, int *scratch) {
    int top = checked_argmax("qkv_sample_token", s, logits, n);
    QKV_CHECK(rng, "qkv_sample_token: rng is NULL (n = %d)", n);
    if (s->temperature == 0.0f) return top;
    kept_set k = find_kept_set(s, logits, n, top, scratch);
    double u = qkv_rng_uniform(rng);
    double cumulative = 0;
    int last_drawable = top;
    for (int i = 0; i < n; i++) {
        double p = kept_weight(&k, i) / k.total;
        if (p == 0.0) continue;
        cumulative += p;
        last_drawable = i;
        if (u < cumulative) return i;
    }
    return last_drawable; /* u at or above a sum that rounded below 1 */
}
