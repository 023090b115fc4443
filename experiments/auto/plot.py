#!/usr/bin/python3
"""How good is `auto`: tables and a plot from experiments/auto/run.sh.

usage: /usr/bin/python3 experiments/auto/plot.py RESULTS_DIR
Reads RESULTS_DIR/autoeval.jsonl (one line per (setting, ranks, matrix, backend): measured
and predicted seconds per exchange, and auto's choice). Prints per setting and rank count:
cases, auto within 10% of the best measured backend, auto at most 10% slower than always
using p2p, median and worst regret; the model's prediction error per backend (median and
worst |predicted/measured - 1|, and the median ratio: < 1 means the model is optimistic);
and every case where auto missed by more than 10%. Writes autoeval.png (auto's regret per
case, sorted, one line per setting). Uses Debian's python3-matplotlib."""
import os
import statistics
from collections import OrderedDict, defaultdict

import matplotlib
import sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import plotlib  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def regret(c, best, pick=None):
    """Auto's pick (or `pick`) against the best: paired where the run recorded its rounds
    (runs since 2026-11-27: the largest over backends of the median over rounds of the
    pick's time over that backend's in the same round, at least 1), else the ratio of the
    medians."""
    pick = pick or c["auto"]
    rounds = c.get("rounds")
    if rounds and pick in rounds and len(rounds) == len(c["b"]):
        return plotlib.paired_regret(rounds[pick], rounds.values())
    return c["b"][pick][0] / c["b"][best][0]


def vs_p2p(c):
    rounds = c.get("rounds")
    if rounds and c["auto"] in rounds and "p2p" in rounds:
        return plotlib.paired(rounds[c["auto"]], rounds["p2p"])
    return c["b"][c["auto"]][0] / c["b"]["p2p"][0]


def main():
    d = plotlib.results_dir(__doc__)
    cases = OrderedDict()  # (label, ranks, matrix) -> {backend: (measured, predicted)}, auto
    for r in plotlib.records(os.path.join(d, "autoeval.jsonl"), "autoeval"):
        key = (r.get("label") or r["regions"], r["ranks"], r["matrix"])
        c = cases.setdefault(key, {"b": {}, "auto": r["auto"], "race": r.get("auto_race")})
        c["b"][r["backend"]] = (r["measured_s"], r["predicted_s"])
        if r.get("rounds_s"):
            c.setdefault("rounds", {})[r["backend"]] = r["rounds_s"]
        c.setdefault("spread", []).append(r.get("spread", 0.0))
        c.setdefault("spread_of", {})[r["backend"]] = r.get("spread", 0.0)
    if not cases:
        raise SystemExit("plot_autoeval.py: no autoeval records in " + d)

    settings = OrderedDict()
    for (label, ranks, matrix), c in cases.items():
        settings.setdefault((label, ranks), []).append((matrix, c))

    total = within_all = never_all = tied_all = 0
    print("auto: measured time of auto's choice / best measured backend (regret), same run; paired per round")
    print("where the run recorded its rounds (median over rounds, largest over backends);")
    print("noise: median over backends and cases of (max - min) / median of a backend's rounds\n")
    print(f"{'setting':<10}{'ranks':>6}{'cases':>7}{'within 10%':>12}{'<= 1.1 p2p':>12}"
          f"{'median regret':>15}{'worst':>8}{'noise':>8}{'within noise':>14}")
    regrets = {}
    misses = []
    for (label, ranks), lst in settings.items():
        rg = []
        noise = []
        within = never = tied = 0
        for matrix, c in lst:
            meas = {b: v[0] for b, v in c["b"].items()}
            noise.extend(c.get("spread", []))
            best = min(meas, key=meas.get)
            reg = regret(c, best)
            rg.append(reg)
            within += reg <= 1.10
            # Within the run's own noise: no worse than the larger of 10% and the spread
            # of the rounds of auto's pick and of the best backend.
            sp = c.get("spread_of", {})
            tied += reg <= 1 + max(0.10, sp.get(c["auto"], 0.0), sp.get(best, 0.0))
            never += vs_p2p(c) <= 1.10
            if reg > 1.10:
                misses.append((label, ranks, matrix, c["auto"], best, reg, c["b"]))
        regrets[(label, ranks)] = sorted(rg)
        total += len(lst)
        within_all += within
        never_all += never
        tied_all += tied
        print(f"{label:<10}{ranks:>6}{len(lst):>7}{within:>8}/{len(lst):<3}{never:>8}/{len(lst):<3}"
              f"{statistics.median(rg):>15.2f}{max(rg):>8.2f}{100 * statistics.median(noise):>7.0f}%"
              f"{tied:>10}/{len(lst):<3}")
    print(f"{'all':<10}{'':>6}{total:>7}{within_all:>8}/{total:<3}{never_all:>8}/{total:<3}"
          f"{'':>31}{tied_all:>10}/{total:<3}\n"
          f"goal: within 10% in >= 90% ({100.0 * within_all / total:.0f}% here; within the run's noise:"
          f" {100.0 * tied_all / total:.0f}%)\n")

    # The held-out cases (heldout.txt beside this script): auto's record on them alone.
    held_path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "heldout.txt")
    held = set()
    if os.path.exists(held_path):
        held = {ln.strip() for ln in open(held_path) if ln.strip() and not ln.startswith("#")}
    if held:
        print("held out of all tuning (heldout.txt): auto within 10% of the best / cases, worst regret")
        h_total = h_within = 0
        for (label, ranks), lst in settings.items():
            rg = []
            for matrix, c in lst:
                if matrix not in held:
                    continue
                meas = {b: v[0] for b, v in c["b"].items()}
                rg.append(regret(c, min(meas, key=meas.get)))
            if rg:
                w = sum(r <= 1.10 for r in rg)
                h_total += len(rg)
                h_within += w
                print(f"  {label:<10}{ranks:>6}  {w}/{len(rg)}  worst {max(rg):.2f}")
        if h_total:
            print(f"  all: {h_within}/{h_total} ({100.0 * h_within / h_total:.0f}%)\n")

    # Runs with `--race N` (run.sh's RACE): auto's picks with its option race, judged on the
    # same rounds (the race measured at setup, apart from them).
    if any(c["race"] for c in cases.values()):
        print("auto with its race option (close candidates timed at setup): within 10% of the best / cases, "
              "worst regret; in brackets auto without it on the same cases")
        r_total = r_within = 0
        for (label, ranks), lst in settings.items():
            rg, base = [], []
            for matrix, c in lst:
                if not c["race"]:
                    continue
                meas = {b: v[0] for b, v in c["b"].items()}
                best = min(meas, key=meas.get)
                rg.append(regret(c, best, c["race"]))
                base.append(regret(c, best))
            if rg:
                w = sum(r <= 1.10 for r in rg)
                r_total += len(rg)
                r_within += w
                print(f"  {label:<10}{ranks:>6}  {w}/{len(rg)}  worst {max(rg):.2f}   "
                      f"[{sum(r <= 1.10 for r in base)}/{len(base)}  worst {max(base):.2f}]")
        if r_total:
            print(f"  all: {r_within}/{r_total} ({100.0 * r_within / r_total:.0f}%)\n")

    print("model error per backend (predicted / measured per exchange):")
    print(f"{'setting':<10}{'ranks':>6}  {'backend':<20}{'median |err|':>13}{'worst |err|':>12}{'median ratio':>13}")
    for (label, ranks), lst in settings.items():
        per = defaultdict(list)
        for matrix, c in lst:
            for b, (m, p) in c["b"].items():
                per[b].append(p / m)
        for b, ratios in sorted(per.items()):
            errs = [abs(x - 1) for x in ratios]
            print(f"{label:<10}{ranks:>6}  {b:<20}{100 * statistics.median(errs):>12.0f}%"
                  f"{100 * max(errs):>11.0f}%{statistics.median(ratios):>13.2f}")
    print()
    if misses:
        print("cases where auto missed by more than 10% (measured us per exchange; predicted in brackets):")
        for label, ranks, matrix, pick, best, reg, b in misses:
            detail = ", ".join(f"{k} {1e6 * v[0]:.0f} [{1e6 * v[1]:.0f}]" for k, v in sorted(b.items()))
            print(f"  {label} {ranks} {matrix}: auto {pick}, best {best}, regret {reg:.2f}: {detail}")

    fig, ax = plt.subplots(figsize=(7, 4))
    for (label, ranks), rg in regrets.items():
        ax.plot(range(1, len(rg) + 1), rg, marker=".", label=f"{label}, {ranks} ranks")
    ax.axhline(1.10, color="grey", linestyle="--", label="within 10%")
    ax.set_xlabel("case (sorted by regret)")
    ax.set_ylabel("auto's time / best backend's time")
    ax.set_title("auto backend selection: regret per matrix / AMG level (measured)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    out = os.path.join(d, "autoeval.png")
    fig.savefig(out, dpi=120)
    print("wrote", out)


if __name__ == "__main__":
    main()
