#!/usr/bin/python3
"""Speedup of every backend over p2p per matrix, from `sparsecomm spmv --json` records
(and sparsecomm_autoeval's, which carry measured times per backend).

usage: /usr/bin/python3 experiments/auto/plot_speedup.py results/spmv.jsonl [out.png]"""
import os
import sys
from collections import defaultdict

import matplotlib
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import plotlib  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main():
    src, out = plotlib.args(__doc__)
    t = defaultdict(dict)  # (matrix, ranks, regions) -> backend -> seconds
    for r in plotlib.records(src, "spmv", "autoeval"):
        key = (r.get("matrix"), r.get("ranks"), r.get("regions"))
        t[key][r["backend"]] = r["spmv_s"] if r["bench"] == "spmv" else r["measured_s"]
    keys = sorted(k for k in t if "p2p" in t[k])
    if not keys:
        sys.exit("no records with a p2p baseline in " + src)
    backends = sorted({b for k in keys for b in t[k]})
    fig, ax = plt.subplots(figsize=(max(6, 1.2 * len(keys)), 5))
    width = 0.8 / len(backends)
    for i, b in enumerate(backends):
        ax.bar([j + i * width for j in range(len(keys))], [t[k]["p2p"] / t[k][b] if b in t[k] else 0 for k in keys],
               width, label=b)
    ax.axhline(1.0, color="gray", linestyle="--")
    ax.set_xticks([j + 0.4 - width / 2 for j in range(len(keys))])
    ax.set_xticklabels(["%s\n%s ranks\n%s" % k for k in keys], fontsize=7)
    ax.set_ylabel("speedup over p2p")
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0)  # beside the bars, never over them
    fig.tight_layout()
    fig.savefig(out, dpi=110, bbox_inches="tight")
    print("wrote", out)


if __name__ == "__main__":
    main()
