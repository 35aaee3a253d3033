/* set_models.h — whole models on sets: an encoder, a permutation-invariant
 * pooling and a head, chosen by kind, mapping x [B,N,d_in] (+ mask [B,N]) to
 * [B,n_outputs] (class logits, or one value for regression).
 *
 *   kind            encoder                       pooling            head
 *   isab            ISAB_m x L (d_in -> width)    PMA_1 -> [B,width]  Linear
 *   sab (sab-pma)   SAB x L    (d_in -> width)    PMA_1               Linear
 *   deepsets-max    phi: MLP of L layers          max                 rho: MLP of 2 layers
 *   deepsets-mean   phi                           mean                rho
 *   deepsets-sum    phi                           sum                 rho
 *   attnpool        MLP of L layers (ReLU between) attention pooling  Linear
 *
 * Every block comes from sets.h and keeps its padding contract: mask 1 = real
 * point, 0 = padding, NULL = all real; the output for a set does not depend on its
 * padded rows (which must be finite) nor on the other sets of the batch. The whole
 * batch runs as one tensor program (no loop over sets).
 *
 * Config (0 means the default where one is given):
 *   d_in, width, n_heads (must divide width), n_outputs     required, >= 1
 *   n_layers     encoder blocks, or linear layers of the row-wise MLP;  0: 2
 *   n_inducing   m of ISAB;                                             0: 16
 *   layer_norm   LN in every MAB (sets.h);                              0: off
 *   residual     MAB residual (sets.h);  0: QKV_MAB_RESIDUAL_PROJECTED (authors')
 * With the raw residual the first block needs queries of width `width`: when
 * d_in != width a Linear d_in -> width ("<name>.embed") runs first; the projected
 * residual feeds the points to the first block directly, as the authors do.
 * PMA uses its rFF (PMA_1(Z) = MAB(S, rFF(Z)), as in the paper).
 *
 * Parameters: "<name>.embed.*", "<name>.enc.<i>.*" (isab, sab), "<name>.phi.<i>.*"
 * (deepsets, attnpool), "<name>.pool.*" (PMA or attention pooling),
 * "<name>.rho.<i>.*" (deepsets) and "<name>.head.*".
 * The struct holds everything by value (no allocation): there is nothing to free
 * beyond the parameters.
 */
#ifndef QKV_SET_MODELS_H
#define QKV_SET_MODELS_H

#include "layers/sets.h"

typedef enum qkv_set_model_kind {
    QKV_SET_MODEL_ISAB,
    QKV_SET_MODEL_SAB,
    QKV_SET_MODEL_DEEPSETS_MAX,
    QKV_SET_MODEL_DEEPSETS_MEAN,
    QKV_SET_MODEL_DEEPSETS_SUM,
    QKV_SET_MODEL_ATTNPOOL,
} qkv_set_model_kind;

/* "isab", "sab", "deepsets-max", "deepsets-mean", "deepsets-sum", "attnpool";
 * "sab-pma" parses as sab. parse returns -1 for an unknown name (or NULL); name
 * returns "unknown" for a value outside the enum. */
int qkv_set_model_kind_parse(const char *name);
extern const char *const qkv_set_model_kind_names[]; /* in enum order, NULL-terminated */
const char *qkv_set_model_kind_name(qkv_set_model_kind kind);

typedef struct qkv_set_model_config {
    qkv_set_model_kind kind;
    int d_in, width, n_heads, n_outputs;
    int n_layers;     /* 0: 2 */
    int n_inducing;   /* 0: 16 */
    int layer_norm;
    qkv_mab_residual residual;
} qkv_set_model_config;

#define QKV_SET_MODEL_MAX_LAYERS 8

typedef struct qkv_set_model {
    qkv_set_model_config cfg;      /* with the defaults filled in */
    int has_embed;
    qkv_linear embed;              /* raw residual with d_in != width */
    qkv_isab isab[QKV_SET_MODEL_MAX_LAYERS];
    qkv_sab sab[QKV_SET_MODEL_MAX_LAYERS];
    qkv_pma pma;
    qkv_mlp phi;                   /* deepsets (inside deepsets) and attnpool */
    qkv_attn_pool attn_pool;
    qkv_deepsets deepsets;
    qkv_linear head;
} qkv_set_model;

/* Validates config (bad widths, heads not dividing width, unknown kind, n_layers
 * outside 1..8 stop with a message naming the model) and registers the
 * parameters of the chosen kind only. */
void qkv_set_model_init(qkv_set_model *model, qkv_params *params, const char *name,
                        const qkv_set_model_config *config, qkv_rng *rng);
/* x [B,N,d_in], mask [B,N] or NULL -> [B,n_outputs]. */
qkv_tensor *qkv_set_model_forward(qkv_tape *tape, const qkv_set_model *model, qkv_tensor *x,
                                  const qkv_tensor *mask);

#endif
