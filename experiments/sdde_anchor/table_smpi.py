#!/usr/bin/env python3
"""Issue 69's peer table from smpi.sh's result lines
(<platform> <library> <input> <ranks> <algorithm> <median_us> <min_us> <max_us> verified|WRONG|ERROR):
per platform and rank count, sparsecomm / MPI Advance (< 1: sparsecomm is faster) as the
geometric mean over the inputs with the worst input in brackets, for each SDDE algorithm
against its namesake, our best SDDE against theirs, the persistent set-up (standard against
standard, our best against theirs), the standard init together with its first exchange
(where sparsecomm completes the init's argument agreement) and the halo exchange (our best
against their best).
Simulated model times: deterministic, one run per input.

usage: table_smpi.py results/sdde_anchor_smpi/results.txt"""
import math
import os
import sys
from collections import defaultdict

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import plotlib  # noqa: E402

plotlib.usage(__doc__)
t = {}
bad = []
for line in open(sys.argv[1]):
    f = line.split()
    if len(f) != 9:
        continue
    pf, lib, inp, p, alg, med, verdict = f[0], f[1], f[2], int(f[3]), f[4], float(f[5]), f[8]
    if verdict != "verified":
        bad.append(line.strip())
        continue
    t[(pf, p, lib, inp, alg)] = med

SDDE = ["personalized", "nonblocking", "personalized_loc", "nonblocking_loc"]
INIT = ["neighbor_init_standard", "neighbor_init_locality"]
HALO = ["halo_standard", "halo_locality"]
FIRST = ["halo_first_standard", "halo_first_locality"]


def geo(r):
    return math.exp(sum(map(math.log, r)) / len(r)) if r else float("nan")


def cell(r, goal=None):
    if not r:
        return "-"
    s = f"{geo(r):.2f} ({max(r):.2f})"
    return f"**{s}**" if goal is not None and geo(r) <= goal else s


rows = []
for pf, p in sorted({(k[0], k[1]) for k in t}, key=lambda x: (x[1], x[0])):
    inputs = sorted({k[3] for k in t if k[0] == pf and k[1] == p})
    both = [i for i in inputs if any(k[:4] == (pf, p, "mpi_advance", i) for k in t)
            and any(k[:4] == (pf, p, "sparsecomm", i) for k in t)]
    ratio = defaultdict(list)
    for i in both:
        g = lambda lib, a: t.get((pf, p, lib, i, a))  # noqa: E731
        for a in SDDE + INIT[:1] + HALO[:1]:
            if g("sparsecomm", a) and g("mpi_advance", a):
                ratio[a].append(g("sparsecomm", a) / g("mpi_advance", a))
        for name, algs in (("best_sdde", SDDE), ("best_init", INIT), ("best_halo", HALO)):
            ours = [g("sparsecomm", a) for a in algs if g("sparsecomm", a)]
            theirs = [g("mpi_advance", a) for a in algs if g("mpi_advance", a)]
            if ours and theirs:
                ratio[name].append(min(ours) / min(theirs))
        both_first = [g(lib, INIT[0]) and g(lib, FIRST[0]) for lib in ("sparsecomm", "mpi_advance")]
        if all(both_first):
            ratio["init_first"].append((g("sparsecomm", INIT[0]) + g("sparsecomm", FIRST[0])) /
                                       (g("mpi_advance", INIT[0]) + g("mpi_advance", FIRST[0])))
    rows.append((pf, p, len(both), ratio))

print("| platform | ranks | inputs | " + " | ".join(SDDE) +
      " | best SDDE | set-up std | set-up best | set-up + 1st exchange std | halo best |")
print("|---|---|---|" + "---|" * (len(SDDE) + 5))
for pf, p, n, r in rows:
    print(f"| {pf} | {p} | {n} | " + " | ".join(cell(r[a], 0.8) for a in SDDE) +
          f" | {cell(r['best_sdde'], 0.6)} | {cell(r['neighbor_init_standard'])} | {cell(r['best_init'], 2.0)} | "
          f"{cell(r['init_first'])} | {cell(r['best_halo'], 0.6)} |")
print()
# Which part of an SDDE's time differs: the messages themselves cost the known-pattern
# exchange (the same plain MPI code in both builds); the rest is discovery.
print("Beyond the known-pattern messages (discovery), sparsecomm / MPI Advance, geomean (worst):")
print("| platform | ranks | " + " | ".join(SDDE) + " | known pattern [us, geomean] | set-up loc |")
print("|---|---|" + "---|" * (len(SDDE) + 2))
for pf, p, n, _ in rows:
    inputs = sorted(i for i in {k[3] for k in t if k[0] == pf and k[1] == p}  # those both libraries ran
                    if (pf, p, "mpi_advance", i, "known_pattern") in t and (pf, p, "sparsecomm", i, "known_pattern") in t)
    cells, known = [], []
    for a in SDDE:
        r = []
        for i in inputs:
            k = t.get((pf, p, "sparsecomm", i, "known_pattern"))
            x, y = t.get((pf, p, "sparsecomm", i, a)), t.get((pf, p, "mpi_advance", i, a))
            if k and x and y and y > k:
                r.append(max(x - k, 1e-3) / (y - k))
        cells.append(cell(r))
    for i in inputs:
        k = t.get((pf, p, "sparsecomm", i, "known_pattern"))
        if k:
            known.append(k)
    # The locality init against MPI Advance's: the set-up of the exchange that is the best
    # halo on inputs with many neighbours per rank (where "set-up best" only sees the
    # standard inits, which send nothing in either build).
    loc = [t[(pf, p, "sparsecomm", i, INIT[1])] / t[(pf, p, "mpi_advance", i, INIT[1])] for i in inputs
           if (pf, p, "sparsecomm", i, INIT[1]) in t and (pf, p, "mpi_advance", i, INIT[1]) in t]
    print(f"| {pf} | {p} | " + " | ".join(cells) + f" | {geo(known):.1f} | {cell(loc, 2.0)} |")
print()
print("Per input (us, sparsecomm / MPI Advance):")
for pf, p in sorted({(k[0], k[1]) for k in t}, key=lambda x: (x[1], x[0])):
    for i in sorted({k[3] for k in t if k[0] == pf and k[1] == p}):
        parts = []
        for a in SDDE + ["known_pattern"] + INIT + HALO + FIRST:
            x, y = t.get((pf, p, "sparsecomm", i, a)), t.get((pf, p, "mpi_advance", i, a))
            parts.append(f"{a} {x if x is not None else '-'} / {y if y is not None else '-'}")
        print(f"  {pf} {p} {i}: " + "; ".join(parts))
if bad:
    print("\nNOT VERIFIED (left out of the ratios):")
    print("\n".join(bad))
