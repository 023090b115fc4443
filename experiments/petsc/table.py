#!/usr/bin/env python3
"""Tables from experiments/petsc/run.sh's JSON lines: per setting, ranks and matrix, the best
of PETSc's own scatters (-sf_type basic, neighbor) against
  1. (issue 6) the best sparsecomm backend through the MatMult adapter; goal <= 0.95 on the
     emulated cluster (inter-node communication matters), <= 1.05 on the single node;
  2. (issue 30) PETSc's MatMult with -sf_type sparsecomm (backend auto), what an unmodified
     program gets from -dll_append; goal on the cluster every case <= 0.90 and the median
     <= 0.75, on the node never above 1.05.
Median us per MatMult over interleaved rounds, every variant in the same run.
Usage: table.py petsc.jsonl

For a cluster case, "inter" is the share of the best PETSc time that the network adds:
1 - best PETSc time on the single node / best PETSc time on the cluster, same matrix and
rank count, same run (only PETSc's own times: it does not depend on any sparsecomm result).
Where it is small, the product would be bound by the CPU of the ranks sharing this
machine's 2 cores rather than by the network, and the 0.95 goal ("where inter-node
communication matters") would not apply; the summary prints its range."""
import collections
import json
import sys


def load_runs(path):
    """{(label, ranks, matrix): {scatter: record}} from bench_petsc.sh's JSON lines."""
    runs = collections.defaultdict(dict)
    for line in open(path):
        r = json.loads(line)
        runs[(r["label"], r["ranks"], r["matrix"])][r["scatter"]] = r
    return runs


PETSC_OWN = ("petsc -sf_type basic", "petsc -sf_type neighbor")


def best(case, prefix):
    """The fastest scatter of one case whose name starts with prefix (a string or a tuple:
    PETSC_OWN, "sparsecomm ", "petsc -sf_type sparsecomm/auto"): (name, us), or (None, None)
    if the case has none."""
    names = [k for k in case if k.startswith(prefix)]
    if not names:
        return None, None
    k = min(names, key=lambda k: case[k]["us"])
    return k, case[k]["us"]


def table(runs, title, ours, cluster_goal, node_goal, median_goal=None):
    print(title + "\n")
    print("%-8s %5s  %-34s %-22s %9s  %-30s %9s %7s  %s" % (
        "setting", "ranks", "matrix", "best PETSc", "us", "sparsecomm", "us", "ratio", "goal"))
    summary = collections.defaultdict(lambda: [0, 0, []])
    shares = collections.defaultdict(list)  # ranks -> network share of PETSc's time, cluster cases
    for key in sorted(runs, key=lambda k: (k[0] != "node", k[1], k[2])):
        label, ranks, matrix = key
        bp, tp = best(runs[key], PETSC_OWN)
        bo, to = best(runs[key], ours)
        if bp is None or bo is None:
            continue
        ratio = to / tp
        limit = cluster_goal if label == "cluster" else node_goal
        ok = ratio <= limit
        s = summary[(label, ranks)]
        s[0] += ok
        s[1] += 1
        s[2].append(ratio)
        inter = ""
        if label == "cluster":
            tn = best(runs.get(("node", ranks, matrix), {}), PETSC_OWN)[1]
            if tn is not None:
                share = 1 - tn / tp
                inter = "  inter %3.0f%%" % (100 * share)
                shares[ranks].append(share)
        print("%-8s %5d  %-34s %-22s %9.1f  %-30s %9.1f %7.3f  %s%s" % (
            label, ranks, matrix[:34], bp.replace("petsc ", ""), tp, bo.replace("sparsecomm ", "")[:30], to, ratio,
            ("met" if ok else "NOT met") + " (<= %.2f)" % limit, inter))
    print("\n%-8s %5s %8s %12s %12s" % ("setting", "ranks", "goal met", "median ratio", "worst ratio"))
    for (label, ranks), (ok, n, rs) in sorted(summary.items(), key=lambda kv: (kv[0][0] != "node", kv[0][1])):
        rs.sort()
        med = rs[len(rs) // 2]
        extra = ""
        if median_goal and label == "cluster":
            extra = "   median goal <= %.2f %s" % (median_goal, "met" if med <= median_goal else "NOT met")
        print("%-8s %5d %4d/%-3d %12.3f %12.3f%s" % (label, ranks, ok, n, med, rs[-1], extra))
    if shares:
        print("\nthe network's share of the best PETSc time on the cluster (inter): " + ", ".join(
            "%d ranks %.0f-%.0f%% (median %.0f%%)" % (r, 100 * min(v), 100 * max(v), 100 * sorted(v)[len(v) // 2])
            for r, v in sorted(shares.items())))


def main(path):
    runs = load_runs(path)
    if not runs:
        sys.exit("table.py: no results in " + path)
    table(runs, "1. MatMult, best sparsecomm backend (adapter) / best PETSc scatter", "sparsecomm ", 0.95, 1.05)
    print()
    table(runs, "2. MatMult, -sf_type sparsecomm (auto) / best PETSc scatter (basic, neighbor)",
          "petsc -sf_type sparsecomm/auto", 0.90, 1.05, median_goal=0.75)


if __name__ == "__main__":
    if any(a in ("-h", "--help") for a in sys.argv[1:]):  # usage: the module docstring
        sys.exit(print(__doc__.strip()))
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
