#!/usr/bin/python3
"""make_box_reference.py - PyTorch references for the GIoU loss (tests/test_set_loss.c).

Run as:  cd tests && /usr/bin/python3 make_box_reference.py
It rewrites only ref/box_*.npy:

  ref/box_<case>_pred.npy, _target.npy   [N, 4] float32 boxes (cx, cy, w, h)
  ref/box_<case>_r.npy                   fixed random R [N]; the loss is L = sum(out * R)
  ref/box_<case>_out.npy                 1 - GIoU(pred_i, target_i), [N]
  ref/box_<case>_dpred.npy, _dtarget.npy dL/dpred, dL/dtarget

The GIoU loss is written out here in torch (torchvision may be missing): it is
torchvision.ops.generalized_box_iou_loss with eps = 1e-7, on boxes converted
from (cx, cy, w, h) to corners. torch computes in float64 from the float32
inputs; results are rounded to float32 once. The boxes keep every pair of edges
apart, so no min/max ties (where torch splits the gradient) occur.
"""
import glob
import os
import zlib

import numpy as np
import torch

REF = "ref"
EPS = 1e-7


def save(name, array):
    np.save(os.path.join(REF, name + ".npy"), np.asarray(array, dtype=np.float32))


def corners(b):
    cx, cy, w, h = b.unbind(-1)
    return cx - 0.5 * w, cy - 0.5 * h, cx + 0.5 * w, cy + 0.5 * h


def giou_loss(pred, target):
    """torchvision.ops.generalized_box_iou_loss(reduction='none'), on cxcywh boxes."""
    x1, y1, x2, y2 = corners(pred)
    x1g, y1g, x2g, y2g = corners(target)
    xkis1, ykis1 = torch.max(x1, x1g), torch.max(y1, y1g)
    xkis2, ykis2 = torch.min(x2, x2g), torch.min(y2, y2g)
    intsctk = torch.zeros_like(x1)
    mask = (ykis2 > ykis1) & (xkis2 > xkis1)
    intsctk[mask] = (xkis2[mask] - xkis1[mask]) * (ykis2[mask] - ykis1[mask])
    unionk = (x2 - x1) * (y2 - y1) + (x2g - x1g) * (y2g - y1g) - intsctk
    iouk = intsctk / (unionk + EPS)
    xc1, yc1 = torch.min(x1, x1g), torch.min(y1, y1g)
    xc2, yc2 = torch.max(x2, x2g), torch.max(y2, y2g)
    area_c = (xc2 - xc1) * (yc2 - yc1)
    miouk = iouk - ((area_c - unionk) / (area_c + EPS))
    return 1 - miouk


def case(name, pred, target):
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    pred = np.asarray(pred, dtype=np.float32)
    target = np.asarray(target, dtype=np.float32)
    r = rng.standard_normal(pred.shape[0]).astype(np.float32)
    p = torch.tensor(pred, dtype=torch.float64, requires_grad=True)
    t = torch.tensor(target, dtype=torch.float64, requires_grad=True)
    out = giou_loss(p, t)
    (out * torch.tensor(r, dtype=torch.float64)).sum().backward()
    for suffix, value in (("pred", pred), ("target", target), ("r", r), ("out", out.detach().numpy()),
                          ("dpred", p.grad.numpy()), ("dtarget", t.grad.numpy())):
        save(f"box_{name}_{suffix}", value)


def random_boxes(rng, n):
    centers = rng.uniform(0.2, 0.8, size=(n, 2))
    sizes = rng.uniform(0.05, 0.5, size=(n, 2))
    return np.concatenate([centers, sizes], axis=1)


def main():
    os.makedirs(REF, exist_ok=True)
    for old in glob.glob(os.path.join(REF, "box_*.npy")):
        os.remove(old)
    rng = np.random.default_rng(zlib.crc32(b"box_random"))
    case("random", random_boxes(rng, 16), random_boxes(rng, 16))
    # overlapping, disjoint, apart in y only, target inside pred, pred inside
    # target, zero-width pred overlapping, zero-height pred disjoint
    case("special",
         [[0.5, 0.5, 0.4, 0.3], [0.2, 0.2, 0.1, 0.1], [0.4, 0.2, 0.3, 0.1], [0.5, 0.5, 0.6, 0.6],
          [0.31, 0.62, 0.12, 0.2], [0.45, 0.5, 0.0, 0.3], [0.1, 0.9, 0.2, 0.0]],
         [[0.56, 0.45, 0.3, 0.5], [0.7, 0.8, 0.2, 0.15], [0.5, 0.7, 0.2, 0.3], [0.52, 0.47, 0.2, 0.1],
          [0.3, 0.6, 0.5, 0.4], [0.5, 0.52, 0.3, 0.4], [0.6, 0.3, 0.3, 0.2]])
    files = glob.glob(os.path.join(REF, "box_*.npy"))
    print(f"wrote {len(files)} files, {sum(os.path.getsize(f) for f in files)} bytes, in {REF}/")


if __name__ == "__main__":
    main()
