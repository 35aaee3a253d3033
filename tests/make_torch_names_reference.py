#!/usr/bin/python3
"""make_torch_names_reference.py - a PyTorch state_dict in PyTorch's own names, for
tests/test_torch_names.c (qkv_params_load_torch, train/torch_names.h).

Run as:  cd tests && /usr/bin/python3 make_torch_names_reference.py
It writes ref/torch_names.safetensors, the state_dict (nothing else) of
    enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, 12, dropout 0,
          activation "gelu" (the exact, erf form), norm_first, batch_first), 2 layers,
          norm = nn.LayerNorm(8))
    dec = nn.TransformerDecoder(nn.TransformerDecoderLayer(the same), 1 layer, norm)
(names enc.layers.0.self_attn.in_proj_weight, ..., dec.layers.0.multihead_attn...,
enc.norm.weight), and ref/torch_names_io.safetensors, the inputs and outputs of
one pass:
    ref.x [2,5,8], ref.y [2,4,8], ref.src_mask [2,5] (1 = real: row 1 has 3 real keys),
    ref.out = dec(y, enc(x, key padding), causal self-attention, memory padding) [2,4,8],
    ref.r [2,4,8] random, ref.dx and ref.dy = gradients of sum(out * r).
The test loads the state_dict into qkv_encoder "enc" + qkv_decoder "dec" (positions
none, gelu-exact) through the name map and compares out, dx and dy.
The gradients are taken with autograd on (which also keeps PyTorch off its fused
inference path, whose padded rows differ).
"""
import os
import sys

import torch
import torch.nn as nn

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
from qkv_torch import save_safetensors  # noqa: E402

PATH = os.path.join("ref", "torch_names.safetensors")
IO_PATH = os.path.join("ref", "torch_names_io.safetensors")


def main():
    torch.manual_seed(19)
    d, h, ff = 8, 2, 12
    layer = nn.TransformerEncoderLayer(d, h, ff, 0.0, "gelu", batch_first=True, norm_first=True)
    enc = nn.TransformerEncoder(layer, 2, norm=nn.LayerNorm(d), enable_nested_tensor=False)
    dlayer = nn.TransformerDecoderLayer(d, h, ff, 0.0, "gelu", batch_first=True, norm_first=True)
    dec = nn.TransformerDecoder(dlayer, 1, norm=nn.LayerNorm(d))
    model = nn.Module()
    model.enc, model.dec = enc, dec
    for p in model.parameters():  # away from PyTorch's init (zero biases, unit norms) so every value counts
        nn.init.normal_(p, 0.0, 0.3)
    x = torch.randn(2, 5, d, requires_grad=True)
    y = torch.randn(2, 4, d, requires_grad=True)
    src_mask = torch.tensor([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]], dtype=torch.float32)
    pad = src_mask == 0
    causal = torch.triu(torch.ones(4, 4, dtype=torch.bool), 1)
    memory = enc(x, src_key_padding_mask=pad)
    out = dec(y, memory, tgt_mask=causal, memory_key_padding_mask=pad)
    r = torch.randn(out.shape)
    (out * r).sum().backward()
    made_by = {"made_by": "tests/make_torch_names_reference.py"}
    save_safetensors(PATH, dict(model.state_dict()), made_by)
    io = {"ref.x": x.detach(), "ref.y": y.detach(), "ref.src_mask": src_mask, "ref.out": out.detach(), "ref.r": r,
          "ref.dx": x.grad, "ref.dy": y.grad}
    save_safetensors(IO_PATH, io, made_by)
    print("wrote %s (%d tensors) and %s" % (PATH, len(model.state_dict()), IO_PATH))


if __name__ == "__main__":
    main()
