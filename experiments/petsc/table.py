#!/usr/bin/env python3
"""Tables from experiments/petsc/run.sh's JSON lines: per setting, ranks and matrix, the best
of PETSc's own scatters (-sf_type basic, neighbor) against
  1. (issue 6) the best sparsecomm backend through the MatMult adapter; goal <= 0.95 on the
     emulated cluster (inter-node communication matters), <= 1.05 on the single node;
  2. (issue 30) PETSc's MatMult with -sf_type sparsecomm (backend auto), what an unmodified
     program gets from -dll_append; goal on the cluster every case <= 0.90 and the median
     <= 0.75, on the node never above 1.05.
Median us per MatMult over interleaved rounds, every variant in the same run; a ratio is
paired (per round, median over rounds) where the run recorded its rounds.

For a cluster case, "inter" is the share of the best PETSc time that the network adds:
1 - best PETSc time on the single node / best PETSc time on the cluster, same matrix and
rank count, same run (only PETSc's own times: it does not depend on any sparsecomm result).
Where it is small, the product would be bound by the CPU of the ranks sharing this
machine's 2 cores rather than by the network, and the 0.95 goal ("where inter-node
communication matters") would not apply; the summary prints its range.

"floor" (with --wire) is the wire floor after duplicate removal over the best PETSc time
(wire_floor.py: the busiest node's distinct inter-node bytes at 1 Gbit/s, 4 nodes;
SuiteSparse cases on the cluster only): a computed bound, so where it is above a goal that
case's goal is out of reach; the summary says how many cases are within reach and the median
of the floors (above the median goal: the median goal is out of reach). Runs since
2026-11-27 also print, for comparison only, "cpu", the compute floor (the products with no
exchange, first start to last end over the ranks: close to a bound, but it includes the
ranks' skew in leaving the barrier, and at 16 ranks on the node a scatter has measured below
it), and "ref", the one-message reference (the products plus one 8-byte message into every
rank with ghosts: not a bound).
Usage: table.py petsc.jsonl [--wire]"""
import collections
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import plotlib  # noqa: E402


def load_runs(path):
    """{(label, ranks, matrix): {scatter: record}} from bench_petsc.sh's JSON lines."""
    runs = collections.defaultdict(dict)
    for line in open(path):
        r = json.loads(line)
        runs[(r["label"], r["ranks"], r["matrix"])][r["scatter"]] = r
    return runs


PETSC_OWN = ("petsc -sf_type basic", "petsc -sf_type neighbor")
FLOOR = "floor: products without the exchange"
REFERENCE = "reference: products + one message per rank"


def candidates(case, prefix, exact=False):
    """The scatters of one case whose name starts with prefix (a string or a tuple:
    PETSC_OWN, "sparsecomm "), or is it (exact: "petsc -sf_type sparsecomm/auto", which
    "petsc -sf_type sparsecomm/auto race=30" must not join), never the yardsticks."""
    if exact:
        return [prefix] if prefix in case else []
    return [k for k in case if k.startswith(prefix) and k not in (FLOOR, REFERENCE)]


def best(case, prefix):
    """The fastest of candidates(case, prefix): (name, us), or (None, None) if none."""
    names = candidates(case, prefix)
    if not names:
        return None, None
    k = min(names, key=lambda k: case[k]["us"])
    return k, case[k]["us"]


def paired(case, a, b):
    """a's time over b's in one case: the median over rounds of the two times of the same
    round where the run recorded every round (rounds_us, runs since 2026-11-27; a slow phase
    of the machine cancels), else the ratio of the medians."""
    ra, rb = case[a].get("rounds_us"), case[b].get("rounds_us")
    if ra and rb and len(ra) == len(rb):
        return plotlib.paired(ra, rb)
    return case[a]["us"] / case[b]["us"]


def best_paired(case, prefix, against, exact=False):
    """The one of candidates(case, prefix, exact) of lowest paired ratio to `against`: (name, ratio)."""
    names = candidates(case, prefix, exact)
    if not names:
        return None, None
    k = min(names, key=lambda k: paired(case, k, against))
    return k, paired(case, k, against)


def wire_floors(runs, rate=125.0, nodes=4):
    """{(label, ranks, matrix): us} the wire floor after duplicate removal of each cluster
    case whose matrix is a shared SuiteSparse file (wire_floor.py's count)."""
    import wire_floor
    out, patterns = {}, {}
    for label, ranks, matrix in runs:
        path = wire_floor.matrix_path(matrix) if label == "cluster" and ranks % nodes == 0 else None
        if path is None:
            continue
        if matrix not in patterns:
            patterns[matrix] = wire_floor.read_pattern(path)
        n, rows, cols = patterns[matrix]
        out[(label, ranks, matrix)] = wire_floor.node_bytes(n, rows, cols, nodes, ranks // nodes)[1] / rate
    return out


def table(runs, title, ours, cluster_goal, node_goal, median_goal=None, wire=None, exact=False):
    print(title + "\n")
    print("%-8s %5s  %-34s %-22s %9s  %-30s %9s %7s  %s" % (
        "setting", "ranks", "matrix", "best PETSc", "us", "sparsecomm", "us", "ratio", "goal"))
    summary = collections.defaultdict(lambda: [0, 0, [], 0, 0, []])  # met, n, ratios, reachable, met there, floors
    shares = collections.defaultdict(list)  # ranks -> network share of PETSc's time, cluster cases
    for key in sorted(runs, key=lambda k: (k[0] != "node", k[1], k[2])):
        label, ranks, matrix = key
        bp, tp = best(runs[key], PETSC_OWN)
        if bp is None:
            continue
        bo, ratio = best_paired(runs[key], ours, bp, exact)
        if bo is None:
            continue
        to = runs[key][bo]["us"]
        limit = cluster_goal if label == "cluster" else node_goal
        ok = ratio <= limit
        s = summary[(label, ranks)]
        s[0] += ok
        s[1] += 1
        s[2].append(ratio)
        floor = wire[key] / tp if wire and key in wire else None
        reach = ""
        if FLOOR in runs[key]:
            reach += "  cpu %.2f" % paired(runs[key], FLOOR, bp)
        if REFERENCE in runs[key]:
            reach += "  ref %.2f" % paired(runs[key], REFERENCE, bp)
        if floor is not None:
            s[5].append(floor)
            reach += "  floor %.2f" % floor
        if wire is not None:  # no floor known (a generated matrix): within reach
            if floor is None or floor <= limit:
                s[3] += 1
                s[4] += ok
            elif not ok:
                reach += " (out of reach)"
        inter = ""
        if label == "cluster":
            tn = best(runs.get(("node", ranks, matrix), {}), PETSC_OWN)[1]
            if tn is not None:
                share = 1 - tn / tp
                inter = "  inter %3.0f%%" % (100 * share)
                shares[ranks].append(share)
        print("%-8s %5d  %-34s %-22s %9.1f  %-30s %9.1f %7.3f  %s%s" % (
            label, ranks, matrix[:34], bp.replace("petsc ", ""), tp, bo.replace("sparsecomm ", "")[:30], to, ratio,
            ("met" if ok else "NOT met") + " (<= %.2f)" % limit, inter + reach))
    print("\n%-8s %5s %8s %12s %12s" % ("setting", "ranks", "goal met", "median ratio", "worst ratio"))
    for (label, ranks), (ok, n, rs, nreach, okreach, floors) in sorted(summary.items(),
                                                                    key=lambda kv: (kv[0][0] != "node", kv[0][1])):
        rs.sort()
        med = rs[len(rs) // 2]
        extra = ""
        if median_goal and label == "cluster":
            extra = "   median goal <= %.2f %s" % (median_goal, "met" if med <= median_goal else "NOT met")
            if floors:
                fm = sorted(floors)[len(floors) // 2]
                extra += " (median floor %.3f%s)" % (fm, ": out of reach" if fm > median_goal else "")
        if floors:
            extra += "   within reach (floor <= goal): met %d of %d" % (okreach, nreach)
        print("%-8s %5d %4d/%-3d %12.3f %12.3f%s" % (label, ranks, ok, n, med, rs[-1], extra))
    if shares:
        print("\nthe network's share of the best PETSc time on the cluster (inter): " + ", ".join(
            "%d ranks %.0f-%.0f%% (median %.0f%%)" % (r, 100 * min(v), 100 * max(v), 100 * sorted(v)[len(v) // 2])
            for r, v in sorted(shares.items())))


def main(path, with_wire=False):
    runs = load_runs(path)
    if not runs:
        sys.exit("table.py: no results in " + path)
    wire = wire_floors(runs) if with_wire else None
    table(runs, "1. MatMult, best sparsecomm backend (adapter) / best PETSc scatter", "sparsecomm ", 0.95, 1.05, wire=wire)
    print()
    table(runs, "2. MatMult, -sf_type sparsecomm (auto) / best PETSc scatter (basic, neighbor)",
          "petsc -sf_type sparsecomm/auto", 0.90, 1.05, median_goal=0.75, wire=wire, exact=True)
    race = "petsc -sf_type sparsecomm/auto race=30"
    if any(race in case for case in runs.values()):  # runs since 2026-11-29
        print()
        table(runs, "3. MatMult, -sf_type sparsecomm (auto, -sf_sparsecomm_options race=30) / best PETSc scatter",
              race, 0.90, 1.05, median_goal=0.75, wire=wire, exact=True)


if __name__ == "__main__":
    plotlib.usage(__doc__)
    args = [a for a in sys.argv[1:] if a != "--wire"]
    if len(args) != 1:
        sys.exit(__doc__)
    main(args[0], with_wire="--wire" in sys.argv[1:])
