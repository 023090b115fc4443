"""Shared helpers of the plot and table scripts: command-line arguments, JSON-lines records,
paired ratios."""
import json
import os
import statistics
import sys


def usage(doc, least=1):
    """Exits with the script's usage: on -h / --help to stdout with status 0, and to stderr
    with status 1 when fewer than `least` arguments are given."""
    if any(a in ("-h", "--help") for a in sys.argv[1:]):
        print(doc.strip())
        sys.exit(0)
    if len(sys.argv) - 1 < least:
        sys.exit(doc)


def args(doc):
    """(source .jsonl, output .png) from argv; exits with the script's usage otherwise."""
    usage(doc)
    src = sys.argv[1]
    out = sys.argv[2] if len(sys.argv) > 2 else src.rsplit(".", 1)[0] + ".png"
    return src, out


def results_dir(doc):
    """The results directory of a reproduction (argv[1]); exits with the script's usage otherwise."""
    usage(doc)
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


def paired(a, b):
    """The paired ratio of two variants of one interleaved run (apps::paired_ratio): the
    median over rounds of a's time over b's in the same round; a, b: every round's time."""
    return statistics.median(x / y for x, y in zip(a, b))


def paired_regret(pick, every):
    """A choice's regret, paired: the largest over the variants (their rounds in `every`,
    the pick's own among them) of paired(pick, variant), at least 1."""
    return max(1.0, max(paired(pick, r) for r in every))
