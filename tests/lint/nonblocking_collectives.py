#!/usr/bin/env python3
"""Checks that the library's sources post no non-blocking reduction or barrier of their own
(MPI_Iallreduce, MPI_Ibarrier, MPI_Ireduce, ..., or their PMPI_ names) outside src/core/mpi_util.cpp: SimGrid
SMPI 3.32's non-blocking collectives let ranks leave early (shared/simgrid/NOTES.md), so
every such call goes through the SMPI-safe helpers there (iallreduce_max_sum,
NonblockingBarrier). MPI's neighborhood collectives are not checked (their backends are
not registered in the SMPI build). Prints each call found (path:line) and exits 1; exits 0
when there is none.

    nonblocking_collectives.py SOURCE_DIR_OR_FILE...
"""
import os
import re
import sys

CALL = re.compile(r"\b(P?MPI_I(?:allreduce|barrier|reduce|reduce_scatter|reduce_scatter_block|bcast|allgather|"
                  r"allgatherv|alltoall|alltoallv|alltoallw|gather|gatherv|scatter|scatterv|scan|exscan))\s*\(")
SUFFIXES = (".c", ".h", ".cpp", ".hpp", ".cc")
ALLOWED = os.path.join("src", "core", "mpi_util.cpp")


def code_only(text):
    """The text with comments and string literals blanked (line breaks kept)."""
    out, i, n = [], 0, len(text)
    while i < n:
        if text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append("\n" * text.count("\n", i, j))
            i = j
        elif text[i] in "\"'":  # a string or character literal ('"' is not a string's start)
            q, j = text[i], i + 1
            while j < n and text[j] != q:
                j += 2 if text[j] == "\\" else 1
            out.append(q + q)
            i = j + 1
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def main(roots):
    found = []
    for root in roots:
        paths = [root] if os.path.isfile(root) else sorted(
            os.path.join(d, f) for d, _, files in os.walk(root) for f in files)
        for path in paths:
            if not path.endswith(SUFFIXES) or path.endswith(ALLOWED):
                continue
            with open(path, encoding="utf-8", errors="replace") as fh:
                code = code_only(fh.read())
            for n, line in enumerate(code.split("\n"), 1):
                for name in CALL.findall(line):
                    found.append("%s:%d: %s outside src/core/mpi_util.cpp (SMPI-unsafe; use its helpers)"
                                 % (path, n, name))
    for f in found:
        print(f)
    if found:
        return 1
    print("no non-blocking reduction or barrier outside src/core/mpi_util.cpp")
    return 0


if __name__ == "__main__":
    if len(sys.argv) < 2 or sys.argv[1] in ("-h", "--help"):
        print(__doc__)
        sys.exit(0 if len(sys.argv) > 1 else 2)
    sys.exit(main(sys.argv[1:]))
