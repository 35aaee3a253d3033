"""qkv_torch.py - a qkv checkpoint as a PyTorch module, and a PyTorch module as a
qkv checkpoint. Python 3 and torch only (the safetensors package if present,
otherwise the small reader and writer below).

    model = to_torch("reverse.safetensors")      # an nn.Module, eval mode
    logits = model(src, src_mask)                # as qkv computes them
    from_torch(model, "back.safetensors")        # ./qkv eval / attn / sample read it

Supported: the checkpoints of the sequence tasks (reverse, copy, sort; arch
encoder, seq2seq, decoder; positions none, learned, sinusoidal, rope, alibi) and
of the text task. Not yet: points, maxreg (ISAB, PMA) and detect.

The modules are standard where PyTorch has the layer: each block is an
nn.TransformerEncoderLayer or nn.TransformerDecoderLayer (norm_first, batch_first,
dropout off) unless the model uses RoPE or a non-default attention scale; then a
small RotaryEncoderLayer / RotaryDecoderLayer with the same parameter names
(self_attn.in_proj_weight, norm1, linear1, ...) computes attention itself. ALiBi
and every mask go in as one additive float attn_mask [B*H, Tq, Tk]. The
state_dict's names are the PyTorch names of train/torch_names.h (the C function
qkv_params_load_torch reads a file of them): RENAMES below is the same table.

Masks: qkv's masks are 1 = real token; the modules take the same (src_mask [B,T]
float or bool, 1 = real) and build PyTorch's -inf masks from them.
"""
import json
import math
import os
import struct

import torch
import torch.nn as nn
import torch.nn.functional as F

# ---- safetensors ------------------------------------------------------------------

try:
    import safetensors.torch as _st  # noqa: F401
except ImportError:  # the format is small: 8-byte length, JSON header, raw data
    _st = None


def load_safetensors(path):
    """(dict name -> float32 tensor, dict metadata)."""
    with open(path, "rb") as f:
        raw = f.read()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n].decode("utf-8"))
    meta = header.pop("__metadata__", {}) or {}
    data = raw[8 + n:]
    tensors = {}
    for name, entry in header.items():
        if entry["dtype"] != "F32":
            raise ValueError("%s: tensor %s is %s, only F32 is read" % (path, name, entry["dtype"]))
        begin, end = entry["data_offsets"]
        t = torch.frombuffer(bytearray(data[begin:end]), dtype=torch.float32) if end > begin else torch.zeros(0)
        tensors[name] = t.reshape(entry["shape"]).clone()
    return tensors, meta


def save_safetensors(path, tensors, meta=None):
    """Writes float32 tensors (in the order given) and string metadata."""
    header, offset, blobs = {}, 0, []
    if meta:
        header["__metadata__"] = {str(k): str(v) for k, v in meta.items()}
    for name, t in tensors.items():
        b = t.detach().to(torch.float32).contiguous().cpu().numpy().tobytes()
        header[name] = {"dtype": "F32", "shape": list(t.shape), "data_offsets": [offset, offset + len(b)]}
        offset += len(b)
        blobs.append(b)
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * ((8 - len(text) % 8) % 8)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for b in blobs:
            f.write(b)
    os.replace(tmp, path)


# ---- the name map (train/torch_names.c has the same table) ------------------------

RENAMES = [("ln1", "norm1"), ("ln2", "norm2"), ("ln3", "norm3"), ("attn", "self_attn"),
           ("cross_attn", "multihead_attn"), ("ffn.fc1", "linear1"), ("ffn.fc2", "linear2"), ("wo", "out_proj")]
STACKS = ("enc", "dec")
BLOCK_PARTS = ("attn", "self_attn", "cross_attn", "ln1", "ln2", "ln3", "ffn")
PROJECTIONS = ("wq", "wk", "wv")


def _map_block(segs):
    out, i = [], 0
    while i < len(segs):
        s = segs[i]
        if s in PROJECTIONS and i + 2 == len(segs) and segs[i + 1] in ("weight", "bias"):
            return out + ["in_proj_" + segs[i + 1]], PROJECTIONS.index(s), 3
        for q, t in RENAMES:
            qs = q.split(".")
            if segs[i:i + len(qs)] == qs:
                out.append(t)
                i += len(qs)
                break
        else:
            out.append(s)
            i += 1
    return out, 0, 1


def torch_name(qkv_name):
    """(PyTorch name, part, parts): qkv's tensor is rows part/parts of that one."""
    segs = qkv_name.split(".")
    for i, s in enumerate(segs):
        if s in STACKS and i + 2 < len(segs) and segs[i + 1].isdigit() and segs[i + 2] in BLOCK_PARTS:
            rest, part, parts = _map_block(segs[i + 2:])
            return ".".join(segs[:i + 1] + ["layers", segs[i + 1]] + rest), part, parts
        if s in STACKS and i + 1 < len(segs) and segs[i + 1] == "ln_final":
            return ".".join(segs[:i + 1] + ["norm"] + segs[i + 2:]), 0, 1
    return qkv_name, 0, 1


_INVERSE = {"norm1": "ln1", "norm2": "ln2", "norm3": "ln3", "multihead_attn": "cross_attn", "linear1": "ffn.fc1",
            "linear2": "ffn.fc2", "out_proj": "wo"}


def qkv_names_of(torch_names):
    """qkv's parameter names for a PyTorch state_dict's names (torch_name inverted):
    in_proj_* gives three names, and a block's self_attn is qkv's `attn` in an
    encoder block, `self_attn` in a decoder block (one with a multihead_attn); a
    stack's `norm` is qkv's ln_final except in a DETR decoder (one with a
    query_embed), whose shared norm keeps its name."""
    torch_names = list(torch_names)
    decoders = {n.split(".multihead_attn.")[0] for n in torch_names if ".multihead_attn." in n}
    detr = {n[:-len(".query_embed")] for n in torch_names if n.endswith(".query_embed")}
    out = []
    for name in torch_names:
        segs = name.split(".")
        hit = next((i for i in range(len(segs) - 2) if segs[i] in STACKS and segs[i + 1] == "layers"
                    and segs[i + 2].isdigit()), None)
        if hit is not None:
            layer = ".".join(segs[:hit + 3])
            head, rest = segs[:hit + 1] + [segs[hit + 2]], segs[hit + 3:]
            mapped = []
            for j, seg in enumerate(rest):
                if seg == "self_attn":
                    mapped.append("self_attn" if layer in decoders else "attn")
                elif seg in ("in_proj_weight", "in_proj_bias") and j + 1 == len(rest):
                    kind = seg[len("in_proj_"):]
                    out.extend(".".join(head + mapped + [p, kind]) for p in PROJECTIONS)
                    mapped = None
                    break
                else:
                    mapped.append(_INVERSE.get(seg, seg))
            if mapped is not None:
                out.append(".".join(head + mapped))
            continue
        if len(segs) >= 2 and segs[-2] == "norm" and len(segs) >= 3 and segs[-3] in STACKS \
                and ".".join(segs[:-2]) not in detr:
            out.append(".".join(segs[:-2] + ["ln_final", segs[-1]]))
            continue
        out.append(name)
    for q in out:  # the inverse must round-trip through the forward map
        if torch_name(q)[0] not in torch_names:
            raise ValueError("no PyTorch tensor %s for qkv's %s" % (torch_name(q)[0], q))
    return out


def qkv_to_torch_state(tensors):
    """qkv-named parameters -> a PyTorch-named state_dict (packing in_proj)."""
    state, packs = {}, {}
    for name, t in tensors.items():
        tname, part, parts = torch_name(name)
        if parts == 1:
            state[tname] = t
        else:
            packs.setdefault(tname, [None] * parts)[part] = t
    for tname, pieces in packs.items():
        state[tname] = torch.cat(pieces, 0)
    return state


def torch_to_qkv_state(state, qkv_names):
    """A PyTorch-named state_dict -> the qkv-named tensors of qkv_names."""
    out = {}
    for name in qkv_names:
        tname, part, parts = torch_name(name)
        t = state[tname]
        rows = t.shape[0] // parts
        out[name] = t[part * rows:(part + 1) * rows].detach().clone()
    return out


# ---- positions ------------------------------------------------------------------


def sinusoidal_table(t, d, offset=0, base=10000.0):
    """P[t][2i] = sin(t w_i), P[t][2i+1] = cos(t w_i), w_i = base^(-2i/d) (in double)."""
    pos = torch.arange(offset, offset + t, dtype=torch.float64)[:, None]
    i = torch.arange(0, d, 2, dtype=torch.float64)
    w = torch.pow(torch.tensor(base, dtype=torch.float64), -i / d)
    p = torch.zeros(t, d, dtype=torch.float64)
    p[:, 0::2] = torch.sin(pos * w)
    p[:, 1::2] = torch.cos(pos * w)[:, :d // 2]
    return p.float()


def alibi_slopes(n):
    """qkv_alibi_slopes: 2^(-8k/n) for a power of two; else the interleaved rule."""
    def power_of_two(m):
        return [2.0 ** (-8.0 * k / m) for k in range(1, m + 1)]
    m = 2 ** int(math.floor(math.log2(n)))
    if m == n:
        return power_of_two(n)
    return power_of_two(m) + power_of_two(2 * m)[0::2][:n - m]


def alibi_bias(slopes, tq, tk, symmetric):
    """[H, Tq, Tk]: -slope * (qi - j), or -slope * |qi - j|; qi = i + Tk - Tq."""
    qi = torch.arange(tq, dtype=torch.float64)[:, None] + (tk - tq)
    j = torch.arange(tk, dtype=torch.float64)[None, :]
    dist = (qi - j).abs() if symmetric else (qi - j)
    s = torch.tensor(slopes, dtype=torch.float32)[:, None, None]
    return -(s * dist.float()[None])


class Rope(nn.Module):
    """qkv_rope on [B,H,T,d]: pairs (2i, 2i+1) (interleaved) or (i, i+r/2) (halves) of
    the first r dims rotate by p * base^(-2i/r); angles in double, rounded once."""

    def __init__(self, base=10000.0, halves=False, fraction=1.0):
        super().__init__()
        self.base, self.halves, self.fraction = base or 10000.0, halves, fraction

    def rotated(self, d):
        if self.fraction in (0.0, 1.0):
            return d
        return int(math.floor(self.fraction * d)) // 2 * 2

    def forward(self, x, offset=0):
        t, d = x.shape[-2], x.shape[-1]
        r = self.rotated(d)
        pos = torch.arange(offset, offset + t, dtype=torch.float64)[:, None]
        inv = torch.pow(torch.tensor(self.base, dtype=torch.float64),
                        -torch.arange(0, r, 2, dtype=torch.float64) / r)
        ang = pos * inv
        cos, sin = torch.cos(ang).float(), torch.sin(ang).float()
        rot, rest = x[..., :r], x[..., r:]
        if self.halves:
            a, b = rot[..., :r // 2], rot[..., r // 2:]
            y = torch.cat([a * cos - b * sin, a * sin + b * cos], -1)
        else:
            a, b = rot[..., 0::2], rot[..., 1::2]
            y = torch.stack([a * cos - b * sin, a * sin + b * cos], -1).flatten(-2)
        return torch.cat([y, rest], -1)


class Positions(nn.Module):
    """A stack's positions: learned (parameter `table`) and sinusoidal are added to the
    input; rope and alibi act inside attention (rope, slopes)."""

    def __init__(self, kind, d, max_len, heads, rope=None):
        super().__init__()
        self.kind, self.d = kind, d
        if kind == "learned":
            self.table = nn.Parameter(torch.zeros(max_len, d))
        self.rope = rope if kind == "rope" else None
        self.slopes = alibi_slopes(heads) if kind == "alibi" else None

    def forward(self, x):
        if self.kind == "learned":
            return x + self.table[:x.shape[1]]
        if self.kind == "sinusoidal":
            return x + sinusoidal_table(x.shape[1], self.d)
        return x


# ---- blocks -----------------------------------------------------------------------

ACTIVATIONS = {"gelu": lambda x: F.gelu(x, approximate="tanh"), "gelu-exact": F.gelu, "relu": F.relu,
               "tanh": torch.tanh}


def additive_mask(batch, heads, tq, tk, causal=False, key_padding=None, bias=None):
    """qkv's masks as PyTorch's float attn_mask [B*H, Tq, Tk]: 0 where a query may
    attend, -inf elsewhere, plus the bias (ALiBi) broadcast over the batch."""
    m = torch.zeros(batch, heads, tq, tk)
    if bias is not None:
        m = m + bias[None]
    if causal:  # query i sees keys j <= i + Tk - Tq
        i = torch.arange(tq)[:, None] + (tk - tq)
        m = m.masked_fill(torch.arange(tk)[None, :] > i, float("-inf"))
    if key_padding is not None:
        m = m.masked_fill(~key_padding.bool()[:, None, None, :], float("-inf"))
    return m.reshape(batch * heads, tq, tk)


def rotary_attention(mha, x, ctx, mask, rope, scale):
    """Attention with an nn.MultiheadAttention's parameters, RoPE on q and k and a
    chosen scale (what nn.MultiheadAttention itself cannot do). mask: [B*H,Tq,Tk]."""
    (b, tq, d), tk, h = x.shape, ctx.shape[1], mha.num_heads
    w, bias = mha.in_proj_weight, mha.in_proj_bias
    q = F.linear(x, w[:d], bias[:d])
    k = F.linear(ctx, w[d:2 * d], bias[d:2 * d])
    v = F.linear(ctx, w[2 * d:], bias[2 * d:])
    dh = d // h
    q, k, v = (t.reshape(b, -1, h, dh).transpose(1, 2) for t in (q, k, v))
    if rope is not None:
        q, k = rope(q), rope(k)
    s = (scale if scale else 1.0 / math.sqrt(dh)) * (q @ k.transpose(-1, -2)) + mask.reshape(b, h, tq, tk)
    o = torch.softmax(s, -1) @ v
    return mha.out_proj(o.transpose(1, 2).reshape(b, tq, d))


class RotaryEncoderLayer(nn.Module):
    """A pre-LN encoder block with nn.TransformerEncoderLayer's parameter names."""

    def __init__(self, d, heads, ff, activation, eps, scale, rope):
        super().__init__()
        self.self_attn = nn.MultiheadAttention(d, heads, dropout=0.0, batch_first=True)
        self.linear1, self.linear2 = nn.Linear(d, ff), nn.Linear(ff, d)
        self.norm1, self.norm2 = nn.LayerNorm(d, eps=eps), nn.LayerNorm(d, eps=eps)
        self.act, self.scale, self.rope = ACTIVATIONS[activation], scale, rope

    def forward(self, x, src_mask):
        h = self.norm1(x)
        x = x + rotary_attention(self.self_attn, h, h, src_mask, self.rope, self.scale)
        return x + self.linear2(self.act(self.linear1(self.norm2(x))))


class RotaryDecoderLayer(nn.Module):
    """A pre-LN decoder block with nn.TransformerDecoderLayer's names: RoPE in the
    causal self-attention, none in the cross-attention (as qkv_decoder)."""

    def __init__(self, d, heads, ff, activation, eps, scale, rope):
        super().__init__()
        self.self_attn = nn.MultiheadAttention(d, heads, dropout=0.0, batch_first=True)
        self.multihead_attn = nn.MultiheadAttention(d, heads, dropout=0.0, batch_first=True)
        self.linear1, self.linear2 = nn.Linear(d, ff), nn.Linear(ff, d)
        self.norm1, self.norm2, self.norm3 = (nn.LayerNorm(d, eps=eps) for _ in range(3))
        self.act, self.scale, self.rope = ACTIVATIONS[activation], scale, rope

    def forward(self, y, memory, tgt_mask, memory_mask):
        h = self.norm1(y)
        y = y + rotary_attention(self.self_attn, h, h, tgt_mask, self.rope, self.scale)
        y = y + rotary_attention(self.multihead_attn, self.norm2(y), memory, memory_mask, None, self.scale)
        return y + self.linear2(self.act(self.linear1(self.norm3(y))))


class Stack(nn.Module):
    """qkv_encoder (causal or not) or qkv_decoder: positions, `layers`, final `norm`."""

    def __init__(self, cfg, decoder=False, causal=False):
        super().__init__()
        d, h, ff = cfg["dim"], cfg["heads"], cfg["ff"]
        self.heads, self.causal, self.decoder = h, causal or decoder, decoder
        rope = Rope(cfg["rope_base"], cfg["rope_layout"] == "halves", cfg["rope_fraction"])
        self.pos = Positions(cfg["pos"], d, cfg["max_len"], h, rope)
        standard = cfg["pos"] != "rope" and cfg["attn_scale"] == 0
        act = ACTIVATIONS[cfg["activation"]] if cfg["activation"] != "gelu-exact" else "gelu"
        layers = []
        for _ in range(cfg["layers"]):
            if standard and decoder:
                layers.append(nn.TransformerDecoderLayer(d, h, ff, 0.0, act, cfg["ln_eps"], batch_first=True,
                                                         norm_first=True))
            elif standard:
                layers.append(nn.TransformerEncoderLayer(d, h, ff, 0.0, act, cfg["ln_eps"], batch_first=True,
                                                         norm_first=True))
            else:
                kind = RotaryDecoderLayer if decoder else RotaryEncoderLayer
                layers.append(kind(d, h, ff, cfg["activation"], cfg["ln_eps"], cfg["attn_scale"], self.pos.rope))
        self.standard = standard
        self.layers = nn.ModuleList(layers)
        self.norm = nn.LayerNorm(d, eps=cfg["ln_eps"])

    def forward(self, x, key_padding=None, memory=None, memory_padding=None):
        b, t = x.shape[:2]
        x = self.pos(x)
        bias = None
        if self.pos.slopes is not None:
            bias = alibi_bias(self.pos.slopes, t, t, symmetric=not self.causal)
        mask = additive_mask(b, self.heads, t, t, self.causal, key_padding, bias)
        if self.decoder:
            cross = additive_mask(b, self.heads, t, memory.shape[1], False, memory_padding)
            for layer in self.layers:
                if self.standard:
                    x = layer(x, memory, tgt_mask=mask, memory_mask=cross)
                else:
                    x = layer(x, memory, mask, cross)
        else:
            for layer in self.layers:
                x = layer(x, src_mask=mask) if self.standard else layer(x, mask)
        return self.norm(x)


# ---- the models of the tasks ----------------------------------------------------------

OPTION_DEFAULTS = {"activation": "gelu", "ln_eps": 1e-5, "rope_layout": "interleaved", "rope_base": 10000.0,
                   "rope_fraction": 1.0, "attn_scale": 0.0}


class SequenceModel(nn.Module):
    """reverse / copy / sort: embed -> enc (-> dec for seq2seq) -> head.
    forward(src [B,S] ids, src_mask [B,S] 1 = real, tgt_in [B,T], tgt_mask) -> logits."""

    def __init__(self, cfg, tokens):
        super().__init__()
        self.cfg = cfg
        d, arch = cfg["dim"], cfg["arch"]
        self.embed = nn.Embedding(tokens, d)
        self.enc = Stack(dict(cfg, max_len=cfg["max_pos"]), causal=arch == "decoder")
        if arch == "seq2seq":
            self.dec = Stack(dict(cfg, max_len=cfg["max_pos"]), decoder=True)
        self.head = nn.Linear(d, tokens)

    def forward(self, src, src_mask=None, tgt_in=None, tgt_mask=None):
        h = self.enc(self.embed(src), src_mask)
        if self.cfg["arch"] == "seq2seq":
            h = self.dec(self.embed(tgt_in), tgt_mask, memory=h, memory_padding=src_mask)
        return self.head(h)


class TextModel(nn.Module):
    """qkv train text: embed -> causal dec -> head. forward(ids [B,T]) -> logits."""

    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        self.embed = nn.Embedding(cfg["vocab"], cfg["dim"])
        self.dec = Stack(dict(cfg, max_len=cfg["context"]), causal=True)
        self.head = nn.Linear(cfg["dim"], cfg["vocab"])

    def forward(self, ids):
        return self.head(self.dec(self.embed(ids)))


# ---- set models (layers/sets.h, set_models.h): the Set Transformer authors' names --------


def _padding_rows(mask):
    return None if mask is None else (mask != 0).float()[..., None]


def _zero_padding(x, mask):
    return x if mask is None else x * _padding_rows(mask)


class MAB(nn.Module):
    """MAB(X, Y) with the projected residual (the authors' code): H = LN0(q + O),
    out = LN1(H + relu(fc_o(H))), O the heads' softmax(q k^T / sqrt(d_head)) v."""

    def __init__(self, d_q, d_k, d, heads, layer_norm):
        super().__init__()
        self.fc_q, self.fc_k, self.fc_v, self.fc_o = nn.Linear(d_q, d), nn.Linear(d_k, d), nn.Linear(d_k, d), \
            nn.Linear(d, d)
        if layer_norm:
            self.ln0, self.ln1 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.heads, self.layer_norm = heads, layer_norm

    def forward(self, x, y, y_mask=None):
        b, d, h = y.shape[0], self.fc_q.out_features, self.heads
        q = self.fc_q(x)
        if q.dim() == 2:
            q = q.expand(b, -1, -1)
        k, v = self.fc_k(y), self.fc_v(y)
        qh, kh, vh = (t.reshape(b, t.shape[1], h, d // h).transpose(1, 2) for t in (q, k, v))
        s = (qh @ kh.transpose(-1, -2)) / math.sqrt(d // h)
        if y_mask is not None:
            s = s.masked_fill((y_mask == 0)[:, None, None, :], float("-inf"))
        o = (torch.softmax(s, -1) @ vh).transpose(1, 2).reshape(b, -1, d)
        hid = q + o
        if self.layer_norm:
            hid = self.ln0(hid)
        hid = hid + F.relu(self.fc_o(hid))
        return self.ln1(hid) if self.layer_norm else hid


class SplitAttention(nn.Module):
    """qkv_mha outside a transformer block (attention pooling): separate wq, wk, wv,
    wo Linear layers, qkv's names."""

    def __init__(self, d, heads):
        super().__init__()
        self.wq, self.wk, self.wv, self.wo = (nn.Linear(d, d) for _ in range(4))
        self.heads = heads

    def forward(self, x, ctx, key_padding=None):
        b, d, h = x.shape[0], self.wq.out_features, self.heads
        q, k, v = (t.reshape(b, t.shape[1], h, d // h).transpose(1, 2)
                   for t in (self.wq(x), self.wk(ctx), self.wv(ctx)))
        s = (q @ k.transpose(-1, -2)) / math.sqrt(d // h)
        if key_padding is not None:
            s = s.masked_fill((key_padding == 0)[:, None, None, :], float("-inf"))
        return self.wo((torch.softmax(s, -1) @ v).transpose(1, 2).reshape(b, -1, d))


class SAB(nn.Module):
    def __init__(self, d_in, d, heads, layer_norm):
        super().__init__()
        self.mab = MAB(d_in, d_in, d, heads, layer_norm)

    def forward(self, x, mask=None):
        x = _zero_padding(x, mask)
        return self.mab(x, x, mask)


class ISAB(nn.Module):
    """ISAB_m(X) = MAB1(X, MAB0(I, X)); `I` [m, d] the inducing points."""

    def __init__(self, d_in, d, heads, m, layer_norm):
        super().__init__()
        self.I = nn.Parameter(torch.zeros(m, d))
        self.mab0, self.mab1 = MAB(d, d_in, d, heads, layer_norm), MAB(d_in, d, d, heads, layer_norm)

    def forward(self, x, mask=None):
        x = _zero_padding(x, mask)
        return self.mab1(x, self.mab0(self.I, x, mask))


class PMA(nn.Module):
    """PMA_k(Z) = MAB(S, relu(rff(Z))); `S` [k, d] the seeds."""

    def __init__(self, d, heads, k, layer_norm):
        super().__init__()
        self.S = nn.Parameter(torch.zeros(k, d))
        self.rff = nn.Linear(d, d)
        self.mab = MAB(d, d, d, heads, layer_norm)

    def forward(self, z, mask=None):
        z = F.relu(self.rff(_zero_padding(z, mask)))
        return self.mab(self.S, z, mask)


def _mlp(widths):
    """An MLP as an nn.Sequential of Linear and ReLU would rename its layers; this
    keeps qkv's numbering: a ModuleDict-like container whose children are "0", "1"..."""
    m = nn.Module()
    for i, (a, b) in enumerate(zip(widths[:-1], widths[1:])):
        m.add_module(str(i), nn.Linear(a, b))
    return m


def _mlp_forward(m, x):
    layers = list(m.children())
    for i, layer in enumerate(layers):
        x = layer(x)
        if i + 1 < len(layers):
            x = F.relu(x)
    return x


def _set_pool(x, mask, kind):
    """qkv_set_pool_forward: sum, mean or max over the real rows (an empty set: 0)."""
    if mask is None:
        return {"sum": x.sum(1), "mean": x.mean(1), "max": x.max(1).values}[kind]
    rows = _padding_rows(mask)
    real = x * rows
    if kind == "sum":
        return real.sum(1)
    count = rows.sum(1)
    if kind == "mean":
        return real.sum(1) * (1.0 / count.clamp(min=1.0))
    return (real + (1.0 - rows) * -1e30).max(1).values * (count > 0).float()


class SetModel(nn.Module):
    """points / maxreg: the set model under `set`. forward(x [B,N,d_in], mask [B,N]
    1 = real or None) -> [B, n_outputs]."""

    def __init__(self, cfg, d_in, n_outputs):
        super().__init__()
        self.cfg = cfg
        kind, w, h, layers = cfg["model"], cfg["width"], cfg["heads"], cfg["layers"]
        ln = int(cfg["layer_norm"])
        s = nn.Module()
        if kind in ("isab", "sab"):
            enc = nn.Module()
            for i in range(layers):
                din = d_in if i == 0 else w
                enc.add_module(str(i), ISAB(din, w, h, cfg["inducing"], ln) if kind == "isab" else SAB(din, w, h, ln))
            s.enc = enc
            s.pool = PMA(w, h, 1, ln)
            s.head = nn.Linear(w, n_outputs)
        elif kind.startswith("deepsets"):
            s.phi = _mlp([d_in] + [w] * layers)
            s.rho = _mlp([w, w, n_outputs])
        elif kind == "attnpool":
            s.phi = _mlp([d_in] + [w] * layers)
            pool = nn.Module()
            pool.query = nn.Parameter(torch.zeros(1, w))
            pool.attn = SplitAttention(w, h)
            s.pool = pool
            s.head = nn.Linear(w, n_outputs)
        else:
            raise ValueError("unknown set model %s" % kind)
        self.set = s

    def forward(self, x, mask=None):
        s, kind = self.set, self.cfg["model"]
        if kind.startswith("deepsets"):
            feats = _mlp_forward(s.phi, _zero_padding(x, mask))
            return _mlp_forward(s.rho, _set_pool(feats, mask, kind.split("-")[1]))
        if kind in ("isab", "sab"):
            for block in s.enc.children():
                x = block(x, mask)
            return s.head(s.pool(x, mask).reshape(x.shape[0], -1))
        x = _zero_padding(_mlp_forward(s.phi, _zero_padding(x, mask)), mask)
        b = x.shape[0]
        pooled = s.pool.attn(s.pool.query.expand(b, -1, -1), x, mask)
        return s.head(pooled.reshape(b, -1))


# ---- detect (train/tasks/detect_model.c): patches, encoder, DETR decoder ---------------


def positions_2d(rows, cols, d, base=10000.0):
    """qkv_positions_2d: columns [0, d/2) the 1-D table at the patch's row, [d/2, d) at its column."""
    r, c = sinusoidal_table(rows, d // 2, 0, base), sinusoidal_table(cols, d // 2, 0, base)
    return torch.cat([r[:, None, :].expand(rows, cols, d // 2), c[None, :, :].expand(rows, cols, d // 2)],
                     -1).reshape(rows * cols, d)


class PatchEmbed(nn.Module):
    """images [B,C,H,W] -> tokens [B,T,D] = proj(patchify) + pos (2-D sinusoidal);
    a patch is flattened C-major, then rows, then columns (a stride-P conv's weight)."""

    def __init__(self, channels, patch, d):
        super().__init__()
        self.patch, self.d = patch, d
        self.proj = nn.Linear(channels * patch * patch, d)

    def forward(self, images):
        b, c, h, w = images.shape
        p = self.patch
        x = images.reshape(b, c, h // p, p, w // p, p).permute(0, 2, 4, 1, 3, 5).reshape(b, -1, c * p * p)
        pos = positions_2d(h // p, w // p, self.d)
        return self.proj(x) + pos, pos


class DetrDecoderLayer(nn.Module):
    """A pre-LN DETR decoder layer with nn.TransformerDecoderLayer's names: the query
    embedding goes into queries and keys, the memory positions into the keys."""

    def __init__(self, d, heads, ff):
        super().__init__()
        self.self_attn = nn.MultiheadAttention(d, heads, dropout=0.0, batch_first=True)
        self.multihead_attn = nn.MultiheadAttention(d, heads, dropout=0.0, batch_first=True)
        self.linear1, self.linear2 = nn.Linear(d, ff), nn.Linear(ff, d)
        self.norm1, self.norm2, self.norm3 = (nn.LayerNorm(d) for _ in range(3))

    def forward(self, tgt, memory, query_pos, memory_pos):
        t = self.norm1(tgt)
        tgt = tgt + self.self_attn(t + query_pos, t + query_pos, t, need_weights=False)[0]
        t = self.norm2(tgt)
        tgt = tgt + self.multihead_attn(t + query_pos, memory + memory_pos, memory, need_weights=False)[0]
        return tgt + self.linear2(F.relu(self.linear1(self.norm3(tgt))))


class DetrDecoder(nn.Module):
    """qkv_detr: `query_embed`, `layers`, the shared `norm`, `class_head`, `box_head`."""

    def __init__(self, d, heads, ff, n_layers, queries, classes):
        super().__init__()
        self.query_embed = nn.Parameter(torch.zeros(queries, d))
        self.layers = nn.ModuleList(DetrDecoderLayer(d, heads, ff) for _ in range(n_layers))
        self.norm = nn.LayerNorm(d)
        self.class_head = nn.Linear(d, classes + 1)
        self.box_head = _mlp([d, d, d, 4])

    def forward(self, memory, memory_pos):
        """Every layer's (logits [B,N,C+1], boxes [B,N,4])."""
        tgt = torch.zeros(memory.shape[0], self.query_embed.shape[0], memory.shape[2])
        out = []
        for layer in self.layers:
            tgt = layer(tgt, memory, self.query_embed, memory_pos)
            h = self.norm(tgt)
            out.append((self.class_head(h), torch.sigmoid(_mlp_forward(self.box_head, h))))
        return out


class DetectModel(nn.Module):
    """qkv train detect: forward(images [B,3,S,S]) -> every decoder layer's
    (logits, boxes); the last pair is the prediction."""

    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        d, h, ff = cfg["width"], cfg["heads"], cfg["ff"]
        self.patch = PatchEmbed(3, cfg["patch"], d)
        self.enc = Stack(dict(cfg, dim=d, pos="none", layers=cfg["enc_layers"], activation="relu", max_len=0))
        self.dec = DetrDecoder(d, h, ff, cfg["dec_layers"], cfg["queries"], cfg["classes"])

    def forward(self, images):
        tokens, pos = self.patch(images)
        return self.dec(self.enc(tokens), pos)


SET_TASKS = {"points": 3, "maxreg": 1}


SEQUENCE_TASKS = ("reverse", "copy", "sort")
INT_KEYS = ("classes", "points", "width", "inducing", "layer_norm", "min_size", "max_size", "size", "patch", "ff", "enc_layers", "dec_layers",
            "queries", "vocab", "min_len", "max_len", "layers", "heads", "dim", "ff", "max_pos", "context")
FLOAT_KEYS = ("ln_eps", "rope_base", "rope_fraction", "attn_scale", "dropout")


def read_config(meta):
    """The `config.*` metadata as a dict, typed, with the portable options' defaults."""
    cfg = dict(OPTION_DEFAULTS)
    for k, v in meta.items():
        if k.startswith("config."):
            key = k[len("config."):]
            cfg[key] = int(v) if key in INT_KEYS else float(v) if key in FLOAT_KEYS else v
    return cfg


def sequence_tokens(cfg):
    """qkv_seq_token_count: PAD, BOS, SEP, then the vocabulary."""
    return cfg["vocab"] + 3


def to_torch(path):
    """The qkv checkpoint at path as an equivalent nn.Module (eval mode). The
    module keeps `qkv_meta` (the checkpoint's metadata: config, step, RNG) and
    `qkv_names` (its parameter names in qkv's order) for from_torch. The
    optimizer's state is not carried over: a checkpoint from_torch writes
    evaluates, draws and samples, but does not --resume."""
    tensors, meta = load_safetensors(path)
    cfg = read_config(meta)
    task = cfg.get("task")
    if task in SEQUENCE_TASKS:
        model = SequenceModel(cfg, sequence_tokens(cfg))
    elif task in SET_TASKS:
        model = SetModel(cfg, SET_TASKS[task], cfg["classes"] if task == "points" else 1)
    elif task == "detect":
        model = DetectModel(cfg)
    elif "tokens" in cfg and "context" in cfg:
        model = TextModel(cfg)
    else:
        raise ValueError("%s: a %s checkpoint; to_torch reads the sequence, set (points, maxreg), detect and text tasks"
                         % (path, task))
    params = {k: v for k, v in tensors.items() if not k.startswith("optim.")}
    state = qkv_to_torch_state(params)
    missing, unexpected = model.load_state_dict(state, strict=False)
    if missing or unexpected:
        raise ValueError("%s: tensors missing %s, unexpected %s" % (path, missing, unexpected))
    model.qkv_meta = dict(meta)
    model.qkv_names = list(params)
    return model.eval()


def from_torch(module, path, meta=None, names=None):
    """Writes the weights of module (an nn.Module, or a state_dict) as a qkv
    checkpoint that ./qkv eval, attn, sample and detect read. meta is the
    checkpoint's metadata (`config.<key>`: the task and its model's settings, as a
    qkv checkpoint of the same model has them); names are qkv's parameter names.
    Both default to what to_torch kept on the module; without them, meta must be
    given and the names come from the state_dict's own (qkv_names_of)."""
    state = dict(module if isinstance(module, dict) else module.state_dict())
    if meta is None:
        meta = module.qkv_meta
    if names is None:
        names = getattr(module, "qkv_names", None) or qkv_names_of(state)
    meta = {k: v for k, v in meta.items() if not k.startswith("optim.")}
    tensors = torch_to_qkv_state(state, names)
    for k, v in (("format", "qkv-checkpoint-1"), ("step", "0"), ("rng.seed", "1"), ("rng.counter", "0")):
        meta.setdefault(k, v)
    save_safetensors(path, tensors, meta)
