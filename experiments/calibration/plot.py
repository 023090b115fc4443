#!/usr/bin/python3
"""Simulated vs measured latency per backend (experiments/calibration/run.sh).

usage: /usr/bin/python3 experiments/calibration/plot.py RESULTS_DIR
Reads RESULTS_DIR/measured.jsonl (nbrbench on the emulated cluster) and the same nbrbench
under SMPI on a platform describing that cluster: RESULTS_DIR/simulated.jsonl (SMPI's usual
0.4 us of CPU per message) and, when present, simulated_cpu.jsonl (CPU per message = the
intra-node latency calibrated on the cluster, where 16 ranks share 2 cores). Prints, per (topology, size, backend), both latencies (median over rounds of the
slowest rank) and the error (simulated - measured) / measured, with the median absolute error
per backend; writes calibration.png (simulated vs measured, log-log, the diagonal = exact).
Uses Debian's python3-matplotlib."""
import os
import statistics
import sys
from collections import OrderedDict

import matplotlib
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import plotlib  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


VARIANTS = [
    ("simulated.jsonl", "SMPI, 0.4 us CPU per message (an HPC node's)"),
    ("simulated_cpu.jsonl", "SMPI, CPU per message = calibrated alpha_intra"),
]


def load(path):
    out = OrderedDict()
    for r in plotlib.records_if_present(path, "nbrbench"):
        out[(r["topology"], r["size_bytes"], r["variant"])] = r
    return out


def compare(meas, sim, title):
    """Prints the table of one simulation against the measurement; returns the points."""
    keys = [k for k in meas if k in sim]
    print("== " + title)
    print("%-10s %6s  %-22s %14s %15s %8s" % ("topology", "bytes", "backend", "measured[us]", "SIMULATED[us]", "error"))
    errs = OrderedDict()
    pts = []
    for k in keys:
        m, s = meas[k]["lat_max_s"], sim[k]["lat_max_s"]
        e = (s - m) / m
        errs.setdefault(k[2], []).append(abs(e))
        pts.append((m, s, k))
        print("%-10s %6d  %-22s %14.1f %15.1f %+7.0f%%" % (k[0], k[1], k[2], m * 1e6, s * 1e6, 100 * e))
    print("\nmedian |error| per backend:")
    for b, v in errs.items():
        print("  %-22s %5.0f%%  (%d cases)" % (b, 100 * statistics.median(v), len(v)))
    # Does the simulation at least rank the backends like the measurement does?
    same, total = 0, 0
    for topo, size in OrderedDict(((k[0], k[1]), True) for k in keys):
        vs = [k for k in keys if k[0] == topo and k[1] == size]
        if len(vs) < 2:
            continue
        total += 1
        best_m = min(vs, key=lambda k: meas[k]["lat_max_s"])
        best_s = min(vs, key=lambda k: sim[k]["lat_max_s"])
        same += best_m == best_s
    if total:
        print("same fastest backend in simulation and measurement: %d of %d (topology, size) cases" % (same, total))
    print()
    return pts


def main():
    d = plotlib.results_dir(__doc__)
    meas = load(os.path.join(d, "measured.jsonl"))
    panels = []
    for name, title in VARIANTS:
        sim = load(os.path.join(d, name))
        if any(k in sim for k in meas):
            panels.append((title, compare(meas, sim, title)))
    if not panels:
        sys.exit("no (topology, size, variant) measured and simulated in " + d)
    fig, axes = plt.subplots(1, len(panels), figsize=(5.5 * len(panels), 5), squeeze=False)
    for ax, (title, pts) in zip(axes[0], panels):
        for b in OrderedDict((p[2][2], True) for p in pts):
            xs = [p[0] * 1e6 for p in pts if p[2][2] == b]
            ys = [p[1] * 1e6 for p in pts if p[2][2] == b]
            ax.scatter(xs, ys, label=b)
        lo = min(min(p[0], p[1]) for p in pts) * 1e6 / 1.5
        hi = max(max(p[0], p[1]) for p in pts) * 1e6 * 1.5
        ax.plot([lo, hi], [lo, hi], "k--", linewidth=1)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("measured on the emulated cluster [us]")
        ax.set_ylabel("SIMULATED (SMPI) [us]")
        ax.set_title(title, fontsize=9)
        ax.legend(fontsize=7)
    fig.suptitle("16 ranks, 4 nodes x 4: simulated vs measured")
    fig.tight_layout()
    fig.savefig(os.path.join(d, "calibration.png"), dpi=120)
    print("wrote", os.path.join(d, "calibration.png"))


if __name__ == "__main__":
    main()
