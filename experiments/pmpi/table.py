#!/usr/bin/env python3
"""Issue 32's table: per layout, topology, call and size, the median over rounds of each
variant's time per call (nbr_bench: max over ranks of the mean over REPS) and its ratio to
Open MPI's own (the `mpi` variant of the same round; >1: faster than Open MPI), with the
spread of the per-round ratios.

usage: table.py results/pmpi/runs.*.txt"""
import os
import re
import statistics
import sys
from collections import defaultdict

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import plotlib  # noqa: E402

plotlib.usage(__doc__)

line_re = re.compile(r"^(\S+) (\S+) (\d+) nbr_bench: (\S+) on (\d+) ranks, (\S+) size (\d+) B: ([0-9.]+) us/call")
# spmm_plain: the matrix as the topology, "SpMM (allgather per column)" as the call, the
# number of columns as the size.
spmm_re = re.compile(r"^(\S+) (\S+) (\d+) spmm_plain: (\S+)\.mtx on (\d+) ranks, (\d+) columns, column: ([0-9.]+) us/product")
t = defaultdict(dict)  # (layout, topo, call, size, variant) -> {round: us}
variants = []
lines = [ln for path in sys.argv[1:] for ln in open(path)]
for line in lines:
    m = line_re.match(line)
    if m:
        layout, variant, rnd, topo, np_, call, size, us = m.groups()
    elif spmm_re.match(line):
        layout, variant, rnd, topo, np_, size, us = spmm_re.match(line).groups()
        call = "SpMM_allgather_per_column"
    else:
        continue
    t[(layout, topo, call, int(size), variant)][int(rnd)] = float(us)
    if variant not in variants:
        variants.append(variant)
others = [v for v in variants if v != "mpi"]
keys = sorted({k[:4] for k in t}, key=lambda k: (k[0], k[1], k[2], k[3]))
print("time per call [us], median over rounds; ratio = Open MPI / variant (>1: faster), [min-max over rounds]")
print("SpMM rows: the matrix as topology, the columns of B as size, time per product")
hdr = f"{'layout':11} {'topology':14} {'call':30} {'size':>6} {'Open MPI':>9}"
for v in others:
    hdr += f" {v:>9} {'ratio':>17}"
print(hdr)
for k in keys:
    base = t.get(k + ("mpi",), {})
    if not base:
        continue
    row = f"{k[0]:11} {k[1]:14} {k[2]:30} {k[3]:>6} {statistics.median(base.values()):9.1f}"
    for v in others:
        d = t.get(k + (v,), {})
        if not d:
            row += f" {'-':>9} {'-':>17}"
            continue
        ratios = [base[r] / d[r] for r in d if r in base and d[r] > 0]
        med = statistics.median(ratios) if ratios else float("nan")
        row += f" {statistics.median(d.values()):9.1f} {med:6.2f} [{min(ratios):.2f}-{max(ratios):.2f}]"
    print(row)
