#!/usr/bin/python3
"""make_reference.py - PyTorch reference values for tests/test_reference.c.

Run as:  cd tests && /usr/bin/python3 make_reference.py
(Debian's python3-torch and python3-numpy.) It deletes tests/ref/*.npy and writes:

  ref/npy_*.npy                 fixtures written by numpy itself, for tests/test_npy.c
  ref/<case>_<input>.npy        float32 inputs of each case
  ref/<case>_r.npy              fixed random R; the loss is L = sum(out * R)
  ref/<case>_out.npy            the op's forward output
  ref/<case>_d<input>.npy       dL/d<input>, for each differentiable input
  ref/<case>_targets.npy, _weights.npy, _ignore_index.npy
                                cross-entropy's integer targets (stored as float32),
                                per-row weights and ignore_index (0-dim)

Inputs are drawn in float32; torch then computes in float64 from those exact
float32 values, and outputs and gradients are rounded to float32 once. So the
references are the true values up to one float32 rounding, and qkv's float32
results should match them to about 1e-5 relative. Each case draws from its own
generator, seeded from the case's name, so adding a case changes no other file.
"""
import glob
import os
import zlib

import numpy as np
import torch
import torch.nn.functional as F

REF = "ref"
LAYER_NORM_EPS = 1e-5  # the same value is used in test_reference.c
IGNORE_NONE = -100     # torch's default ignore_index; no target in those cases uses it


def rng_for(name):
    return np.random.default_rng(zlib.crc32(name.encode()))


def save(name, array):
    np.save(os.path.join(REF, name + ".npy"), np.asarray(array, dtype=np.float32))


def normal(rng, *shape, scale=1.0):
    return (rng.standard_normal(shape) * scale).astype(np.float32)


def run_case(name, inputs, forward, extra=None):
    """inputs: {name: float32 array}, differentiable. forward(**tensors) -> out.
    Saves inputs, R, out and the gradients of sum(out * R) for each input."""
    rng = rng_for(name + "/r")
    tensors = {k: torch.tensor(v, dtype=torch.float64, requires_grad=True) for k, v in inputs.items()}
    out = forward(**tensors)
    r = normal(rng, *out.shape)
    (out * torch.tensor(r, dtype=torch.float64)).sum().backward()
    for k, v in inputs.items():
        save(f"{name}_{k}", v)
        save(f"{name}_d{k}", tensors[k].grad.numpy())
    save(f"{name}_r", r)
    save(f"{name}_out", out.detach().numpy())
    for k, v in (extra or {}).items():
        save(f"{name}_{k}", v)


# ---- matmul: C = op(A) op(B), op = transpose of the last two dims ------------

def matmul_case(name, a_shape, b_shape, trans_a, trans_b):
    rng = rng_for(name)
    def forward(a, b):
        return torch.matmul(a.transpose(-1, -2) if trans_a else a, b.transpose(-1, -2) if trans_b else b)
    run_case(name, {"a": normal(rng, *a_shape), "b": normal(rng, *b_shape)}, forward)


# ---- softmax, log_softmax over the last axis -----------------------------------

def softmax_inputs(name, shape, large_row):
    x = normal(rng_for(name), *shape, scale=2.0)
    if large_row:  # logits far outside exp's float32 range: needs the max removed
        row = np.array([1000.0, 999.0, 998.5, -1000.0, 0.0, 500.0, 1000.0], dtype=np.float32)
        x.reshape(-1, shape[-1])[1] = row[: shape[-1]]
    return x


def softmax_case(name, shape, large_row=False):
    run_case(name, {"x": softmax_inputs(name, shape, large_row)}, lambda x: torch.softmax(x, dim=-1))


def log_softmax_case(name, shape, large_row=False):
    run_case(name, {"x": softmax_inputs(name, shape, large_row)}, lambda x: torch.log_softmax(x, dim=-1))


# ---- cross-entropy: sum_i w_i * l_i / sum_i w_i over rows not ignored ------------

def cross_entropy_case(name, shape, ignore_index=IGNORE_NONE, ignored_rows=(), weighted=False,
                       large_row=False):
    rng = rng_for(name)
    logits = normal(rng, *shape, scale=2.0)
    n_classes = shape[-1]
    rows = logits.reshape(-1, n_classes)
    targets = rng.integers(0, n_classes, size=shape[:-1]).reshape(-1)
    for i in ignored_rows:
        targets[i] = ignore_index
    if large_row:
        rows[0] = np.linspace(80.0, -50.0, n_classes, dtype=np.float32)
    weights = rng.uniform(0.5, 2.0, size=rows.shape[0]).astype(np.float32) if weighted else None
    t = torch.tensor(targets, dtype=torch.int64)

    def forward(logits):
        flat = logits.reshape(-1, n_classes)
        per_row = F.cross_entropy(flat, t, ignore_index=ignore_index, reduction="none")
        counted = (t != ignore_index).to(torch.float64)
        w = counted * (torch.tensor(weights, dtype=torch.float64) if weighted else 1.0)
        return (w * per_row).sum() / w.sum()

    extra = {"targets": targets.reshape(shape[:-1]).astype(np.float32),
             "ignore_index": np.array(ignore_index, dtype=np.float32)}
    if weighted:
        extra["weights"] = weights
    run_case(name, {"logits": logits}, forward, extra)


# ---- layer norm over the last axis, biased variance -----------------------------

def layer_norm_case(name, shape, affine=True):
    rng = rng_for(name)
    d = shape[-1]
    x = normal(rng, *shape, scale=1.5)
    x.reshape(-1, d)[0] += np.float32(3.0)  # a row with an offset mean
    inputs = {"x": x}
    if affine:
        inputs["gamma"] = (1.0 + normal(rng, d, scale=0.5)).astype(np.float32)
        inputs["beta"] = normal(rng, d, scale=0.5)

    def forward(x, gamma=None, beta=None):
        return F.layer_norm(x, (d,), gamma, beta, eps=LAYER_NORM_EPS)
    run_case(name, inputs, forward)


# ---- GELU, tanh approximation and exact ------------------------------------------

def gelu_inputs(name, shape):
    x = normal(rng_for(name), *shape, scale=2.0).reshape(-1)
    fixed = np.array([0.0, -6.0, 6.0, -3.0, 3.0, -0.5, 0.5, -10.0], dtype=np.float32)
    x[: len(fixed)] = fixed
    return x.reshape(shape)


def gelu_case(name, shape, approximate):
    run_case(name, {"x": gelu_inputs(name, shape)}, lambda x: F.gelu(x, approximate=approximate))


def silu_case(name="silu", shape=(4, 8)):
    """SiLU x * sigmoid(x) on GELU's inputs (make_silu_reference.py writes only this)."""
    run_case(name, {"x": gelu_inputs(name, shape)}, lambda x: F.silu(x))


# ---- fixtures for test_npy.c, written by numpy itself ------------------------------

def npy_fixtures():
    np.save(os.path.join(REF, "npy_f4_2x3.npy"), (np.arange(6, dtype=np.float32) * 0.5 - 1.0).reshape(2, 3))
    np.save(os.path.join(REF, "npy_f8_3.npy"), np.array([0.1, -2.5, 1e30], dtype=np.float64))
    np.save(os.path.join(REF, "npy_f4_scalar.npy"), np.array(3.25, dtype=np.float32))
    np.save(os.path.join(REF, "npy_f4_1x2x1x3.npy"), np.arange(6, dtype=np.float32).reshape(1, 2, 1, 3) - 2.5)


def main():
    os.makedirs(REF, exist_ok=True)
    # Only this script's files: optim_*.npy, box_*.npy and st_* belong to the other scripts.
    for old in glob.glob(os.path.join(REF, "*.npy")):
        if not os.path.basename(old).startswith(("optim_", "box_")):
            os.remove(old)
    npy_fixtures()

    matmul_case("matmul_nn", (4, 3), (3, 5), 0, 0)
    matmul_case("matmul_nt", (4, 3), (5, 3), 0, 1)
    matmul_case("matmul_tn", (3, 4), (3, 5), 1, 0)
    matmul_case("matmul_tt", (3, 4), (5, 3), 1, 1)
    matmul_case("matmul_batched", (2, 4, 3), (2, 3, 5), 0, 0)
    matmul_case("matmul_batched_nt", (2, 4, 6), (2, 5, 6), 0, 1)
    matmul_case("matmul_batched_4d", (2, 2, 3, 4), (2, 2, 4, 3), 0, 0)
    matmul_case("matmul_shared_b", (2, 4, 3), (3, 5), 0, 0)
    matmul_case("matmul_shared_a_tn", (3, 4), (2, 3, 5), 1, 0)

    softmax_case("softmax_2d", (4, 7), large_row=True)
    softmax_case("softmax_3d", (2, 3, 5))
    softmax_case("softmax_width1", (3, 1))
    log_softmax_case("log_softmax_2d", (4, 7), large_row=True)
    log_softmax_case("log_softmax_3d", (2, 3, 5))

    cross_entropy_case("cross_entropy_basic", (5, 4))
    cross_entropy_case("cross_entropy_ignore", (6, 5), ignore_index=-100, ignored_rows=(2, 5), large_row=True)
    cross_entropy_case("cross_entropy_weighted", (2, 3, 5), ignore_index=-1, ignored_rows=(4,), weighted=True)

    layer_norm_case("layer_norm_affine", (4, 6))
    layer_norm_case("layer_norm_3d", (2, 3, 8))
    layer_norm_case("layer_norm_plain", (3, 5), affine=False)

    gelu_case("gelu_tanh", (4, 8), "tanh")
    gelu_case("gelu_exact", (4, 8), "none")
    silu_case()

    files = glob.glob(os.path.join(REF, "*.npy"))
    print(f"wrote {len(files)} files, {sum(os.path.getsize(f) for f in files)} bytes, in {REF}/")


if __name__ == "__main__":
    main()
