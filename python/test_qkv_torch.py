#!/usr/bin/python3
"""test_qkv_torch.py - `make test-torch`: qkv and PyTorch on the same weights.

For every case of CASES: train a few steps with ./qkv and save; open the
checkpoint with qkv_torch.to_torch; on one random batch (with padding) compare
the logits, the loss and every parameter's gradient of one backward step between
qkv (build/qkv_probe, the C API) and PyTorch; write the module back with
from_torch and check that ./qkv eval gives the same line as on the original
checkpoint, and that ./qkv attn (sequence tasks) or ./qkv sample (text) runs.
The set models (points, maxreg) are compared on a random padded batch with the
loss sum(out * r); detect on random images with the loss sum over the decoder
layers of sum(logits * r) + sum(boxes * r_boxes) (./qkv detect draws the boxes).
Then import: a freshly initialized PyTorch module of the same config is compared
again, once through its PyTorch-named state_dict loaded by the C name map
(qkv_params_load_torch) and once written by from_torch and run by ./qkv eval.

Run from the repository root after `make qkv build/qkv_probe`. Exit 1 when any
comparison is off by more than TOL (relative to the tensor's largest value; see
grads_err for the floor of the gradients' denominators).
"""
import os
import subprocess
import sys
import tempfile

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import qkv_torch  # noqa: E402

TOL = 1e-5
GRAD_FLOOR = 1e-2
SMALL = ["--steps", "5", "--min-len", "3", "--max-len", "6", "--dim", "16", "--heads", "2", "--ff", "32",
         "--layers", "2", "--test-size", "20", "--batch", "8", "--quiet"]
SET_SMALL = ["--steps", "5", "--width", "16", "--heads", "2", "--inducing", "4", "--test-size", "8", "--batch", "4",
             "--quiet"]
POINTS_SMALL = ["--points", "16"]
DETECT_SMALL = ["--train", "8", "--test", "4", "--size", "24", "--patch", "6", "--width", "16", "--heads", "2", "--ff",
                "16", "--enc-layers", "1", "--dec-layers", "2", "--queries", "4", "--batch", "4", "--steps", "5",
                "--quiet"]
PORTABLE = ["--activation", "gelu-exact", "--ln-eps", "1e-6", "--rope-layout", "halves", "--rope-base", "500",
            "--rope-fraction", "0.5", "--attn-scale", "0.3"]

# (label, ./qkv train arguments)
CASES = [
    ("reverse encoder learned", ["reverse", "--arch", "encoder", "--pos", "learned"]),
    ("reverse encoder sinusoidal gelu-exact", ["reverse", "--arch", "encoder", "--pos", "sinusoidal",
                                               "--activation", "gelu-exact"]),
    ("reverse encoder alibi", ["reverse", "--arch", "encoder", "--pos", "alibi"]),
    ("reverse encoder rope", ["reverse", "--arch", "encoder", "--pos", "rope"]),
    ("copy seq2seq learned", ["copy", "--arch", "seq2seq", "--pos", "learned"]),
    ("copy seq2seq sinusoidal eps 1e-6 relu", ["copy", "--arch", "seq2seq", "--pos", "sinusoidal", "--ln-eps", "1e-6",
                                               "--activation", "relu"]),
    ("copy seq2seq rope portable options", ["copy", "--arch", "seq2seq", "--pos", "rope"] + PORTABLE),
    ("sort decoder none", ["sort", "--arch", "decoder", "--pos", "none"]),
    ("sort decoder alibi scale 0.3", ["sort", "--arch", "decoder", "--pos", "alibi", "--attn-scale", "0.3"]),
    ("sort decoder rope portable options", ["sort", "--arch", "decoder", "--pos", "rope"] + PORTABLE),
    ("sort decoder p-rope 0.5", ["sort", "--arch", "decoder", "--pos", "p-rope", "--p-rope", "0.5"]),
    ("copy seq2seq p-rope halves", ["copy", "--arch", "seq2seq", "--pos", "p-rope", "--rope-layout", "halves"]),
    ("sort decoder fire", ["sort", "--arch", "decoder", "--pos", "fire"]),
    ("reverse encoder fire", ["reverse", "--arch", "encoder", "--pos", "fire"]),
    ("points isab layer norm", ["points", "--model", "isab"]),
    ("points sab", ["points", "--model", "sab"]),
    ("points deepsets-max", ["points", "--model", "deepsets-max"]),
    ("points attnpool", ["points", "--model", "attnpool"]),
    ("maxreg sab", ["maxreg", "--model", "sab"]),
    ("maxreg isab", ["maxreg", "--model", "isab", "--layer-norm", "1"]),
    ("maxreg deepsets-mean", ["maxreg", "--model", "deepsets-mean"]),
    ("maxreg deepsets-sum", ["maxreg", "--model", "deepsets-sum"]),
    ("detect", ["detect"]),
    ("text learned", ["text", "--context", "12", "--dim", "16", "--heads", "2", "--ff", "32", "--layers", "2",
                      "--steps", "5", "--batch", "4", "--val-windows", "4", "--sample-tokens", "0", "--quiet"]),
    ("text rope portable options", ["text", "--context", "12", "--dim", "16", "--heads", "2", "--ff", "32",
                                    "--layers", "2", "--steps", "5", "--batch", "4", "--val-windows", "4",
                                    "--sample-tokens", "0", "--quiet", "--pos", "rope"] + PORTABLE),
]

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
QKV = os.path.join(ROOT, "qkv")
PROBE = os.path.join(ROOT, "build", "qkv_probe")
TEXT = ("The quick brown fox jumps over the lazy dog. A small text for a small model, read again and again.\n" * 40)


def run(args, **kw):
    r = subprocess.run(args, capture_output=True, text=True, **kw)
    if r.returncode != 0:
        raise RuntimeError("%s: exit %d: %s" % (" ".join(args), r.returncode, r.stderr.strip()))
    return r.stdout


def rel_err(a, b, floor=1e-30):
    """max |a - b| over max(max |b|, floor)."""
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return float(np.abs(a - b).max() / max(np.abs(b).max(), floor))


def grads_err(q_grads, t_grads):
    """The worst error over the gradients: max |q - t| over the tensor's largest
    value, or over GRAD_FLOOR times the model's largest gradient when that is more.
    The floor is for the tensors whose gradient is 0 in exact arithmetic (the key
    projection's bias without RoPE: softmax ignores a shift shared by all keys) or
    a small difference of large terms (ISAB's key projection reading the m
    inducing outputs): both sides then hold float32 rounding of the terms' size.
    Returns (error, the number of tensors measured against the floor)."""
    scale = max(float(t.abs().max()) for t in t_grads.values())
    floor = GRAD_FLOOR * scale
    worst = max(rel_err(q_grads[k], t, floor) for k, t in t_grads.items())
    return worst, sum(float(t.abs().max()) < floor for t in t_grads.values())


def make_batch(model, cfg, gen):
    """Random ids and masks for the model's inputs, and targets (-1 = ignored)."""
    b = 4
    if isinstance(model, qkv_torch.DetectModel):
        size, n, c = cfg["size"], cfg["queries"], cfg["classes"]
        images = torch.rand(b, 3, size, size, generator=gen)
        return {"images": images}, {"r": torch.randn(b, n, c + 1, generator=gen),
                                    "r_boxes": torch.randn(b, n, 4, generator=gen)}
    if isinstance(model, qkv_torch.SetModel):
        n, d_in = 9, qkv_torch.SET_TASKS[cfg["task"]]
        x = torch.randn(b, n, d_in, generator=gen)
        mask = (torch.arange(n)[None] < torch.tensor([n, n - 2, 3, 1])[:, None]).float()
        out = model.set.head.out_features if hasattr(model.set, "head") else list(model.set.rho.children())[-1].out_features
        return {"x": x, "mask": mask}, torch.randn(b, out, generator=gen)
    if isinstance(model, qkv_torch.TextModel):
        t = cfg["context"]
        src = torch.randint(0, cfg["vocab"], (b, t), generator=gen)
        return {"src": src}, torch.randint(0, cfg["vocab"], (b, t), generator=gen)
    tokens = qkv_torch.sequence_tokens(cfg)
    arch, n = cfg["arch"], cfg["max_len"]
    s = 2 * n + 1 if arch == "decoder" else n
    src = torch.randint(0, tokens, (b, s), generator=gen)
    lengths = torch.tensor([s, s - 1, max(1, s - 2), 2])
    mask = (torch.arange(s)[None] < lengths[:, None]).float()
    inputs = {"src": src, "src_mask": mask}
    t = s
    if arch == "seq2seq":
        t = n
        inputs["tgt_in"] = torch.randint(0, tokens, (b, t), generator=gen)
        inputs["tgt_mask"] = (torch.arange(t)[None] < torch.tensor([t, t - 1, 2, 1])[:, None]).float()
    targets = torch.randint(0, tokens, (b, t), generator=gen)
    targets[1, -1] = -1
    targets[3, 1:] = -1
    return inputs, targets


def torch_step(model, inputs, targets):
    """Logits, loss and the qkv-named gradients of one backward step in PyTorch."""
    model.zero_grad()
    for p in model.parameters():
        p.requires_grad_(True)
    boxes = None
    if isinstance(model, qkv_torch.DetectModel):
        layers = model(inputs["images"])
        loss = sum((lg * targets["r"]).sum() + (bx * targets["r_boxes"]).sum() for lg, bx in layers)
        logits, boxes = layers[-1]
    elif isinstance(model, qkv_torch.SetModel):
        logits = model(inputs["x"], inputs["mask"])
        loss = (logits * targets).sum()
    elif isinstance(model, qkv_torch.TextModel):
        logits = model(inputs["src"])
    else:
        logits = model(inputs["src"], inputs["src_mask"], inputs.get("tgt_in"), inputs.get("tgt_mask"))
    if not isinstance(model, (qkv_torch.SetModel, qkv_torch.DetectModel)):
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1), ignore_index=-1)
    loss.backward()
    grads = {k: p.grad for k, p in model.named_parameters()}
    if boxes is not None:  # the last layer's boxes are compared with the logits
        logits = torch.cat([logits, boxes], -1)
    return logits.detach(), loss.detach(), qkv_torch.torch_to_qkv_state(grads, model.qkv_names)


def qkv_step(ckpt, inputs, targets, workdir, torch_weights=None):
    for k, v in inputs.items():
        np.save(os.path.join(workdir, k + ".npy"), v.float().numpy())
    for name in os.listdir(workdir):
        if name.endswith(".npy"):
            os.remove(os.path.join(workdir, name))
    if not isinstance(targets, dict):
        targets = {"r" if "x" in inputs else "targets": targets}
    for k, v in list(inputs.items()) + list(targets.items()):
        np.save(os.path.join(workdir, k + ".npy"), v.float().numpy())
    run([PROBE, ckpt, workdir] + ([torch_weights] if torch_weights else []))
    logits = np.load(os.path.join(workdir, "logits.npy"))
    if os.path.exists(os.path.join(workdir, "boxes.npy")):
        logits = np.concatenate([logits, np.load(os.path.join(workdir, "boxes.npy"))], -1)
    loss = np.load(os.path.join(workdir, "loss.npy"))
    grads, _ = qkv_torch.load_safetensors(os.path.join(workdir, "grads.safetensors"))
    return logits, loss, grads


def compare(label, model, ckpt, inputs, targets, workdir, torch_weights=None):
    """The worst relative error over logits, loss and gradients; prints one line."""
    t_logits, t_loss, t_grads = torch_step(model, inputs, targets)
    q_logits, q_loss, q_grads = qkv_step(ckpt, inputs, targets, workdir, torch_weights)
    errs = {"logits": rel_err(q_logits, t_logits), "loss": rel_err(q_loss, t_loss)}
    errs["grads"], zeros = grads_err(q_grads, t_grads)
    worst = max(errs.values())
    print("%-4s %-48s logits %.1e  loss %.1e  grads %.1e (%d tensors, %d at the floor)" % (
        "ok" if worst <= TOL else "FAIL", label, errs["logits"], errs["loss"], errs["grads"], len(t_grads), zeros))
    FLOORED.append(zeros)
    return worst, len(t_grads)


FLOORED = []  # per comparison: the gradient tensors measured against the floor


def eval_line(ckpt, data):
    out = run([QKV, "eval", ckpt] + (["--data", data] if data else []) + ["--threads", "1"])
    return [l for l in out.splitlines() if l.startswith("final:")][-1].split(" ", 2)[-1]


def main():
    torch.manual_seed(0)
    gen = torch.Generator().manual_seed(1)
    failures, worst_all, tensors = 0, 0.0, 0
    with tempfile.TemporaryDirectory() as tmp:
        text_path = os.path.join(tmp, "text.txt")
        with open(text_path, "w") as f:
            f.write(TEXT)
        for i, (label, args) in enumerate(CASES):
            ckpt = os.path.join(tmp, "case%d.safetensors" % i)
            is_text, is_set, is_detect = args[0] == "text", args[0] in qkv_torch.SET_TASKS, args[0] == "detect"
            extra = (["--data", text_path] if is_text else DETECT_SMALL if is_detect
                     else SET_SMALL + (POINTS_SMALL if args[0] == "points" else []) if is_set else SMALL)
            run([QKV, "train"] + args + extra + ["--save", ckpt, "--threads", "1"])
            model = qkv_torch.to_torch(ckpt)
            cfg = model.cfg
            inputs, targets = make_batch(model, cfg, gen)
            w, n = compare("export: " + label, model, ckpt, inputs, targets, tmp)
            failures += w > TOL
            worst_all, tensors = max(worst_all, w), tensors + n
            # export back: the same weights give the same evaluation, attn and sample run
            back = os.path.join(tmp, "back%d.safetensors" % i)
            qkv_torch.from_torch(model, back)
            data = text_path if is_text else None
            same = eval_line(ckpt, data) == eval_line(back, data)
            if is_text:
                run([QKV, "sample", back, "--tokens", "5", "--prompt", "The "])
            elif is_detect:
                img = os.path.join(tmp, "img")
                run([QKV, "data", "detect", "--out", img, "--n", "1", "--size", "24"])
                run([QKV, "detect", back, os.path.join(img, "img_00000.png"), "--out", os.path.join(tmp, "boxes.png")])
            elif not is_set:
                run([QKV, "attn", back, "--input", "3 1 2", "--out", os.path.join(tmp, "attn.png")])
            print("%-4s %-48s qkv eval equal after from_torch: %s" % ("ok" if same else "FAIL",
                                                                        "round trip: " + label, same))
            failures += not same
            # import: a PyTorch-initialized module of the same config
            if is_text:
                fresh = qkv_torch.TextModel(cfg)
            elif is_detect:
                fresh = qkv_torch.DetectModel(cfg)
                torch.nn.init.normal_(fresh.dec.query_embed)
            elif is_set:
                fresh = qkv_torch.SetModel(cfg, qkv_torch.SET_TASKS[cfg["task"]], cfg.get("classes", 1)
                                           if cfg["task"] == "points" else 1)
                for p in fresh.parameters():  # the learned points start at 0 in the module; give them values
                    if p.dim() == 2 and p.shape[0] <= 4:
                        torch.nn.init.normal_(p, 0.0, 0.5)
            else:
                fresh = qkv_torch.SequenceModel(cfg, qkv_torch.sequence_tokens(cfg))
            fresh.qkv_names = qkv_torch.qkv_names_of(fresh.state_dict())  # from PyTorch's names alone
            assert sorted(fresh.qkv_names) == sorted(model.qkv_names), label
            fresh.eval()
            state_path = os.path.join(tmp, "torch%d.safetensors" % i)
            qkv_torch.save_safetensors(state_path, fresh.state_dict())
            w, n = compare("import (C name map): " + label, fresh, ckpt, inputs, targets, tmp, state_path)
            failures += w > TOL
            worst_all, tensors = max(worst_all, w), tensors + n
            imported = os.path.join(tmp, "imported%d.safetensors" % i)
            qkv_torch.from_torch(fresh.state_dict(), imported, meta=model.qkv_meta)
            w, n = compare("import (from_torch): " + label, fresh, imported, inputs, targets, tmp)
            failures += w > TOL
            worst_all, tensors = max(worst_all, w), tensors + n
            eval_line(imported, data)
    print("test-torch: %d cases, %d comparisons of %d gradient tensors (%d of them small enough to be measured "
          "against the floor), worst relative error %.1e, %d failures" % (
              len(CASES), 3 * len(CASES), tensors, sum(FLOORED), worst_all, failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
