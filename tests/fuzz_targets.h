/* fuzz_targets.h — the bodies of the libFuzzer harnesses (tests/fuzz/fuzz_*.c),
 * shared with the fuzz suite (test_fuzz.c), which replays every committed input
 * (seed corpora and former crashes) under tests/fuzz/<harness>/ in `make test`.
 *
 * Each target hands arbitrary bytes to one of qkv's input parsers through its
 * in-memory entry point, uses what it got if it was accepted, frees it, and
 * returns 0 (libFuzzer's convention). A crash, a sanitizer report or a leak is a
 * bug; a refused input is the expected outcome for most bytes.
 */
#ifndef QKV_FUZZ_TARGETS_H
#define QKV_FUZZ_TARGETS_H

#include <stddef.h>
#include <stdint.h>

typedef int (*qkv_fuzz_target)(const uint8_t *data, size_t size);

int qkv_fuzz_safetensors(const uint8_t *data, size_t size); /* qkv_safetensors_parse */
int qkv_fuzz_npy(const uint8_t *data, size_t size);         /* qkv_npy_parse */
int qkv_fuzz_off(const uint8_t *data, size_t size);         /* qkv_off_parse, then sampling */
int qkv_fuzz_args(const uint8_t *data, size_t size);        /* qkv_args_parse and qkv_command_parse_args, '\\n'-separated argv */
int qkv_fuzz_detect(const uint8_t *data, size_t size);      /* qkv_detect_annotations_parse */
int qkv_fuzz_image(const uint8_t *data, size_t size);       /* qkv_image_decode, own channels and RGB */
int qkv_fuzz_tokenizer(const uint8_t *data, size_t size);   /* qkv_tokenizer_from_text, then a round trip */

/* Name (the corpus directory under tests/fuzz/) and target of every harness. */
typedef struct qkv_fuzz_harness {
    const char *name;
    qkv_fuzz_target run;
} qkv_fuzz_harness;

extern const qkv_fuzz_harness qkv_fuzz_harnesses[];
extern const int qkv_fuzz_n_harnesses;

#endif
