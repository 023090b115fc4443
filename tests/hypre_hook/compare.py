#!/usr/bin/env python3
"""Runs an unmodified Hypre (or PETSc) program without the hook and then under
LD_PRELOAD=libsparsecomm_hypre_hook.so with every backend: the lines of rank 0 starting with
PREFIX must agree token by token (integers exactly, reals to a relative 1e-10; wall-clock
times, "<number> s", are left out), and every hooked run must show the hook at work:
each rank printed its summary (SPARSECOMM_HYPRE_VERBOSE) and their matvec exchanges through
sparsecomm add up to more than 0.

usage: compare.py CONFIG HOOK NP BACKENDS PREFIX REGIONS [--via "LAUNCHER"] -- PROGRAM [ARGS...]
CONFIG: the build's mpitest.json (tests/driver/mpitest.py); --via: start the ranks with that
command instead (scripts/cluster.sh run 2 2 --rate 1gbit --: the emulated cluster).
(a backend may carry its own options after a colon, auto:race=4: SPARSECOMM_HYPRE_OPTIONS)
"""
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from interop_compare import run as run_cmd, same  # noqa: E402


def run(config, np, program, env=(), via=None):
    # (a hung run stopped well within the test's own limit, which covers every backend's run)
    return run_cmd(config, np, program, env, 120, via)


TIME = re.compile(r"[-+0-9.eE]+ s\b")
SUMMARY = re.compile(r"exchanges through sparsecomm: (\d+) matvec, (\d+) transpose; .*; served (\d+) of (\d+) ")


def results(ranks, prefix):
    out = ranks[0]["out"] or ""
    lines = [TIME.sub("", l).split() for l in out.splitlines() if l.startswith(prefix)]
    if not lines:
        raise SystemExit("no '%s' lines in:\n%s" % (prefix, out[-3000:]))
    return lines


def main():
    if sys.argv[1:2] in (["-h"], ["--help"]):
        print(__doc__)
        return 0
    via = None
    args = sys.argv[1:]
    if len(args) > 7 and args[6] == "--via":
        via = args[7]
        del args[6:8]
    if len(args) < 8 or args[6] != "--":
        print(__doc__)
        return 2
    config, hook, np_, backends, prefix, regions = args[:6]
    program = args[7:]
    ref = results(run(config, np_, program, via=via), prefix)
    bad = 0
    for b in backends.split(","):
        name, _, options = b.partition(":")
        env = ["LD_PRELOAD=" + hook, "SPARSECOMM_HYPRE_BACKEND=" + name, "SPARSECOMM_HYPRE_REGIONS=" + regions,
               "SPARSECOMM_HYPRE_VERBOSE=1"]
        if options:
            env += ["SPARSECOMM_HYPRE_OPTIONS=" + options.replace(";", ",")]
        ranks = run(config, np_, program, env, via)
        got = results(ranks, prefix)
        ok = len(got) == len(ref) and all(len(g) == len(r) and all(same(x, y) for x, y in zip(r, g))
                                          for r, g in zip(ref, got))
        sums = [m for rank in ranks.values() for m in SUMMARY.findall(rank["err"] or "")]
        hooked = sum(int(m) + int(t) for m, t, _, _ in sums)
        served = sum(int(s) for _, _, s, _ in sums)
        passed = sum(int(a) - int(s) for _, _, s, a in sums)
        if not ok:
            for r, g in zip(ref, got):
                if r != g:
                    print("  without: %s\n  with %s: %s" % (" ".join(r), b, " ".join(g)))
        used = hooked > 0 and len(sums) == int(np_)
        bad += not (ok and used)
        print("np %s backend %-17s %d lines %s; through sparsecomm %d matvec exchanges, %d exchanges in all "
              "(%.0f%%), passed to Hypre %d%s" %
              (np_, b, len(ref), "identical" if ok else "DIFFER", hooked, served,
               100.0 * served / max(served + passed, 1), passed, "" if used else " (HOOK NOT USED)"))
    print("compare: %s" % ("every backend agrees with Hypre's own exchange" if not bad else "%d backend(s) FAILED" % bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
