"""make_pos_reference.py -- FIRE's bias and p-RoPE's rotation for test_pos_schemes.c.

FIRE (Li et al. 2023, arXiv 2310.04418), as its reference code computes it, for
queries at the last Tq of Tk positions (qi = i + Tk - Tq) and keys j:
  L = |l_scale * l_init|,  u = log(|c (qi - j)| + 1) / (log(|c max(qi, L)| + 1) + 1e-6),
  bias[h, i, j] = (W2 relu(W1 u + b1) + b2)[h]      (an MLP 1 -> width -> heads)
p-RoPE (Barbero et al. 2025, arXiv 2410.06205): RoPE whose frequencies
base^(-2i/d) are kept for the first floor(p d/2) pairs and set to 0 (no turn)
for the lowest ones; pairs (2i, 2i+1) (interleaved) or (i, i + d/2) (halves).

Writes ref/fire_<case>_<tensor>.npy and ref/prope_<case>_<tensor>.npy: the
inputs, the fixed random weights _r of L = sum(out * r), the forward output
_out (float32 arithmetic) and the gradients _d<input> (float64 from the float32
inputs, rounded to float32). Run from tests/: /usr/bin/python3 make_pos_reference.py
"""
import zlib

import numpy as np
import torch

FIRE_CASES = {  # name: (tq, tk, heads, width, l_init)
    "square": (6, 6, 3, 5, 4.0),
    "cached": (2, 7, 2, 4, 512.0),
}
PROPE_CASES = {  # name: (shape [B,H,T,d], p, halves, offset, base)
    "interleaved": ((2, 3, 5, 8), 0.75, False, 0, 10000.0),
    "halves": ((2, 1, 5, 12), 0.5, True, 3, 100.0),
}


def save(prefix, name, t):
    np.save("ref/%s_%s.npy" % (prefix, name), t.detach().to(torch.float32).numpy())


def fire_bias(p, tq, tk, l_init):
    dt = p["c"].dtype
    qi = torch.arange(tq, dtype=dt)[:, None] + (tk - tq)
    j = torch.arange(tk, dtype=dt)[None, :]
    num = torch.log(torch.abs(p["c"] * (qi - j)) + 1)
    threshold = torch.abs(p["l_scale"] * l_init)
    norm = torch.log(torch.abs(p["c"] * torch.maximum(qi, threshold)) + 1) + 1e-6
    u = (num / norm)[..., None]
    hidden = torch.relu(u @ p["w1"].T + p["b1"])
    return (hidden @ p["w2"].T + p["b2"]).permute(2, 0, 1)[None]   # [1, H, Tq, Tk]


def make_fire(name, tq, tk, heads, width, l_init):
    g = torch.Generator().manual_seed(zlib.crc32(name.encode()))
    p = {"w1": torch.rand(width, 1, generator=g) * 2 - 1, "b1": torch.rand(width, generator=g) * 2 - 1,
         "w2": (torch.rand(heads, width, generator=g) * 2 - 1) / width ** 0.5,
         "b2": (torch.rand(heads, generator=g) * 2 - 1) / width ** 0.5,
         "c": torch.tensor([0.1]), "l_scale": torch.tensor([1.3])}
    r = torch.randn(1, heads, tq, tk, generator=g)
    prefix = "fire_" + name
    for k, v in p.items():
        save(prefix, k, v)
    save(prefix, "r", r)
    save(prefix, "out", fire_bias(p, tq, tk, l_init))
    p64 = {k: v.double().requires_grad_() for k, v in p.items()}
    (fire_bias(p64, tq, tk, l_init) * r.double()).sum().backward()
    for k, v in p64.items():
        save(prefix, "d" + k, v.grad)


def prope(x, p, halves, offset, base):
    t, d = x.shape[-2], x.shape[-1]
    pairs = d // 2
    kept = int(np.floor(p * pairs))
    inv = torch.pow(torch.tensor(base, dtype=torch.float64), -torch.arange(0, d, 2, dtype=torch.float64) / d)
    inv[kept:] = 0.0   # the lowest frequencies removed: those pairs do not turn
    ang = torch.arange(offset, offset + t, dtype=torch.float64)[:, None] * inv
    cos, sin = torch.cos(ang).to(x.dtype), torch.sin(ang).to(x.dtype)
    if halves:
        a, b = x[..., :pairs], x[..., pairs:]
        return torch.cat([a * cos - b * sin, a * sin + b * cos], -1)
    a, b = x[..., 0::2], x[..., 1::2]
    return torch.stack([a * cos - b * sin, a * sin + b * cos], -1).flatten(-2)


def make_prope(name, shape, p, halves, offset, base):
    g = torch.Generator().manual_seed(zlib.crc32(name.encode()))
    x = torch.randn(*shape, generator=g)
    r = torch.randn(*shape, generator=g)
    prefix = "prope_" + name
    save(prefix, "x", x)
    save(prefix, "r", r)
    save(prefix, "out", prope(x, p, halves, offset, base))
    x64 = x.double().requires_grad_()
    (prope(x64, p, halves, offset, base) * r.double()).sum().backward()
    save(prefix, "dx", x64.grad)


def main():
    for name, args in FIRE_CASES.items():
        make_fire(name, *args)
    for name, args in PROPE_CASES.items():
        make_prope(name, *args)


if __name__ == "__main__":
    main()
