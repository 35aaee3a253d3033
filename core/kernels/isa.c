/* isa.c — the list of instruction-set paths and the choice among them (isa.h). */
#include "core/kernels/isa.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/kernels/kernels.h"

typedef struct isa_path {
    const qkv_kernels *kernels;
    int (*cpu_runs)(void);
} isa_path;

/* What the CPU must have for each path of QKV_ISA_PATHS (kernels.h). */
static int runs_portable(void) { return 1; }

#if defined(__x86_64__)
static int runs_avx2(void) {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}
static int runs_avx512(void) {
    __builtin_cpu_init(); /* cpu_supports also checks that the OS saves the zmm state */
    return runs_avx2() && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
           __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq");
}
#endif
#if defined(__wasm__)
/* An engine without 128-bit SIMD refuses the whole module before anything runs. */
static int runs_wasm(void) { return 1; }
#endif

/* Widest first: the default is the first one the CPU runs. */
#define PATH(name) {&qkv_kernels_##name, runs_##name},
static const isa_path paths[] = {QKV_ISA_PATHS(PATH)};
#undef PATH
#define N_PATHS ((int)(sizeof paths / sizeof paths[0]))

static _Atomic(const qkv_kernels *) active;

int qkv_isa_count(void) { return N_PATHS; }
const char *qkv_isa_path(int i) { return i >= 0 && i < N_PATHS ? paths[i].kernels->name : NULL; }

static const isa_path *find(const char *name) {
    for (int i = 0; i < N_PATHS; i++)
        if (strcmp(paths[i].kernels->name, name) == 0) return &paths[i];
    return NULL;
}

int qkv_isa_supported(const char *name) {
    const isa_path *p = find(name);
    return p && p->cpu_runs();
}

/* "avx2, portable": the paths this CPU runs (or, all = 1, that this build has). */
static void list_paths(char *buf, size_t cap, int all) {
    buf[0] = '\0';
    for (int i = 0; i < N_PATHS; i++) {
        if (!all && !paths[i].cpu_runs()) continue;
        size_t len = strlen(buf);
        snprintf(buf + len, cap - len, "%s%s", len ? ", " : "", paths[i].kernels->name);
    }
}

int qkv_isa_select(const char *name) {
    char list[128];
    const isa_path *p = find(name);
    if (!p) {
        list_paths(list, sizeof list, 1);
        qkv_set_error("QKV_ISA=%s: no such path; this build has %s", name, list);
        return -1;
    }
    if (!p->cpu_runs()) {
        list_paths(list, sizeof list, 0);
        qkv_set_error("QKV_ISA=%s: this CPU lacks %s; it runs %s", name, p->kernels->requires, list);
        return -1;
    }
    atomic_store(&active, p->kernels);
    return 0;
}

int qkv_isa_init(void) {
    const char *name = getenv("QKV_ISA");
    if (name && *name) return qkv_isa_select(name);
    for (int i = 0; i < N_PATHS; i++)
        if (paths[i].cpu_runs()) {
            atomic_store(&active, paths[i].kernels);
            break;
        }
    return 0;
}

const qkv_kernels *qkv_kernels_active(void) {
    const qkv_kernels *k = atomic_load_explicit(&active, memory_order_acquire);
    if (k) return k;
    /* First use without qkv_isa_init: every thread that gets here makes the same choice. */
    if (qkv_isa_init() != 0) qkv_fatal("%s", qkv_last_error());
    return atomic_load(&active);
}

void qkv_kernels_install(const qkv_kernels *k) {
    QKV_CHECK(k != NULL, "qkv_kernels_install: no table");
    atomic_store(&active, k);
}

const char *qkv_isa_name(void) { return qkv_kernels_active()->name; }
