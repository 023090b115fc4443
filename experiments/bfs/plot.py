#!/usr/bin/python3
"""BFS time breakdown per variant from sparsecomm_bfs --json (or `sparsecomm bfs --json`).

usage: /usr/bin/python3 experiments/bfs/plot.py results/bfs.jsonl [out.png]
One stacked bar per (graph, ranks, variant): transpose, expand, fold, compute, sort
(ms per BFS, max over ranks of each part), with the exposed communication marked."""
import os
import sys

import matplotlib
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import plotlib  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main():
    src, out = plotlib.args(__doc__)
    rows = {}
    for r in plotlib.records(src, "bfs"):
        rows[(r["graph"], r["ranks"], r["variant"])] = r  # last run wins
    if not rows:
        sys.exit("no bfs records in " + src)
    keys = sorted(rows)
    parts = ["transpose_s", "expand_s", "fold_s", "compute_s", "sort_s"]
    fig, ax = plt.subplots(figsize=(max(6, 1.1 * len(keys)), 5))
    bottom = [0.0] * len(keys)
    for p in parts:
        vals = [rows[k][p] * 1e3 for k in keys]
        ax.bar(range(len(keys)), vals, bottom=bottom, label=p[:-2])
        bottom = [b + v for b, v in zip(bottom, vals)]
    ax.scatter(range(len(keys)), [rows[k]["exposed_s"] * 1e3 for k in keys], color="black", marker="_", s=400,
               label="exposed communication", zorder=3)
    ax.set_xticks(range(len(keys)))
    ax.set_xticklabels(["%s\n%d ranks\n%s" % k for k in keys], fontsize=7)
    ax.set_ylabel("ms per BFS (max over ranks per part)")
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0)  # beside the bars, never over them
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    fig.savefig(out, dpi=110, bbox_inches="tight")
    print("wrote", out)


if __name__ == "__main__":
    main()
