"""qkv_torch_models.py - the PyTorch modules qkv_torch.to_torch builds: positions
(learned, sinusoidal, RoPE in both layouts, p-RoPE, ALiBi, FIRE, 2-D patches), transformer
stacks of nn.TransformerEncoderLayer / DecoderLayer (or small same-named layers
where RoPE or a chosen attention scale is needed), and the models of the tasks:
sequence, text, the set models (MAB, SAB, ISAB, PMA, DeepSets, attention
pooling) and detect (patch embedding, encoder, DETR decoder). Each computes what
its qkv counterpart computes (the qkv file is named beside it); parameter names
follow train/torch_names.h. Masks are qkv's: 1 = real token or point.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

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
    the first r dims rotate by p * base^(-2i/r); angles in double, rounded once.
    keep < 1 is p-RoPE: pairs from floor(keep * r/2) on do not turn."""

    def __init__(self, base=10000.0, halves=False, fraction=1.0, keep=1.0):
        super().__init__()
        self.base, self.halves, self.fraction, self.keep = base or 10000.0, halves, fraction, keep

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
        if self.keep not in (0.0, 1.0):
            inv[int(math.floor(self.keep * (r // 2))):] = 0.0
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


class Fire(nn.Module):
    """FIRE's bias [H, Tq, Tk] (positions.h): the MLP fc1 -> relu -> fc2 over
    u = log(|c (qi - j)| + 1) / (log(|c max(qi, |l_scale| l_init)| + 1) + 1e-6)."""

    def __init__(self, heads, width=32, l_init=512.0):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(1, width), nn.Linear(width, heads)
        self.c = nn.Parameter(torch.tensor([0.1]))
        self.l_scale = nn.Parameter(torch.tensor([1.0]))
        self.l_init = l_init

    def forward(self, tq, tk):
        qi = torch.arange(tq, dtype=torch.float32)[:, None] + (tk - tq)
        j = torch.arange(tk, dtype=torch.float32)[None, :]
        num = torch.log(torch.abs(self.c * (qi - j)) + 1)
        norm = torch.log(torch.abs(self.c * torch.maximum(qi, torch.abs(self.l_scale * self.l_init))) + 1) + 1e-6
        return self.fc2(torch.relu(self.fc1((num / norm)[..., None]))).permute(2, 0, 1)


class Positions(nn.Module):
    """A stack's positions: learned (parameter `table`) and sinusoidal are added to the
    input; rope, p-rope, alibi and fire act inside attention (rope, slopes, fire)."""

    def __init__(self, scheme, d, max_len, heads, rope=None):
        super().__init__()
        self.scheme, self.d = scheme, d
        if scheme == "learned":
            self.table = nn.Parameter(torch.zeros(max_len, d))
        self.rope = rope if scheme in ("rope", "p-rope") else None
        self.slopes = alibi_slopes(heads) if scheme == "alibi" else None
        self.fire = Fire(heads) if scheme == "fire" else None

    def bias(self, tq, tk, symmetric):
        """The scores' bias [H, Tq, Tk] (alibi, fire), or None."""
        if self.slopes is not None:
            return alibi_bias(self.slopes, tq, tk, symmetric)
        return self.fire(tq, tk) if self.fire is not None else None

    def forward(self, x):
        if self.scheme == "learned":
            return x + self.table[:x.shape[1]]
        if self.scheme == "sinusoidal":
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
        keep = cfg["p_rope"] if cfg["pos"] == "p-rope" else 1.0
        rope = Rope(cfg["rope_base"], cfg["rope_layout"] == "halves", cfg["rope_fraction"], keep)
        self.pos = Positions(cfg["pos"], d, cfg["max_len"], h, rope)
        standard = self.pos.rope is None and cfg["attn_scale"] == 0
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
        bias = self.pos.bias(t, t, symmetric=not self.causal)
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
