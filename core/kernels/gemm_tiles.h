/* gemm_tiles.h — the gemm kernel's register tile and cache blocking for the
 * vector width being compiled (simd.h's QKV_VW). Shared by kernel_gemm.c, which
 * uses them, and kernel_table.c, which reports them. None of them changes a
 * result (kernel_gemm.c: every element is one fma chain over k in order).
 *
 *   MR x NR  the tile of C held in registers: MR * NV vectors of QKV_VW floats
 *   KC       the K block: an NR x KC panel of B stays in L1
 *   MC_MAX   rows of packed A per block, in L2
 *   TALL_MR  rows of the block products' tile for a one-vector panel
 */
#ifndef QKV_GEMM_TILES_H
#define QKV_GEMM_TILES_H

#if QKV_VW == 16
#define MR 6           /* 24 of the 32 zmm registers hold C; 6 x 64 beat 12 x 32 */
#define NV 4           /* by 4-20% at n = 64 ... 1024 on one thread (Zen 5) */
#define MC_MAX 192     /* 192 x 256 floats = 192 KB */
#elif QKV_VW == 8
#define MR 6           /* 12 of the 16 ymm registers */
#define NV 2
#define MC_MAX 144     /* 144 KB */
#else
#define MR 6           /* 24 of NEON's 32 registers */
#define NV 4
#define MC_MAX 144
#endif
#define NR (NV * QKV_VW)
#define KC 256

/* Rows of a block product's tile (block_product.h) for a panel of one vector:
 * as many accumulators as the MR x NR tile holds, at most 16 rows. A 16 x 16
 * attention block on 16-float vectors is then one tile, not three of 6 rows with
 * the last one padded. (Taller tiles of two or more vectors were slower: 12 x 2
 * issues a broadcast per two multiply-adds.) */
#define TALL_MR (MR * NV < 16 ? MR * NV : 16)

#endif
