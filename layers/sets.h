/* sets.h — layers for sets: the Set Transformer blocks (Lee et al., ICML 2019:
 * MAB, SAB, ISAB, PMA, rFF), attention pooling with one learned query, set
 * pooling (sum, mean, max) and DeepSets (Zaheer et al., 2017).
 *
 * A set is x [B,N,d]: B sets of N points each, in no particular order. The blocks
 * are permutation equivariant (SAB, ISAB: permuting the points permutes the
 * output rows) or invariant (PMA, pooling, DeepSets: the output does not change).
 *
 *   rFF(H)        = relu(H W^T + b), row by row
 *   MAB(X, Y)     = LN1(H + rFF(H)),  H = LN0(R + Multihead(X, Y, Y))
 *   SAB(X)        = MAB(X, X)
 *   ISAB_m(X)     = MAB(X, MAB(I, X))           I [m,d]: learned inducing points
 *   PMA_k(Z)      = MAB(S, rFF(Z))              S [k,d]: learned seeds
 *   attn_pool(X)  = Multihead(q, X, X)          q [1,d]: one learned query -> [B,d]
 *   DeepSets(X)   = rho(pool_i phi(x_i))        phi, rho: MLPs; pool: sum, mean, max
 *
 * The MAB residual R (enum qkv_mab_residual):
 *   PROJECTED (default)  R = X Wq^T + bq, the projected query, and Multihead has no
 *                        output projection: per head O_h = Q_h + softmax(Q_h K_h^T s) V_h,
 *                        heads concatenated. This is the authors' reference code
 *                        (github.com/juho-lee/set_transformer, modules.py). It is the
 *                        default because it is what their published results were
 *                        trained with, its parameter names (fc_q, fc_k, fc_v, fc_o,
 *                        ln0, ln1) and shapes match theirs so weights port unchanged,
 *                        and it lets the query width d_q differ from d (ISAB's outer
 *                        MAB(X, H) takes raw points of width d_in as queries).
 *   RAW                  R = X, and Multihead ends with the output projection W_O
 *                        ("<name>.wo"), as the paper writes it. The query must
 *                        already have width d (d_q == d).
 * Layer norm is off by default (the authors' ln=False); cfg.layer_norm = 1 turns on
 * LN0 and LN1 (learned gain and bias).
 * Scores are scaled by s = cfg.scale, 0 meaning qkv's 1/sqrt(d_head). The authors
 * scale by 1/sqrt(d) (their dim_V); pass scale = 1/sqrtf(d) to match them exactly.
 *
 * Padding: sets of different sizes share a batch through mask [B,N], 1 = real point,
 * 0 = padding (qkv's convention; any nonzero counts as 1), or NULL (all real). Every
 * attention whose keys are the set gets it as key_padding, so padded points are
 * never attended to; ISAB's outer MAB(X, H) attends to the m inducing outputs and
 * needs none. Each block first sets the padded rows of its input to 0 (so huge
 * values there cannot overflow into Inf or NaN; they must be finite, as 0 * Inf is
 * NaN). Real rows' outputs and every pooled output are then exactly those of the
 * unpadded set, up to rounding; padded rows' own outputs are finite but otherwise
 * meaningless. Pooling ignores padded rows: sum and mean over real rows only (mean
 * divides by the real count), max over real rows only; an empty set pools to 0.
 *
 * Inducing points and seeds are drawn uniform in +-sqrt(6 / ((n + 1) d)), the
 * bound of the authors' xavier_uniform_ on their [1, n, d] tensors. Linear layers
 * use qkv's (PyTorch's) default init.
 *
 * Errors: a head count that does not divide d, a width that does not match, a mask
 * that is not [B,N], or a raw residual with d_q != d stop through qkv_fatal with a
 * message naming the block, its name and the shapes.
 */
#ifndef QKV_SETS_H
#define QKV_SETS_H

#include "core/ops/params.h"
#include "core/rng.h"
#include "core/ops/tape.h"
#include "layers/linear.h"
#include "layers/mha.h"
#include "layers/norm.h"

typedef enum qkv_mab_residual {
    QKV_MAB_RESIDUAL_PROJECTED = 0, /* the authors' code: R = projected query, no W_O */
    QKV_MAB_RESIDUAL_RAW = 1,       /* the paper: R = X, Multihead with W_O */
} qkv_mab_residual;

/* What every Set Transformer block shares. Zero-initialized fields are defaults. */
typedef struct qkv_set_block_config {
    int d;                      /* output width (the authors' dim_V); n_heads divides it */
    int n_heads;
    int layer_norm;             /* 1: LN0 and LN1 on; 0: off (the authors' default) */
    qkv_mab_residual residual;  /* default QKV_MAB_RESIDUAL_PROJECTED */
    float scale;                /* attention score scale; 0: 1/sqrt(d / n_heads) */
} qkv_set_block_config;

/* rFF: one row-wise layer relu(x W^T + b), [..., d_in] -> [..., d_out]. Its weights
 * are "<name>.weight" and "<name>.bias". */
typedef struct qkv_rff {
    qkv_linear fc;
} qkv_rff;

void qkv_rff_init(qkv_rff *rff, qkv_params *params, const char *name, int d_in, int d_out, qkv_rng *rng);
qkv_tensor *qkv_rff_forward(qkv_tape *tape, const qkv_rff *rff, qkv_tensor *x);

/* MAB(X, Y): queries of width d_q, keys/values of width d_k, output width d. */
typedef struct qkv_mab {
    char name[QKV_NAME_MAX];      /* for error messages */
    qkv_set_block_config cfg;
    int d_q, d_k;
    qkv_linear fc_q, fc_k, fc_v;  /* d_q -> d, d_k -> d, d_k -> d */
    qkv_linear wo;                /* RAW only: W_O, d -> d */
    qkv_rff fc_o;                 /* the rFF branch, d -> d */
    qkv_ln ln0, ln1;              /* layer_norm only */
} qkv_mab;

/* Parameters "<name>.fc_q.weight", ..., "<name>.fc_o.*", "<name>.wo.*" (RAW),
 * "<name>.ln0.*", "<name>.ln1.*" (layer_norm). */
void qkv_mab_init(qkv_mab *mab, qkv_params *params, const char *name, int d_q, int d_k,
                  const qkv_set_block_config *cfg, qkv_rng *rng);
/* x [B,Nq,d_q], or [Nq,d_q] shared by all B sets (learned queries); y [B,Nk,d_k];
 * y_mask [B,Nk] or NULL. Returns [B,Nq,d]. */
qkv_tensor *qkv_mab_forward(qkv_tape *tape, const qkv_mab *mab, qkv_tensor *x, qkv_tensor *y,
                            const qkv_tensor *y_mask);

/* SAB(X) = MAB(X, X): x [B,N,d_in] -> [B,N,d]. Parameters "<name>.mab.*". */
typedef struct qkv_sab {
    qkv_mab mab;
} qkv_sab;

void qkv_sab_init(qkv_sab *sab, qkv_params *params, const char *name, int d_in,
                  const qkv_set_block_config *cfg, qkv_rng *rng);
qkv_tensor *qkv_sab_forward(qkv_tape *tape, const qkv_sab *sab, qkv_tensor *x, const qkv_tensor *mask);

/* ISAB_m(X) = MAB1(X, MAB0(I, X)): x [B,N,d_in] -> [B,N,d] in O(N m) time.
 * Parameters "<name>.I" [m,d], "<name>.mab0.*" (d_q = d, d_k = d_in) and
 * "<name>.mab1.*" (d_q = d_in, d_k = d). */
typedef struct qkv_isab {
    int m;
    qkv_tensor *inducing;  /* [m,d] */
    qkv_mab mab0, mab1;
} qkv_isab;

void qkv_isab_init(qkv_isab *isab, qkv_params *params, const char *name, int d_in, int m,
                   const qkv_set_block_config *cfg, qkv_rng *rng);
qkv_tensor *qkv_isab_forward(qkv_tape *tape, const qkv_isab *isab, qkv_tensor *x, const qkv_tensor *mask);

/* PMA_k(Z) = MAB(S, rFF(Z)): z [B,N,d] -> [B,k,d]. with_rff 0 drops the rFF
 * (PMA_k(Z) = MAB(S, Z), as the authors' code has it). Parameters "<name>.S" [k,d],
 * "<name>.rff.*" (with_rff) and "<name>.mab.*". */
typedef struct qkv_pma {
    int k, with_rff;
    qkv_tensor *seeds;  /* [k,d] */
    qkv_rff rff;
    qkv_mab mab;
} qkv_pma;

void qkv_pma_init(qkv_pma *pma, qkv_params *params, const char *name, int n_seeds, int with_rff,
                  const qkv_set_block_config *cfg, qkv_rng *rng);
qkv_tensor *qkv_pma_forward(qkv_tape *tape, const qkv_pma *pma, qkv_tensor *z, const qkv_tensor *mask);

/* Attention pooling: one learned query q [1,d] ("<name>.query") attends over the
 * set with multi-head attention ("<name>.attn.*": Wq, Wk, Wv from d_in, and W_O):
 * x [B,N,d_in] -> [B,d]. weights_out, if not NULL, receives the head-averaged
 * attention weights [B,1,N] (not on the gradient path). */
typedef struct qkv_attn_pool {
    int d_in, d;
    qkv_tensor *query;  /* [1,d] */
    qkv_mha attn;
} qkv_attn_pool;

void qkv_attn_pool_init(qkv_attn_pool *pool, qkv_params *params, const char *name, int d_in, int d,
                        int n_heads, qkv_rng *rng);
qkv_tensor *qkv_attn_pool_forward(qkv_tape *tape, const qkv_attn_pool *pool, qkv_tensor *x,
                                  const qkv_tensor *mask, qkv_tensor **weights_out);

/* Pooling over the set axis: x [B,N,d] -> [B,d], padded rows ignored. Max sends
 * the gradient to the (first) largest real row. */
typedef enum qkv_set_pool { QKV_POOL_SUM, QKV_POOL_MEAN, QKV_POOL_MAX } qkv_set_pool;

/* "sum", "mean", "max"; parse returns -1 for an unknown name. */
int qkv_set_pool_parse(const char *name);
const char *qkv_set_pool_name(qkv_set_pool pool);
qkv_tensor *qkv_set_pool_forward(qkv_tape *tape, qkv_tensor *x, const qkv_tensor *mask, qkv_set_pool pool);

/* x [B,N,d] with the padded rows (mask 0) set to 0; x itself when mask is NULL. */
qkv_tensor *qkv_set_zero_padding(qkv_tape *tape, qkv_tensor *x, const qkv_tensor *mask);

/* DeepSets: phi, a row-wise MLP d_in -> width -> ... -> width (ReLU between its
 * layers, none after the last), then pooling, then rho, an MLP width -> ... ->
 * width -> d_out. x [B,N,d_in] -> [B,d_out]. Parameters "<name>.phi.<i>.*" and
 * "<name>.rho.<i>.*". */
typedef struct qkv_deepsets_config {
    int d_in, width, d_out;
    int phi_layers, rho_layers;  /* linear layers in each MLP (1..8); 0: 2 */
    qkv_set_pool pool;
} qkv_deepsets_config;

typedef struct qkv_deepsets {
    qkv_deepsets_config cfg;
    qkv_mlp phi, rho;
} qkv_deepsets;

void qkv_deepsets_init(qkv_deepsets *ds, qkv_params *params, const char *name,
                       const qkv_deepsets_config *cfg, qkv_rng *rng);
qkv_tensor *qkv_deepsets_forward(qkv_tape *tape, const qkv_deepsets *ds, qkv_tensor *x,
                                 const qkv_tensor *mask);

/* A learned [n,d] tensor shared by every item (inducing points, seeds, queries,
 * latents) as [B,n,d]: 0 (broadcast over B) + t. The add's backward sums the B
 * gradients into t in a fixed order. */
qkv_tensor *qkv_expand_batch(qkv_tape *tape, qkv_tensor *t, int b);

#endif
