#!/usr/bin/env python3
"""Side by side: the per-package tables packages.sh wrote (time_hook.c's output for the last
solve of each variant), the mean milliseconds per rank inside the exchange calls of every
package and job, Hypre's own and each variant's, with variant / Hypre; then the sums of the
packages of A (square) and of P (rectangular: interpolation job 1, restriction job 2), and
the solve.

    experiments/hypre_hook/packages.py OUT_DIR [variant ...]   (default: every OUT_DIR/*.txt)
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


def main(out, variants):
    if not variants:
        variants = sorted(f[:-4] for f in os.listdir(out) if f.endswith(".txt") and f != "hypre.txt")
    base, hsolve, hexch = load(os.path.join(out, "hypre.txt"))
    runs = {v: load(os.path.join(out, v + ".txt")) for v in variants}
    # Packages are matched by (rows, cols, job) in order: every run builds the same hierarchy.
    print("%-22s %4s %10s" % ("package (rows x cols)", "job", "hypre ms") +
          "".join(" %18s" % (v + " ms (x)") for v in variants))
    sums = {"A": [0.0] * (1 + len(variants)), "P": [0.0] * (1 + len(variants))}
    for k, (key, h) in enumerate(base):
        r, c, job = key
        cells = []
        kind = "A" if r == c else "P"
        sums[kind][0] += h
        for i, v in enumerate(variants):
            rows = runs[v][0]
            t = rows[k][1] if k < len(rows) and rows[k][0] == key else float("nan")
            sums[kind][1 + i] += t
            cells.append(" %11.1f (%.2f)" % (t, t / h if h > 0 else float("nan")))
        print("%-22s %4d %10.1f" % ("%d x %d" % (r, c), job, h) + "".join(cells))
    for kind, label in (("A", "sum, A's packages"), ("P", "sum, P's packages")):
        s = sums[kind]
        print("%-27s %10.1f" % (label, s[0]) +
              "".join(" %11.1f (%.2f)" % (x, x / s[0] if s[0] > 0 else float("nan")) for x in s[1:]))
    print("%-27s %10.1f" % ("solve", hsolve) +
          "".join(" %11.1f (%.2f)" % (runs[v][1], runs[v][1] / hsolve) for v in variants))
    print("%-27s %10.1f" % ("in exchanges (mean rank)", hexch) +
          "".join(" %11.1f (%.2f)" % (runs[v][2], runs[v][2] / hexch) for v in variants))


if __name__ == "__main__":
    if any(a in ("-h", "--help") for a in sys.argv[1:]):
        sys.exit(print(__doc__.strip()))
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2:])
