#!/usr/bin/python3
"""make_detr_reference.py - PyTorch reference for the DETR decoder (layers/detr.h),
for tests/test_queries.c.

Run as:  cd tests && /usr/bin/python3 make_detr_reference.py
It writes ref/detr_pre.safetensors and ref/detr_post.safetensors (and nothing else).

The decoder below is DETR's own (facebookresearch/detr, models/transformer.py:
TransformerDecoderLayer.forward_post / forward_pre and TransformerDecoder with
return_intermediate=True; models/detr.py: class_embed, the 3-layer MLP bbox_embed
and its sigmoid), written with torch.nn.MultiheadAttention in float64, dropout 0.
Weights are drawn here and saved under qkv's parameter names, so the C test loads
them into a qkv_detr and compares. Each file holds:

  param/<qkv name>       every parameter (in_proj split into wq, wk, wv)
  grad/<qkv name>        dL/dparameter
  memory [B,S,D], memory_pos [B,S,D], padding [B,S] (1 = real token)
  grad/memory, grad/memory_pos
  r/logits.<l>, r/boxes.<l>      fixed random weights R of each output
  out/logits.<l>, out/boxes.<l>  DETR's outputs at decoder layer l
with L = sum over layers of sum(logits_l * R) + sum(boxes_l * R).

The safetensors writer is plain Python (json, struct), as in
make_safetensors_reference.py (the safetensors package is not installed here).
"""
import json
import os
import struct
import zlib

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

B, S, N, D, H, FF, C, L = 2, 5, 4, 8, 2, 16, 3, 2


def save_safetensors(path, tensors):
    header, blobs, offset = {}, [], 0
    for name, array in tensors.items():
        data = np.ascontiguousarray(array, dtype="<f4").tobytes()
        header[name] = {"dtype": "F32", "shape": list(np.shape(array)), "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


class DecoderLayer(nn.Module):
    """DETR's TransformerDecoderLayer (dropout 0, ReLU)."""

    def __init__(self, pre):
        super().__init__()
        self.pre = pre
        self.self_attn = nn.MultiheadAttention(D, H, batch_first=True)
        self.multihead_attn = nn.MultiheadAttention(D, H, batch_first=True)
        self.linear1, self.linear2 = nn.Linear(D, FF), nn.Linear(FF, D)
        self.norm1, self.norm2, self.norm3 = nn.LayerNorm(D), nn.LayerNorm(D), nn.LayerNorm(D)

    def forward(self, tgt, memory, pad, pos, query_pos):
        if not self.pre:  # forward_post
            q = k = tgt + query_pos
            tgt = self.norm1(tgt + self.self_attn(q, k, value=tgt)[0])
            tgt2 = self.multihead_attn(tgt + query_pos, memory + pos, value=memory, key_padding_mask=pad)[0]
            tgt = self.norm2(tgt + tgt2)
            return self.norm3(tgt + self.linear2(F.relu(self.linear1(tgt))))
        tgt2 = self.norm1(tgt)  # forward_pre
        q = k = tgt2 + query_pos
        tgt = tgt + self.self_attn(q, k, value=tgt2)[0]
        tgt2 = self.norm2(tgt)
        tgt = tgt + self.multihead_attn(tgt2 + query_pos, memory + pos, value=memory, key_padding_mask=pad)[0]
        tgt2 = self.norm3(tgt)
        return tgt + self.linear2(F.relu(self.linear1(tgt2)))


class Detr(nn.Module):
    def __init__(self, pre):
        super().__init__()
        self.query_embed = nn.Embedding(N, D)
        self.layers = nn.ModuleList([DecoderLayer(pre) for _ in range(L)])
        self.norm = nn.LayerNorm(D)
        self.class_embed = nn.Linear(D, C + 1)
        self.bbox_embed = nn.ModuleList([nn.Linear(D, D), nn.Linear(D, D), nn.Linear(D, 4)])

    def forward(self, memory, pad, pos):
        query_pos = self.query_embed.weight.unsqueeze(0).repeat(memory.shape[0], 1, 1)
        tgt = torch.zeros_like(query_pos)
        outs = []
        for layer in self.layers:
            tgt = layer(tgt, memory, pad, pos, query_pos)
            h = self.norm(tgt)
            x = h
            for i, lin in enumerate(self.bbox_embed):
                x = F.relu(lin(x)) if i < 2 else lin(x)
            outs.append((self.class_embed(h), x.sigmoid()))
        return outs


def qkv_names(model):
    """{qkv name: torch tensor} for every parameter (views of in_proj split in three)."""
    names = {"dec.query_embed": model.query_embed.weight, "dec.norm.weight": model.norm.weight,
             "dec.norm.bias": model.norm.bias, "dec.class_head.weight": model.class_embed.weight,
             "dec.class_head.bias": model.class_embed.bias}
    for i, lin in enumerate(model.bbox_embed):
        names[f"dec.box_head.{i}.weight"], names[f"dec.box_head.{i}.bias"] = lin.weight, lin.bias
    for l, layer in enumerate(model.layers):
        for part, mha in (("self_attn", layer.self_attn), ("cross_attn", layer.multihead_attn)):
            for j, w in enumerate(("wq", "wk", "wv")):
                names[f"dec.{l}.{part}.{w}.weight"] = mha.in_proj_weight[j * D:(j + 1) * D]
                names[f"dec.{l}.{part}.{w}.bias"] = mha.in_proj_bias[j * D:(j + 1) * D]
            names[f"dec.{l}.{part}.wo.weight"] = mha.out_proj.weight
            names[f"dec.{l}.{part}.wo.bias"] = mha.out_proj.bias
        for k, norm in enumerate((layer.norm1, layer.norm2, layer.norm3)):
            names[f"dec.{l}.ln{k + 1}.weight"], names[f"dec.{l}.ln{k + 1}.bias"] = norm.weight, norm.bias
        names[f"dec.{l}.ffn.fc1.weight"], names[f"dec.{l}.ffn.fc1.bias"] = layer.linear1.weight, layer.linear1.bias
        names[f"dec.{l}.ffn.fc2.weight"], names[f"dec.{l}.ffn.fc2.bias"] = layer.linear2.weight, layer.linear2.bias
    return names


def make(kind):
    pre = kind == "pre"
    rng = np.random.default_rng(zlib.crc32(kind.encode()))
    torch.manual_seed(zlib.crc32(kind.encode()))
    model = Detr(pre)
    with torch.no_grad():  # float32-exact random values everywhere (LN gains and biases too)
        for p in model.parameters():
            p.copy_(torch.tensor(rng.standard_normal(tuple(p.shape)).astype(np.float32) * 0.5))
    model = model.double()
    memory = torch.tensor(rng.standard_normal((B, S, D)).astype(np.float32), dtype=torch.float64, requires_grad=True)
    pos = torch.tensor(rng.standard_normal((B, S, D)).astype(np.float32), dtype=torch.float64, requires_grad=True)
    padding = np.ones((B, S), dtype=np.float32)
    padding[1, 1] = padding[1, 4] = 0.0
    outs = model(memory, torch.tensor(padding == 0.0), pos)
    tensors, loss = {}, 0.0
    for l, (logits, boxes) in enumerate(outs):
        for what, t in (("logits", logits), ("boxes", boxes)):
            r = rng.standard_normal(tuple(t.shape)).astype(np.float32)
            loss = loss + (t * torch.tensor(r, dtype=torch.float64)).sum()
            tensors[f"r/{what}.{l}"] = r
            tensors[f"out/{what}.{l}"] = t.detach().numpy()
    loss.backward()
    for name, t in qkv_names(model).items():
        tensors[f"param/{name}"] = t.detach().numpy()
    grads = {n: p.grad for n, p in model.named_parameters()}
    for name, t in qkv_names(model).items():
        # the same views of the gradients: re-slice through named_parameters' grads
        tensors[f"grad/{name}"] = grad_view(model, grads, name).numpy()
    tensors["memory"], tensors["memory_pos"], tensors["padding"] = memory.detach().numpy(), pos.detach().numpy(), padding
    tensors["grad/memory"], tensors["grad/memory_pos"] = memory.grad.numpy(), pos.grad.numpy()
    save_safetensors(os.path.join("ref", f"detr_{kind}.safetensors"), tensors)


def grad_view(model, grads, name):
    """The gradient of qkv parameter name (a slice of in_proj for wq, wk, wv)."""
    saved = {n: p.data for n, p in model.named_parameters()}
    for n, p in model.named_parameters():
        p.data = grads[n]
    view = qkv_names(model)[name].detach().clone()
    for n, p in model.named_parameters():
        p.data = saved[n]
    return view


if __name__ == "__main__":
    make("pre")
    make("post")
