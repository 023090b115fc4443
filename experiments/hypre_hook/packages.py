#!/usr/bin/env python3
"""Side by side: the per-package tables packages.sh wrote (time_hook.c's output for the last
solve of each run, OUT_DIR/<variant>.r<round>.txt), the mean milliseconds per rank inside the
exchange calls of every package and job: per variant the median over the rounds, and its
ratio to Hypre's own paired by round (each round's over Hypre's of the same round, median
over rounds); then the sums of the packages of A (square) and of P (rectangular:
interpolation job 1, restriction job 2), the time in exchanges and the solve.

    experiments/hypre_hook/packages.py OUT_DIR [variant ...]   (default: every variant found)
"""
import os
import re
import sys

ROW = re.compile(r"time_hook:\s+(\d+)\s+(\d+) x (\d+)\s+(\d)\s+(\d+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)")
SOLVE = re.compile(r"time_hook: solve ([\d.]+) ms; in exchanges: max rank ([\d.]+) ms, mean ([\d.]+) ms")


def load(path):
    """(rows, cols, job) in creation order -> mean ms per rank; the solve's ms; its exchanges' mean ms."""
    rows, solve, exch = [], float("nan"), float("nan")
    for line in open(path):
        m = ROW.match(line.strip())
        if m:
            r, c, job, mean = int(m.group(2)), int(m.group(3)), int(m.group(4)), float(m.group(7))
            rows.append(((r, c, job), mean))
        m = SOLVE.match(line.strip())
        if m:
            solve, exch = float(m.group(1)), float(m.group(3))
    return rows, solve, exch


def median(v):
    v = sorted(x for x in v if x == x)
    return v[len(v) // 2] if v else float("nan")


def rounds_of(out, variant):
    """round -> load() of OUT_DIR/<variant>.r<round>.txt"""
    got = {}
    for f in os.listdir(out):
        m = re.fullmatch(re.escape(variant) + r"\.r(\d+)\.txt", f)
        if m:
            got[int(m.group(1))] = load(os.path.join(out, f))
    return got


def figures(run):
    """A run's figures by name: every package's time in creation order, the sums, the solve."""
    rows, solve, exch = run
    f = {}
    sums = {"A": 0.0, "P": 0.0}
    for k, (key, t) in enumerate(rows):
        f[(k, key)] = t
        sums["A" if key[0] == key[1] else "P"] += t
    f["sum, A's packages"], f["sum, P's packages"] = sums["A"], sums["P"]
    f["in exchanges (mean rank)"], f["solve"] = exch, solve
    return f


def main(out, variants):
    found = sorted({re.sub(r"\.r\d+\.txt$", "", f) for f in os.listdir(out) if re.search(r"\.r\d+\.txt$", f)})
    variants = variants or [v for v in found if v != "hypre"]
    base = rounds_of(out, "hypre")
    if not base:
        sys.exit("packages.py: no hypre.r<round>.txt in " + out)
    runs = {v: rounds_of(out, v) for v in variants}
    hf = {r: figures(x) for r, x in base.items()}
    vf = {v: {r: figures(x) for r, x in runs[v].items()} for v in variants}
    # Packages are matched by creation order and (rows, cols, job): every run builds the same hierarchy.
    names = list(hf[min(hf)].keys())
    print("per package: the median over %d rounds of the mean ms per rank inside its exchange calls; (x): the\n"
          "variant over Hypre's in the same round, median over rounds" % len(hf))
    print("%-27s %10s" % ("package (rows x cols) job", "hypre ms") + "".join(" %18s" % (v + " ms (x)") for v in variants))
    for n in names:
        h = median([f.get(n, float("nan")) for f in hf.values()])
        label = n if isinstance(n, str) else "%d x %d  %d" % n[1]
        cells = ""
        for v in variants:
            t = median([f.get(n, float("nan")) for f in vf[v].values()])
            pairs = [vf[v][r][n] / hf[r][n] for r in vf[v] if r in hf and n in vf[v][r] and hf[r].get(n, 0) > 0]
            cells += " %11.1f (%.2f)" % (t, median(pairs))
        print("%-27s %10.1f" % (label, h) + cells)


if __name__ == "__main__":
    if any(a in ("-h", "--help") for a in sys.argv[1:]):
        sys.exit(print(__doc__.strip()))
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2:])
