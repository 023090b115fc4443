#!/usr/bin/python3
"""Plots the AMG per-level halo-exchange times written by sparsecomm_amg_spmv --json.

usage: /usr/bin/python3 experiments/collom/plot_amg.py results/amg.jsonl [out.png]
One panel per (ranks, regions) run found in the file (the last run of each): time per
exchange per level for Hypre and every backend (log scale), and the speedup over Hypre.
Uses Debian's python3-matplotlib (scripts/setup.sh installs it)."""
import os
import sys
from collections import OrderedDict

import matplotlib
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import plotlib  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main():
    src, out = plotlib.args(__doc__)
    runs = OrderedDict()
    for r in plotlib.records(src, "amg_spmv"):
        key = (r["nx"], r["ny"], r["ranks"], r["regions"])
        runs.setdefault(key, {})[(r["level"], r["backend"])] = r
    if not runs:
        sys.exit("no amg_spmv records in " + src)
    fig, axes = plt.subplots(2, len(runs), figsize=(6 * len(runs), 8), squeeze=False)
    for col, (key, recs) in enumerate(runs.items()):
        levels = sorted({lv for lv, _ in recs})
        backends = sorted({b for _, b in recs})
        colors = {b: "C%d" % i for i, b in enumerate(backends)}
        top, bottom = axes[0][col], axes[1][col]
        for b in backends:
            t = [recs[(lv, b)]["comm_s"] * 1e6 for lv in levels]
            top.plot(levels, t, marker="o", label=b, color=colors[b], linewidth=2.5 if b == "hypre" else 1.5)
            if b != "hypre":
                s = [recs[(lv, "hypre")]["comm_s"] / recs[(lv, b)]["comm_s"] for lv in levels]
                bottom.plot(levels, s, marker="o", label=b, color=colors[b])
        top.set_yscale("log")
        top.set_ylabel("halo exchange time per SpMV [us]")
        top.set_title("%dx%d, %d ranks, %s" % key)
        top.legend(fontsize=8)
        bottom.axhline(1.0, color="gray", linestyle="--")
        bottom.set_xlabel("AMG level")
        bottom.set_ylabel("speedup over Hypre's comm")
        bottom.legend(fontsize=8)
        for ax in (top, bottom):
            ax.set_xticks(levels)
            ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    print("wrote", out)


if __name__ == "__main__":
    main()
