"""Shared helpers of the plot scripts: command-line arguments and JSON-lines records."""
import json
import os
import sys


def args(doc):
    """(source .jsonl, output .png) from argv; exits with the script's usage otherwise."""
    if len(sys.argv) < 2:
        sys.exit(doc)
    src = sys.argv[1]
    out = sys.argv[2] if len(sys.argv) > 2 else src.rsplit(".", 1)[0] + ".png"
    return src, out


def results_dir(doc):
    """The results directory of a reproduction (argv[1]); exits with the script's usage otherwise."""
    if len(sys.argv) < 2:
        sys.exit(doc)
    return sys.argv[1]


def records_if_present(path, *benches):
    """records() as a list, or [] when the file does not exist (a part of a run was skipped)."""
    return list(records(path, *benches)) if os.path.exists(path) else []


def records(src, *benches):
    """Every record of the given bench kinds, in file order (blank lines skipped)."""
    with open(src) as f:
        for line in f:
            line = line.strip()
            if not line:
                continue
            r = json.loads(line)
            if r.get("bench") in benches:
                yield r
