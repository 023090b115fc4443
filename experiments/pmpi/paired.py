#!/usr/bin/env python3
"""Summary of experiments/pmpi/paired.sh: per call and size, the median over runs of each
run's paired MPI_ / PMPI_ ratio, under the library (auto) and without it (A/A), and the
worst of those medians; plus the PMPI_ baseline's time with the library loaded against
without it (across processes: the run-to-run noise the paired ratio avoids).

    experiments/pmpi/paired.py results/pmpi_paired/runs.txt
"""
import os
import re
import statistics
import sys
from collections import defaultdict

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import plotlib  # noqa: E402

LINE = re.compile(r"(\w+) (\d+) nbr_bench: paired (\S+) on (\d+) ranks, (\S+) size (\d+) B: MPI_ ([\d.]+) us/call, "
                  r"PMPI_ ([\d.]+) us/call, MPI_/PMPI_ ([\d.]+)")


SPMM = re.compile(r"(\w+) (\d+) spmm_plain: paired (\S+) on (\d+) ranks, (\d+) columns, (\w+): MPI_ ([\d.]+) us/product, "
                  r"PMPI_ ([\d.]+) us/product, MPI_/PMPI_ ([\d.]+) \[([\d.]+)-([\d.]+)\]")


def spmm_table(path):
    rows = [m.groups() for m in map(SPMM.match, open(path)) if m]
    if not rows:
        return
    aa = {g[2]: g for g in rows if g[0] == "none"}  # SPMM_AA=1: the same matrix without the library
    print("\nSpMM kernel (spmm_plain, one MPI_Neighbor_allgather per column), under the library, MPI_ / PMPI_ "
          "paired in one process (median [quartiles] over rounds)%s:" % (", and A/A without it" if aa else ""))
    worst = 0.0
    lib = [g for g in rows if g[0] != "none"]
    for variant, _, name, ranks, cols, mode, tm, tp, r, q1, q3 in sorted(lib, key=lambda g: float(g[8])):
        worst = max(worst, float(r))
        a = aa.get(name)
        print("  %-36s %3s ranks: %9.1f / %9.1f us/product  %.3f [%s-%s]%s" % (
            name, ranks, float(tm), float(tp), float(r), q1, q3,
            "   A/A %.3f [%s-%s]" % (float(a[8]), a[9], a[10]) if a else ""))
    print("  %d matrices; worst median %.3f, faster (< 1) on %d%s" % (
        len(lib), worst, sum(float(g[8]) < 1 for g in lib),
        "; A/A worst median %.3f" % max(float(g[8]) for g in aa.values()) if aa else ""))


def main():
    plotlib.usage(__doc__)
    ratio, base = defaultdict(list), defaultdict(list)
    for line in open(sys.argv[1]):
        m = LINE.match(line)
        if not m:
            continue
        variant, _, topo, ranks, call, size, _, pmpi, r = m.groups()
        key = (topo, int(ranks), call, int(size))
        ratio[(variant,) + key].append(float(r))
        base[(variant,) + key].append(float(pmpi))
    keys = sorted({k[1:] for k in ratio})
    if not keys:
        spmm_table(sys.argv[1])
        return
    print("%-10s %5s %-30s %6s %22s %22s %18s" % ("topology", "ranks", "call", "bytes", "auto: MPI_/PMPI_",
                                                   "A/A: MPI_/PMPI_", "PMPI_ with/without"))
    worst = {"auto": 0.0, "none": 0.0}
    cross = []
    for k in keys:
        a, n = ratio.get(("auto",) + k, []), ratio.get(("none",) + k, [])
        ma = statistics.median(a) if a else float("nan")
        mn = statistics.median(n) if n else float("nan")
        if a:
            worst["auto"] = max(worst["auto"], ma)
        if n:
            worst["none"] = max(worst["none"], mn)
        ba, bn = base.get(("auto",) + k), base.get(("none",) + k)
        c = statistics.median(ba) / statistics.median(bn) if ba and bn else float("nan")
        if ba and bn:
            cross.append(c)
        print("%-10s %5d %-30s %6d %8.3f (%s) %8.3f (%s) %18.3f" % (
            k[0], k[1], k[2], k[3], ma, " ".join("%.2f" % x for x in a), mn, " ".join("%.2f" % x for x in n), c))
    print("worst median: auto %.3f (goal: never above 1.05), A/A %.3f; PMPI_ with / without the library across "
          "processes: median %.3f, range %.2f-%.2f" % (worst["auto"], worst["none"],
                                                      statistics.median(cross) if cross else float("nan"),
                                                      min(cross) if cross else float("nan"),
                                                      max(cross) if cross else float("nan")))
    spmm_table(sys.argv[1])


if __name__ == "__main__":
    main()
