#!/usr/bin/python3
"""Plots the SpMM comparison written by sparsecomm_spmm --json.

usage: /usr/bin/python3 experiments/combining/plot_spmm.py results/spmm.jsonl [out.png]
One row of panels per rank count found in the file (the last record of each (ranks, regions,
matrix, variant) wins): grouped bars per matrix of the speedup of every variant over the
global MPI_Allgatherv baseline (log scale) and over the per-column neighbor exchange.
Uses Debian's python3-matplotlib (scripts/setup.sh installs it)."""
import os
import sys
from collections import OrderedDict

import matplotlib
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import plotlib  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def order(r):
    """allgather, neighbor, other per-column backends, combined by (k, aware), halo."""
    kind, b = r["kind"], r["backend"]
    if kind == "allgather":
        return (0, "", 0, 0)
    if kind == "gather" and b == "neighbor":
        return (1, "", 0, 0)
    if kind == "gather" and b != "combined":
        return (2, b, 0, 0)
    if kind == "gather":
        return (3, "", r["k"], 1 if r["aware"] else 0)
    return (4, b, 0, 0)


def color(r, kcolors, halo_colors):
    if r["kind"] == "allgather":
        return "0.3"
    if r["kind"] == "gather" and r["backend"] == "neighbor":
        return "black"
    if r["kind"] == "gather" and r["backend"] != "combined":
        return "0.6"
    if r["kind"] == "gather":
        return kcolors[r["k"]]
    return halo_colors[r["backend"]]


def main():
    src, out = plotlib.args(__doc__)
    recs = OrderedDict()
    for r in plotlib.records(src, "spmm"):
        recs[(r["ranks"], r["regions"], r["matrix"], r["variant"])] = r
    if not recs:
        sys.exit("no spmm records in " + src)
    # The per-column baseline: neighbor, or p2p where it does not exist (SMPI builds).
    base = next(iter(recs.values())).get("baseline", "neighbor")
    runs = OrderedDict()  # (ranks, regions) -> matrix -> variant -> record
    for (ranks, regions, matrix, variant), r in recs.items():
        runs.setdefault((ranks, regions), OrderedDict()).setdefault(matrix, OrderedDict())[variant] = r
    ks = sorted({r["k"] for r in recs.values() if r["kind"] == "gather" and r["backend"] == "combined"})
    cmap = plt.get_cmap("viridis")
    kcolors = {k: cmap(0.15 + 0.7 * i / max(1, len(ks) - 1)) for i, k in enumerate(ks)}
    halos = sorted({r["backend"] for r in recs.values() if r["kind"] == "halo"})
    hmap = plt.get_cmap("autumn")
    halo_colors = {b: hmap(0.1 + 0.7 * i / max(1, len(halos) - 1)) for i, b in enumerate(halos)}

    nmat = max(len(m) for m in runs.values())
    fig, axes = plt.subplots(len(runs), 2, figsize=(max(12, 2.6 * nmat + 4), 4.2 * len(runs)), squeeze=False)
    for row, ((ranks, regions), matrices) in enumerate(runs.items()):
        variants = OrderedDict()
        for m in matrices.values():
            for v, r in m.items():
                variants.setdefault(v, r)
        vlist = sorted(variants, key=lambda v: order(variants[v]))
        for col, (field, label, skip) in enumerate((("speedup_vs_allgather", "speedup over MPI_Allgatherv", "allgather"),
                                                    ("speedup_vs_neighbor", "speedup over per-column " + base,
                                                     base))):
            ax = axes[row][col]
            shown = [v for v in vlist if v != skip]
            width = 0.85 / max(1, len(shown))
            lo, hi = 1.0, 1.0
            for j, v in enumerate(shown):
                xs, ys = [], []
                for i, (mname, m) in enumerate(matrices.items()):
                    if v in m:
                        xs.append(i - 0.425 + width * (j + 0.5))
                        ys.append(m[v][field])
                lo, hi = min([lo] + ys), max([hi] + ys)
                r0 = variants[v]
                ax.bar(xs, ys, width=width, label=v, color=color(r0, kcolors, halo_colors),
                       hatch="//" if r0.get("aware") else None, edgecolor="white", linewidth=0.3)
            ax.axhline(1.0, color="black", linestyle=":", linewidth=1)
            ax.set_yscale("log")
            ax.set_ylim(lo / 1.5, hi * 1.5)
            ax.set_xticks(range(len(matrices)))
            ax.set_xticklabels(["%s\n(n=%d)" % (name, m[next(iter(m))]["cols"]) for name, m in matrices.items()],
                               fontsize=8)
            ax.set_ylabel(label, fontsize=9)
            ax.set_title("SpMM C = A x A(dense), %d ranks, %s" % (ranks, regions), fontsize=9)
            ax.grid(axis="y", alpha=0.3, which="both")
    # One legend for every panel, below them: inside an axes it covered the bars.
    handles = {}
    for ax in axes.flat:
        for h, lab in zip(*ax.get_legend_handles_labels()):
            handles.setdefault(lab, h)
    fig.tight_layout()
    fig.legend(list(handles.values()), list(handles), fontsize=7, loc="upper center", bbox_to_anchor=(0.5, 0.0),
               ncol=min(6, len(handles)))
    fig.savefig(out, dpi=100, bbox_inches="tight")
    print("wrote", out)


if __name__ == "__main__":
    main()
