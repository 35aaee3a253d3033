/* patch.h — patch embedding: images [B,C,H,W] -> tokens [B,T,D], as in ViT/DETR.
 *
 *   tokens = Linear(patchify(images, P)) + pos          T = (H/P) * (W/P)
 *
 * patchify (core/ops/ops.h) numbers patches row-major over the grid and flattens each
 * C-major, then rows, then columns, so the linear layer [D, C*P*P] is a stride-P
 * convolution's weight. pos [T,D] is, by config:
 *   sinusoidal  the 2-D table of core/ops/ops_position.h (first D/2 columns: the patch's
 *               row, last D/2: its column); needs D a multiple of 4; any grid.
 *   learned     a parameter "<name>.pos" [max_tokens, D], init N(0, 0.02); its
 *               first T rows are used (T > max_tokens stops, naming the layer).
 *   none        no positions (pos is NULL).
 * The forward can hand pos back, so a DETR decoder can add it to the memory keys
 * in every layer (qkv_detr_forward's memory_pos). add_to_tokens 0 leaves it out of
 * the tokens (DETR adds it only to keys and queries, never to values).
 * Parameters: "<name>.proj.weight", "<name>.proj.bias", "<name>.pos".
 */
#ifndef QKV_PATCH_H
#define QKV_PATCH_H

#include "core/ops/params.h"
#include "core/rng.h"
#include "core/ops/tape.h"
#include "layers/linear.h"

typedef enum qkv_patch_pos { QKV_PATCH_POS_SINUSOIDAL, QKV_PATCH_POS_LEARNED, QKV_PATCH_POS_NONE } qkv_patch_pos;

typedef struct qkv_patch_config {
    int channels, patch, d_model;   /* C, P, D */
    qkv_patch_pos positions;        /* default (0): sinusoidal */
    int max_tokens;                 /* learned: rows of the table */
    int skip_add;                   /* 1: tokens carry no positions (DETR style); pos still returned */
} qkv_patch_config;

typedef struct qkv_patch_embed {
    qkv_patch_config cfg;
    qkv_linear proj;                /* C*P*P -> D */
    qkv_tensor *pos;                /* learned: [max_tokens, D]; otherwise NULL */
} qkv_patch_embed;

void qkv_patch_embed_init(qkv_patch_embed *pe, qkv_params *params, const char *name,
                          const qkv_patch_config *cfg, qkv_rng *rng);
/* images [B,C,H,W] -> tokens [B,T,D]. pos_out, if not NULL, receives the
 * positions [T,D] (an activation of this tape, or NULL for none). Shapes that do
 * not fit stop with "patch_embed: ..." naming the shapes. */
qkv_tensor *qkv_patch_embed_forward(qkv_tape *tape, const qkv_patch_embed *pe, qkv_tensor *images,
                                    qkv_tensor **pos_out);

#endif
