#!/usr/bin/env python3
"""The layer rules of docs/architecture.md, checked over the include lines of a tree.

Usage: layers.py ROOT   (ROOT holds src/ and include/sparsecomm/)

Each layer includes only the layers below it:
  core < matrix < comm < comm/plan < comm/virt < kernels < interop, capi < apps
with two refinements: comm/ proper (the SDDE, patterns, locality, combining, the node
window) never includes comm/plan/ or comm/virt/; the backends (src/comm/plan/halo|gather)
include comm/virt/ for their own counts hooks, while comm/virt/ includes no backend's
private header. And no code of core/ or comm/ (any of its sublayers) reads the
environment (getenv, secure_getenv, environ): settings reach it as values, read once at the
boundary (src/interop/environment.cpp). Prints one line per violation and exits 1 if there
is any; else prints a summary and exits 0.
"""
import os
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s+"(?:sparsecomm/)?([^"]+)"')

# (layer name, path prefixes relative to ROOT that belong to it); the first match wins, so
# the more specific prefixes come first.
LAYERS = [
    ("apps", ["src/apps/"]),
    ("capi", ["src/capi/", "include/sparsecomm.h", "include/mpi_advance_compat.h"]),
    ("interop", ["src/interop/", "include/sparsecomm/interop/"]),
    ("kernels", ["src/kernels/", "include/sparsecomm/kernels/"]),
    ("backend", ["src/comm/plan/halo/", "src/comm/plan/gather/"]),
    ("virt", ["src/comm/virt/", "include/sparsecomm/comm/virt/"]),
    ("plan", ["src/comm/plan/", "include/sparsecomm/comm/plan/"]),
    ("comm", ["src/comm/", "include/sparsecomm/comm/"]),
    ("matrix", ["src/matrix/", "include/sparsecomm/matrix/"]),
    ("core", ["src/core/", "include/sparsecomm/core/"]),
]

# What an included path (as written after an optional "sparsecomm/") belongs to.
TARGETS = [
    ("apps", "apps/"),
    ("capi", "capi/"),
    ("interop", "interop/"),
    ("kernels", "kernels/"),
    ("backend", "comm/plan/halo/"),
    ("backend", "comm/plan/gather/"),
    ("virt", "comm/virt/"),
    ("plan", "comm/plan/"),
    ("comm", "comm/"),
    ("matrix", "matrix/"),
    ("core", "core/"),
]

# Which layers each layer may include (itself always).
ALLOWED = {
    "core": set(),
    "matrix": {"core"},
    "comm": {"core"},
    "plan": {"core", "comm"},
    "backend": {"core", "comm", "plan", "virt"},
    "virt": {"core", "comm", "plan"},
    "kernels": {"core", "matrix", "comm", "plan", "virt"},
    "interop": {"core", "matrix", "comm", "plan", "virt", "kernels", "backend"},
    "capi": {"core", "matrix", "comm", "plan", "virt", "kernels", "interop", "backend"},
    "apps": {"core", "matrix", "comm", "plan", "virt", "kernels", "interop", "capi", "backend"},
}

# The layers that take every setting as a value, and what reads the environment (outside
# comments).
NO_ENVIRONMENT = {"core", "comm", "plan", "backend", "virt"}
ENVIRONMENT_READ = re.compile(r"\b(secure_getenv|getenv|environ)\b")
COMMENT = re.compile(r"^\s*(//|/?\*)")

# Deliberate exceptions, each with its reason.
EXCEPTIONS = {
    # Deprecated forwarding header: GhostScatter moved to kernels/ and the old include
    # keeps compiling for users.
    ("include/sparsecomm/comm/ghost.hpp", "kernels/ghost.hpp"),
}


def layer_of_file(rel):
    for name, prefixes in LAYERS:
        if any(rel == p or rel.startswith(p) for p in prefixes):
            return name
    return None


def layer_of_include(path):
    for name, prefix in TARGETS:
        if path.startswith(prefix):
            return name
    return None


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    root = sys.argv[1]
    files = violations = 0
    for top in ("src", "include"):
        for dirpath, _, names in os.walk(os.path.join(root, top)):
            for n in sorted(names):
                if not n.endswith((".hpp", ".cpp", ".h", ".c", ".inc")):
                    continue
                full = os.path.join(dirpath, n)
                rel = os.path.relpath(full, root).replace(os.sep, "/")
                mine = layer_of_file(rel)
                if mine is None:
                    continue
                files += 1
                with open(full, encoding="utf-8", errors="replace") as f:
                    for lineno, line in enumerate(f, 1):
                        code = "" if COMMENT.match(line) else line.split("//", 1)[0]
                        env = ENVIRONMENT_READ.search(code) if mine in NO_ENVIRONMENT else None
                        if env:
                            violations += 1
                            print(f"{rel}:{lineno}: layer {mine} reads the environment ({env.group(1)}): take the "
                                  "setting as a value, read at the boundary (src/interop/environment.cpp)")
                        m = INCLUDE.match(line)
                        if not m:
                            continue
                        target = layer_of_include(m.group(1))
                        if target is None or target == mine or target in ALLOWED[mine]:
                            continue
                        if (rel, m.group(1)) in EXCEPTIONS:
                            continue
                        violations += 1
                        print(f"{rel}:{lineno}: layer {mine} includes {m.group(1)} (layer {target})")
    if violations:
        print(f"{violations} violations of the layer rules (docs/architecture.md)")
        return 1
    print(f"{files} files: every include follows the layer rules, and core/ and comm/ read no environment")
    return 0


if __name__ == "__main__":
    sys.exit(main())
