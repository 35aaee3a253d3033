#!/usr/bin/python3
"""compare.py DIR — the side-by-side tables of bench/compare.sh.

Reads DIR/qkv.N.json, DIR/torch.N.json and DIR/openblas.N.json (rounds N = 1..),
matches rows by (section, name), and prints for 1 thread and for all threads:
qkv's median over rounds, the other program's, and the median over rounds of the
per-round ratio, oriented so that > 1 means qkv is faster (other/qkv for times,
qkv/other for GFLOP/s). Also writes DIR/compare.json.

The text table reads DIR/text/: per round N and thread count T, qkv.N.T.json,
.csv and .log (`qkv train text`'s --json, --csv and banner) and torch.N.T.json
(bench/torch_text.py). qkv's ms per step is the mean of the steps after the 20th
(its --csv times at step 20 and at the last logged step), PyTorch's the median of
its per-step times after the 20th; ratio = PyTorch / qkv, each within one round,
then the median over rounds; the validation losses are the final ones, and the
step-1 training losses are shown beside them. Before any of it, every pair is checked to have read
the same corpus (bytes, vocabulary and its bytes) and to have the same steps and
parameter count, and PyTorch's validation loss of qkv's final weights (its
--qkv-checkpoint) to be qkv's val_loss within CHECKPOINT_TOLERANCE: the same
forward pass on the same windows. A mismatch prints what differs and exits 1.
Writes DIR/text/compare.json.
"""
import csv
import glob
import json
import os
import re
import statistics
import sys

WARM_UP_STEPS = 20            # bench/torch_text.py's
CHECKPOINT_TOLERANCE = 1e-4   # nats: float32 sums in another order, 6 digits in qkv's JSON


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


def kernel_table(directory, qkv):
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


# ---- text: qkv train text vs bench/torch_text.py ---------------------------------------------

def qkv_text_run(prefix):
    """One qkv run's figures from prefix.json, .csv and .log."""
    with open(prefix + ".json") as f:
        summary = json.load(f)
    with open(prefix + ".csv") as f:
        seconds = {int(r["step"]): (float(r["seconds"]), float(r["loss"])) for r in csv.DictReader(f)}
    with open(prefix + ".log") as f:
        banner = f.readline()
    params = re.search(r"(\d+) parameters", banner)
    alphabet = re.search(r"alphabet=([0-9a-f]*)", summary["config"]["tokens"])
    steps, last = summary["steps"], max(seconds)   # the last logged step: steps if --log-every divides it
    return {"steps": steps, "corpus_bytes": int(summary["config"]["corpus_bytes"]),
            "vocab": int(summary["config"]["vocab"]), "alphabet": alphabet.group(1) if alphabet else None,
            "parameters": int(params.group(1)) if params else None,
            "ms_per_step": 1e3 * (seconds[last][0] - seconds[WARM_UP_STEPS][0]) / (last - WARM_UP_STEPS),
            "ms_per_step_all": 1e3 / summary["steps_per_second"],
            "first_train_loss": seconds[1][1], "final_train_loss": summary["final_train_loss"],
            "val_loss": summary["test"]["val_loss"]}


def text_runs(directory):
    """{threads: [(round, qkv figures, torch figures)]} of DIR/text/, in round order."""
    runs = {}
    for path in glob.glob(os.path.join(directory, "text", "torch.*.*.json")):
        _, n, threads, _ = os.path.basename(path).split(".")
        with open(path) as f:
            torch = json.load(f)
        qkv = qkv_text_run(os.path.join(directory, "text", "qkv.%s.%s" % (n, threads)))
        runs.setdefault(int(threads), []).append((int(n), qkv, torch))
    for pairs in runs.values():
        pairs.sort(key=lambda p: p[0])
    return runs


def text_mismatches(runs):
    """Lines naming what differs between the two programs' runs (none: they match)."""
    lines = []
    for threads, pairs in sorted(runs.items()):
        for n, qkv, torch in pairs:
            where = "round %d, %d thread(s): " % (n, threads)
            for key in ("steps", "corpus_bytes", "vocab", "alphabet", "parameters"):
                if qkv[key] != torch[key]:
                    lines.append(where + "%s: qkv %s, PyTorch %s" % (key, qkv[key], torch[key]))
            check = torch.get("qkv_checkpoint")
            if not check:
                lines.append(where + "PyTorch did not evaluate qkv's checkpoint (--qkv-checkpoint)")
            elif not abs(check["val_loss"] - qkv["val_loss"]) <= CHECKPOINT_TOLERANCE:   # NaN fails too
                lines.append(where + "qkv's final weights: val_loss %.6f in qkv, %.6f in PyTorch's model"
                             % (qkv["val_loss"], check["val_loss"]))
    return lines


def text_table(directory, runs):
    bad = text_mismatches(runs)
    if bad:
        print("text check FAILED: the two runs did not train the same thing:\n  " + "\n  ".join(bad))
        return 1
    first = next(iter(runs.values()))[0]
    worst = max(abs(t["qkv_checkpoint"]["val_loss"] - q["val_loss"]) for p in runs.values() for _, q, t in p)
    print("text: qkv train text vs bench/torch_text.py, %d steps, %d parameters each, %d bytes of text, "
          "vocabulary %d (checked the same); qkv's final weights in PyTorch's model: val_loss within %.1g of "
          "qkv's" % (first[1]["steps"], first[1]["parameters"], first[1]["corpus_bytes"], first[1]["vocab"],
                     worst))
    header = "%-7s | %9s %9s %7s | %9s %9s %8s | %8s %8s" % (
        "threads", "qkv ms", "torch ms", "ratio", "qkv val", "torch val", "qkv-tch", "qkv 1st", "tch 1st")
    print(header)
    print("-" * len(header))
    table = []
    for threads, pairs in sorted(runs.items()):
        q_ms = median(q["ms_per_step"] for _, q, _ in pairs)
        t_ms = median(t["ms_per_step"] for _, _, t in pairs)
        r = median(t["ms_per_step"] / q["ms_per_step"] for _, q, t in pairs)
        q_val, t_val = median(q["val_loss"] for _, q, _ in pairs), median(t["val_loss"] for _, _, t in pairs)
        q_first = median(q["first_train_loss"] for _, q, _ in pairs)
        t_first = median(t["first_train_loss"] for _, _, t in pairs)
        print("%-7d | %9.2f %9.2f %7.2f | %9.4f %9.4f %+8.4f | %8.4f %8.4f" % (
            threads, q_ms, t_ms, r, q_val, t_val, q_val - t_val, q_first, t_first))
        table.append({"threads": threads, "rounds": len(pairs), "qkv_ms_per_step": q_ms,
                      "torch_ms_per_step": t_ms, "ratio": r, "qkv_val_loss": q_val, "torch_val_loss": t_val,
                      "qkv_first_train_loss": q_first, "torch_first_train_loss": t_first})
    # Each program at its best thread count, within each round.
    by_round = {}
    for threads, pairs in runs.items():
        for n, q, t in pairs:
            by_round.setdefault(n, []).append((threads, q["ms_per_step"], t["ms_per_step"]))
    best = []
    for rows in by_round.values():
        q = min(rows, key=lambda row: row[1])
        t = min(rows, key=lambda row: row[2])
        best.append((q[0], q[1], t[0], t[2], t[2] / q[1]))
    q_threads = statistics.mode(b[0] for b in best)
    t_threads = statistics.mode(b[2] for b in best)
    best_ratio = median(b[4] for b in best)
    print("each at its best: qkv %.2f ms (%d thread(s)), PyTorch %.2f ms (%d thread(s)): ratio %.2f" % (
        median(b[1] for b in best), q_threads, median(b[3] for b in best), t_threads, best_ratio))
    print("ratio = PyTorch ms / qkv ms (> 1: qkv faster), ms after %d warm-up steps (qkv: mean, PyTorch: "
          "median); val: final validation loss (nats/token), 1st: step-1 training loss; medians over %d "
          "round(s)" % (WARM_UP_STEPS, max(len(p) for p in runs.values())))
    with open(os.path.join(directory, "text", "compare.json"), "w") as f:
        json.dump({"rows": table, "best_ratio": best_ratio, "qkv_best_threads": q_threads,
                   "torch_best_threads": t_threads}, f, indent=2)
    return 0


def main(directory):
    qkv = load(directory, "qkv")
    text = text_runs(directory)
    if not qkv and not text:
        print("compare.py: no qkv.*.json nor text/torch.*.json in " + directory, file=sys.stderr)
        return 2
    if qkv:
        kernel_table(directory, qkv)
    if qkv and text:
        print()
    return text_table(directory, text) if text else 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print("usage: compare.py DIR", file=sys.stderr)
        sys.exit(2)
    sys.exit(main(sys.argv[1]))
