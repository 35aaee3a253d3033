/* fuzz_image.c — libFuzzer harness: qkv_fuzz_image (tests/fuzz_targets.h). Built and
 * run by `make fuzz`; seeds in tests/fuzz/image/. */
#include "tests/fuzz_targets.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) { return qkv_fuzz_image(data, size); }
