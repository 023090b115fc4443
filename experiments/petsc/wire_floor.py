#!/usr/bin/env python3
"""The network floor of one halo exchange (SpMV) on an emulated cluster: for each matrix and
layout NODESxPPN, rows block-distributed over NODES*PPN ranks as sparsecomm and PETSc do
(the first n % P ranks get one row more), the busiest node's inter-node bytes in either
direction, for the messages PETSc and the point-to-point backends send (every rank receives
each ghost value it needs from its owner) and for what remains after duplicate removal (a
value that several ranks of one node need crosses from the owner's node once). Over a link
of RATE bytes per microsecond, no scatter can take less time than that.

    experiments/petsc/wire_floor.py HB/bcsstk16 GHS_psdef/cvxbqp1 --layouts 4x1,4x2,4x4
    experiments/petsc/wire_floor.py AMD_G2_circuit --jsonl results/bench_petsc/petsc.jsonl

With --jsonl (the JSON lines of experiments/petsc/run.sh) it also prints PETSc's best time of
the cluster run of the same case, each floor as a share of it, and the best sparsecomm
backend's ratio. Standard library only; Matrix Market coordinate files (symmetric ones
expanded), from --data (default: the library's own search, matrix_path() below).
"""
import argparse
import bisect
import os
import sys
from collections import defaultdict

from table import PETSC_OWN, best, load_runs  # the same reading of run.sh's JSON lines


HERE = os.path.dirname(os.path.abspath(__file__))


def matrix_path(name, data=None):
    """The .mtx file of a shared matrix ("Group/Name", "Group_Name" or a path), or None:
    in `data` if given, else where the library looks (src/matrix/data_path.cpp): each entry
    of $SPARSECOMM_DATA, then ../shared/data/suitesparse beside the project."""
    if name.endswith(".mtx"):
        return name if os.path.exists(name) else None
    dirs = [data] if data else [d for d in os.environ.get("SPARSECOMM_DATA", "").split(":") if d] + [
        os.path.join(HERE, "..", "..", "..", "shared", "data", "suitesparse")]
    for d in dirs:
        path = os.path.join(d, name.replace("/", "_") + ".mtx")
        if os.path.exists(path):
            return path
    return None


def read_pattern(path):
    rows, cols = [], []
    with open(path) as f:
        header = f.readline().lower()
        if not header.startswith("%%matrixmarket") or "coordinate" not in header:
            sys.exit("wire_floor: %s is not a Matrix Market coordinate file" % path)
        sym = any(w in header for w in ("symmetric", "hermitian", "skew"))
        line = f.readline()
        while line.startswith("%"):
            line = f.readline()
        n, m, _ = (int(t) for t in line.split()[:3])
        if n != m:
            sys.exit("wire_floor: %s is %d x %d; a halo exchange needs a square matrix" % (path, n, m))
        for line in f:
            t = line.split()
            if len(t) < 2:
                continue
            i, j = int(t[0]) - 1, int(t[1]) - 1
            rows.append(i)
            cols.append(j)
            if sym and i != j:
                rows.append(j)
                cols.append(i)
    return n, rows, cols


def offsets(n, p):
    base, extra = divmod(n, p)
    off = [0]
    for q in range(p):
        off.append(off[-1] + base + (1 if q < extra else 0))
    return off


def node_bytes(n, rows, cols, nodes, ppn, value_bytes=8):
    """(busiest node's bytes with PETSc's messages, the same after duplicate removal)."""
    off = offsets(n, nodes * ppn)

    def owner(g):
        return bisect.bisect_right(off, g) - 1

    ghosts = defaultdict(set)  # rank -> ghost columns it receives
    for i, j in zip(rows, cols):
        r, s = owner(i), owner(j)
        if r != s:
            ghosts[r].add(j)
    out, into = [0] * nodes, [0] * nodes
    union = defaultdict(set)  # (owner node, receiving node) -> distinct values
    for r, cs in ghosts.items():
        for j in cs:
            a, b = owner(j) // ppn, r // ppn
            if a != b:
                out[a] += value_bytes
                into[b] += value_bytes
                union[(a, b)].add(j)
    dout, dinto = [0] * nodes, [0] * nodes
    for (a, b), cs in union.items():
        dout[a] += value_bytes * len(cs)
        dinto[b] += value_bytes * len(cs)
    return max(out + into), max(dout + dinto)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("matrices", nargs="+", help="SuiteSparse names (Group/Name or Group_Name) or .mtx paths")
    ap.add_argument("--layouts", default="4x1,4x2,4x4", help="NODESxRANKS_PER_NODE, comma-separated")
    ap.add_argument("--rate", type=float, default=125.0, help="link bytes per microsecond (1 Gbit/s = 125)")
    ap.add_argument("--data", help="directory of the .mtx files (default: the library's search path)")
    ap.add_argument("--jsonl", help="experiments/petsc/run.sh JSON lines: compare with its cluster run")
    a = ap.parse_args()
    layouts = []
    for l in a.layouts.split(","):
        try:
            nodes, ppn = (int(x) for x in l.lower().split("x"))
        except ValueError:
            sys.exit("wire_floor: layout '%s' is not NODESxPPN (e.g. 4x2)" % l)
        if nodes < 1 or ppn < 1:
            sys.exit("wire_floor: layout '%s' needs at least one node and one rank per node" % l)
        layouts.append((nodes, ppn))
    runs = load_runs(a.jsonl) if a.jsonl else {}
    print("%-30s %6s %12s %12s %10s %10s%s" % ("matrix", "layout", "bytes", "dedup bytes", "floor[us]", "dedup[us]",
                                              "  petsc[us] floor/petsc dedup/petsc best-sparsecomm/petsc" if runs else ""))
    for m in a.matrices:
        path = matrix_path(m, a.data)
        if path is None:
            sys.exit("wire_floor: matrix '%s' not found (--data, $SPARSECOMM_DATA, ../shared/data/suitesparse)" % m)
        label = os.path.basename(path)[:-4]
        n, rows, cols = read_pattern(path)
        for nodes, ppn in layouts:
            b, d = node_bytes(n, rows, cols, nodes, ppn)
            line = "%-30s %3dx%-2d %12d %12d %10.0f %10.0f" % (label, nodes, ppn, b, d, b / a.rate, d / a.rate)
            case = runs.get(("cluster", nodes * ppn, label), {})
            p, o = best(case, PETSC_OWN)[1], best(case, "sparsecomm ")[1]
            if p is not None and o is not None:
                line += "  %9.1f %11.2f %11.2f %24.3f" % (p, b / a.rate / p, d / a.rate / p, o / p)
            print(line)


if __name__ == "__main__":
    if any(a in ("-h", "--help") for a in sys.argv[1:]):  # usage: the module docstring
        sys.exit(print(__doc__.strip()))
    main()
