#!/usr/bin/python3
"""make_optim_reference.py - PyTorch reference values for tests/test_optim.c.

Run as:  cd tests && /usr/bin/python3 make_optim_reference.py
(Debian's python3-torch and python3-numpy.) It deletes ref/optim_*.npy and writes:

  ref/optim_<case>_w0.npy, _b0.npy   initial weight [4,5] and bias [4]
  ref/optim_<case>_gw.npy, _gb.npy   the gradient of each of the 5 steps, [5,4,5] and [5,4]
  ref/optim_<case>_lr.npy            the learning rate of each step, [5]
  ref/optim_<case>_w.npy, _b.npy     the parameters after each step, [5,4,5] and [5,4]
  ref/optim_clip_<case>_gw.npy, _gb.npy          gradients before clipping
  ref/optim_clip_<case>_gw_out.npy, _gb_out.npy  gradients after clip_grad_norm_
  ref/optim_clip_<case>_norm.npy                 the norm it returned (0-dim)
  ref/optim_schedule_<kind>.npy      the lr factor at steps 0..n-1 (base lr 1)

The hyperparameters below must match the tables in test_optim.c. Every value
(inputs and hyperparameters) is drawn or rounded to float32 first; torch then
computes in float64 from those exact values, and results are rounded to float32
once. Each case draws from its own generator, seeded from its name.
"""
import glob
import math
import os
import warnings
import zlib

import numpy as np
import torch

REF = "ref"
STEPS = 5
W_SHAPE, B_SHAPE = (4, 5), (4,)


def rng_for(name):
    return np.random.default_rng(zlib.crc32(name.encode()))


def f32(x):
    """x rounded to float32, as the C side stores it, back as a Python float."""
    return float(np.float32(x))


def save(name, array):
    np.save(os.path.join(REF, name + ".npy"), np.asarray(array, dtype=np.float32))


def normal(rng, *shape, scale=1.0):
    return (rng.standard_normal(shape) * scale).astype(np.float32)


# ---- optimizers: 5 steps on a weight and a bias with fixed gradients -----------

def optimizer_case(name, make_optimizer, lrs, bias_decays):
    """make_optimizer(groups) -> torch optimizer; groups is the weight's group and
    the bias's (the bias gets weight_decay 0 unless bias_decays)."""
    rng = rng_for(name)
    w0, b0 = normal(rng, *W_SHAPE, scale=0.5), normal(rng, *B_SHAPE, scale=0.5)
    gw, gb = normal(rng, STEPS, *W_SHAPE), normal(rng, STEPS, *B_SHAPE)
    lrs = np.asarray(lrs, dtype=np.float32)
    w = torch.tensor(w0, dtype=torch.float64, requires_grad=True)
    b = torch.tensor(b0, dtype=torch.float64, requires_grad=True)
    groups = [{"params": [w]}, {"params": [b]} if bias_decays else {"params": [b], "weight_decay": 0.0}]
    opt = make_optimizer(groups)
    w_after, b_after = [], []
    for t in range(STEPS):
        for group in opt.param_groups:
            group["lr"] = float(lrs[t])
        w.grad = torch.tensor(gw[t], dtype=torch.float64)
        b.grad = torch.tensor(gb[t], dtype=torch.float64)
        opt.step()
        w_after.append(w.detach().numpy().copy())
        b_after.append(b.detach().numpy().copy())
    prefix = "optim_" + name
    for suffix, array in (("w0", w0), ("b0", b0), ("gw", gw), ("gb", gb), ("lr", lrs),
                          ("w", np.stack(w_after)), ("b", np.stack(b_after))):
        save(f"{prefix}_{suffix}", array)


def sgd(nesterov):
    return lambda groups: torch.optim.SGD(groups, lr=1.0, momentum=f32(0.9), nesterov=nesterov,
                                          weight_decay=f32(0.01))


def adam(weight_decay):
    return lambda groups: torch.optim.Adam(groups, lr=1.0, betas=(f32(0.9), f32(0.999)), eps=f32(1e-8),
                                           weight_decay=f32(weight_decay))


def adamw(groups):
    return torch.optim.AdamW(groups, lr=1.0, betas=(f32(0.9), f32(0.95)), eps=f32(1e-8),
                             weight_decay=f32(0.1))


# ---- clip_grad_norm_ ----------------------------------------------------------

def clip_case(name, scale, max_norm):
    rng = rng_for("clip_" + name)
    gw, gb = normal(rng, *W_SHAPE, scale=scale), normal(rng, *B_SHAPE, scale=scale)
    w = torch.zeros(W_SHAPE, dtype=torch.float64, requires_grad=True)
    b = torch.zeros(B_SHAPE, dtype=torch.float64, requires_grad=True)
    w.grad, b.grad = torch.tensor(gw, dtype=torch.float64), torch.tensor(gb, dtype=torch.float64)
    norm = torch.nn.utils.clip_grad_norm_([w, b], max_norm)
    prefix = "optim_clip_" + name
    save(prefix + "_gw", gw)
    save(prefix + "_gb", gb)
    save(prefix + "_gw_out", w.grad.numpy())
    save(prefix + "_gb_out", b.grad.numpy())
    save(prefix + "_norm", np.float32(norm.item()))


# ---- schedules: torch's schedulers on base lr 1 -------------------------------

def schedule_factors(make_scheduler, n):
    opt = torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=1.0)
    scheduler = make_scheduler(opt)
    factors = []
    for _ in range(n):
        factors.append(scheduler.get_last_lr()[0])
        opt.step()
        scheduler.step()
    return np.array(factors)


def cosine_by_formula(s, warmup, total, min_factor):
    if s < warmup:
        return (s + 1) / warmup
    if s >= total:
        return min_factor
    return min_factor + (1 - min_factor) * 0.5 * (1 + math.cos(math.pi * (s - warmup) / (total - warmup)))


def schedule_cases():
    # warmup 4, total 12, min 0.1: LinearLR gives (s+1)/4 for s < 4, then cosine
    # annealing over 8 steps down to 0.1, reached at step 12. (Torch's cosine is
    # periodic past T_max; qkv stays at the floor, so the reference stops at 12.)
    warmup, total, min_factor = 4, 12, f32(0.1)
    def cosine(opt):
        linear = torch.optim.lr_scheduler.LinearLR(opt, start_factor=1 / warmup, end_factor=1.0,
                                                   total_iters=warmup - 1)
        anneal = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=total - warmup, eta_min=min_factor)
        return torch.optim.lr_scheduler.SequentialLR(opt, [linear, anneal], milestones=[warmup])
    with warnings.catch_warnings():  # SequentialLR itself calls the deprecated step(epoch)
        warnings.filterwarnings("ignore", message="The epoch parameter")
        factors = schedule_factors(cosine, total + 1)
    by_formula = [cosine_by_formula(s, warmup, total, min_factor) for s in range(total + 1)]
    assert np.allclose(factors, by_formula, rtol=0, atol=1e-12), (factors, by_formula)
    save("optim_schedule_cosine", factors)
    # step_size 3, gamma 0.5
    step = schedule_factors(lambda opt: torch.optim.lr_scheduler.StepLR(opt, step_size=3, gamma=f32(0.5)), 10)
    save("optim_schedule_step", step)


def main():
    os.makedirs(REF, exist_ok=True)
    for old in glob.glob(os.path.join(REF, "optim_*.npy")):
        os.remove(old)
    optimizer_case("sgd_momentum", sgd(nesterov=False), [0.1] * STEPS, bias_decays=True)
    optimizer_case("sgd_nesterov", sgd(nesterov=True), [0.1] * STEPS, bias_decays=True)
    optimizer_case("adam", adam(0.0), [0.01] * STEPS, bias_decays=False)
    optimizer_case("adam_l2", adam(0.01), [0.01] * STEPS, bias_decays=False)
    # a warmup-like lr per step: decoupled decay must use the step's lr
    optimizer_case("adamw", adamw, [0.002, 0.006, 0.01, 0.0075, 0.005], bias_decays=False)
    clip_case("big", scale=3.0, max_norm=1.0)
    clip_case("small", scale=0.1, max_norm=1.0)
    schedule_cases()
    files = glob.glob(os.path.join(REF, "optim_*.npy"))
    print(f"wrote {len(files)} files, {sum(os.path.getsize(f) for f in files)} bytes, in {REF}/")


if __name__ == "__main__":
    main()
