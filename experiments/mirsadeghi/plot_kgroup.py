#!/usr/bin/python3
"""Table and plots of the k-group reproduction (experiments/mirsadeghi/run_kgroup.sh).

usage: /usr/bin/python3 experiments/mirsadeghi/plot_kgroup.py RESULTS_DIR
Reads RESULTS_DIR/planstats.jsonl (sparsecomm plan-stats: EXACT counts, MODELLED latency)
and RESULTS_DIR/smpi.jsonl (sparsecomm nbrbench under SMPI: SIMULATED latency). Writes
  kgroup.png   left: groups (hyperedges) found vs k, agnostic (solid) and aware (dashed);
               right: modelled (and, where run, simulated) speedup over direct vs k.
Uses Debian's python3-matplotlib."""
import os
import sys
from collections import OrderedDict

import matplotlib
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import plotlib  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main():
    d = plotlib.results_dir(__doc__)
    ps = plotlib.records_if_present(os.path.join(d, "planstats.jsonl"), "plan-stats")
    sm = plotlib.records_if_present(os.path.join(d, "smpi.jsonl"), "nbrbench")
    if not ps:
        sys.exit("no plan-stats records in " + d)

    series = OrderedDict()  # (topo, p, aware) -> [(k, record)]
    for r in ps:
        if r["variant"] == "direct":
            continue
        series.setdefault((r["topo"], r["p"], r["aware"]), []).append((r["k"], r))
    print("EXACT counts (plan-stats) and MODELLED speedup over the direct schedule")
    print("%-10s %5s %-8s %4s %8s %10s %10s %10s %10s" % (
        "topology", "P", "design", "k", "groups", "mean size", "msgs/rank", "reduction", "modelled"))
    for (topo, p, aware), pts in series.items():
        for k, r in sorted(pts, key=lambda x: x[0]):
            print("%-10s %5d %-8s %4d %8d %10.2f %10.1f %9.2fx %9.2fx" % (
                topo, p, "aware" if aware else "agnostic", k, r["groups"], r["group_size_mean"], r["msgs_mean"],
                r["reduction"], r["modelled_speedup"]))

    sim = OrderedDict()  # (topo, p, aware) -> [(k, speedup)]
    if sm:
        print("\nSIMULATED (SMPI) latency speedup of combined over the direct schedule")
        print("%-10s %5s %-8s %4s %12s %10s" % ("topology", "P", "design", "k", "latency[us]", "speedup"))
        for r in sm:
            if r["backend"] != "combined":
                continue
            sim.setdefault((r["topology"], r["ranks"], r["aware"]), []).append((r["k"], r["speedup_vs_neighbor"]))
            print("%-10s %5d %-8s %4d %12.2f %9.2fx" % (r["topology"], r["ranks"], "aware" if r["aware"] else "agnostic",
                                                     r["k"], r["lat_max_s"] * 1e6, r["speedup_vs_neighbor"]))
        print("(baseline: the direct schedule nbrbench measured first -- p2p under SMPI, where MPI's "
              "neighborhood collectives abort)")

    topos = OrderedDict(((t, p), True) for (t, p, a) in series)
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for i, (topo, p) in enumerate(topos):
        c = colors[i % len(colors)]
        for aware in (False, True):
            pts = sorted(series.get((topo, p, aware), []), key=lambda x: x[0])
            if not pts:
                continue
            ls = "--" if aware else "-"
            lab = "%s P=%d %s" % (topo, p, "aware" if aware else "agnostic")
            axes[0].plot([k for k, _ in pts], [r["groups"] for _, r in pts], ls, color=c, marker="o", label=lab)
            axes[1].plot([k for k, _ in pts], [r["modelled_speedup"] for _, r in pts], ls, color=c, marker="o",
                         label=lab + " (modelled)")
        for aware in (False, True):
            pts = sorted(sim.get((topo, p, aware), []))
            if pts:
                axes[1].plot([k for k, _ in pts], [s for _, s in pts], ":", color=c, marker="s",
                             label="%s %s (SIMULATED, P=%d)" % (topo, "aware" if aware else "agnostic", p))
    for (topo, p, aware), pts in sim.items():
        if (topo, p) not in topos:
            pts = sorted(pts)
            axes[1].plot([k for k, _ in pts], [s for _, s in pts], ":", marker="s",
                         label="%s %s (SIMULATED, P=%d)" % (topo, "aware" if aware else "agnostic", p))
    axes[0].set_xscale("log", base=2)
    axes[0].set_xlabel("group size k")
    axes[0].set_ylabel("hyperedges (groups of >= 2) found")
    axes[0].set_title("groups found (exact)")
    axes[1].set_xscale("log", base=2)
    axes[1].axhline(1, color="black", linewidth=0.8)
    axes[1].set_xlabel("group size k")
    axes[1].set_ylabel("speedup over direct")
    axes[1].set_title("combined vs direct, 4 B")
    axes[0].legend(fontsize=6)
    axes[1].legend(fontsize=5)
    fig.tight_layout()
    fig.savefig(os.path.join(d, "kgroup.png"), dpi=120)
    print("wrote", os.path.join(d, "kgroup.png"))


if __name__ == "__main__":
    main()
