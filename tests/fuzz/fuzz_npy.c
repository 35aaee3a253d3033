/* fuzz_npy.c — libFuzzer harness: qkv_fuzz_npy (tests/fuzz_targets.h). Built and
 * run by `make fuzz`; seeds in tests/fuzz/npy/. */
#include "tests/fuzz_targets.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) { return qkv_fuzz_npy(data, size); }
