#!/usr/bin/env python3
"""Issue 33's "best backend <= 0.65 of p2p" over every case of an experiments/auto/run.sh run.

Per setting (node / cluster, ranks): for each case, the backend of lowest median time and
auto's pick, each against p2p paired per round (the median over rounds of the two times of
one round), then the median over the matrix cases and, separately, over the AMG levels.

    experiments/auto/best_vs_p2p.py RUN_DIR [RUN_DIR ...]
"""
import json
import os
import statistics
import sys
from collections import defaultdict

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from plotlib import paired, usage  # noqa: E402


def med(v):
    return "%.3f" % statistics.median(v) if v else "-"


def main():
    usage(__doc__)
    for run in sys.argv[1:]:
        cases = defaultdict(dict)
        for line in open(os.path.join(run, "autoeval.jsonl")):
            r = json.loads(line)
            if r.get("bench") == "autoeval" and r.get("rounds_s"):
                cases[(r["label"], r["ranks"], r["matrix"])][r["backend"]] = r
        print(run)
        for setting in sorted({k[:2] for k in cases}):
            mats, levels, picks = [], [], []
            for key, by in cases.items():
                if key[:2] != setting or "p2p" not in by:
                    continue
                best = min(by, key=lambda b: by[b]["measured_s"])
                ratio = paired(by[best]["rounds_s"], by["p2p"]["rounds_s"])
                if "level_" in os.path.basename(key[2]):
                    levels.append(ratio)
                else:
                    mats.append(ratio)
                    pick = next(iter(by.values()))["auto"]
                    picks.append(paired(by[pick]["rounds_s"], by["p2p"]["rounds_s"]))
            if not mats and not levels:
                continue
            print("  %-8s %2d ranks: best / p2p median %s over %d matrices, %s over %d levels; auto's pick / p2p %s" % (
                setting[0], setting[1], med(mats), len(mats), med(levels), len(levels), med(picks)))


if __name__ == "__main__":
    main()
