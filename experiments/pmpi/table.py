#!/usr/bin/env python3
"""Issue 32's table: per layout, topology, call and size, the median over rounds of each
variant's time per call (nbr_bench: max over ranks of the mean over REPS) and its ratio to
Open MPI's own (the `mpi` variant of the same round; >1: faster than Open MPI), with the
spread of the per-round ratios.

usage: table.py results/pmpi/runs.*.txt"""
import re
import statistics
import sys
from collections import defaultdict

line_re = re.compile(r"^(\S+) (\S+) (\d+) nbr_bench: (\S+) on (\d+) ranks, (\S+) size (\d+) B: ([0-9.]+) us/call")
t = defaultdict(dict)  # (layout, topo, call, size, variant) -> {round: us}
variants = []
lines = [ln for path in sys.argv[1:] for ln in open(path)]
for line in lines:
    m = line_re.match(line)
    if not m:
        continue
    layout, variant, rnd, topo, np_, call, size, us = m.groups()
    t[(layout, topo, call, int(size), variant)][int(rnd)] = float(us)
    if variant not in variants:
        variants.append(variant)
others = [v for v in variants if v != "mpi"]
keys = sorted({k[:4] for k in t}, key=lambda k: (k[0], k[1], k[2], k[3]))
print("time per call [us], median over rounds; ratio = Open MPI / variant (>1: faster), [min-max over rounds]")
hdr = f"{'layout':10} {'topology':12} {'call':30} {'size':>6} {'Open MPI':>9}"
for v in others:
    hdr += f" {v:>9} {'ratio':>17}"
print(hdr)
for k in keys:
    base = t.get(k + ("mpi",), {})
    if not base:
        continue
    row = f"{k[0]:10} {k[1]:12} {k[2]:30} {k[3]:>6} {statistics.median(base.values()):9.1f}"
    for v in others:
        d = t.get(k + (v,), {})
        if not d:
            row += f" {'-':>9} {'-':>17}"
            continue
        ratios = [base[r] / d[r] for r in d if r in base and d[r] > 0]
        med = statistics.median(ratios) if ratios else float("nan")
        row += f" {statistics.median(d.values()):9.1f} {med:6.2f} [{min(ratios):.2f}-{max(ratios):.2f}]"
    print(row)
