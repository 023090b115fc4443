"""What the interposition tests' comparison scripts share (tests/petsc_sf/compare.py,
tests/hypre_hook/compare.py): running a program on every rank through the tests' launcher
(tests/driver/mpitest.py: each rank's output apart, so nothing depends on how the ranks'
streams interleave), and comparing one result token with the reference run's."""
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "driver"))
from mpitest import run_job  # noqa: E402


def run(config, np, program, env=(), timeout=600, via=None):
    """Runs program on np ranks; the ranks' outputs ({rank: {"out", "err", "rc"}}), or their
    ends and an exit on failure."""
    rc, timed_out, launcher_out, ranks = run_job(config, int(np), program, env=env, timeout=timeout, via=via)
    if rc != 0 or timed_out:
        for r, rank in ranks.items():
            for stream in ("out", "err"):
                if rank[stream]:
                    sys.stdout.write("---- rank %d std%s ----\n%s\n" % (r, stream, rank[stream][-3000:]))
        sys.stdout.write(launcher_out[-3000:])
        raise SystemExit("FAILED (exit %s%s): %s" % (rc, ", timed out" if timed_out else "", " ".join(program)))
    return ranks


def same(a, b):
    """Equal tokens: integers exactly, reals to a relative 1e-10 (the order of a sum may
    differ between exchanges), anything else as text."""
    if a == b:
        return True
    try:
        x, y = float(a), float(b)
    except ValueError:
        return False
    if re.fullmatch(r"-?\d+", a) and re.fullmatch(r"-?\d+", b):
        return False
    return abs(x - y) <= 1e-10 * max(abs(x), abs(y))
