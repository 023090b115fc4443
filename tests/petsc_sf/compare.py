#!/usr/bin/env python3
"""Runs an unmodified PETSc program with -sf_type basic and then, through the plugin
(-dll_append libsparsecomm_petsc.so -sf_type sparsecomm), with every sparsecomm backend;
every RESULT line must agree: integers (iteration counts, mismatch counts) exactly, reals
to a relative 1e-10 (the order of a sum may differ). The sparsecomm runs must also show
the type at work: -log_view lists its SFscStart event with a non-zero count.

usage: compare.py CONFIG PROGRAM PLUGIN NP BACKEND[,BACKEND...] [-- extra program options]
CONFIG: the build's mpitest.json (tests/driver/mpitest.py); RESULT lines and -log_view are
rank 0's.
(a backend may carry its own options after a colon, auto:race=4: -sf_sparsecomm_options; ';'
between several)
"""
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from interop_compare import run as run_cmd, same  # noqa: E402


def run(config, np, program):
    # (a hung run stopped well within the test's own limit, which covers every backend's run)
    return run_cmd(config, np, program, timeout=120)[0]["out"] or ""


def results(out):
    r = {}
    for line in out.splitlines():
        if line.startswith("RESULT "):
            _, name, value = line.split()
            r[name] = value
    if not r:
        raise SystemExit("no RESULT lines in:\n" + out[-3000:])
    return r


def main():
    if len(sys.argv) < 6 or sys.argv[1] in ("-h", "--help"):
        print(__doc__)
        return 0 if len(sys.argv) > 1 and sys.argv[1] in ("-h", "--help") else 2
    config, program, plugin, np_, backends = sys.argv[1:6]
    extra = sys.argv[7:] if len(sys.argv) > 6 and sys.argv[6] == "--" else []
    base = [program] + extra
    ref = results(run(config, np_, base + ["-sf_type", "basic"]))
    bad = 0
    for b in backends.split(","):
        name, _, options = b.partition(":")
        out = run(config, np_, base + ["-dll_append", plugin, "-sf_type", "sparsecomm", "-sf_sparsecomm_backend", name,
                          "-sf_sparsecomm_regions", "ppn:2", "-log_view"] +
                  (["-sf_sparsecomm_options", options.replace(";", ",")] if options else []))
        got = results(out)
        m = re.search(r"^SFscStart\s+(\d+)", out, re.M)
        used = int(m.group(1)) if m else 0
        diffs = [k for k in ref if k not in got or not same(ref[k], got[k])]
        for k in diffs:
            print("  %s: basic %s, sparsecomm/%s %s" % (k, ref[k], b, got.get(k, "missing")))
        ok = not diffs and used > 0
        bad += not ok
        print("np %s backend %-17s %d results %s, SFscStart count %d%s" %
              (np_, b, len(ref), "identical" if not diffs else "DIFFER", used, "" if used else " (NOT USED)"))
    print("compare: %s" % ("every backend agrees with basic" if not bad else "%d backend(s) FAILED" % bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
