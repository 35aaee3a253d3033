#!/usr/bin/python3
"""make_silu_reference.py - PyTorch reference values of SiLU for tests/test_reference.c.

Run as:  cd tests && /usr/bin/python3 make_silu_reference.py
(Debian's python3-torch.) It writes only ref/silu_{x,r,out,dx}.npy, through
make_reference.py's silu_case (which make_reference.py's full run calls too),
without rewriting the other reference files: x [4,8] from a generator seeded by
the case's name, with fixed values at 0, +-0.5, +-3, +-6 and -10 first;
out = torch.nn.functional.silu(x) in float64, dx = d sum(out * R) / dx.
"""
from make_reference import silu_case

if __name__ == "__main__":
    silu_case()
