"""What the interposition tests' comparison scripts share (tests/petsc_sf/compare.py,
tests/hypre_hook/compare.py): running a program, and comparing one result token with the
reference run's."""
import re
import subprocess
import sys


def run(cmd, timeout):
    """Runs cmd; its combined output, or the end of it and an exit on failure."""
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=timeout)
    if p.returncode != 0:
        sys.stdout.write(p.stdout[-6000:])
        raise SystemExit("FAILED (exit %d): %s" % (p.returncode, " ".join(cmd)))
    return p.stdout


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
