#!/usr/bin/env python3
"""Checks docs/environment.md against the sources: every variable the code reads (a string
literal "SPARSECOMM_..." in a C, C++ or Fortran source or header) has a row in the document
(a table row starting with | `SPARSECOMM_...`), and every row names a variable some source
reads. Prints what is missing on either side and exits 1; exits 0 when they match.

    environment.py DOC SOURCE_DIR...
"""
import os
import re
import sys

LITERAL = re.compile(r'"(SPARSECOMM_[A-Z0-9_]+)"')
ROW = re.compile(r"^\|\s*`(SPARSECOMM_[A-Z0-9_]+)`")
SUFFIXES = (".c", ".h", ".cpp", ".hpp", ".cc", ".F90", ".f90")


def read_in(roots):
    found = {}
    for root in roots:
        paths = [root] if os.path.isfile(root) else [
            os.path.join(d, f) for d, _, files in os.walk(root) for f in files]
        for path in sorted(paths):
            if not path.endswith(SUFFIXES):
                continue
            with open(path, encoding="utf-8", errors="replace") as fh:
                for n, line in enumerate(fh, 1):
                    for name in LITERAL.findall(line):
                        found.setdefault(name, "%s:%d" % (path, n))
    return found


def main():
    if len(sys.argv) < 3 or sys.argv[1] in ("-h", "--help"):
        print(__doc__.strip())
        return 0 if len(sys.argv) == 2 else 2
    with open(sys.argv[1], encoding="utf-8") as fh:
        documented = {m.group(1) for line in fh for m in [ROW.match(line)] if m}
    read = read_in(sys.argv[2:])
    missing = sorted(set(read) - documented)
    stale = sorted(documented - set(read))
    for name in missing:
        print("environment.py: %s is read (%s) but has no row in %s" % (name, read[name], sys.argv[1]))
    for name in stale:
        print("environment.py: %s has a row in %s but no source reads it" % (name, sys.argv[1]))
    if missing or stale:
        return 1
    print("environment.py: %d variables, each read and documented" % len(read))
    return 0


if __name__ == "__main__":
    sys.exit(main())
