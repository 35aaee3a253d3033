/* checks.h — every gradient-check group, core's and the layers', in one list that
 * `make test` (tests/test_gradcheck.c) and `./qkv gradcheck` both read (the
 * checker and the case format are in core/check/gradcheck.h).
 *
 * QKV_GRADCHECK_GROUPS(X) names each group by its symbol: X(matmul) is
 * qkv_checks_matmul, defined in core/ or layers/ as
 *   const qkv_gradcheck_group qkv_checks_matmul = {"matmul", cases, n};
 * The list's order is the order `./qkv gradcheck` prints. It sits here, above
 * core, because it names the layers' groups too. From it come the declarations
 * below and the table qkv_gradcheck_groups; a group defined but not listed fails
 * tests/test_registries.c, a group listed but not defined fails to link.
 */
#ifndef QKV_LAYER_CHECKS_H
#define QKV_LAYER_CHECKS_H

#include "core/check/gradcheck.h"

#define QKV_GRADCHECK_GROUPS(X)                                    \
    X(elementwise)      /* core/check/checks_elementwise.c */            \
    X(reduce)           /* core/check/checks_reduce.c */                 \
    X(matmul)           /* core/check/checks_matmul.c */                 \
    X(affine)           /* core/check/checks_matmul.c */                 \
    X(softmax)          /* core/check/checks_softmax.c */                \
    X(norm)             /* core/check/checks_norm.c */                   \
    X(shape)            /* core/check/checks_shape.c */                  \
    X(attention)        /* core/check/checks_attention.c */              \
    X(position)         /* core/check/checks_position.c */               \
    X(linear)           /* layers/check/checks_linear.c */               \
    X(attention_layers) /* layers/check/checks_attention.c ("blocks") */ \
    X(sets)             /* layers/check/checks_sets.c */                 \
    X(box)              /* core/check/checks_box.c */                    \
    X(set_loss)         /* layers/check/checks_set_loss.c */             \
    X(image)            /* core/check/checks_image.c */                  \
    X(queries)          /* layers/check/checks_queries.c */

#define QKV_GRADCHECK_DECLARE_(name) extern const qkv_gradcheck_group qkv_checks_##name;
QKV_GRADCHECK_GROUPS(QKV_GRADCHECK_DECLARE_)
#undef QKV_GRADCHECK_DECLARE_

#define QKV_GRADCHECK_COUNT_(name) +1
enum { QKV_GRADCHECK_N_GROUPS = 0 QKV_GRADCHECK_GROUPS(QKV_GRADCHECK_COUNT_) };
#undef QKV_GRADCHECK_COUNT_

/* &qkv_checks_<name> for every X(name) of the list, in its order (checks.c). */
extern const qkv_gradcheck_group *const qkv_gradcheck_groups[QKV_GRADCHECK_N_GROUPS];

/* Moves a layer feeding a ReLU/GELU away from the kink at 0 for finite
 * differences (checks_sets.c has the reason); the MLP form does every hidden layer. */
struct qkv_linear;
struct qkv_mlp;
void qkv_check_away_from_kink(struct qkv_linear *l);
void qkv_check_mlp_away_from_kinks(struct qkv_mlp *mlp);

#endif
