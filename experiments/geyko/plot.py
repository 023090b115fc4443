#!/usr/bin/python3
"""Table and plots of the Geyko et al. (2023) SDDE reproduction (experiments/geyko/run.sh).

usage: /usr/bin/python3 experiments/geyko/plot.py RESULTS_DIR
Reads RESULTS_DIR/sdde.jsonl (`sparsecomm sdde --json` under SimGrid SMPI, regions = the
simulated nodes) and RESULTS_DIR/platform.txt (the smpi.sh line naming the platform and every
--cfg). Prints, per matrix, one row per (nodes, strategy): SIMULATED (modelled) pattern-discovery
time, its ratio to `personalized` at the same node count, and the inter-/intra-node messages
of the busiest rank. Writes
  geyko_time.png  simulated time vs nodes, one line per strategy, one panel per matrix;
  geyko_msgs.png  max inter-node messages sent per rank vs nodes, same layout.
Uses python3-matplotlib."""
import os
import re
import sys
from collections import OrderedDict

import matplotlib
import matplotlib.ticker
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import plotlib  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

PAPER = ("paper (Geyko, Collom, Schafer, Bridges, Bienz 2023, SuiteSparse matrices on a CPU cluster): the "
         "locality-aware SDDEs send far fewer inter-node messages and win at scale (up to ~20x)")
ORDER = ["personalized", "nbx", "rma", "locality_personalized", "locality_nbx"]
STYLE = {"personalized": ("C0", "o", "-"), "nbx": ("C1", "s", "-"), "rma": ("C2", "^", "-"),
         "locality_personalized": ("C0", "o", "--"), "locality_nbx": ("C1", "s", "--")}


def nodes_of(r):
    """Number of regions (= simulated nodes with --regions node) from "node (4 regions, size 32)"."""
    m = re.search(r"\((\d+) region", r.get("regions", ""))
    return int(m.group(1)) if m else 1


def strategy_key(s):
    return (ORDER.index(s) if s in ORDER else len(ORDER), s)


def main():
    d = plotlib.results_dir(__doc__)
    src = os.path.join(d, "sdde.jsonl")
    if not os.path.exists(src):
        sys.exit("no " + src + " (run experiments/geyko/run.sh first)")
    # (matrix) -> nodes -> strategy -> record; a later record for the same key wins (re-runs).
    data = OrderedDict()
    for r in plotlib.records(src, "sdde"):
        data.setdefault(r["matrix"], {}).setdefault(nodes_of(r), {})[r["strategy"]] = r
    if not data:
        sys.exit("no sdde records in " + src)

    print(PAPER)
    plat = os.path.join(d, "platform.txt")
    if os.path.exists(plat):
        with open(plat) as f:
            for line in f:
                print("SIMULATED with " + line.strip())
    print("time = SIMULATED (modelled) pattern_from_matrix time, max over ranks (SimGrid SMPI, not measured on "
          "hardware); ratio = time / personalized at the same node count; msgs = sent per rank in one discovery, "
          "max over ranks")
    for m, by_nodes in data.items():
        any_r = next(iter(next(iter(by_nodes.values())).values()))
        print("\n%s (%d rows, %d nonzeros)" % (m, any_r["rows"], any_r["nnz"]))
        print("%5s %6s  %-22s %14s %8s %15s %15s %9s" % (
            "nodes", "ranks", "strategy", "sim time [us]", "ratio", "inter max/rank", "intra max/rank", "verified"))
        for n in sorted(by_nodes):
            row = by_nodes[n]
            base = row.get("personalized")
            for s in sorted(row, key=strategy_key):
                r = row[s]
                ratio = r["setup_median_s"] / base["setup_median_s"] if base and base["setup_median_s"] > 0 else float("nan")
                print("%5d %6d  %-22s %14.1f %8.2f %15.0f %15.0f %9s" % (
                    n, r["ranks"], s, r["setup_median_s"] * 1e6, ratio, r["msgs_inter_max"], r["msgs_intra_max"],
                    "yes" if r["verified"] else "NO"))

    strategies = sorted({s for bn in data.values() for row in bn.values() for s in row}, key=strategy_key)
    for fname, field, scale, ylabel, title in (
            ("geyko_time.png", "setup_median_s", 1e6, "SIMULATED time [us] (SMPI model)",
             "SDDE pattern discovery: SIMULATED time"),
            ("geyko_msgs.png", "msgs_inter_max", 1.0, "max inter-node messages per rank",
             "SDDE: inter-node messages of the busiest rank")):
        fig, axes = plt.subplots(1, len(data), figsize=(5.5 * len(data), 4.5), squeeze=False)
        for ax, (m, by_nodes) in zip(axes[0], data.items()):
            for s in strategies:
                pts = [(n, by_nodes[n][s][field] * scale) for n in sorted(by_nodes) if s in by_nodes[n]]
                if not pts:
                    continue
                color, marker, ls = STYLE.get(s, (None, "x", ":"))
                ax.plot([p[0] for p in pts], [p[1] for p in pts], marker=marker, linestyle=ls, color=color, label=s)
            ax.set_xscale("log", base=2)
            ax.set_xticks(sorted(by_nodes))
            ax.set_xticklabels([str(n) for n in sorted(by_nodes)])
            ax.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())
            ax.set_yscale("log")
            ax.set_xlabel("nodes (32 ranks each)")
            ax.set_ylabel(ylabel)
            ax.set_title(m, fontsize=9)
            ax.grid(True, which="both", alpha=0.3)
            ax.legend(fontsize=7)
        fig.suptitle(title, fontsize=10)
        fig.tight_layout()
        out = os.path.join(d, fname)
        fig.savefig(out, dpi=110)
        print("wrote", out)


if __name__ == "__main__":
    main()
