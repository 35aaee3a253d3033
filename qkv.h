/* qkv.h — the one header a user program includes: qkv's public API.
 *
 *     cc -O2 prog.c $(pkg-config --cflags --libs qkv)       after `make install`
 *     cc -O2 -fopenmp -I/path/to/qkv prog.c -L/path/to/qkv/build -lqkv -fopenmp -lm $(pkg-config --libs stb)
 *
 * Layers, from the bottom: core (tensors, the tape, ops, the fused attention op,
 * position encodings, box losses and matching, threads, the instruction-set
 * choice, rng, errors, .npy, safetensors and PNG files), layers (modules built
 * from ops), optim (optimizers), data (data sets), and the trainer (a training
 * run of a task as a session, prepared once and run whole or a step at a time;
 * the loop; checkpoints). Every public symbol starts with qkv_. See
 * README.md for a worked example.
 *
 * What qkv's own commands, tests and benchmarks use besides (the allocator, the
 * matrix-multiply kernel and its per-ISA tables, gradient checking and its case
 * tables, libgomp's wait policy, file and JSON helpers) is in qkv_internal.h,
 * which is not a stable API.
 */
#ifndef QKV_H
#define QKV_H

#include "core/version.h" /* QKV_VERSION, the release */

#include "core/ops/attention.h"
#include "core/ops/boxes.h"
#include "core/error.h"
#include "core/hungarian.h"
#include "core/kernels/isa.h"
#include "core/io/npy.h"
#include "core/io/png.h"
#include "core/ops/ops.h"
#include "core/kernels/parallel.h"
#include "core/ops/params.h"
#include "core/ops/ops_position.h"
#include "core/rng.h"
#include "core/io/safetensors.h"
#include "core/ops/tape.h"
#include "core/ops/tensor.h"
#include "layers/detr.h"
#include "layers/graph.h"
#include "layers/linear.h"
#include "layers/mha.h"
#include "layers/norm.h"
#include "layers/patch.h"
#include "layers/perceiver.h"
#include "layers/positions.h"
#include "layers/sampling.h"
#include "layers/set_loss.h"
#include "layers/set_models.h"
#include "layers/sets.h"
#include "layers/transformer.h"
#include "optim/optimizer.h"
#include "data/detect.h"
#include "data/image.h"
#include "data/off.h"
#include "data/points.h"
#include "data/sequence.h"
#include "data/maxreg.h"
#include "data/spirals.h"
#include "data/text.h"
#include "data/tokenizer.h"
#include "train/trainer.h"
#include "train/session.h"
#include "train/checkpoint.h"
#include "train/torch_names.h"

#endif
