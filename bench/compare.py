#!/usr/bin/python3
"""compare.py DIR — the side-by-side table of bench/compare.sh.

Reads DIR/qkv.N.json, DIR/torch.N.json and DIR/openblas.N.json (rounds N = 1..),
matches rows by (section, name), and prints for 1 thread and for all threads:
qkv's median over rounds, the other program's, and the median over rounds of the
per-round ratio, oriented so that > 1 means qkv is faster (other/qkv for times,
qkv/other for GFLOP/s). Also writes DIR/compare.json.
"""
import glob
import json
import os
import statistics
import sys


def load(directory, program):
    rounds = []
    for path in sorted(glob.glob(os.path.join(directory, program + ".*.json"))):
        with open(path) as f:
            rounds.append({(r["section"], r["name"]): r for r in json.load(f)["rows"]})
    return rounds


def median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def ratio(qkv_row, other_row, key):
    a, b = qkv_row.get(key), other_row.get(key)
    if a is None or b is None or a == 0 or b == 0:
        return None
    return b / a if qkv_row["unit"] == "ms" else a / b


def fmt(x, width=8):
    return ("%*.2f" % (width, x)) if x is not None else "%*s" % (width, "-")


def main(directory):
    qkv = load(directory, "qkv")
    if not qkv:
        print("compare.py: no qkv.*.json in " + directory, file=sys.stderr)
        return 2
    others = [(name, load(directory, name)) for name in ("torch", "openblas")]
    header = "%-9s %-28s %-7s | %8s %8s | %-8s %8s %8s | %7s %7s" % (
        "section", "case", "unit", "qkv 1t", "qkv 2t", "vs", "other 1t", "other 2t", "ratio1", "ratio2")
    print(header)
    print("-" * len(header))
    table = []
    for key, first in qkv[0].items():
        q1 = median(r[key]["one_thread"] for r in qkv if key in r)
        q2 = median(r[key]["all_threads"] for r in qkv if key in r)
        for name, rounds in others:
            pairs = [(q[key], o[key]) for q, o in zip(qkv, rounds) if key in q and key in o]
            if not pairs:
                continue
            o1 = median(o["one_thread"] for _, o in pairs)
            o2 = median(o["all_threads"] for _, o in pairs)
            r1 = median(ratio(q, o, "one_thread") for q, o in pairs)
            r2 = median(ratio(q, o, "all_threads") for q, o in pairs)
            print("%-9s %-28s %-7s | %s %s | %-8s %s %s | %s %s" % (
                key[0], key[1], first["unit"], fmt(q1), fmt(q2), name, fmt(o1), fmt(o2), fmt(r1, 7), fmt(r2, 7)))
            table.append({"section": key[0], "name": key[1], "unit": first["unit"], "other": name,
                          "qkv": [q1, q2], "other_values": [o1, o2], "ratio": [r1, r2],
                          "rounds": len(pairs)})
        if not any(key in r for _, rounds in others for r in rounds):
            print("%-9s %-28s %-7s | %s %s |" % (key[0], key[1], first["unit"], fmt(q1), fmt(q2)))
    print("ratio > 1: qkv faster (time: other/qkv; GFLOP/s: qkv/other); medians over %d round(s)" % len(qkv))
    with open(os.path.join(directory, "compare.json"), "w") as f:
        json.dump(table, f, indent=2)
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print("usage: compare.py DIR", file=sys.stderr)
        sys.exit(2)
    sys.exit(main(sys.argv[1]))
