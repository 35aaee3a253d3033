"""make_t5_reference.py -- T5's relative-position buckets for test_pos_schemes.c.

Writes ref/t5_buckets_<b|c>_<buckets>_<max>.npy: the buckets (small integers,
stored as float32, exact, the dtype qkv's npy reader takes) of the relative positions
rel = key - query = -1000 .. 1000 (index rel + 1000), bidirectional (b) or
causal (c), computed with torch in float32 by the rule of the T5 paper's code
(Raffel et al. 2020, mesh_tensorflow's _relative_position_bucket):
  bidirectional: n = buckets // 2, add n when rel > 0, d = |rel|
  causal:        n = buckets, d = max(-rel, 0)
  exact = n // 2; d < exact -> d, else
  min(exact + int(log(d / exact) / log(max / exact) * (n - exact)), n - 1).
Run from tests/: /usr/bin/python3 make_t5_reference.py
"""
import numpy as np
import torch

CONFIGS = [(32, 128), (16, 64), (8, 20)]


def buckets_of(rel, bidirectional, num_buckets, max_distance):
    out = torch.zeros_like(rel)
    n = num_buckets
    if bidirectional:
        n //= 2
        out += (rel > 0).long() * n
        d = rel.abs()
    else:
        d = -torch.clamp(rel, max=0)
    exact = n // 2
    small = d < exact
    # clamp only to keep log finite where the small branch is taken anyway
    ratio = torch.clamp(d, min=1).float() / exact
    large = exact + (torch.log(ratio) / np.log(max_distance / exact) * (n - exact)).long()
    large = torch.clamp(large, max=n - 1)
    return out + torch.where(small, d, large)


def main():
    rel = torch.arange(-1000, 1001, dtype=torch.long)
    for num_buckets, max_distance in CONFIGS:
        for bidirectional, tag in ((True, "b"), (False, "c")):
            b = buckets_of(rel, bidirectional, num_buckets, max_distance).to(torch.float32).numpy()
            np.save("ref/t5_buckets_%s_%d_%d.npy" % (tag, num_buckets, max_distance), b)


if __name__ == "__main__":
    main()
