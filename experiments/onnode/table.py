#!/usr/bin/env python3
"""The tables of experiments/onnode/README.md from run.sh's sweeps.

    table.py RESULTS_DIR     (sweep_<i>.jsonl and sweep_<i>.load, as run.sh writes them)

Per size and variant the fraction of the one-copy limit (memcpy time / variant time, paired
per round inside a sweep) and the time ratio of shm to p2p (same shape and way, paired per
round), each as the median over the sweeps with their range (min-max) beside it. A variant
whose values were not all verified in some sweep is marked; the goals of issue 69 are
checked at the end."""
import glob
import json
import os
import re
import statistics
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import plotlib  # noqa: E402


def load(d):
    sweeps = []
    for f in sorted(glob.glob(os.path.join(d, "sweep_*.jsonl")), key=lambda s: int(re.findall(r"(\d+)", s)[-1])):
        recs = [json.loads(l) for l in open(f) if l.strip()]
        by = {(r["size_bytes"], r["variant"]): r for r in recs}
        loadf = f[: -len(".jsonl")] + ".load"
        loads = open(loadf).read().strip().splitlines() if os.path.exists(loadf) else []
        sweeps.append((os.path.basename(f), by, loads))
    return sweeps


def med(xs):
    return statistics.median(xs) if xs else float("nan")


def cell(xs, fmt="%.2f"):
    if not xs:
        return "-"
    if len(xs) == 1:
        return fmt % xs[0]
    return (fmt % med(xs)) + " (" + (fmt % min(xs)) + "-" + (fmt % max(xs)) + ")"


def size_name(b):
    for unit, n in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if b >= n and b % n == 0:
            return "%d %s" % (b // n, unit)
    return "%d B" % b


def main():
    plotlib.usage(__doc__)
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    sweeps = load(sys.argv[1])
    if not sweeps:
        sys.exit("table.py: no sweep_*.jsonl in " + sys.argv[1])
    sizes = sorted({k[0] for _, by, _ in sweeps for k in by})
    bad = sorted({k for _, by, _ in sweeps for k, r in by.items() if not r["verified"]})
    frac = lambda s, v: [by[(s, v)]["fraction_of_one_copy"] for _, by, _ in sweeps if (s, v) in by]
    vsp = lambda s, v: [by[(s, v)]["vs_p2p"] for _, by, _ in sweeps if (s, v) in by and by[(s, v)]["vs_p2p"]]
    fx = lambda s, v: [by[(s, v)]["fraction_of_cross_core_copy"] for _, by, _ in sweeps
                       if (s, v) in by and by[(s, v)].get("fraction_of_cross_core_copy") is not None]
    gbs = lambda s, v: [s / by[(s, v)]["time_s"] / 1e9 for _, by, _ in sweeps if (s, v) in by]

    print("%d sweeps: %s" % (len(sweeps), ", ".join(n for n, _, _ in sweeps)))
    for n, _, loads in sweeps:
        for l in loads:
            print("  %s %s" % (n, l))
    print()
    print("Halo shape: fraction of the one-copy limit (memcpy time / exchange time), median over the sweeps (range)\n")
    ways = ["pack", "no-unpack", "direct"]
    hdr = ["halo", "memcpy GB/s", "cross-core"] + ["%s %s" % (b, w) for b in ("p2p", "shm", "neighbor") for w in ways]
    print("| " + " | ".join(hdr) + " |")
    print("|" + "---|" * len(hdr))
    for s in sizes:
        row = [size_name(s), cell(gbs(s, "memcpy"), "%.1f"), cell(frac(s, "cross-core"), "%.3f")]
        row += [cell(frac(s, "halo %s %s" % (b, w)), "%.3f") for b in ("p2p", "shm", "neighbor") for w in ways]
        print("| " + " | ".join(row) + " |")
    print()
    print("Against the cross-core copy (the partner's values copied once out of its memory): fraction of its")
    print("bytes per second, each backend's best way (median over the sweeps, range), and the gather shape\n")
    hdr = ["size", "cross-core GB/s", "p2p best", "shm best", "neighbor best", "gather p2p", "gather shm", "gather neighbor"]
    print("| " + " | ".join(hdr) + " |")
    print("|" + "---|" * len(hdr))
    for s in sizes:
        row = [size_name(s), cell(gbs(s, "cross-core"), "%.1f")]
        for b in ("p2p", "shm", "neighbor"):
            w = max(ways, key=lambda w: med(fx(s, "halo %s %s" % (b, w))) if fx(s, "halo %s %s" % (b, w)) else -1)
            row.append(cell(fx(s, "halo %s %s" % (b, w)), "%.3f") + " " + w)
        row += [cell(fx(s, "gather " + b), "%.3f") for b in ("p2p", "shm", "neighbor")]
        print("| " + " | ".join(row) + " |")
    print()
    print("Halo shape: time of shm and neighbor / p2p's, same way, paired per round (< 1: faster than p2p)\n")
    hdr = ["halo"] + ["%s %s" % (b, w) for b in ("shm", "neighbor") for w in ways] + ["shm best / p2p best"]
    print("| " + " | ".join(hdr) + " |")
    print("|" + "---|" * len(hdr))
    best = {}
    for s in sizes:
        row = [size_name(s)] + [cell(vsp(s, "halo %s %s" % (b, w)), "%.2f") for b in ("shm", "neighbor") for w in ways]
        # Best way of each backend per sweep (lowest time), shm's over p2p's.
        ratios = []
        for _, by, _ in sweeps:
            t = {b: [by[(s, "halo %s %s" % (b, w))]["time_s"] for w in ways if (s, "halo %s %s" % (b, w)) in by]
                 for b in ("p2p", "shm")}
            if t["shm"] and t["p2p"]:  # (a sweep still running has not written every variant)
                ratios.append(min(t["shm"]) / min(t["p2p"]))
        best[s] = ratios
        row.append(cell(ratios, "%.2f"))
        print("| " + " | ".join(row) + " |")
    print()
    print("Gather shape (MPI_Neighbor_allgather semantics): fraction of the one-copy limit; shm / p2p time\n")
    hdr = ["block", "memcpy GB/s", "p2p", "shm", "neighbor", "shm / p2p", "neighbor / p2p"]
    print("| " + " | ".join(hdr) + " |")
    print("|" + "---|" * len(hdr))
    for s in sizes:
        row = [size_name(s), cell(gbs(s, "memcpy"), "%.1f")]
        row += [cell(frac(s, "gather " + b), "%.3f") for b in ("p2p", "shm", "neighbor")]
        row += [cell(vsp(s, "gather " + b), "%.2f") for b in ("shm", "neighbor")]
        print("| " + " | ".join(row) + " |")
    print()
    print("Goals (issue 69), on the medians over the sweeps:")
    for s in sizes:
        if s < (1 << 20):
            continue
        f = max(med(frac(s, "halo shm " + w)) for w in ways)
        g = med(frac(s, "gather shm"))
        fxs = max(med(fx(s, "halo shm " + w)) for w in ways) if fx(s, "halo shm pack") else float("nan")
        print("  %s: shm >= 0.70 of the one-copy limit: halo (best way) %.3f %s, gather %.3f %s"
              " (of the cross-core copy: halo %.3f, gather %.3f)"
              % (size_name(s), f, "met" if f >= 0.70 else "MISSED", g, "met" if g >= 0.70 else "MISSED",
                 fxs, med(fx(s, "gather shm")) if fx(s, "gather shm") else float("nan")))
    for s in sizes:
        if s >= (1 << 20):
            continue
        same = {w: med(vsp(s, "halo shm " + w)) for w in ways}
        g = med(vsp(s, "gather shm"))
        slower = [w for w, r in same.items() if r > 1.0]
        print("  %s: shm never slower than p2p: best/best %.2f, per way %s, gather %.2f -> %s"
              % (size_name(s), med(best[s]), ", ".join("%s %.2f" % kv for kv in same.items()), g,
                 "met" if med(best[s]) <= 1.0 and g <= 1.0 else "MISSED")
              + (" (slower in way: %s)" % ", ".join(slower) if slower else ""))
    if bad:
        print("\nNOT VERIFIED in some sweep: " + ", ".join("%s at %d B" % (v, s) for s, v in bad))
    else:
        print("\nEvery exchanged value verified in every sweep.")


main()
