#!/usr/bin/env python3
"""after/before tables of experiments/ab/run.sh: per (matrix, variant) the median over the
rounds of each build, and B/A (< 1: build B is faster).

usage: experiments/ab/table.py RESULTS_DIR"""
import json
import os
import statistics
import sys
from collections import defaultdict


def load(path, key, value):
    t = defaultdict(list)
    if os.path.exists(path):
        for line in open(path):
            if line.strip():
                r = json.loads(line)
                t[(r["matrix"], r[key])].append(value(r))
    return t


def table(title, a, b, unit):
    print(f"\n{title}\n| matrix | variant | A {unit} | B {unit} | B/A | A min-max | B min-max |\n|---|---|---|---|---|---|---|")
    ratios = []
    for k in sorted(set(a) & set(b)):
        ma, mb = statistics.median(a[k]), statistics.median(b[k])
        ratios.append(mb / ma)
        print(f"| {k[0]} | {k[1]} | {ma:.1f} | {mb:.1f} | {mb / ma:.2f} | {min(a[k]):.1f}-{max(a[k]):.1f} "
              f"| {min(b[k]):.1f}-{max(b[k]):.1f} |")
    if ratios:
        print(f"\nmedian B/A {statistics.median(ratios):.2f}, range {min(ratios):.2f}-{max(ratios):.2f} "
              f"over {len(ratios)} cases")


def main():
    d = sys.argv[1]
    spmv = [load(os.path.join(d, f"spmv.{x}.jsonl"), "backend", lambda r: r["spmv_s"] * 1e6) for x in "AB"]
    table("SpMV through every backend (sparsecomm spmv), us per SpMV", spmv[0], spmv[1], "us")
    petsc = [load(os.path.join(d, f"petsc.{x}.jsonl"), "scatter", lambda r: r["us"]) for x in "AB"]
    table("PETSc MatMult (sparsecomm_petsc_ksp -bench_only), us per MatMult", petsc[0], petsc[1], "us")


if __name__ == "__main__":
    if any(a in ("-h", "--help") for a in sys.argv[1:]) or len(sys.argv) != 2:
        sys.exit(print(__doc__.strip()))
    main()
