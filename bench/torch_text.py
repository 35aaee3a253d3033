#!/usr/bin/python3
"""torch_text.py — `qkv train text` in PyTorch (1.13, CPU): the same model, the
same data, the same schedule, so bench/compare.sh can put the two side by side.

Data, as data/text.c and train/tasks/text.c:
  the corpus  a file, or a directory's regular files (not symlinks, not hidden,
              not ending in .dat) in strcmp order of their names, concatenated;
  tokens      its bytes; the vocabulary is the distinct bytes of the whole corpus,
              in increasing order (token i = the i-th smallest byte present);
  split       n_train = n - floor(n * 0.1f) (val_fraction is a float in qkv's
              config: 0.1f, not 0.1), the rest validates;
  batches     12 windows of 65 tokens at offsets uniform in [0, n_train - 64)
              (torch's generator, seeded), inputs the first 64, targets the next;
  validation  100 windows at floor((n_val - 65) * j / 99), j = 0..99: the mean
              cross-entropy over all their positions, nats per token.
Model, as train/tasks/text_model.c and layers/:
  embed.weight [V, D] ~ N(0, 1); learned positions [64, D] ~ N(0, 0.02) added;
  4 pre-LN causal blocks x = x + attn(LN1(x)); x = x + fc2(gelu(fc1(LN2(x))))
  (LayerNorm eps 1e-5, weight 1, bias 0; attention: q, k, v, o projections D -> D
  with biases, 4 heads, scale 1/sqrt(D/4); GELU the tanh form; FFN D -> 512 -> D);
  a final LayerNorm; head D -> V with bias. Every linear layer's weight and bias
  ~ U(-1/sqrt(in), 1/sqrt(in)). The q, k and v projections are one [3D, D] layer
  here (the same function and the same init; one matmul instead of three is
  PyTorch at its fastest); the parameter count is qkv's.
Training, as the task's defaults (train/tasks/text.c, optim/):
  AdamW lr 1e-3, betas (0.9, 0.99), eps 1e-8, weight decay 0.1 on the 2-D weights
  but embed.weight and the positions table (optim/optimizer.c qkv_param_decays);
  lr 1e-3 x factor(s), s = 0.., factor (s+1)/100 for s < 100, then
  0.1 + 0.9 (1 + cos(pi (s-100)/(steps-100))) / 2 (with --steps 100 or fewer no
  warmup, as cli/train_flags.c); gradients clipped to global norm 1
  (torch.nn.utils.clip_grad_norm_).

Timing: every step (batch, forward, backward, clip, optimizer step) is timed;
ms_per_step is the median of the steps after the first 20 (the mean is written
too). Evaluations are not timed. The thread count is set for PyTorch's loops and
for Debian's OpenBLAS (torch_threads.set_threads).

Prints the banner (parameters, tokens), the step-1 loss, ms per step, the final
train loss (the last batch's) and val loss, and writes them to --json.

--qkv-checkpoint CKPT (a `qkv train text --save` file of this configuration): after
training, CKPT's parameters are loaded into this model (wq, wk, wv into the stacked
projection) and its validation loss printed and written: equal to the val_loss qkv
reported for it (up to float rounding), it shows that the two forward passes and
validation sets are the same. bench/compare.py checks it.

Usage: /usr/bin/python3 bench/torch_text.py [--steps N] [--threads N] [--data PATH]
           [--seed N] [--eval-every N] [--json OUT] [--qkv-checkpoint CKPT]
"""
import argparse
import json
import math
import os
import stat
import statistics
import struct
import sys
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from torch_threads import set_threads

DEFAULT_CORPUS = "/usr/share/games/fortunes"   # train/tasks/text.h QKV_TEXT_DEFAULT_CORPUS
VAL_FRACTION = np.float32(0.1)                 # the config's float, widened to double as qkv does
CONTEXT, LAYERS, HEADS, DIM, FF, BATCH, VAL_WINDOWS = 64, 4, 4, 128, 512, 12, 100
LR, BETAS, EPS, WEIGHT_DECAY, CLIP = 1e-3, (0.9, 0.99), 1e-8, 0.1, 1.0
WARMUP, MIN_FACTOR = 100, 0.1
WARM_UP_STEPS = 20                             # not counted in ms_per_step


# ---- data ----------------------------------------------------------------------------------

def read_corpus(path):
    """The corpus's bytes and its file count, as qkv_text_load reads them."""
    if not os.path.isdir(path):
        with open(path, "rb") as f:
            return f.read(), 1
    parts = []
    for name in sorted(os.listdir(os.fsencode(path))):   # bytes names: strcmp order
        full = os.path.join(os.fsencode(path), name)
        if name.startswith(b".") or name.endswith(b".dat"):
            continue
        if not stat.S_ISREG(os.lstat(full).st_mode):       # symlinks are skipped
            continue
        with open(full, "rb") as f:
            parts.append(f.read())
    return b"".join(parts), len(parts)


def tokenize(corpus):
    """(tokens int64 tensor, alphabet bytes): byte b -> its rank among the bytes present."""
    raw = np.frombuffer(corpus, dtype=np.uint8)
    alphabet = np.unique(raw)
    lookup = np.zeros(256, dtype=np.int64)
    lookup[alphabet] = np.arange(len(alphabet))
    return torch.from_numpy(lookup[raw]), bytes(alphabet.tolist())


def split(n):
    """data/text.c qkv_text_split: n - floor(n * val_fraction), in double."""
    return n - int(math.floor(float(n) * float(VAL_FRACTION)))


def windows(tokens, starts):
    """inputs and targets [len(starts), CONTEXT] of the windows at starts."""
    index = starts[:, None] + torch.arange(CONTEXT + 1)[None, :]
    w = tokens[index]
    return w[:, :-1], w[:, 1:]


def val_starts(n_val):
    span = n_val - CONTEXT - 1
    return torch.tensor([int(span * j / (VAL_WINDOWS - 1)) for j in range(VAL_WINDOWS)])


# ---- the model -----------------------------------------------------------------------------

def uniform_linear(layer):
    """qkv_linear_init: weight and bias ~ U(-1/sqrt(in), 1/sqrt(in))."""
    bound = 1.0 / math.sqrt(layer.in_features)
    nn.init.uniform_(layer.weight, -bound, bound)
    nn.init.uniform_(layer.bias, -bound, bound)
    return layer


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(DIM, eps=1e-5), nn.LayerNorm(DIM, eps=1e-5)
        self.qkv = uniform_linear(nn.Linear(DIM, 3 * DIM))   # wq, wk, wv stacked: in = DIM for each
        self.wo = uniform_linear(nn.Linear(DIM, DIM))
        self.fc1 = uniform_linear(nn.Linear(DIM, FF))
        self.fc2 = uniform_linear(nn.Linear(FF, DIM))

    def attention(self, x, mask):
        b, t, d = x.shape
        q, k, v = (z.view(b, t, HEADS, d // HEADS).transpose(1, 2) for z in self.qkv(x).split(d, dim=2))
        scores = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(d // HEADS)) + mask[:t, :t]
        o = torch.softmax(scores, dim=-1) @ v
        return self.wo(o.transpose(1, 2).reshape(b, t, d))

    def forward(self, x, mask):
        x = x + self.attention(self.ln1(x), mask)
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x)), approximate="tanh"))


class TextModel(nn.Module):
    def __init__(self, vocab):
        super().__init__()
        self.embed = nn.Parameter(torch.randn(vocab, DIM))               # embed.weight, N(0, 1)
        self.pos_table = nn.Parameter(torch.randn(CONTEXT, DIM) * 0.02)  # dec.pos.table, N(0, 0.02)
        self.blocks = nn.ModuleList(Block() for _ in range(LAYERS))
        self.ln_final = nn.LayerNorm(DIM, eps=1e-5)
        self.head = uniform_linear(nn.Linear(DIM, vocab))
        self.register_buffer("mask", torch.full((CONTEXT, CONTEXT), float("-inf")).triu(1))

    def forward(self, ids):
        x = F.embedding(ids, self.embed) + self.pos_table[: ids.shape[1]]
        for block in self.blocks:
            x = block(x, self.mask)
        return self.head(self.ln_final(x))


def read_safetensors(path):
    """{name: float32 tensor} of a safetensors file (qkv's checkpoints are F32)."""
    with open(path, "rb") as f:
        header_len = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(header_len))
        data = f.read()
    tensors = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        if entry["dtype"] != "F32":
            raise ValueError("%s: %s is %s, not F32" % (path, name, entry["dtype"]))
        begin, end = entry["data_offsets"]
        tensors[name] = torch.from_numpy(np.frombuffer(data[begin:end], dtype=np.float32).copy()).reshape(
            entry["shape"])
    return tensors


def load_qkv_checkpoint(model, path):
    """model's parameters from qkv's names (train/tasks/text_model.c, layers/)."""
    t = read_safetensors(path)
    d = DIM
    with torch.no_grad():
        copies = [(model.embed, t["embed.weight"]), (model.pos_table, t["dec.pos.table"]),
                  (model.ln_final.weight, t["dec.ln_final.weight"]), (model.ln_final.bias, t["dec.ln_final.bias"]),
                  (model.head.weight, t["head.weight"]), (model.head.bias, t["head.bias"])]
        for i, b in enumerate(model.blocks):
            q = "dec.%d." % i
            for j, part in enumerate(("wq", "wk", "wv")):
                copies.append((b.qkv.weight[j * d:(j + 1) * d], t[q + "attn.%s.weight" % part]))
                copies.append((b.qkv.bias[j * d:(j + 1) * d], t[q + "attn.%s.bias" % part]))
            for mine, theirs in ((b.wo, "attn.wo"), (b.fc1, "ffn.fc1"), (b.fc2, "ffn.fc2"), (b.ln1, "ln1"),
                                 (b.ln2, "ln2")):
                copies.append((mine.weight, t[q + theirs + ".weight"]))
                copies.append((mine.bias, t[q + theirs + ".bias"]))
        for mine, theirs in copies:
            mine.copy_(theirs)   # a shape that differs raises
    if sum(theirs.numel() for _, theirs in copies) != sum(p.numel() for p in model.parameters()):
        raise ValueError("%s: the checkpoint does not cover every parameter" % path)


def loss_of(model, inputs, targets):
    logits = model(inputs)
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))


def decays(name, p):
    """optim/optimizer.c qkv_param_decays: not 1-D tensors, embeddings, position tables."""
    return p.dim() >= 2 and name not in ("embed", "pos_table")


def lr_factor(s, steps):
    """optim/schedule.c cosine_factor; the warmup is dropped when it is not shorter
    than the run (cli/train_flags.c)."""
    warmup = WARMUP if WARMUP < steps else 0
    if s < warmup:
        return (s + 1) / warmup
    if s >= steps:
        return MIN_FACTOR
    progress = (s - warmup) / (steps - warmup)
    return MIN_FACTOR + (1.0 - MIN_FACTOR) * 0.5 * (1.0 + math.cos(math.pi * progress))


@torch.no_grad()
def evaluate(model, val_inputs, val_targets):
    model.eval()
    loss = loss_of(model, val_inputs, val_targets).item()
    model.train()
    return loss


# ---- the run -------------------------------------------------------------------------------

def main(argv):
    ap = argparse.ArgumentParser(description="qkv train text's model and run in PyTorch")
    ap.add_argument("--steps", type=int, default=2000)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--data", default=DEFAULT_CORPUS)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--eval-every", type=int, default=0, help="steps between evaluations; 0: only at the end")
    ap.add_argument("--json", help="write the results here")
    ap.add_argument("--qkv-checkpoint", help="after training: the val loss of this qkv checkpoint, here")
    a = ap.parse_args(argv)
    if a.steps < 1:
        print("torch_text.py: --steps %d must be >= 1" % a.steps, file=sys.stderr)
        return 2
    set_threads(a.threads)
    torch.manual_seed(a.seed)
    batches = torch.Generator().manual_seed(a.seed + 1)

    corpus, n_files = read_corpus(a.data)
    tokens, alphabet = tokenize(corpus)
    n_train = split(len(corpus))
    train, val = tokens[:n_train], tokens[n_train:]
    val_inputs, val_targets = windows(val, val_starts(len(val)))
    model = TextModel(len(alphabet))
    n_params = sum(p.numel() for p in model.parameters())
    named = list(model.named_parameters())
    groups = [{"params": [p for n, p in named if decays(n, p)], "weight_decay": WEIGHT_DECAY},
              {"params": [p for n, p in named if not decays(n, p)], "weight_decay": 0.0}]
    opt = torch.optim.AdamW(groups, lr=LR, betas=BETAS, eps=EPS)
    print("torch %s text: %s (%d files, %d bytes), vocabulary of %d, %d train / %d validation tokens, "
          "%d layers x %d heads, dim %d, context %d, %d parameters, batch %d, %d steps, %d thread%s"
          % (torch.__version__, a.data, n_files, len(corpus), len(alphabet), len(train), len(val), LAYERS,
             HEADS, DIM, CONTEXT, n_params, BATCH, a.steps, a.threads, "" if a.threads == 1 else "s"),
          flush=True)
    initial_val = evaluate(model, val_inputs, val_targets)

    times, first_loss, loss, evals = [], None, None, []
    for s in range(a.steps):
        t0 = time.perf_counter()
        for group in opt.param_groups:
            group["lr"] = LR * lr_factor(s, a.steps)
        starts = torch.randint(0, len(train) - CONTEXT, (BATCH,), generator=batches)
        inputs, targets = windows(train, starts)
        opt.zero_grad(set_to_none=True)
        batch_loss = loss_of(model, inputs, targets)
        batch_loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), CLIP)
        opt.step()
        loss = batch_loss.item()
        times.append(time.perf_counter() - t0)
        if s == 0:
            first_loss = loss
            print("step      1  loss %.4f  (val_loss before training %.4f)" % (loss, initial_val), flush=True)
        if a.eval_every > 0 and (s + 1) % a.eval_every == 0 and s + 1 < a.steps:
            v = evaluate(model, val_inputs, val_targets)
            evals.append({"step": s + 1, "val_loss": v})
            print("step %6d  loss %.4f  val_loss %.4f" % (s + 1, loss, v), flush=True)
    val_loss = evaluate(model, val_inputs, val_targets)
    timed = times[WARM_UP_STEPS:] if len(times) > WARM_UP_STEPS else times
    ms, ms_mean = 1e3 * statistics.median(timed), 1e3 * statistics.mean(timed)
    print("final: torch steps=%d loss=%.4f val_loss=%.4f ms_per_step=%.2f (median of steps %d..%d; mean %.2f) "
          "seconds=%.1f" % (a.steps, loss, val_loss, ms, WARM_UP_STEPS + 1, a.steps, ms_mean, sum(times)),
          flush=True)
    checkpoint = None
    if a.qkv_checkpoint:
        theirs = TextModel(len(alphabet))
        load_qkv_checkpoint(theirs, a.qkv_checkpoint)
        checkpoint = {"path": a.qkv_checkpoint, "val_loss": evaluate(theirs, val_inputs, val_targets)}
        print("check: %s evaluated here: val_loss=%.6f" % (a.qkv_checkpoint, checkpoint["val_loss"]), flush=True)
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"program": "torch " + torch.__version__, "threads": a.threads, "steps": a.steps,
                       "seed": a.seed, "data": a.data, "corpus_bytes": len(corpus), "files": n_files,
                       "vocab": len(alphabet), "alphabet": alphabet.hex(), "n_train": len(train),
                       "n_val": len(val), "parameters": n_params,
                       "config": {"context": CONTEXT, "layers": LAYERS, "heads": HEADS, "dim": DIM, "ff": FF,
                                  "batch": BATCH, "val_windows": VAL_WINDOWS},
                       "ms_per_step": ms, "ms_per_step_mean": ms_mean, "warm_up_steps": WARM_UP_STEPS,
                       "seconds": sum(times), "first_train_loss": first_loss, "initial_val_loss": initial_val,
                       "final_train_loss": loss, "val_loss": val_loss, "evaluations": evals,
                       "qkv_checkpoint": checkpoint}, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
