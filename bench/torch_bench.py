#!/usr/bin/python3
"""torch_bench.py — the configurations of `qkv bench` in PyTorch (1.13, CPU), on
1 thread and on 2 threads, medians of 5 samples, so bench/compare.sh can print
qkv / PyTorch ratios from the same run. The thread count is set twice:
torch.set_num_threads for PyTorch's own loops, and openblas_set_num_threads for
Debian's OpenBLAS, which runs torch.mm on its own pthreads and ignores the
first (without it, the "1 thread" matmul used both cores).

After measuring, one 256 x 256 float32 torch.mm is checked against the float64
product of the same inputs: the largest |f32 - f64| / max(1, |f64|) is printed,
and above 1e-4 the script exits 1, so a wrong kernel cannot pass unseen.
--core prints which OpenBLAS core torch's matmul runs on (openblas_get_corename
of the library torch loaded; OPENBLAS_CORETYPE decides it, and compare.sh unsets
it for this script), or that torch's BLAS is not OpenBLAS, and exits.

  matmul     torch.mm of n x n float32, n = 64 ... 1024, GFLOP/s
  attention  softmax(q k^T / sqrt(d) [+ causal -inf]) v forward + backward
             (dq, dk, dv from a fixed dO), (B,H,T,d) = (8,4,64,16),
             (4,8,256,64), (1,8,1024,64), ms. PyTorch 1.13 has no fused CPU
             attention: this is the composed computation nn.MultiheadAttention
             runs (materialized [T,T] scores per head).
  train      one training step (zero grads, loss, backward, clip to norm 1,
             optimizer step), ms:
               reverse: embedding + learned positions, 2 pre-LN encoder layers
                 (nn.TransformerEncoderLayer norm_first, d 64, 4 heads, FFN 256,
                 GELU, no dropout), final LayerNorm, linear head, T 16, batch 64,
                 AdamW lr 3e-3;
               settf: the Set Transformer authors' modules (MAB with fc_q, fc_k,
                 fc_v, fc_o, layer norm), ISAB(16) x 2, PMA(1), width 128, 4 heads,
                 10 classes, 32 clouds of 256 points, Adam lr 1e-3;
               text: bench/torch_text.py's model of `qkv train text` (4 pre-LN
                 causal layers, d 128, 4 heads, FFN 512, context 64, a byte
                 vocabulary of 114), 12 random windows, AdamW lr 1e-3.
The long (T = 8192) attention is not run: the composed form needs 8 x 8192^2
floats per score matrix (2 GB), several times over for backward.

Usage: /usr/bin/python3 bench/torch_bench.py [all|matmul|attention|train] [--json FILE]
       /usr/bin/python3 bench/torch_bench.py --core
"""
import json
import math
import statistics
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

from torch_threads import OPENBLAS_SET_THREADS, openblas_core, set_threads

SAMPLES = 5


CHECK_N = 256
CHECK_TOLERANCE = 1e-4


def check_matmul(threads):
    """0 if a float32 torch.mm agrees with the float64 product of the same inputs."""
    set_threads(threads)
    g = torch.Generator().manual_seed(3)
    a = torch.rand(CHECK_N, CHECK_N, generator=g) * 2 - 1
    b = torch.rand(CHECK_N, CHECK_N, generator=g) * 2 - 1
    got = torch.mm(a, b).double()
    want = torch.mm(a.double(), b.double())
    worst = ((got - want).abs() / want.abs().clamp(min=1.0)).max().item()
    print("check: C = A B, n = %d, %d threads: float32 torch.mm vs float64, "
          "max |a-b|/max(1,|b|) = %.3g" % (CHECK_N, threads, worst), flush=True)
    if not worst <= CHECK_TOLERANCE:  # a NaN fails too
        print("check FAILED: torch's float32 matmul is off by %.3g > %g" % (worst, CHECK_TOLERANCE),
              flush=True)
        return 1
    return 0


def seconds_per_call(fn, threads, min_seconds):
    set_threads(threads)
    t0 = time.perf_counter()
    fn()  # warm up
    once = time.perf_counter() - t0
    reps = 1 if once >= min_seconds else int(min_seconds / max(once, 1e-7)) + 1
    samples = []
    for _ in range(SAMPLES):
        t0 = time.perf_counter()
        for _ in range(reps):
            fn()
        samples.append((time.perf_counter() - t0) / reps)
    return statistics.median(samples)


def bench_matmul(rows, threads):
    g = torch.Generator().manual_seed(42)
    for n in (64, 128, 256, 512, 1024):
        a = torch.rand(n, n, generator=g) * 2 - 1
        b = torch.rand(n, n, generator=g) * 2 - 1
        c = torch.empty(n, n)
        fn = lambda: torch.mm(a, b, out=c)
        flops = 2.0 * n ** 3
        one = flops / seconds_per_call(fn, 1, 0.06) * 1e-9
        two = flops / seconds_per_call(fn, threads, 0.06) * 1e-9
        rows.append(row("matmul", "n=%d" % n, "GFLOP/s", one, two))


def attention(q, k, v, causal):
    s = q @ k.transpose(-2, -1) * (1.0 / math.sqrt(q.shape[-1]))
    if causal:
        t = s.shape[-1]
        mask = torch.ones(t, t, dtype=torch.bool).triu(1)
        s = s.masked_fill(mask, float("-inf"))
    return torch.softmax(s, dim=-1) @ v


def bench_attention(rows, threads):
    for (B, H, T, d) in ((8, 4, 64, 16), (4, 8, 256, 64), (1, 8, 1024, 64)):
        for causal in (False, True):
            g = torch.Generator().manual_seed(7)
            q, k, v = (torch.randn(B, H, T, d, generator=g).requires_grad_() for _ in range(3))
            dout = torch.randn(B, H, T, d, generator=g)

            def fn():
                out = attention(q, k, v, causal)
                out.backward(dout)

            name = "B=%d H=%d T=%d d=%d%s" % (B, H, T, d, " causal" if causal else "")
            rows.append(row("attention", name, "ms", 1e3 * seconds_per_call(fn, 1, 0.1),
                            1e3 * seconds_per_call(fn, threads, 0.1)))


class ReverseModel(nn.Module):
    def __init__(self, tokens=13, dim=64, heads=4, ff=256, layers=2, T=16):
        super().__init__()
        self.embed = nn.Embedding(tokens, dim)
        self.pos = nn.Parameter(torch.randn(T, dim) * 0.02)
        layer = nn.TransformerEncoderLayer(dim, heads, ff, dropout=0.0, activation="gelu",
                                           batch_first=True, norm_first=True)
        self.enc = nn.TransformerEncoder(layer, layers, norm=nn.LayerNorm(dim),
                                         enable_nested_tensor=False)
        self.head = nn.Linear(dim, tokens)

    def forward(self, x):
        return self.head(self.enc(self.embed(x) + self.pos))


class MAB(nn.Module):  # github.com/juho-lee/set_transformer, modules.py
    def __init__(self, dim_Q, dim_K, dim_V, num_heads, ln=True):
        super().__init__()
        self.dim_V, self.num_heads = dim_V, num_heads
        self.fc_q = nn.Linear(dim_Q, dim_V)
        self.fc_k = nn.Linear(dim_K, dim_V)
        self.fc_v = nn.Linear(dim_K, dim_V)
        self.ln0 = nn.LayerNorm(dim_V) if ln else nn.Identity()
        self.ln1 = nn.LayerNorm(dim_V) if ln else nn.Identity()
        self.fc_o = nn.Linear(dim_V, dim_V)

    def forward(self, Q, K):
        Q = self.fc_q(Q)
        K, V = self.fc_k(K), self.fc_v(K)
        split = self.dim_V // self.num_heads
        Q_, K_, V_ = (torch.cat(t.split(split, 2), 0) for t in (Q, K, V))
        A = torch.softmax(Q_.bmm(K_.transpose(1, 2)) / math.sqrt(split), 2)
        O = torch.cat((Q_ + A.bmm(V_)).split(Q.size(0), 0), 2)
        O = self.ln0(O)
        O = O + F.relu(self.fc_o(O))
        return self.ln1(O)


class ISAB(nn.Module):
    def __init__(self, dim_in, dim_out, num_heads, num_inds, ln=True):
        super().__init__()
        self.I = nn.Parameter(torch.empty(1, num_inds, dim_out))
        nn.init.xavier_uniform_(self.I)
        self.mab0 = MAB(dim_out, dim_in, dim_out, num_heads, ln)
        self.mab1 = MAB(dim_in, dim_out, dim_out, num_heads, ln)

    def forward(self, X):
        H = self.mab0(self.I.repeat(X.size(0), 1, 1), X)
        return self.mab1(X, H)


class PMA(nn.Module):
    def __init__(self, dim, num_heads, num_seeds, ln=True):
        super().__init__()
        self.S = nn.Parameter(torch.empty(1, num_seeds, dim))
        nn.init.xavier_uniform_(self.S)
        self.rff = nn.Linear(dim, dim)
        self.mab = MAB(dim, dim, dim, num_heads, ln)

    def forward(self, X):
        return self.mab(self.S.repeat(X.size(0), 1, 1), F.relu(self.rff(X)))


class SetTransformer(nn.Module):
    def __init__(self, d_in=3, width=128, heads=4, inducing=16, classes=10):
        super().__init__()
        self.enc = nn.Sequential(ISAB(d_in, width, heads, inducing), ISAB(width, width, heads, inducing))
        self.pool = PMA(width, heads, 1)
        self.head = nn.Linear(width, classes)

    def forward(self, x):
        return self.head(self.pool(self.enc(x)).squeeze(1))


def train_step_fn(model, opt, batch, loss_of):
    def fn():
        opt.zero_grad(set_to_none=False)
        loss = loss_of(model, batch)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
    return fn


def bench_train(rows, threads):
    torch.manual_seed(1)
    model = ReverseModel()
    tokens = torch.randint(3, 13, (64, 16))
    batch = (tokens, tokens.flip(1))
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    loss_of = lambda m, b: F.cross_entropy(m(b[0]).reshape(-1, 13), b[1].reshape(-1))
    fn = train_step_fn(model, opt, batch, loss_of)
    rows.append(row("train", "reverse", "ms", 1e3 * seconds_per_call(fn, 1, 0.2),
                    1e3 * seconds_per_call(fn, threads, 0.2)))

    model = SetTransformer()
    points = torch.rand(32, 256, 3) * 2 - 1
    labels = torch.arange(32) % 10
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    loss_of = lambda m, b: F.cross_entropy(m(b[0]), b[1])
    fn = train_step_fn(model, opt, (points, labels), loss_of)
    rows.append(row("train", "settf", "ms", 1e3 * seconds_per_call(fn, 1, 0.2),
                    1e3 * seconds_per_call(fn, threads, 0.2)))

    import torch_text  # the text task's model, as bench/torch_text.py trains it
    vocab = 114         # `qkv train text`'s byte vocabulary of the fortunes corpus
    model = torch_text.TextModel(vocab)
    windows = torch.randint(0, vocab, (torch_text.BATCH, torch_text.CONTEXT + 1))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, betas=(0.9, 0.99), weight_decay=0.1)
    loss_of = lambda m, b: F.cross_entropy(m(b[:, :-1]).reshape(-1, vocab), b[:, 1:].reshape(-1))
    fn = train_step_fn(model, opt, windows, loss_of)
    rows.append(row("train", "text", "ms", 1e3 * seconds_per_call(fn, 1, 0.2),
                    1e3 * seconds_per_call(fn, threads, 0.2)))


def row(section, name, unit, one, two):
    r = {"section": section, "name": name, "unit": unit, "one_thread": one, "all_threads": two}
    speedup = one / two if unit == "ms" else two / one
    print("%-9s | %-30s | %-7s | %10.2f | %10.2f | %6.2fx" % (section, name, unit, one, two, speedup),
          flush=True)
    return r


def main(argv):
    section, json_path = "all", None
    args = list(argv)
    if args == ["--core"]:
        print(openblas_core())
        return 0
    if args and not args[0].startswith("-"):
        section = args.pop(0)
    if len(args) == 2 and args[0] == "--json":
        json_path = args[1]
    elif args or section not in ("all", "matmul", "attention", "train"):
        print("usage: torch_bench.py [all|matmul|attention|train] [--json FILE] | torch_bench.py --core",
              file=sys.stderr)
        return 2
    threads = 2
    print("torch %s: median of %d samples; 1 thread and %d threads; OpenBLAS threads %s" %
          (torch.__version__, SAMPLES, threads, "set too" if OPENBLAS_SET_THREADS else "not found"))
    rows = []
    with torch.no_grad():
        if section in ("all", "matmul"):
            bench_matmul(rows, threads)
    if section in ("all", "attention"):
        bench_attention(rows, threads)
    if section in ("all", "train"):
        bench_train(rows, threads)
    with torch.no_grad():
        if check_matmul(threads) != 0:
            return 1  # a failed check writes no results
    if json_path:
        with open(json_path, "w") as f:
            json.dump({"program": "torch " + torch.__version__, "threads": threads, "samples": SAMPLES,
                       "rows": rows}, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
