/* npy.h — single tensors in NumPy's .npy format (version 1.0/2.0/3.0 headers).
 *
 * Save writes float32, little-endian, C order ('<f4', fortran_order False), so
 * numpy.load reads it. The write is atomic: a temporary file in the same
 * directory, fsync, rename; a failure leaves any previous file untouched.
 *
 * Load accepts '<f4' and '<f8' (converted to float32), C order, 0 to 4 dims, and
 * validates everything before allocating: magic, version, header length against
 * the file size, the header dict's syntax, dtype, fortran_order, shape (each dim
 * >= 1, element count without overflow) and that the data is exactly the rest of
 * the file. Errors return NULL / -1 with a one-line qkv_last_error() naming the
 * path and what was wrong; nothing is ever read past the buffer.
 */
#ifndef QKV_NPY_H
#define QKV_NPY_H

#include "core/ops/tensor.h"

int qkv_npy_save(const char *path, const qkv_tensor *t);
/* A new owned tensor (name NULL), or NULL on error. */
qkv_tensor *qkv_npy_load(const char *path, int requires_grad);
/* Parse from memory (used by load and by fuzzing). */
qkv_tensor *qkv_npy_parse(const unsigned char *bytes, size_t len, const char *what, int requires_grad);

#endif
