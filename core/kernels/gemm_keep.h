/* gemm_keep.h — the calling thread's store of packed B operands that products
 * share (gemm.h: qkv_gemm_keep_begin). Internal to the kernels: gemm_keep.c opens
 * and closes it, kernel_gemm.c finds and fills its entries.
 *
 * Between begin and end, a product of one thread whose B lies in one of the
 * ranges the caller declared constant asks for its entry: the panels of op(B) for
 * every (column block, K block), in the layout the gemm packs them
 * (kernel_gemm.c), the block at column jc and depth pc at floats
 * jc * K + pc * (its column count rounded up to NR).
 * An entry is keyed by what decides the packed values: B, ldb, trans_b, N, K and
 * the panel width. The buffers outlive end (the next step reuses them) and are
 * freed when the thread exits.
 */
#ifndef QKV_GEMM_KEEP_H
#define QKV_GEMM_KEEP_H

#include <stddef.h>

#include "core/kernels/kernels.h"

/* The entry of g's op(B), `floats` long, packed for panels nr wide: *ready is 1 if
 * a product since begin filled it, else 0 and the caller fills it now (it counts as
 * filled from here on). NULL when the store is closed or full, or B is not in a
 * constant range: pack as usual. */
float *qkv_gemm_keep_find(const qkv_gemm_args *g, int nr, size_t floats, int *ready);

#endif
