#!/usr/bin/python3
"""Table and plots of the Collom/Li/Bienz (EuroMPI'23) reproduction (experiments/collom/run.sh).

usage: /usr/bin/python3 experiments/collom/plot.py RESULTS_DIR
Reads RESULTS_DIR/spmv.jsonl (`sparsecomm spmv --json` records, one simulated run per AMG
level, matrix label level_L.mtx), RESULTS_DIR/levels/levels.tsv (the dumped hierarchy) and
RESULTS_DIR/meta.txt (key=value: platform, ranks per node, ...). Prints one row per level and
backend: max/avg intra- and inter-region messages per rank and exchange, mean inter-region
message size, simulated SpMV time (SMPI, computation not simulated: communication only) and
its ratio to p2p measured in the same run. Writes RESULTS_DIR/collom_inter_msgs.png
(inter-region messages per level) and RESULTS_DIR/collom_time.png (simulated time per level
and backend, and time / p2p). Uses Debian's python3-matplotlib."""
import os
import re
import sys

import matplotlib
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import plotlib  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

ORDER = ["p2p", "neighbor", "combined", "aggregated", "aggregated_dedup", "auto"]


def read_meta(path):
    meta = {}
    if os.path.exists(path):
        with open(path) as f:
            for line in f:
                if "=" in line:
                    k, v = line.rstrip("\n").split("=", 1)
                    meta[k.strip()] = v.strip()
    return meta


def read_levels(path):
    """level -> (rows, nnz) from levels.tsv, and its '#' comment (how the hierarchy was built)."""
    levels, note = {}, ""
    if os.path.exists(path):
        with open(path) as f:
            for line in f:
                if line.startswith("#"):
                    note = line[1:].strip()
                    continue
                p = line.split("\t")
                if p[0].isdigit():
                    levels[int(p[0])] = (int(p[1]), int(p[2]))
    return levels, note


def level_of(label):
    m = re.search(r"level_(\d+)\.mtx", label)
    return int(m.group(1)) if m else None


def main():
    d = plotlib.results_dir(__doc__)
    meta = read_meta(os.path.join(d, "meta.txt"))
    levels, note = read_levels(os.path.join(d, "levels", "levels.tsv"))
    recs = {}  # (level, backend) -> the last record
    for r in plotlib.records(os.path.join(d, "spmv.jsonl"), "spmv"):
        lv = level_of(r["matrix"])
        if lv is not None:
            recs[(lv, r["backend"])] = r
    if not recs:
        sys.exit("no spmv records for level_L.mtx in " + os.path.join(d, "spmv.jsonl"))
    lvls = sorted({lv for lv, _ in recs})
    present = {b for _, b in recs}
    backends = [b for b in ORDER if b in present] + sorted(present - set(ORDER))

    ranks = next(iter(recs.values()))["ranks"]
    print("Collom, Li, Bienz (EuroMPI'23) reproduction: per-level SpMV of a BoomerAMG hierarchy")
    if note:
        print("hierarchy: " + note + "; each level's rows redistributed in balanced block rows")
    print("simulated: %d ranks, %s; %s" % (ranks, meta.get("platform", "?"), meta.get("layout", "")))
    if meta.get("cfg"):
        print("SMPI options: " + meta["cfg"])
    print("msgs = messages sent per rank per SpMV (max / avg over ranks); inter size = mean inter-region message"
          " [bytes];\ntime = simulated SpMV time [us] (computation not simulated: communication only), median of"
          " batches, max over ranks;\ntime/p2p < 1: faster than p2p (standard point-to-point) in the same run\n")
    head = ["level", "rows", "backend", "intra max", "intra avg", "inter max", "inter avg", "inter size",
            "time[us]", "time/p2p", "ok"]
    rows = []
    for lv in lvls:
        base = recs.get((lv, "p2p"))
        for b in backends:
            r = recs.get((lv, b))
            if r is None:
                continue
            n = r["ranks"]
            size = r["inter_bytes_sum"] / r["inter_msgs_sum"] if r["inter_msgs_sum"] else 0.0
            ratio = "%.2f" % (r["spmv_s"] / base["spmv_s"]) if base and base["spmv_s"] > 0 else "-"
            rows.append([str(lv), str(r.get("rows", levels.get(lv, ("?",))[0])), b,
                         "%.0f" % r["intra_msgs_max"], "%.1f" % (r["intra_msgs_sum"] / n),
                         "%.0f" % r["inter_msgs_max"], "%.1f" % (r["inter_msgs_sum"] / n), "%.0f" % size,
                         "%.1f" % (r["spmv_s"] * 1e6), ratio, "yes" if r.get("verified", True) else "NO"])
    width = [max(len(h), *(len(x[i]) for x in rows)) for i, h in enumerate(head)]
    fmt = "  ".join("%%%ds" % w for w in width)
    print(fmt % tuple(head))
    print("  ".join("-" * w for w in width))
    last = None
    for x in rows:
        if last is not None and x[0] != last:
            print()
        last = x[0]
        print(fmt % tuple(x))
    missing = sorted(set(levels) - set(lvls))
    if missing:
        print("\nlevels not simulated (not in LEVELS, failed, or over the time budget; see run.log): "
              + ", ".join(map(str, missing)))
    # Sum over the simulated levels (one SpMV per level, as in one V-cycle's residual).
    tot = {b: sum(recs[(lv, b)]["spmv_s"] for lv in lvls if (lv, b) in recs) for b in backends}
    full = [b for b in backends if all((lv, b) in recs for lv in lvls)]
    if "p2p" in full:
        print("\nsum over levels %s: " % ",".join(map(str, lvls))
              + ", ".join("%s %.1f us (%.2f)" % (b, tot[b] * 1e6, tot[b] / tot["p2p"]) for b in full))

    colors = {b: "C%d" % i for i, b in enumerate(backends)}
    title = "%d simulated ranks, %s per node, %s (SMPI)" % (ranks, meta.get("ppn", "?"), meta.get("platform_name", "?"))

    fig, ax = plt.subplots(1, 2, figsize=(12, 4.5))
    for b in backends:
        lv = [x for x in lvls if (x, b) in recs]
        ax[0].plot(lv, [recs[(x, b)]["inter_msgs_max"] for x in lv], marker="o", color=colors[b], label=b)
        ax[1].plot(lv, [recs[(x, b)]["inter_msgs_sum"] / recs[(x, b)]["ranks"] for x in lv], marker="o",
                   color=colors[b], label=b)
    for a, what, lin in zip(ax, ["max", "average"], [1, 0.1]):
        a.set_yscale("symlog", linthresh=lin)
        a.set_xlabel("AMG level")
        a.set_ylabel("inter-node messages per rank per SpMV (%s)" % what)
        a.set_xticks(lvls)
        a.grid(alpha=0.3)
        a.legend(fontsize=8)
        a.set_title(title, fontsize=9)
    fig.tight_layout()
    out1 = os.path.join(d, "collom_inter_msgs.png")
    fig.savefig(out1, dpi=110)

    fig, ax = plt.subplots(2, 1, figsize=(7, 8), sharex=True)
    for b in backends:
        lv = [x for x in lvls if (x, b) in recs]
        ax[0].plot(lv, [recs[(x, b)]["spmv_s"] * 1e6 for x in lv], marker="o", color=colors[b], label=b)
        lv2 = [x for x in lv if (x, "p2p") in recs]
        ax[1].plot(lv2, [recs[(x, b)]["spmv_s"] / recs[(x, "p2p")]["spmv_s"] for x in lv2], marker="o",
                   color=colors[b], label=b)
    ax[0].set_yscale("log")
    ax[0].set_ylabel("simulated SpMV communication time [us]")
    ax[0].set_title(title, fontsize=9)
    ax[1].axhline(1.0, color="gray", linestyle="--")
    ax[1].set_ylabel("time / p2p (< 1: faster)")
    ax[1].set_xlabel("AMG level")
    for a in ax:
        a.set_xticks(lvls)
        a.grid(alpha=0.3)
        a.legend(fontsize=8)
    fig.tight_layout()
    out2 = os.path.join(d, "collom_time.png")
    fig.savefig(out2, dpi=110)
    print("\nwrote %s, %s" % (out1, out2))


if __name__ == "__main__":
    main()
