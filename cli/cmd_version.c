/* cmd_version.c — ./qkv --version: what this binary is and how it was built, so a
 * bug report or a benchmark can say it in one paste: the release, the compiler
 * and its flags, the instruction-set paths compiled in, the one in use (core/kernels/isa.h)
 * and the OpenMP threads it would run. The Makefile passes the build's compiler,
 * flags and paths (QKV_BUILD_*); a build without them says "unknown". */
#include "core/kernels/omp_shim.h"
#include <stdio.h>

#include "core/kernels/isa.h"
#include "core/version.h"
#include "cli/commands.h"

#ifndef QKV_BUILD_CC
#define QKV_BUILD_CC "unknown"
#endif
#ifndef QKV_BUILD_CFLAGS
#define QKV_BUILD_CFLAGS "unknown"
#endif
#ifndef QKV_BUILD_ISAS
#define QKV_BUILD_ISAS "unknown"
#endif

#if defined(__clang__)
#define QKV_COMPILER "clang " __clang_version__
#elif defined(__GNUC__)
#define QKV_COMPILER "gcc " __VERSION__
#else
#define QKV_COMPILER "unknown compiler"
#endif

#if defined(__x86_64__)
#define QKV_ARCH "x86-64"
#elif defined(__aarch64__)
#define QKV_ARCH "aarch64"
#else
#define QKV_ARCH "other"
#endif

/* It takes no flags, and ignores what follows it. */
const qkv_command_spec qkv_command_version = {
    "--version", "", 0, "the release, compiler, flags and instruction-set path of this build", NULL, 0, NULL, NULL, qkv_cmd_version};

int qkv_cmd_version(int argc, char **argv) {
    (void)argc;
    (void)argv;
    printf("qkv %s\n", QKV_VERSION);
    printf("compiler: %s (CC=%s), for %s\n", QKV_COMPILER, QKV_BUILD_CC, QKV_ARCH);
    printf("flags: %s\n", QKV_BUILD_CFLAGS);
    printf("isa: %s (compiled: %s; this CPU runs:", qkv_isa_name(), QKV_BUILD_ISAS);
    for (int i = 0; i < qkv_isa_count(); i++)
        if (qkv_isa_supported(qkv_isa_path(i))) printf(" %s", qkv_isa_path(i));
    printf(")\n");
#ifdef _OPENMP
    printf("openmp: %d, up to %d threads\n", _OPENMP, omp_get_max_threads());
#else
    printf("openmp: none (one thread)\n"); /* the WebAssembly build (core/kernels/omp_shim.h) */
#endif
    return 0;
}
