"""qkv_torch.py - a qkv checkpoint as a PyTorch module, and a PyTorch module as a
qkv checkpoint. Python 3 and torch only (the safetensors package if present,
otherwise the small reader and writer below).

    model = to_torch("reverse.safetensors")      # an nn.Module, eval mode
    logits = model(src, src_mask)                # as qkv computes them
    from_torch(model, "back.safetensors")        # ./qkv eval / attn / sample read it

Supported: the checkpoints of the sequence tasks (reverse, copy, sort; arch
encoder, seq2seq, decoder; positions none, learned, sinusoidal, rope, alibi, p-rope, fire), of
text, of the set tasks (points, maxreg: isab, sab, deepsets-*, attnpool) and of
detect. The modules are in qkv_torch_models.py; this file holds the safetensors
reader and writer, the name map, and to_torch / from_torch. docs/torch.md says
which names and layouts match PyTorch's.

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
import os
import struct

import torch

from qkv_torch_models import *  # noqa: F401,F403 (the modules, re-exported)
from qkv_torch_models import DetectModel, SequenceModel, SetModel, TextModel

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


SET_TASKS = {"points": 3, "maxreg": 1}


OPTION_DEFAULTS = {"activation": "gelu", "ln_eps": 1e-5, "rope_layout": "interleaved", "rope_base": 10000.0,
                   "rope_fraction": 1.0, "attn_scale": 0.0, "p_rope": 0.75}

SEQUENCE_TASKS = ("reverse", "copy", "sort")
INT_KEYS = ("classes", "points", "width", "inducing", "layer_norm", "min_size", "max_size", "size", "patch", "ff", "enc_layers", "dec_layers",
            "queries", "vocab", "min_len", "max_len", "layers", "heads", "dim", "ff", "max_pos", "context")
FLOAT_KEYS = ("ln_eps", "rope_base", "rope_fraction", "attn_scale", "dropout", "p_rope")


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
    meta["optim.kind"], meta["optim.step"] = "none", "0"  # no optimizer state: what qkv reads as such
    tensors = torch_to_qkv_state(state, names)
    for k, v in (("format", "qkv-checkpoint-1"), ("step", "0"), ("rng.seed", "1"), ("rng.counter", "0")):
        meta.setdefault(k, v)
    save_safetensors(path, tensors, meta)
