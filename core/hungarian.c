/* hungarian.c — minimum-cost rectangular assignment by shortest augmenting paths
 * with potentials (see hungarian.h for the contract).
 *
 * Notation (1-based inside, slot 0 is the virtual start column):
 *   rows i = 1..n are targets, columns j = 1..m are queries, a(i,j) = cost of
 *   giving query j to target i; u[i], v[j] are the dual potentials with
 *   a(i,j) - u[i] - v[j] >= 0, equal to 0 on matched pairs; row_of[j] is the
 *   target holding query j (0: free).
 * Adding target i: grow a shortest-path tree from i over reduced costs
 * (min_slack[j] = cheapest way to reach column j, via[j] = the column before it),
 * each round fixing the closest unvisited column and shifting the potentials by
 * that distance, until a free column is reached; then flip the path.
 */
#include <math.h>
#include <stdlib.h>

#include "core/alloc.h"
#include "core/error.h"
#include "core/hungarian.h"

int qkv_hungarian(int n_queries, int n_targets, const double *cost, int *query_of_target,
                  int *target_of_query) {
    QKV_CHECK(n_targets >= 0 && n_queries >= n_targets,
              "hungarian: cost [%d queries x %d targets]: need 0 <= targets <= queries", n_queries,
              n_targets);
    QKV_CHECK(n_targets == 0 || (cost && query_of_target),
              "hungarian: cost [%d queries x %d targets]: cost or query_of_target is NULL", n_queries,
              n_targets);
    for (int q = 0; q < n_queries; q++)
        for (int t = 0; t < n_targets; t++)
            if (!isfinite(cost[(size_t)q * n_targets + t])) {
                qkv_set_error("hungarian: cost [%d queries x %d targets]: entry (query %d, target %d) is %g",
                              n_queries, n_targets, q, t, cost[(size_t)q * n_targets + t]);
                return -1;
            }
    if (target_of_query)
        for (int q = 0; q < n_queries; q++) target_of_query[q] = -1;
    if (n_targets == 0) return 0;

    int n = n_targets, m = n_queries;
    size_t cols = (size_t)m + 1;
    double *u = qkv_calloc((size_t)n + 1, sizeof *u, "hungarian: row potentials");
    double *v = qkv_calloc(cols, sizeof *v, "hungarian: column potentials");
    double *min_slack = qkv_calloc(cols, sizeof *min_slack, "hungarian: slacks");
    int *row_of = qkv_calloc(cols, sizeof *row_of, "hungarian: assignment");
    int *via = qkv_calloc(cols, sizeof *via, "hungarian: augmenting path");
    char *visited = qkv_calloc(cols, 1, "hungarian: visited columns");
#define A(i, j) cost[(size_t)((j) - 1) * n + ((i) - 1)]

    for (int i = 1; i <= n; i++) {
        row_of[0] = i;
        int j0 = 0;
        for (int j = 0; j <= m; j++) {
            min_slack[j] = INFINITY;
            visited[j] = 0;
        }
        do {
            visited[j0] = 1;
            int i0 = row_of[j0], j1 = 0;
            double delta = INFINITY;
            for (int j = 1; j <= m; j++) {
                if (visited[j]) continue;
                double reduced = A(i0, j) - u[i0] - v[j];
                if (reduced < min_slack[j]) {
                    min_slack[j] = reduced;
                    via[j] = j0;
                }
                if (min_slack[j] < delta) { /* strict: the lowest index wins ties */
                    delta = min_slack[j];
                    j1 = j;
                }
            }
            for (int j = 0; j <= m; j++) {
                if (visited[j]) {
                    u[row_of[j]] += delta;
                    v[j] -= delta;
                } else {
                    min_slack[j] -= delta;
                }
            }
            j0 = j1;
        } while (row_of[j0] != 0);
        do { /* flip the augmenting path back to the start */
            int j1 = via[j0];
            row_of[j0] = row_of[j1];
            j0 = j1;
        } while (j0 != 0);
    }
#undef A
    for (int j = 1; j <= m; j++) {
        if (row_of[j] == 0) continue;
        query_of_target[row_of[j] - 1] = j - 1;
        if (target_of_query) target_of_query[j - 1] = row_of[j] - 1;
    }
    free(u);
    free(v);
    free(min_slack);
    free(row_of);
    free(via);
    free(visited);
    return 0;
}
