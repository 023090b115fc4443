#!/usr/bin/python3
"""Plots the neighborhood-allgather microbenchmark written by sparsecomm_nbrbench --json.

usage: /usr/bin/python3 experiments/combining/plot_nbrbench.py results/nbr.jsonl [out.png]
Writes two figures (the last record of each (ranks, regions, topology, size, variant) wins):
  out.png            one panel pair per topology: latency per exchange vs message size
                     (log-log; neighbor thick black, p2p gray, combined colored by k, solid
                     topology-agnostic, dashed topology-aware) and the speedup over neighbor;
  out_speedup.png    speedup over neighbor per topology and variant, one row of grouped
                     bars per message size (the view of the papers' small-message figures).
Uses Debian's python3-matplotlib (scripts/setup.sh installs it)."""
import math
import os
import sys
from collections import OrderedDict

import matplotlib
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import plotlib  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def variant_key(r):
    """Sort order: neighbor, other backends, combined by (k, aware)."""
    if r["backend"] == "neighbor":
        return (0, "", 0, 0)
    if r["backend"] != "combined":
        return (1, r["backend"], 0, 0)
    return (2, "", r["k"], 1 if r["aware"] else 0)


def style(r, kcolors):
    if r["backend"] == "neighbor":
        return dict(color="black", linewidth=2.5, linestyle="-", marker="o")
    if r["backend"] != "combined":
        return dict(color="0.55", linewidth=1.5, linestyle="-", marker="s")
    return dict(color=kcolors[r["k"]], linewidth=1.5, linestyle="--" if r["aware"] else "-",
                marker="^" if r["aware"] else "v")


def main():
    src, out = plotlib.args(__doc__)
    recs = OrderedDict()
    for r in plotlib.records(src, "nbrbench"):
        recs[(r["ranks"], r["regions"], r["topology"], r["size_bytes"], r["variant"])] = r
    if not recs:
        sys.exit("no nbrbench records in " + src)
    # The baseline: MPI's neighbor collective, or p2p where it does not exist (SMPI builds).
    base = next(iter(recs.values())).get("baseline", "neighbor")
    panels = OrderedDict()  # (ranks, regions, topology) -> {variant: [records]}
    for (ranks, regions, topo, size, variant), r in recs.items():
        panels.setdefault((ranks, regions, topo), OrderedDict()).setdefault(variant, []).append(r)
    ks = sorted({r["k"] for r in recs.values() if r["backend"] == "combined"})
    cmap = plt.get_cmap("viridis")
    kcolors = {k: cmap(0.1 + 0.8 * i / max(1, len(ks) - 1)) for i, k in enumerate(ks)}

    # Figure 1: latency and speedup vs size, one column of two panels per topology.
    ncols = min(4, len(panels))
    nrows = math.ceil(len(panels) / ncols)
    fig, axes = plt.subplots(2 * nrows, ncols, figsize=(4.6 * ncols, 6.4 * nrows), squeeze=False)
    for idx, ((ranks, regions, topo), by_variant) in enumerate(panels.items()):
        top, bottom = axes[2 * (idx // ncols)][idx % ncols], axes[2 * (idx // ncols) + 1][idx % ncols]
        variants = sorted(by_variant, key=lambda v: variant_key(by_variant[v][0]))
        for v in variants:
            rs = sorted(by_variant[v], key=lambda r: r["size_bytes"])
            sizes = [max(r["size_bytes"], 1) for r in rs]
            st = style(rs[0], kcolors)
            top.plot(sizes, [r["lat_max_s"] * 1e6 for r in rs], label=v, markersize=4, **st)
            if rs[0]["backend"] != base:
                bottom.plot(sizes, [r["speedup_vs_neighbor"] for r in rs], label=v, markersize=4, **st)
        deg = next(iter(by_variant.values()))[0].get("out_degree_max")
        top.set_title("%s  (%d ranks, out-deg max %s)" % (topo, ranks, deg), fontsize=9)
        top.set_xscale("log", base=2)
        top.set_yscale("log")
        top.set_ylabel("latency per exchange [us]", fontsize=8)
        bottom.set_xscale("log", base=2)
        bottom.axhline(1.0, color="black", linestyle=":", linewidth=1)
        bottom.set_ylabel("speedup over " + base, fontsize=8)
        bottom.set_xlabel("message size [bytes]", fontsize=8)
        for ax in (top, bottom):
            ax.grid(alpha=0.3)
            ax.tick_params(labelsize=7)
        if idx == 0:
            top.legend(fontsize=6, ncol=2)
    for idx in range(len(panels), nrows * ncols):
        axes[2 * (idx // ncols)][idx % ncols].axis("off")
        axes[2 * (idx // ncols) + 1][idx % ncols].axis("off")
    fig.suptitle("neighborhood allgather: latency (median over rounds of max over ranks) and speedup over "
                 "%s (%s)" % ("MPI neighbor" if base == "neighbor" else base, next(iter(panels))[1]), fontsize=10)
    fig.tight_layout(rect=(0, 0, 1, 0.98))
    fig.savefig(out, dpi=100)
    print("wrote", out)

    # Figure 2: grouped bars of the speedup over neighbor, one row per message size.
    sizes = sorted({k[3] for k in recs})
    variants = sorted({k[4] for k in recs if not k[4] == base},
                      key=lambda v: variant_key(next(r for r in recs.values() if r["variant"] == v)))
    topos = list(panels)
    fig, axes = plt.subplots(len(sizes), 1, figsize=(min(18, max(8, 1.4 * len(topos) + 2)), 3.2 * len(sizes)),
                             squeeze=False)
    width = 0.8 / max(1, len(variants))
    for row, size in enumerate(sizes):
        ax = axes[row][0]
        top = 1.0
        for j, v in enumerate(variants):
            xs, ys = [], []
            for i, key in enumerate(topos):
                r = recs.get(key + (size, v))
                if r is not None:
                    xs.append(i - 0.4 + width * (j + 0.5))
                    ys.append(r["speedup_vs_neighbor"])
            if not xs:
                continue
            top = max([top] + ys)
            r0 = next(r for r in recs.values() if r["variant"] == v)
            st = style(r0, kcolors)
            ax.bar(xs, ys, width=width, color=st["color"], label=v,
                   hatch="//" if r0.get("aware") else None, edgecolor="white", linewidth=0.3)
        ax.axhline(1.0, color="black", linestyle=":", linewidth=1)
        ax.set_ylim(0, top * 1.1)
        ax.set_xticks(range(len(topos)))
        ax.set_xticklabels(["%s\n(%d ranks)" % (t[2], t[0]) for t in topos], fontsize=7)
        ax.set_ylabel("speedup over " + base, fontsize=8)
        ax.set_title("%d-byte messages" % size, fontsize=9)
        ax.grid(axis="y", alpha=0.3)
        if row == 0:  # beside the panels, never over a bar
            ax.legend(fontsize=6, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0)
    fig.tight_layout()
    out2 = out.rsplit(".", 1)[0] + "_speedup.png"
    fig.savefig(out2, dpi=100, bbox_inches="tight")
    print("wrote", out2)


if __name__ == "__main__":
    main()
