/* wait_policy.c — spin or sleep, by the machine's load. See wait_policy.h. */
#include "core/kernels/wait_policy.h"

#include "core/kernels/omp_shim.h"
#include <stdlib.h>
#include <unistd.h>

#include "core/kernels/parallel.h"

int qkv_wait_policy_for(int others, const char **name, const char **value) {
    int idle = others == 0;
#ifdef QKV_LIBOMP
    *name = idle ? NULL : "OMP_WAIT_POLICY";
    *value = idle ? NULL : "passive";
#else
    *name = idle ? "GOMP_SPINCOUNT" : "OMP_WAIT_POLICY";
    *value = idle ? QKV_IDLE_SPINCOUNT : "passive";
#endif
    return idle;
}

void qkv_default_wait_policy(char **argv) {
#ifndef _OPENMP
    (void)argv; /* no OpenMP runtime, no waiting threads (core/kernels/omp_shim.h) */
    return;
#endif
    if (getenv("OMP_WAIT_POLICY") || getenv("GOMP_SPINCOUNT") || getenv("KMP_BLOCKTIME")) return;
    const char *name, *value;
    qkv_wait_policy_for(qkv_other_runnable(), &name, &value);
    if (name == NULL || setenv(name, value, 1) != 0) return;
    execv("/proc/self/exe", argv); /* returns only on failure: run on as we are */
}
