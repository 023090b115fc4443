#!/usr/bin/env python3
"""Offline evaluation of variants of auto's model on a run of experiments/auto/run.sh.

autoeval's JSON lines hold, per setting, matrix and backend, the measured time and every
rank's inputs to the model (`rank_terms`, see src/apps/autoeval/app.cpp). This script
predicts from them exactly as src/comm/plan/model.cpp does (`base`, checked against the
run's own predictions) and as the variants below do, with the model parameters the run
used (run.sh keeps them as model_<setting>_np<ranks>.txt), and reports for each how often
the choice is within 10% of the best measured backend (paired per round where the run
recorded its rounds), on all cases and on those held out
of tuning (heldout.txt), and the worst regret. The measured times are fixed, so variants
are compared on the same noise.

    experiments/auto/refit.py RUN_DIR [RUN_DIR ...] [variant ...]

The tallies add up over the runs given (several runs of the same code average the noise).
"""
import json
import math
import os
import sys
from collections import defaultdict

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import plotlib  # noqa: E402

# auto's candidates in its order (BackendHooks::setup_rank, then name): a tie goes to the first.
ORDER = ["p2p", "neighbor", "shm", "aggregated_2step", "aggregated", "aggregated_dedup", "combined"]
FIELDS = ["alpha_intra", "beta_intra", "alpha_inter", "beta_inter", "msg_intra", "byte_intra", "msg_inter",
          "byte_inter", "region_rate", "stage_intra", "stage_inter", "copy", "msg_shm", "byte_shm", "stage_shm"]


def load_model(path):
    m = {}
    for line in open(path):
        line = line.strip()
        if line and not line.startswith("#"):
            k, v = line.split()
            m[k] = float(v)
    return m


def rank_of(v):
    """One rank's terms: its head and, per step, [si_m, si_b, se_m, se_b, ri_m, ri_b, re_m, re_b, w_m, w_b]."""
    head = dict(zip(["region", "copied", "stages", "inter_steps", "message_steps", "wmsgs", "wbytes", "injected"],
                    v["head"]))
    return head, v["steps"]


def stage_cost(m, stages, inter, msg):
    if stages <= 0:
        return 0.0
    inter = min(max(inter, 0), stages)
    msg = min(max(msg, inter), stages)
    n_inter, n_intra, n_shm = inter, msg - inter, stages - msg
    if n_inter > 0:
        n_inter -= 1
    elif n_intra > 0:
        n_intra -= 1
    else:
        n_shm -= 1
    return m["stage_inter"] * n_inter + m["stage_intra"] * n_intra + m["stage_shm"] * n_shm


def step_costs(m, s, bi):
    send = m["msg_intra"] * s[0] + m["byte_intra"] * s[1] + m["msg_inter"] * s[2] + bi * s[3]
    recv = m["msg_intra"] * s[4] + m["byte_intra"] * s[5] + m["msg_inter"] * s[6] + bi * s[7]
    return max(send, recv)


def for_layout(m, label):
    """model.cpp's for_layout: where regions are whole nodes (run.sh's cluster setting), a rank
    alone on its link moves inter-region bytes at the link's rate."""
    if label != "cluster":
        return m
    return dict(m, byte_inter=min(m["byte_inter"], 1.0 / max(m["region_rate"], 1.0)))


def shares(ranks, n):
    """The share of all ranks with inter-region and with intra-region messages in step n
    (model.cpp's takes_part / step_shares)."""
    inter = sum(1 for _, st in ranks if n in st and st[n][2] + st[n][6] > 0) / len(ranks)
    intra = sum(1 for _, st in ranks if n in st and st[n][0] + st[n][4] > 0) / len(ranks)
    return inter, intra


def predict(m, ranks, variant, label=""):
    """The prediction of src/comm/plan/model.cpp (`base`: each step's busiest rank against
    its busiest region's link, summed over the steps, since 11-26's third session) or of a
    variant (names joined by '+'; a name ending in @cluster applies only where the regions are
    real nodes). Variants tried on 11-26: whole_rank (the model before: the busiest rank's
    whole exchange against the busiest region's whole injection), loaded_share (byte_inter
    per rank as calibrated, before for_layout), single_flow (byte_inter / ranks per region),
    beta_flow (the ping-pong's beta_inter), link_everywhere (for_layout's rule on emulated
    regions too), no_ingress (the region's link priced by injection alone, the model before
    the fifth session of 11-26), free_window_stages, half_window_stages, margin<N>, order_ties (pick_of:
    ties to the earlier candidate, not to the one with less work) and, on 11-27,
    worktie<N> (pick_of: of the candidates within N% of the lowest prediction, the one with
    the least total work), on 11-28 no_share (the model before the share of ranks taking
    part in a step's inter-region messages scaled msg_inter and added stage_inter times
    itself), no_intra (without the intra-region latency term alone) and sharepow<N> (the
    inter latency term's share to the power N / 100; msg_intra scaled by the intra share too
    changed no pick and is not kept), on 11-29 slack<N> (N% of the CPU work outside
    link-bound steps hidden behind their links' slack: no better at any N, nor with the
    copies or the stages' latency alone hidden) and flows<N> (a region's link in a step
    slower by N% per connection beyond the first that its ranks' inter-region messages
    open: worse at N = 1-5), on 11-29 (eighth session) pool_node (on one node, intra and inter
    loaded costs replaced by their mean: no pick changed), on 11-30 stagex<N> and
    shmstagex<N> (every stage's latency, or the window stage's alone, times N / 100: see
    README.md, "A slower machine"), and on the
    whole_rank model: link_absorbs_stages, additive, region_msgs."""
    opts = set()
    for v in variant.split("+"):
        if v.endswith("@cluster"):
            if label == "cluster":
                opts.add(v[:-len("@cluster")])
        else:
            opts.add(v)
    ppr = defaultdict(int)  # ranks per region
    for head, _ in ranks:
        ppr[head["region"]] += 1
    stages = max(int(h["stages"]) for h, _ in ranks)
    inter = max(int(h["inter_steps"]) for h, _ in ranks)
    msg = max(int(h["message_steps"]) for h, _ in ranks)
    for o in opts:  # msgx<N>: the loaded per-message costs times N / 100 (inter; msgix: intra too)
        if o.startswith("msgx"):
            m = dict(m, msg_inter=m["msg_inter"] * float(o[4:]) / 100)
        if o.startswith("msgix"):
            m = dict(m, msg_intra=m["msg_intra"] * float(o[5:]) / 100)
    if "pool_node" in opts and label == "node":  # one node: intra and inter are one transport, their mean
        m = dict(m, **{f"{k}_{c}": (m[f"{k}_intra"] + m[f"{k}_inter"]) / 2
                       for k in ("msg", "byte", "stage") for c in ("intra", "inter")})
    for o in opts:  # stagex<N> / shmstagex<N>: every stage's latency (or the window's) times N / 100
        if o.startswith("stagex"):
            f = float(o[len("stagex"):]) / 100
            m = dict(m, stage_intra=m["stage_intra"] * f, stage_inter=m["stage_inter"] * f, stage_shm=m["stage_shm"] * f)
        if o.startswith("shmstagex"):
            m = dict(m, stage_shm=m["stage_shm"] * float(o[len("shmstagex"):]) / 100)
    if "free_window_stages" in opts:  # a stage whose transfers all go through windows costs nothing
        m = dict(m, stage_shm=0.0)
    if "half_window_stages" in opts:
        m = dict(m, stage_shm=m["stage_shm"] / 2)
    stage = stage_cost(m, stages, inter, msg)

    if "loaded_share" not in opts:
        m = for_layout(m, "cluster" if "link_everywhere" in opts else label)

    def byte_inter(head):
        if "beta_flow" in opts:  # a rank alone on the link: the ping-pong's cost per byte
            return m["beta_inter"]
        return m["byte_inter"] / ppr[head["region"]] if "single_flow" in opts else m["byte_inter"]

    whole_rank = {v.replace("@cluster", "") for v in variant.split("+")} & {
        "whole_rank", "link_absorbs_stages", "additive", "region_msgs"}
    if not whole_rank:  # every step: its busiest rank against its busiest region's link
        names = sorted({n for _, st in ranks for n in st})
        total = max(m["copy"] * h["copied"] for h, _ in ranks)
        copies, slack, cpu_only = total, 0.0, 0.0
        work_sum, link_sum = total + stage, 0.0  # link_overlaps: the links' time against the rest
        for n in names:
            busy, inj, flows = 0.0, defaultdict(float), defaultdict(int)
            # The share of all ranks with inter-region messages in this step (model.cpp since
            # 11-28): it scales msg_inter (calibrated with every rank at once) and adds
            # stage_inter times itself, the step's latency across the network; the share with
            # intra-region messages adds stage_intra times itself.
            part, ipart = shares(ranks, n)
            # msgsharepow<N>: msg_inter scaled by the share to the power N / 100 (tried on 11-29)
            mpow = [float(o[len("msgsharepow"):]) / 100 for o in opts if o.startswith("msgsharepow")]
            mm = m if "no_share" in opts else dict(m, msg_inter=m["msg_inter"] * part ** (mpow[0] if mpow else 1.0))
            for head, st in ranks:
                if n not in st:
                    continue
                s = st[n]
                busy = max(busy, step_costs(mm, s, byte_inter(head)) + m["msg_shm"] * s[8] + m["byte_shm"] * s[9])
                inj[head["region"]] += s[3] / max(m["region_rate"], 1.0)
                if "no_ingress" not in opts:  # the region's incoming link too (a full-duplex link)
                    inj[(head["region"], "in")] += s[7] / max(m["region_rate"], 1.0)
                if "step_region_msgs" in opts:  # the region's link also pays per message its ranks send
                    inj[head["region"]] += s[2] * m["msg_inter"] / ppr[head["region"]]
                flows[head["region"]] += s[2] if s[3] > 0 else 0
                flows[(head["region"], "in")] += s[6] if s[7] > 0 else 0
            fl = [float(o[len("flows"):]) / 100 for o in opts if o.startswith("flows")]
            if fl:  # flows<N>: a link carrying k connections at once moves bytes 1 + N% x (k - 1) slower
                for key in inj:
                    inj[key] *= 1 + fl[0] * max(flows[key] - 1, 0)
            if "no_share" not in opts:
                # sharepow<N>: the latency term's share to the power N / 100 (tried on 11-28)
                power = [float(o[len("sharepow"):]) / 100 for o in opts if o.startswith("sharepow")]
                total += m["stage_inter"] * part ** (power[0] if power else 1.0)
                if "no_intra" not in opts:  # and stage_intra times the share with intra-region messages
                    total += m["stage_intra"] * ipart
            soft = [float(o[len("softmax"):]) / 100 for o in opts if o.startswith("softmax")]
            link = max(inj.values())
            # softmax<N>: a step's CPU work and its link overlap only partly (N% of the shorter
            # adds), as where the same cores run the network stack that feeds the link
            total += max(busy, link) + (soft[0] * min(busy, link) if soft else 0.0)
            work_sum += busy
            link_sum += max(inj.values())
            slack += max(0.0, link - busy)
            if link <= busy:
                cpu_only += busy
        if "link_overlaps" in opts:  # back-to-back exchanges: the link streams while ranks do the rest
            return max(work_sum, link_sum)
        hide = [float(o[len("slack"):]) / 100 for o in opts if o.startswith("slack")]
        if hide:  # slack<N>: while a link-bound step drains, N% of the rest's CPU work (copies,
            # stages, steps without a link-bound transfer) runs on the cores the waiting ranks leave
            return total + stage - hide[0] * min(slack, cpu_only + stage + copies)
        return total + stage
    # region_msgs: the loaded per-message cost msg_inter (every rank of a region sending at
    # once) is the region's message throughput shared by its ranks: a rank pays
    # msg_inter / ranks per region for its own messages, and the region's link pays
    # msg_inter / ranks per region for every message its ranks send, in series with its bytes.
    region_msgs = "region_msgs" in opts or ("region_msgs@cluster" in variant.split("+") and label == "cluster")
    busy = 0.0
    inj = defaultdict(float)
    for head, steps in ranks:
        b = m["copy"] * head["copied"] + m["msg_shm"] * head["wmsgs"] + m["byte_shm"] * head["wbytes"]
        mm = dict(m, msg_inter=m["msg_inter"] / ppr[head["region"]]) if region_msgs else m
        for s in steps.values():
            b += step_costs(mm, s, byte_inter(head))
        busy = max(busy, b)
        inj[head["region"]] += head["injected"] / max(m["region_rate"], 1.0)
        if region_msgs:
            inj[head["region"]] += sum(s[2] for s in steps.values()) * m["msg_inter"] / ppr[head["region"]]
    max_inj = max(inj.values()) if inj else 0.0
    if "link_absorbs_stages" in opts:  # the stages' waits overlap the link's transfer time
        return max(busy + stage, max_inj)
    if "additive" in opts:  # a rank's own work and its region's link in series
        return busy + max_inj + stage
    return max(busy, max_inj) + stage


def load_run(out):
    """The cases of one run: (label, ranks, matrix) -> backend -> record, and the models."""
    cases = defaultdict(dict)
    for line in open(os.path.join(out, "autoeval.jsonl")):
        r = json.loads(line)
        if "rank_terms" not in r or not isinstance(r["rank_terms"][0], dict):
            sys.exit("refit.py: %s has no rank_terms of this format (autoeval before 11-26)" % out)
        cases[(r["label"], r["ranks"], r["matrix"])][r["backend"]] = r
    models = {(k[0], k[1]): load_model(os.path.join(out, "model_%s_np%d.txt" % (k[0], k[1]))) for k in cases}
    return cases, models


def work_of(m, ranks, label, no_share=False):
    """model.cpp's total_work: every rank's copies and steps, summed (auto's tie-break)."""
    m = for_layout(m, label)
    part = {n: shares(ranks, n)[0] for _, st in ranks for n in st}  # per step: scales msg_inter
    w = 0.0
    for head, st in ranks:
        w += m["copy"] * head["copied"]
        for n, s in st.items():
            mm = m if no_share else dict(m, msg_inter=m["msg_inter"] * part[n])
            w += step_costs(mm, s, m["byte_inter"]) + m["msg_shm"] * s[8] + m["byte_shm"] * s[9]
    return w


def pick_of(pred, variant="base", work=None):
    margin = [float(v[len("margin"):]) / 100 for v in variant.split("+") if v.startswith("margin")]
    if margin:  # the first candidate in auto's order within margin of the lowest prediction
        low = min(pred.values())
        for b in sorted(pred, key=lambda b: ORDER.index(b) if b in ORDER else len(ORDER)):
            if pred[b] <= low * (1 + margin[0]):
                return b
    near = [float(v[len("worktie"):]) / 100 for v in variant.split("+") if v.startswith("worktie")]
    if near and work:  # within near of the lowest prediction: the least total work
        low = min(pred.values())
        close = [b for b in pred if pred[b] <= low * (1 + near[0])]
        return min(close, key=lambda b: (work[b], ORDER.index(b) if b in ORDER else len(ORDER)))
    pick, cost = None, float("inf")
    for b in sorted(pred, key=lambda b: ORDER.index(b) if b in ORDER else len(ORDER)):
        tie = cost * (1 - 1e-9) <= pred[b] <= cost * (1 + 1e-9)
        if pred[b] < cost * (1 - 1e-9) or (tie and work and "order_ties" not in variant.split("+")
                                            and work[b] < work[pick] * (1 - 1e-9)):
            pick, cost = b, pred[b]
    return pick


def regret_of(by, pick):
    """The pick's time over the best backend's: paired where the run recorded its rounds
    (largest over backends of the median over rounds of the two times of one round, at
    least 1; autoeval since 2026-11-27), else the ratio of the medians."""
    if all(r.get("rounds_s") for r in by.values()):
        return plotlib.paired_regret(by[pick]["rounds_s"], [r["rounds_s"] for r in by.values()])
    return by[pick]["measured_s"] / min(r["measured_s"] for r in by.values())


def main():
    plotlib.usage(__doc__)
    runs = [a for a in sys.argv[1:] if os.path.isdir(a)]
    if not runs:
        sys.exit("refit.py: no run directory among the arguments\n" + __doc__)
    variants = ["base"] + [a for a in sys.argv[1:] if not os.path.isdir(a)]
    heldout = set()
    here = os.path.dirname(os.path.abspath(__file__))
    for line in open(os.path.join(here, "heldout.txt")):
        line = line.strip()
        if line and not line.startswith("#"):
            heldout.add(line)
    data = [load_run(out) for out in runs]
    worst_check, mismatch = 0.0, 0
    for variant in variants:
        tally = defaultdict(lambda: [0, 0, 1.0])  # setting -> within10, cases, worst
        held = [0, 0, 1.0]
        for cases, models in data:
            for (label, ranks, matrix), by in sorted(cases.items()):
                m = models[(label, ranks)]
                pred = {b: predict(m, [rank_of(v) for v in r["rank_terms"]], variant, label) for b, r in by.items()}
                if variant == "base":
                    for b, r in by.items():
                        worst_check = max(worst_check, abs(pred[b] / r["predicted_s"] - 1))
                work = {b: work_of(m, [rank_of(v) for v in r["rank_terms"]], label, "no_share" in variant.split("+"))
                        for b, r in by.items()}
                pick = pick_of(pred, variant, work)
                if variant == "base":
                    mismatch += pick != next(iter(by.values()))["auto"]
                regret = regret_of(by, pick)
                name = os.path.basename(matrix)
                if regret > 1.1 and os.environ.get("VERBOSE"):
                    print("  miss %s %d %s: %s (best %s) %.2f: %s" % (
                        label, ranks, name, pick, min(by, key=lambda b: by[b]["measured_s"]), regret,
                        ", ".join("%s %.0f [%.0f]" % (b, by[b]["measured_s"] * 1e6, pred[b] * 1e6) for b in sorted(by))))
                t = tally[(label, ranks)]
                t[0] += regret <= 1.1
                t[1] += 1
                t[2] = max(t[2], regret)
                if name in heldout or matrix in heldout:
                    held[0] += regret <= 1.1
                    held[1] += 1
                    held[2] = max(held[2], regret)
        total = sum(t[0] for t in tally.values()), sum(t[1] for t in tally.values())
        print("%-30s all %d/%d (%.1f%%), held out %d/%d (worst %.2f); " % (
            variant, total[0], total[1], 100.0 * total[0] / total[1], held[0], held[1], held[2]) +
              ", ".join("%s %d: %d/%d worst %.2f" % (k[0], k[1], v[0], v[1], v[2]) for k, v in sorted(tally.items())))
    print("base reproduces the runs' predictions to %.1e (relative); its pick differs from auto's in %d cases"
          % (worst_check, mismatch))


if __name__ == "__main__":
    main()
