/* torch_names.h — PyTorch's parameter names for qkv's, and loading a PyTorch
 * state_dict saved as safetensors straight into a qkv model.
 *
 * The map renames the dotted segments of a transformer block (<stack>.<i>.<part>
 * with part attn, self_attn, cross_attn, ln1..ln3 or ffn) and a stack's final
 * norm by one table (torch_names.c), and splits the packed input projection:
 *   qkv                          PyTorch (nn.Transformer*Layer, nn.MultiheadAttention)
 *   <stack>.<i>.                 <stack>.layers.<i>.        (stack: enc, dec)
 *   ln1 ln2 ln3 ln_final         norm1 norm2 norm3 norm
 *   attn / self_attn, cross_attn self_attn, multihead_attn
 *   ffn.fc1 ffn.fc2              linear1 linear2
 *   <mha>.wq|wk|wv.weight [E,E]  rows 0..E, E..2E, 2E..3E of <mha>.in_proj_weight [3E,E]
 *                                (a block's attention always has kdim = vdim = E, so
 *                                PyTorch's separate q/k/v_proj_weight never occur)
 *   <mha>.wq|wk|wv.bias [E]      the same thirds of <mha>.in_proj_bias [3E]
 *   <mha>.wo                     <mha>.out_proj
 * Every other name is the same in both: embed.weight, head.weight,
 * <stack>.pos.table, and the set models' (set.enc.0.mab0.fc_q.weight, set.pool.S:
 * the Set Transformer authors' own PyTorch names). python/qkv_torch.py builds its modules with exactly these names and keeps
 * the same table (test-torch loads its files through this map).
 */
#ifndef QKV_TORCH_NAMES_H
#define QKV_TORCH_NAMES_H

#include "core/ops/params.h"

/* Where a qkv parameter lives in a PyTorch state_dict: the tensor `name`, and of
 * it the part-th of `parts` equal row blocks (parts 1: the whole tensor). */
typedef struct qkv_torch_name {
    char name[QKV_NAME_MAX];
    int part, parts;
} qkv_torch_name;

/* The PyTorch name of a qkv parameter name (always succeeds: unknown segments
 * pass through). */
qkv_torch_name qkv_torch_name_of(const char *qkv_name);

/* Loads every parameter of params from the PyTorch-named safetensors file at
 * path. The whole file is checked first: each parameter's source present with the
 * shape it needs, and no tensor left over. 0, or -1 with a one-line
 * qkv_last_error() naming the file and the first missing, mis-shaped or unexpected
 * tensor (with the qkv name it was for); params are then unchanged. */
int qkv_params_load_torch(const qkv_params *params, const char *path);

#endif
