/* isa.h — which instruction-set path the hot kernels take (kernels.h).
 *
 * One build runs on every CPU of its architecture: on x86-64 the kernels exist
 * for AVX-512 ("avx512"), AVX2 with FMA ("avx2") and plain C ("portable"); in
 * WebAssembly for 128-bit SIMD ("wasm") and plain C; on other architectures only
 * "portable" (the compiler's vectors, NEON on ARM64).
 * The widest path the CPU runs is used, unless the environment variable QKV_ISA
 * names another. Results are bitwise the same on every path; only speed differs.
 */
#ifndef QKV_ISA_H
#define QKV_ISA_H

/* Chooses the path from QKV_ISA (unset or empty: the widest this CPU runs).
 * Returns 0, or -1 with qkv_last_error() naming the bad value (an unknown name,
 * or a path this CPU lacks) and the paths it could use. Called by ./qkv first
 * thing; a library user who does not call it gets the same choice on the first
 * kernel call, where a bad QKV_ISA is then a fatal error. */
int qkv_isa_init(void);

/* Uses path `name` from now on; 0, or -1 with qkv_last_error(). Not while
 * kernels run on other threads. */
int qkv_isa_select(const char *name);

/* The path in use ("avx512", "avx2", "wasm" or "portable"). */
const char *qkv_isa_name(void);

/* 1 if this build has path `name` and this CPU can run it. */
int qkv_isa_supported(const char *name);

/* The number of paths this build has, and the i-th, widest first. */
int qkv_isa_count(void);
const char *qkv_isa_path(int i);

#endif
