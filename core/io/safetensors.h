/* safetensors.h — named float32 tensors in the safetensors format.
 *
 * Layout: 8 bytes little-endian header length N, N bytes of UTF-8 JSON, then the
 * raw data. The JSON maps each tensor name to {"dtype": "F32", "shape": [...],
 * "data_offsets": [begin, end]} (offsets relative to the data section) and may
 * hold "__metadata__": {string: string}. Python's safetensors and torch open
 * these files.
 *
 * Writing: tensors are laid out in the order given, contiguous, the header padded
 * with spaces to a multiple of 8 bytes. The file is written to a temporary file in
 * the same directory, fsynced, then renamed over the target, and the directory is
 * fsynced: a crash leaves either the old file or the new one, never a mix.
 *
 * Reading validates everything before anything is returned: the header length
 * against the file size, well-formed JSON (strict; nesting depth limited), each
 * entry's keys, dtype F32, shape (0..4 dims, each >= 1, no overflow), offsets in
 * range, matching the shape's byte size, not overlapping, and covering the data
 * section exactly (no truncation, no trailing bytes); metadata values are
 * strings; names are unique. Errors return -1 with a one-line qkv_last_error()
 * naming the file and the problem. Nothing is read past the buffer, whatever the
 * bytes.
 */
#ifndef QKV_SAFETENSORS_H
#define QKV_SAFETENSORS_H

#include <stddef.h>

#include "core/ops/tensor.h"

/* One tensor to write or one tensor read. data points into the caller's memory
 * (writing) or into the loaded file's buffer (reading; 4-byte aligned copy). */
typedef struct qkv_st_tensor {
    const char *name;
    int ndim;
    int shape[QKV_MAX_DIMS];
    const float *data;
} qkv_st_tensor;

typedef struct qkv_st_meta {
    const char *key, *value;
} qkv_st_meta;

int qkv_safetensors_save(const char *path, int n_tensors, const qkv_st_tensor *tensors, int n_meta,
                         const qkv_st_meta *meta);

/* A loaded file: all strings and data live in memory owned by this struct. */
typedef struct qkv_safetensors {
    int n_tensors;
    qkv_st_tensor *tensors;
    int n_meta;
    qkv_st_meta *meta;
    void *memory;          /* everything above points into this */
} qkv_safetensors;

int qkv_safetensors_load(const char *path, qkv_safetensors *out);
/* The header only, validated as load does (names, shapes, metadata): the
 * tensors' data pointers say where qkv_safetensors_read_data will put their
 * bytes, and must not be read before it. The file stays open until then (or
 * until qkv_safetensors_free). */
int qkv_safetensors_open(const char *path, qkv_safetensors *out);
/* The data of an opened file, once (a second call does nothing): 0, or -1 with
 * qkv_last_error() (a read error, a file that changed size meanwhile); the file
 * is closed either way. */
int qkv_safetensors_read_data(qkv_safetensors *st);
/* Parses a whole file image (load reads the file, then calls this). what names
 * the source in error messages. */
int qkv_safetensors_parse(const unsigned char *bytes, size_t len, const char *what, qkv_safetensors *out);
void qkv_safetensors_free(qkv_safetensors *st);
const qkv_st_tensor *qkv_safetensors_find(const qkv_safetensors *st, const char *name);
const char *qkv_safetensors_meta(const qkv_safetensors *st, const char *key);  /* NULL if absent */

#endif
