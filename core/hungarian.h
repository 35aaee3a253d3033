/* hungarian.h — exact minimum-cost assignment (the Hungarian method), for DETR's
 * set-prediction loss and anything else that matches two sets.
 *
 * Problem: cost is [n_queries x n_targets], row-major, in double, with
 * n_targets <= n_queries. Find the injection target -> query (every target gets a
 * distinct query; n_queries - n_targets queries stay unmatched) minimizing
 *     sum_t cost[query_of[t] * n_targets + t].
 * Method: shortest augmenting paths with dual potentials (Kuhn-Munkres in the
 * Jonker-Volgenant form): each target in turn is added by a Dijkstra-like search
 * over the queries on reduced costs cost - u - v, which stay >= 0, so the
 * assignment after every step is optimal for the targets added so far.
 * O(n_targets^2 * n_queries) time, O(n_queries) extra memory.
 *
 * Ties: the result is deterministic. Queries are scanned in increasing index and
 * only a strictly smaller reduced cost replaces the current minimum, so among
 * equally cheap choices the lowest query index wins at every step. The total
 * cost is optimal whatever the ties.
 *
 * Errors: n_targets < 0, n_queries < n_targets or a NULL pointer is a programmer
 * error (qkv_fatal naming the sizes). A non-finite cost (NaN or +-Inf, e.g. from
 * diverged predictions) is an input error: -1 with qkv_last_error() naming the
 * entry, and the outputs untouched. n_targets == 0 is fine (everything unmatched).
 */
#ifndef QKV_HUNGARIAN_H
#define QKV_HUNGARIAN_H

/* query_of_target[n_targets]: the query each target gets. target_of_query
 * [n_queries] (may be NULL): the target each query gets, or -1. Returns 0, or -1
 * on a non-finite cost. */
int qkv_hungarian(int n_queries, int n_targets, const double *cost, int *query_of_target,
                  int *target_of_query);

#endif
