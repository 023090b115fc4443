#!/usr/bin/python3
"""Table and plots of the Mirsadeghi et al. (HiPC 2017) reproduction (experiments/mirsadeghi/run.sh).

usage: /usr/bin/python3 experiments/mirsadeghi/plot.py RESULTS_DIR
Reads RESULTS_DIR/planstats*.jsonl (sparsecomm plan-stats: exact counts, MODELLED latency),
RESULTS_DIR/smpi*.jsonl and RESULTS_DIR/phase1.jsonl (sparsecomm nbrbench under SMPI:
SIMULATED latency and setup time; runs with --phase1 exact have no simulated phase 1).
Prints the table and writes
  improvement.png  improvement of combined (k=2) over the direct schedule per topology:
                   message-count reduction, modelled and simulated latency, the paper's average;
  phase1.png       simulated phase-1 (pattern construction) time vs P.
improvement = (T_direct - T_combined) / T_direct, as in the paper. Uses python3-matplotlib."""
import glob
import os
import sys
from collections import OrderedDict

import matplotlib
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import plotlib  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

PAPER = "paper (Mirsadeghi et al. 2017, GPC cluster, 4 B): ~50% average, up to 71%, slight loss at Moore D=2 R=1"


def main():
    d = plotlib.results_dir(__doc__)
    # Each part of the script (moore, er) writes its own files.
    ps = [r for f in sorted(glob.glob(os.path.join(d, "planstats*.jsonl")))
          for r in plotlib.records_if_present(f, "plan-stats")]
    sm = [r for f in sorted(glob.glob(os.path.join(d, "smpi*.jsonl")))
          for r in plotlib.records_if_present(f, "nbrbench")]
    ph = plotlib.records_if_present(os.path.join(d, "phase1.jsonl"), "nbrbench")
    if not ps and not sm:
        sys.exit("no records in " + d)

    # plan-stats: (topo, p) -> {direct, combined k=2 agnostic}
    model = OrderedDict()
    for r in ps:
        model.setdefault((r["topo"], r["p"]), {})[r["variant"]] = r
    # SMPI: (topo, p) -> {baseline, combined}; the baseline is what nbrbench measured
    # speedups against (p2p under SMPI, where MPI's neighborhood collectives abort).
    sim = OrderedDict()
    for r in sm:
        key = (r["topology"], r["ranks"])
        if r["backend"] == "combined" and r["k"] == 2 and not r["aware"]:
            sim.setdefault(key, {})["combined"] = r
        elif r["backend"] in ("neighbor", "p2p"):
            sim.setdefault(key, {}).setdefault("direct", r)

    def pct(a, b):
        return 100.0 * (a - b) / a if a > 0 else float("nan")

    print(PAPER)
    print("%-12s %6s  %9s %9s %9s  %12s  %6s %13s  %12s  %s" % (
        "topology", "P", "msgs dir", "msgs comb", "reduction", "modelled imp", "P sim", "simulated imp",
        "groups", "simulated phase 1"))
    rows = []
    topos = OrderedDict()
    for (topo, p), v in model.items():
        topos[topo] = True
    for (topo, p), v in sim.items():
        topos[topo] = True
    for topo in topos:
        m = [(p, v) for (t, p), v in model.items() if t == topo]
        s = [(p, v) for (t, p), v in sim.items() if t == topo]
        mp, mv = m[-1] if m else (None, {})
        d_, c_ = mv.get("direct"), mv.get("combined k=2 agnostic")
        red = d_["msgs_mean"] / c_["msgs_mean"] if d_ and c_ else float("nan")
        mimp = pct(d_["modelled_s"], c_["modelled_s"]) if d_ and c_ else float("nan")

        def p1(v):
            return "-" if v != v else "%.1f%%" % v
        # One line per simulated P (ER: 1,024 with phase 1 simulated, 4,096 with phase 1
        # from the exact model); the bars show the largest P.
        simp = float("nan")
        for i, (sp, sv) in enumerate(s or [(None, {})]):
            simp = float("nan")
            if "direct" in sv and "combined" in sv:
                simp = pct(sv["direct"]["lat_max_s"], sv["combined"]["lat_max_s"])
            how = "-"
            if "combined" in sv:
                how = "exact (not simulated)" if sv["combined"].get("phase1") == "exact" else "simulated"
            print("%-12s %6s  %9s %9s %9s  %12s  %6s %13s  %12s  %s" % (
                topo if i == 0 else "", (mp if mp else "-") if i == 0 else "",
                "%.1f" % d_["msgs_mean"] if d_ and i == 0 else "", "%.1f" % c_["msgs_mean"] if c_ and i == 0 else "",
                "%.2fx" % red if i == 0 else "", p1(mimp) if i == 0 else "", sp if sp else "-", p1(simp),
                c_["groups"] if c_ and i == 0 else "", how))
        rows.append((topo, red, mimp, simp))

    fig, ax = plt.subplots(figsize=(max(6, 1.1 * len(rows)), 4.2))
    x = range(len(rows))
    w = 0.27
    ax.bar([i - w for i in x], [100 * (1 - 1 / r[1]) if r[1] == r[1] else 0 for r in rows], w,
           label="message-count reduction (exact)", color="0.7")
    ax.bar([i for i in x], [r[2] if r[2] == r[2] else 0 for r in rows], w,
           label="modelled latency improvement (plan-stats)", color="tab:blue")
    ax.bar([i + w for i in x], [r[3] if r[3] == r[3] else 0 for r in rows], w,
           label="SIMULATED latency improvement (SMPI)", color="tab:orange")
    ax.axhline(50, color="black", linestyle="--", linewidth=1, label="paper: ~50% average")
    ax.axhline(0, color="black", linewidth=0.8)
    ax.set_xticks(list(x))
    ax.set_xticklabels([r[0] for r in rows], rotation=30, ha="right")
    ax.set_ylabel("improvement of combined (k=2) over direct [%]")
    ax.set_title("Mirsadeghi et al. 2017 reproduction: neighbor allgather, 4 B (modelled / simulated)")
    ax.set_ylim(top=max([60.0] + [v + 10 for r in rows for v in (r[2], r[3]) if v == v]))
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0)  # beside the bars, never over them
    fig.tight_layout()
    fig.savefig(os.path.join(d, "improvement.png"), dpi=120, bbox_inches="tight")
    print("wrote", os.path.join(d, "improvement.png"))

    if ph:
        series = OrderedDict()
        for r in ph:
            if r["backend"] == "combined":
                series.setdefault(r["topology"], []).append((r["ranks"], r["setup_phase1_s"], r["setup_phase2_s"]))
        # The latency runs of step 2 built the same pattern (k = 2, agnostic) at larger P.
        for r in sm:
            if r["topology"] in series and r["backend"] == "combined" and r["k"] == 2 and not r["aware"] \
                    and r.get("phase1") != "exact" and r["ranks"] not in [q[0] for q in series[r["topology"]]]:
                series[r["topology"]].append((r["ranks"], r["setup_phase1_s"], r["setup_phase2_s"]))
        print("\nphase-1 / phase-2 setup time (SIMULATED, max over ranks) vs P")
        fig, ax = plt.subplots(figsize=(5.5, 4))
        for topo, pts in series.items():
            pts.sort()
            for p, a, b in pts:
                print("  %-12s P=%5d  phase1 %.6f s  phase2 %.6f s" % (topo, p, a, b))
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=topo + " phase 1")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("ranks P")
        ax.set_ylabel("simulated phase-1 time [s]")
        ax.set_title("combining pattern construction cost vs P (SMPI)")
        ax.legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(os.path.join(d, "phase1.png"), dpi=120)
        print("wrote", os.path.join(d, "phase1.png"))


if __name__ == "__main__":
    main()
