#!/usr/bin/env python3
"""Runs an unmodified Hypre (or PETSc) program without the hook and then under
LD_PRELOAD=libsparsecomm_hypre_hook.so with every backend: the lines starting with PREFIX
must agree token by token (integers exactly, reals to a relative 1e-10; wall-clock times,
"<number> s", are left out), and every hooked run must show the hook at work
(SPARSECOMM_HYPRE_VERBOSE: exchanges through sparsecomm > 0, and calls passed to Hypre).

usage: compare.py MPIEXEC HOOK NP BACKENDS PREFIX REGIONS -- PROGRAM [ARGS...]
(a backend may carry its own options after a colon, auto:race=4: SPARSECOMM_HYPRE_OPTIONS)
(MPIEXEC may be a command with arguments, split on spaces: tests/hypre_hook/cluster_mpiexec.sh 2 2)
"""
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from interop_compare import run as run_cmd, same  # noqa: E402


def run(cmd):
    return run_cmd(cmd, 900)


TIME = re.compile(r"[-+0-9.eE]+ s\b")
SUMMARY = re.compile(r"exchanges through sparsecomm: (\d+) matvec, (\d+) transpose; passed to Hypre: (\d+) of other jobs")


def results(out, prefix):
    lines = [TIME.sub("", l).split() for l in out.splitlines() if l.startswith(prefix)]
    if not lines:
        raise SystemExit("no '%s' lines in:\n%s" % (prefix, out[-3000:]))
    return lines


def main():
    if sys.argv[1:2] in (["-h"], ["--help"]):
        print(__doc__)
        return 0
    if len(sys.argv) < 9 or sys.argv[7] != "--":
        print(__doc__)
        return 2
    mpiexec, hook, np_, backends, prefix, regions = sys.argv[1:7]
    mpiexec = mpiexec.split()
    program = sys.argv[8:]
    ref = results(run(mpiexec + ["-np", np_] + program), prefix)
    bad = 0
    for b in backends.split(","):
        name, _, options = b.partition(":")
        env = ["-x", "LD_PRELOAD=" + hook, "-x", "SPARSECOMM_HYPRE_BACKEND=" + name, "-x",
               "SPARSECOMM_HYPRE_REGIONS=" + regions, "-x", "SPARSECOMM_HYPRE_VERBOSE=1"]
        if options:
            env += ["-x", "SPARSECOMM_HYPRE_OPTIONS=" + options.replace(";", ",")]
        out = run(mpiexec + ["-np", np_] + env + program)
        got = results(out, prefix)
        ok = len(got) == len(ref) and all(len(g) == len(r) and all(same(x, y) for x, y in zip(r, g))
                                          for r, g in zip(ref, got))
        sums = SUMMARY.findall(out)
        hooked = sum(int(m) + int(t) for m, t, _ in sums)
        passed = sum(int(o) for _, _, o in sums)
        if not ok:
            for r, g in zip(ref, got):
                if r != g:
                    print("  without: %s\n  with %s: %s" % (" ".join(r), b, " ".join(g)))
        used = hooked > 0 and len(sums) == int(np_)
        bad += not (ok and used)
        print("np %s backend %-17s %d lines %s; through sparsecomm %d exchanges, passed to Hypre %d calls%s" %
              (np_, b, len(ref), "identical" if ok else "DIFFER", hooked, passed, "" if used else " (HOOK NOT USED)"))
    print("compare: %s" % ("every backend agrees with Hypre's own exchange" if not bad else "%d backend(s) FAILED" % bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
