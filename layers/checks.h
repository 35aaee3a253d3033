/* checks.h — the layers' gradient-check groups, run by `make test` and
 * `./qkv gradcheck` (the checker and the case format are in core/gradcheck.h). */
#ifndef QKV_LAYER_CHECKS_H
#define QKV_LAYER_CHECKS_H

#include "core/gradcheck.h"

extern const qkv_gradcheck_group qkv_checks_linear;            /* checks_linear.c */
extern const qkv_gradcheck_group qkv_checks_attention_layers;  /* checks_attention.c */
extern const qkv_gradcheck_group qkv_checks_sets;              /* checks_sets.c */
extern const qkv_gradcheck_group qkv_checks_set_loss;          /* checks_set_loss.c */
extern const qkv_gradcheck_group qkv_checks_queries;           /* checks_queries.c */

/* Moves a layer feeding a ReLU/GELU away from the kink at 0 for finite
 * differences (checks_sets.c has the reason); the MLP form does every hidden layer. */
struct qkv_linear;
struct qkv_mlp;
void qkv_check_away_from_kink(struct qkv_linear *l);
void qkv_check_mlp_away_from_kinks(struct qkv_mlp *mlp);

#endif
