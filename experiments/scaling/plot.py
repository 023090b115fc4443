"""Cost growth with P (experiments/scaling): one PNG per platform and problem, three panels
(set-up time, exchange time, heap memory per rank at the set-up's peak) against the
simulated ranks, each curve beside its ideal for weak scaling (flat at its value at the
smallest P, dotted), and the markdown table of the latest records on stdout.

usage: plot.py RESULTS/growth.jsonl OUTDIR
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import plotlib  # noqa: E402

import matplotlib  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def platform(regions):
    """The platform of a record from its detected nodes: 8 ranks per node on gpc_fattree_1024x8,
    32 on quartz_fattree_64x32 (run.sh fills the nodes)."""
    size = regions.rsplit("size ", 1)[-1].rstrip(")")
    return {"8": "gpc_fattree", "32": "quartz_fattree"}.get(size, "ppn" + size)


def latest(src):
    """The last record of each (problem, platform, ranks, kind, name)."""
    rows = {}
    for r in plotlib.records(src, "growth"):
        rows[(r["problem"], platform(r["regions"]), r["ranks"], r["kind"], r["name"])] = r
    return rows


def panel(ax, rows, kind, field, scale, title, ylabel):
    names = sorted({k[4] for k in rows if k[3] == kind})
    for i, name in enumerate(names):
        pts = sorted((k[2], r[field]) for k, r in rows.items() if k[3] == kind and k[4] == name and r[field] >= 0)
        if not pts:
            continue
        xs, ys = [p for p, _ in pts], [v * scale for _, v in pts]
        line, = ax.plot(xs, ys, marker="o", label=f"{kind} {name}")
        ax.plot(xs, [ys[0]] * len(xs), linestyle=":", color=line.get_color())  # ideal: flat
    ax.set_xscale("log", base=2)
    if field == "peak_bytes":
        ax.set_yscale("log")  # auto's rank 0 holds every rank's summary: orders above the rest
    ax.set_title(title)
    ax.set_xlabel("simulated ranks")
    ax.set_ylabel(ylabel)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=6)


def main():
    plotlib.usage(__doc__, 2)
    src, outdir = sys.argv[1], sys.argv[2]
    rows = latest(src)
    groups = sorted({(k[0], k[1]) for k in rows})
    for problem, platform_hint in groups:
        sub = {k: r for k, r in rows.items() if k[0] == problem and k[1] == platform_hint}
        fig, axes = plt.subplots(2, 3, figsize=(16, 9))
        panel(axes[0][0], sub, "sdde", "setup_s", 1e6, "SDDE (pattern discovery) time", "us (modelled)")
        panel(axes[0][1], sub, "sdde", "peak_bytes", 1 / 1024, "SDDE heap peak per rank", "KiB")
        panel(axes[0][2], sub, "input", "kept_bytes", 1 / 1024, "matrix heap per rank", "KiB")
        panel(axes[1][0], sub, "plan", "setup_s", 1e6, "plan set-up time", "us (modelled)")
        panel(axes[1][1], sub, "plan", "exchange_s", 1e6, "exchange time", "us (modelled)")
        panel(axes[1][2], sub, "plan", "peak_bytes", 1 / 1024, "plan set-up heap peak per rank", "KiB")
        fig.suptitle(f"{problem} weak-scaled per rank, SMPI on {platform_hint} (modelled times; dotted: ideal, flat)")
        fig.tight_layout()
        name = f"growth_{problem.split(':')[0]}_{platform_hint}.png"
        fig.savefig(os.path.join(outdir, name), dpi=90)
        print(f"wrote {os.path.join(outdir, name)}", file=sys.stderr)
    # The table: every (problem, kind, name) row, one column per P.
    ps = sorted({k[2] for k in rows})
    print("| problem | platform | kind | name | what | " + " | ".join(str(p) for p in ps) + " | last/first |")
    print("|---|---|---|---|---|" + "---|" * (len(ps) + 1))
    for key in sorted({(k[0], k[1], k[3], k[4]) for k in rows}):
        fields = ((("setup_s", 1e6, "set-up us"), ("exchange_s", 1e6, "exchange us"), ("peak_bytes", 1 / 1024, "peak KiB"))
                  if key[2] != "input" else (("kept_bytes", 1 / 1024, "kept KiB"),))
        for field, scale, what in fields:
            vals = [rows[(key[0], key[1], p, key[2], key[3])] for p in ps if (key[0], key[1], p, key[2], key[3]) in rows]
            vals = {r["ranks"]: r[field] for r in vals if r[field] >= 0}
            if not vals:
                continue
            cells = [f"{vals[p] * scale:.1f}" if p in vals else "" for p in ps]
            first, last = vals[min(vals)], vals[max(vals)]
            g = f"{last / first:.2f}x" if first > 0 and len(vals) > 1 else "-"
            print(f"| {key[0]} | {key[1]} | {key[2]} | {key[3]} | {what} | " + " | ".join(cells) + f" | {g} |")


if __name__ == "__main__":
    main()
