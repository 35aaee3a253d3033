/* fuzz_detect.c — libFuzzer harness: qkv_fuzz_detect (tests/fuzz_targets.h). Built and
 * run by `make fuzz`; seeds in tests/fuzz/detect/. */
#include "tests/fuzz_targets.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) { return qkv_fuzz_detect(data, size); }
