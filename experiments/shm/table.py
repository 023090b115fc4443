#!/usr/bin/env python3
"""Issue 33's shm table from `sparsecomm spmv --json` records: per matrix the halo
exchange alone and the whole SpMV of every backend against p2p (ratio = backend / p2p
time, < 1 is faster), with the median over matrices.

usage: table.py results/shm/shm.jsonl"""
import json
import os
import statistics
import sys
from collections import defaultdict

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import plotlib  # noqa: E402

plotlib.usage(__doc__)

rows = defaultdict(dict)  # matrix -> backend -> record
for line in open(sys.argv[1]):
    r = json.loads(line)
    rows[r["matrix"]][r["backend"]] = r
backends = sorted({b for m in rows.values() for b in m if b != "p2p"})
print("ratio = backend time / p2p time (< 1: faster); exchange = the halo exchange alone; 8-rank node runs")
hdr = f"{'matrix':28} {'ranks':>5} {'p2p exch us':>11} {'p2p SpMV us':>11}"
for b in backends:
    hdr += f" {b + ' exch':>14} {b + ' SpMV':>14}"
print(hdr)
ratios = defaultdict(lambda: defaultdict(list))
for m, rec in sorted(rows.items()):
    if "p2p" not in rec:
        continue
    p = rec["p2p"]
    line = f"{m[:28]:28} {p['ranks']:>5} {p['exchange_s'] * 1e6:11.1f} {p['spmv_s'] * 1e6:11.1f}"
    for b in backends:
        if b not in rec or not rec[b]["verified"]:
            line += f" {'-':>14} {'-':>14}"
            continue
        e = rec[b]["exchange_s"] / p["exchange_s"]
        s = rec[b]["spmv_s"] / p["spmv_s"]
        ratios[b]["exch"].append(e)
        ratios[b]["spmv"].append(s)
        line += f" {e:14.2f} {s:14.2f}"
    print(line)
line = f"{'median over matrices':28} {'':>5} {'':>11} {'':>11}"
for b in backends:
    e = ratios[b]["exch"]
    s = ratios[b]["spmv"]
    line += f" {statistics.median(e) if e else float('nan'):14.2f} {statistics.median(s) if s else float('nan'):14.2f}"
print(line)
print()
print("bytes copied per exchange per rank (mean over ranks; sparsecomm spmv's copied B/rank) against the one-copy limit")
hdr = f"{'matrix':28} {'limit':>9} {'p2p':>9}" + "".join(f" {b:>9}" for b in backends)
print(hdr)
for m, rec in sorted(rows.items()):
    if "p2p" not in rec or "copied_bytes_mean" not in rec["p2p"]:
        continue
    p = rec["p2p"]
    line = f"{m[:28]:28} {p['one_copy_bytes_mean']:9.0f} {p['copied_bytes_mean']:9.0f}"
    for b in backends:
        line += f" {rec[b]['copied_bytes_mean']:9.0f}" if b in rec else f" {'-':>9}"
    print(line)
chosen = defaultdict(int)
for m, rec in rows.items():
    if "auto" in rec:
        chosen[rec["auto"]["chosen"]] += 1
if chosen:
    print()
    print("auto chose: " + ", ".join(f"{b} {n}x" for b, n in sorted(chosen.items())))
