/* qkv_internal.h — qkv.h plus the internals that qkv's own commands, tests and
 * benchmarks use. Not a stable API: anything here may change or go without
 * notice, and a program outside qkv should not include it.
 *
 *  - the checked allocator (core/alloc.h) every module allocates through;
 *  - the matrix-multiply kernel (core/kernels/gemm.h, and core/kernels/block_product.h for
 *    attention's blocks) and the per-instruction-set kernel tables
 *    (core/kernels/kernels.h), which tests switch to compare paths;
 *  - gradient checking and the registry of check cases (core/check/gradcheck.h,
 *    layers/check/checks.h) that `make test` and `qkv gradcheck` run;
 *  - libgomp's wait policy, chosen first thing in main (core/kernels/wait_policy.h);
 *  - the atomic file writer and checked reader (core/fileio.h) and the JSON
 *    reader and writer (core/io/json.h) behind qkv's file formats.
 */
#ifndef QKV_INTERNAL_H
#define QKV_INTERNAL_H

#include "qkv.h"

#include "core/alloc.h"
#include "core/kernels/block_product.h"
#include "core/fileio.h"
#include "core/kernels/gemm.h"
#include "core/check/gradcheck.h"
#include "core/io/json.h"
#include "core/kernels/kernels.h"
#include "core/kernels/wait_policy.h"
#include "layers/check/checks.h"

#endif
