#!/usr/bin/python3
"""make_safetensors_reference.py - a safetensors file written independently of qkv,
for tests/test_safetensors.c.

Run as:  cd tests && /usr/bin/python3 make_safetensors_reference.py
It writes ref/st_reference.safetensors (and nothing else).

Python's safetensors package is not installable here (Debian does not package it,
and this machine reaches no Python package index), so this script is the
independent writer: plain Python (json, struct) and numpy, following the published
format (huggingface/safetensors, "Format"):

  8 bytes     N, an unsigned little-endian 64-bit integer: the size of the header
  N bytes     a UTF-8 JSON object: {name: {"dtype": "F32", "shape": [...],
              "data_offsets": [begin, end]}, ..., "__metadata__": {str: str}};
              offsets are relative to the start of the data; the reference
              implementation pads the header with spaces to a multiple of 8
  the rest    the tensors' bytes, little-endian, C order

On purpose the file differs from what qkv writes, so that the reader is tested on
more than its own output: json.dumps escapes every non-ASCII character as \\uXXXX
(surrogate pairs above U+FFFF) and puts spaces after ',' and ':'; the header lists
the tensors sorted by name while the data holds them in reverse order of TENSORS,
so only the offsets can find them; "__metadata__" comes last.

Values: tensor k of TENSORS holds v[i] = (i - 3) * 0.25 + k (exact in float32),
except "specials", whose float32 bit patterns are SPECIAL_BITS. test_safetensors.c
holds the same tables; change both together.
"""
import json
import os
import struct

import numpy as np

PATH = os.path.join("ref", "st_reference.safetensors")

# (name, shape), in the order that defines k.
TENSORS = [
    ("scalar", []),
    ("vec", [5]),
    ("mat", [2, 3]),
    ("enc.0.attn.wq", [2, 1, 3]),
    ("t4", [1, 2, 3, 2]),
    ('say "hi"', [2]),
    ("back\\slash", [1]),
    ("\u00fcn\u00ef \u6ce8\u610f \U0001f642", [3]),
    ("tab\there\nnewline", [1]),
    ("specials", [7]),
]

# -0.0, +inf, -inf, a NaN with a payload, the smallest subnormal, FLT_MAX, FLT_MIN
SPECIAL_BITS = [0x80000000, 0x7F800000, 0xFF800000, 0x7FC00123, 0x00000001, 0x7F7FFFFF, 0x00800000]

METADATA = {
    "format": "pt",
    "step": "1200",
    'quote"key': "back\\slash value",
    "unicode": "\u00e9 \u6ce8\u610f \U0001f642",
    "multi": "line1\nline2\ttab",
    "empty": "",
}


def values(k, name, shape):
    if name == "specials":
        return np.array(SPECIAL_BITS, dtype="<u4").view("<f4")
    count = int(np.prod(shape, dtype=np.int64))  # 1 for a 0-D tensor
    return ((np.arange(count, dtype=np.float32) - np.float32(3)) * np.float32(0.25) + np.float32(k)).astype("<f4")


def main():
    arrays = {name: values(k, name, shape) for k, (name, shape) in enumerate(TENSORS)}
    header, chunks, offset = {}, [], 0
    for name, shape in reversed(TENSORS):  # data order: reverse of TENSORS
        data = arrays[name].tobytes()
        header[name] = {"dtype": "F32", "shape": shape, "data_offsets": [offset, offset + len(data)]}
        chunks.append(data)
        offset += len(data)
    ordered = {name: header[name] for name in sorted(header)}
    ordered["__metadata__"] = METADATA
    text = json.dumps(ordered, ensure_ascii=True).encode("ascii")
    text += b" " * (-len(text) % 8)
    with open(PATH, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        f.write(b"".join(chunks))

    # Read it back the same independent way.
    with open(PATH, "rb") as f:
        raw = f.read()
    (n,) = struct.unpack("<Q", raw[:8])
    parsed = json.loads(raw[8 : 8 + n].decode("utf-8"))
    body = raw[8 + n :]
    assert parsed.pop("__metadata__") == METADATA
    assert sum(len(c) for c in chunks) == len(body)
    for name, info in parsed.items():
        begin, end = info["data_offsets"]
        got = np.frombuffer(body[begin:end], dtype="<f4")
        assert got.tobytes() == arrays[name].tobytes(), name
    print(f"wrote {PATH}: {len(raw)} bytes, header {n} bytes, {len(TENSORS)} tensors")


if __name__ == "__main__":
    main()
