#!/usr/bin/env python3
"""Runs one MPI test and judges it rank by rank (every MPI test of ctest goes through here).

    mpitest.py --config BUILD/mpitest.json --np N [--timeout S] [--env VAR=VALUE ...]
               [--rank-env R VAR=VALUE ...] [checks ...] -- PROGRAM ARGS...

The launcher is CMake's MPIEXEC_EXECUTABLE with MPIEXEC_NUMPROC_FLAG and the flags that
scripts/mpi_launcher.sh names for that implementation (written into the config at configure
time): no test names an implementation's flag. Every rank runs under tests/driver/rank_shim.sh,
which writes the rank's stdout, stderr and exit code to files of their own, so a verdict never
depends on how a busy machine interleaves several ranks' streams.

Checks (regular expressions are Python's, searched in a rank's stdout and in its stderr, each
stream on its own; "." stops at a line's end, so a pattern spans lines only where it says \n):
  --each REGEX        every rank prints a line matching REGEX
  --rank R REGEX      rank R does
  --any REGEX         at least one rank does
  --once REGEX        exactly one line of all ranks' output does
  --none REGEX        no rank does (nor the launcher)
  --exit CODE         the run's exit code (default 0; "nonzero" for any failure exit;
                      "unfinalized" for a failure exit without MPI_Finalize, after which the
                      launcher may stop the other ranks by SIGTERM or SIGKILL)
  --skip-if REGEX     a rank printing REGEX (e.g. a data file absent) skips the test (exit 77)
  --skip-code C       the program exiting C on rank 0 skips the test (exit 77)
  --env VAR=VALUE     in every rank's environment (e.g. LD_PRELOAD of an interposition layer)
  --rank-env R VAR=VALUE  in rank R's only (settings that differ between ranks)
  --via "CMD ARGS"    start the ranks with CMD ARGS instead of the configured launcher (e.g.
                      scripts/cluster.sh run 2 3 --: the emulated cluster, whose own exit code
                      77 with no rank started is a skip)

Exit: 0 pass, 1 fail, 77 skipped. On any verdict it prints each rank's output, labelled.
"""
import argparse
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time

SKIP = 77
_jobs = []  # (launcher process, per-rank folder) of the jobs running now: stopped with this driver


def stop_jobs(*_):
    """Stops every job this process started, ranks included (the launcher's process group, and
    each rank's program by the pid its shim wrote): a driver that is itself stopped (ctest's
    TIMEOUT, a signal) leaves no rank behind."""
    for proc, outdir in _jobs:
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(proc.pid, sig)
            except (ProcessLookupError, PermissionError):
                pass
            for name in os.listdir(outdir) if os.path.isdir(outdir) else []:
                if name.endswith(".pid"):
                    try:
                        os.kill(int(read(os.path.join(outdir, name)) or 0), sig)
                    except (ValueError, ProcessLookupError, PermissionError):
                        pass
            if sig == signal.SIGTERM:
                time.sleep(1)
    if _:
        sys.exit(1)


signal.signal(signal.SIGTERM, stop_jobs)
signal.signal(signal.SIGINT, stop_jobs)


def parse_args(argv):
    if argv[:1] in (["-h"], ["--help"]):
        print(__doc__)
        sys.exit(0)
    if "--" not in argv:
        sys.exit("mpitest: usage: mpitest.py [options] -- PROGRAM ARGS...")
    cut = argv.index("--")
    p = argparse.ArgumentParser(prog="mpitest.py")
    p.add_argument("--config", required=True)
    p.add_argument("--np", type=int, required=True)
    p.add_argument("--timeout", type=float, default=120)
    p.add_argument("--env", action="append", default=[])
    p.add_argument("--rank-env", nargs=2, action="append", default=[], metavar=("R", "VAR=VALUE"))
    p.add_argument("--each", action="append", default=[])
    p.add_argument("--rank", nargs=2, action="append", default=[], metavar=("R", "REGEX"))
    p.add_argument("--any", action="append", default=[])
    p.add_argument("--once", action="append", default=[])
    p.add_argument("--none", action="append", default=[])
    p.add_argument("--exit", default="0")
    p.add_argument("--skip-if", action="append", default=[])
    p.add_argument("--skip-code", type=int)
    p.add_argument("--keep", action="store_true", help="keep the per-rank files")
    p.add_argument("--via", help="a launcher command line instead of the configured one")
    args = p.parse_args(argv[:cut])
    args.program = argv[cut + 1:]
    if not args.program:
        sys.exit("mpitest: no program after --")
    return args


def read(path):
    try:
        with open(path, "rb") as f:
            return f.read().decode("utf-8", "replace")
    except OSError:
        return None


def launch(cfg, np, program, outdir, env=(), rank_env=(), timeout=120, via=None):
    """Starts `program` on `np` ranks as configured (or through `via`), each rank under
    rank_shim.sh writing into `outdir`. env: VAR=VALUE for every rank; rank_env: (rank,
    VAR=VALUE) pairs. Returns (exit code, timed out, the launcher's own output, seconds)."""
    here = os.path.dirname(os.path.abspath(__file__))
    shim = os.path.join(here, "rank_shim.sh")
    penv = dict(os.environ)
    penv.update(cfg.get("env", {}))
    timeout = int(timeout)
    if via:
        launcher = shlex.split(via) if isinstance(via, str) else list(via)
    else:
        launcher = [cfg["mpiexec"], cfg["np_flag"], str(np)] + cfg.get("flags", []) + cfg.get("preflags", [])
        if cfg.get("timeout_flag"):
            launcher += [cfg["timeout_flag"], str(timeout)]
        if cfg.get("timeout_env"):
            penv[cfg["timeout_env"]] = str(timeout)
    words = cfg.get("rank_env", []) + [kv for kv in env if not kv.startswith("LD_PRELOAD=")]
    # The test's own preloads (an interposition layer) first, then the build's (the yield
    # shim of tests/driver/yield_when_idle.c, where the MPI needs one), in one LD_PRELOAD.
    preload = [kv.partition("=")[2] for kv in env if kv.startswith("LD_PRELOAD=")] + cfg.get("preload", [])
    if preload:
        words.append("LD_PRELOAD=" + ":".join(preload))
    # rank-dependent settings: the shim takes SPARSECOMM_TEST_RANKENV_<r>_<VAR> as VAR on rank r
    for r, kv in rank_env:
        var, _, value = kv.partition("=")
        words.append(f"SPARSECOMM_TEST_RANKENV_{int(r)}_{var}={value}")
    program = list(program)
    # MPIEXEC_POSTFLAGS go after the program, before its arguments (CMake's FindMPI).
    program[1:1] = cfg.get("postflags", [])
    cmd = launcher + [shim, outdir] + words + ["--"] + program
    print("mpitest: " + " ".join(cmd), flush=True)
    t0 = time.time()
    # Its own session, so that a run past the time limit is stopped as a whole (the
    # launcher's own limit comes first; this is the backstop), ranks included.
    proc = subprocess.Popen(cmd, env=penv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            start_new_session=True)
    _jobs.append((proc, outdir))
    try:
        launcher_out, _ = proc.communicate(timeout=timeout + 20)
        timed_out = False
    except subprocess.TimeoutExpired:
        timed_out = True
        launcher_out = b""
        for sig, grace in ((signal.SIGTERM, 10), (signal.SIGKILL, 5)):
            try:
                os.killpg(proc.pid, sig)
            except ProcessLookupError:
                break
            try:
                launcher_out, _ = proc.communicate(timeout=grace)
                break
            except subprocess.TimeoutExpired:
                pass
        stop_jobs()  # (ranks outside the launcher's process group too)
    _jobs.remove((proc, outdir))
    return proc.returncode, timed_out, launcher_out.decode("utf-8", "replace"), time.time() - t0


def job_code(rc, ranks):
    """The run's exit code: the launcher's where it failed (a crash, a timeout, a rank never
    started), else the first non-zero code of the ranks in rank order (rank_shim.sh keeps the
    programs' own codes from the launcher, so that it never stops a job midway)."""
    if rc != 0:
        return rc
    for rank in ranks.values():
        if rank["rc"] is not None and rank["rc"].strip() not in ("", "0"):
            return int(rank["rc"])
    return 0


def collect(outdir, np):
    """Each rank's stdout, stderr and exit code (None where it wrote none)."""
    ranks = {}
    for r in range(np):
        ranks[r] = {"out": read(os.path.join(outdir, f"rank{r}.out")),
                    "err": read(os.path.join(outdir, f"rank{r}.err")),
                    "rc": read(os.path.join(outdir, f"rank{r}.rc"))}
    return ranks


def run_job(config, np, program, env=(), rank_env=(), timeout=120, via=None):
    """launch() in a scratch folder of its own, for scripts that judge a run themselves
    (tests/interop_compare.py): (exit code, timed out, launcher output, per-rank outputs)."""
    with open(config) as f:
        cfg = json.load(f)
    outdir = tempfile.mkdtemp(prefix="mpitest.")
    try:
        rc, timed_out, launcher_out, _ = launch(cfg, np, program, outdir, env, rank_env, timeout, via)
        ranks = collect(outdir, np)
        return job_code(rc, ranks), timed_out, launcher_out, ranks
    finally:
        shutil.rmtree(outdir, ignore_errors=True)


def main():
    args = parse_args(sys.argv[1:])
    with open(args.config) as f:
        cfg = json.load(f)
    outdir = tempfile.mkdtemp(prefix="mpitest.")
    try:
        rc, timed_out, launcher_out, secs = launch(cfg, args.np, args.program, outdir, args.env, args.rank_env,
                                                   args.timeout, args.via)
        ranks = collect(outdir, args.np)
        rc = job_code(rc, ranks)
        strays = sorted(n for n in os.listdir(outdir) if n.startswith("rankunknown"))
        verdict = judge(args, rc, timed_out, secs, launcher_out, ranks, strays)
        show(ranks, launcher_out, rc, secs)
        for line in verdict["lines"]:
            print("mpitest: " + line)
        print(f"mpitest: {verdict['result']}", flush=True)
        return {"pass": 0, "fail": 1, "skip": SKIP}[verdict["result"]]
    finally:
        if args.keep:
            print(f"mpitest: per-rank files kept in {outdir}")
        else:
            shutil.rmtree(outdir, ignore_errors=True)


def lines_of(rank):
    for stream in ("out", "err"):
        text = rank[stream]
        if text:
            yield from text.splitlines()


def matches(regex, rank):
    """REGEX found in the rank's stdout or in its stderr, each searched whole ("^" and "$" at
    every line, "." never a newline: a pattern spans lines only where it says \\n)."""
    rx = re.compile(regex, re.MULTILINE)
    return any(rank[s] and rx.search(rank[s]) for s in ("out", "err"))


def judge(args, rc, timed_out, secs, launcher_out, ranks, strays):
    lines = []
    # A run that did not end on its own fails whatever else it printed or returned: stopped
    # at the time limit (by the launcher's own limit or by this driver), a rank killed by a
    # signal (its shim writes 128 + the signal) or one that never wrote its exit code.
    if timed_out or secs >= args.timeout:
        lines.append(f"FAIL: not finished within {args.timeout:.0f} s (stopped)")
    codes = {r: int(rank["rc"] or 0) for r, rank in ranks.items() if rank["rc"] is not None}
    killed = [r for r, code in codes.items() if code > 128]
    unfinished = [r for r, rank in ranks.items() if rank["out"] is not None and rank["rc"] is None]
    if args.exit == "unfinalized" and any(0 < code <= 128 for code in codes.values()):
        # A program that ends on an error without MPI_Finalize (exit(2) in an interposition
        # layer, which cannot finalize a job it does not own): launchers stop the other ranks
        # once one such rank has ended, Open MPI by SIGTERM (the shim forwards it and writes
        # 143), Hydra by SIGKILL (the shim too is killed and writes no code). Those are not
        # crashes; the checks below still say whether each rank printed what it had to before
        # it was stopped, and a run stopped at the time limit still fails above.
        killed = [r for r in killed if codes[r] not in (128 + signal.SIGTERM, 128 + signal.SIGKILL)]
        unfinished = []
    if killed:
        lines.append(f"FAIL: ranks {killed} killed by a signal (exit codes above 128)")
    if unfinished:
        lines.append(f"FAIL: ranks {unfinished} never finished (no exit code)")
    if not lines:
        for regex in args.skip_if:
            for r, rank in ranks.items():
                if matches(regex, rank):
                    return {"result": "skip", "lines": [f"rank {r} printed /{regex}/: skipped"]}
        if args.skip_code is not None and ranks[0]["rc"] is not None and int(ranks[0]["rc"]) == args.skip_code:
            return {"result": "skip", "lines": [f"rank 0 exited {args.skip_code}: skipped"]}
    if args.via and rc == SKIP and all(rank["out"] is None for rank in ranks.values()):
        return {"result": "skip", "lines": ["the launcher could not start the job here (exit 77): skipped"]}
    if strays:
        lines.append(f"FAIL: the launcher did not tell a rank its number: {', '.join(strays)}")
    want = args.exit
    if want in ("nonzero", "unfinalized"):
        if rc == 0:
            lines.append("FAIL: exit code 0, expected a failure exit")
    elif rc != int(want):
        lines.append(f"FAIL: exit code {rc}, expected {want}")
    missing = [r for r, rank in ranks.items() if rank["out"] is None]
    if missing:
        lines.append(f"FAIL: ranks {missing} never started (no output files)")
    for regex in args.each:
        bad = [r for r, rank in ranks.items() if not matches(regex, rank)]
        if bad:
            lines.append(f"FAIL: ranks {bad} printed no line matching /{regex}/")
    for r, regex in args.rank:
        r = int(r)
        if r not in ranks or not matches(regex, ranks[r]):
            lines.append(f"FAIL: rank {r} printed no line matching /{regex}/")
    for regex in args.any:
        if not any(matches(regex, rank) for rank in ranks.values()):
            lines.append(f"FAIL: no rank printed a line matching /{regex}/")
    for regex in args.once:
        rx = re.compile(regex)
        n = sum(1 for rank in ranks.values() for line in lines_of(rank) if rx.search(line))
        if n != 1:
            lines.append(f"FAIL: {n} lines match /{regex}/, expected exactly one")
    for regex in args.none:
        rx = re.compile(regex, re.MULTILINE)
        bad = [r for r, rank in ranks.items() if matches(regex, rank)]
        if bad:
            lines.append(f"FAIL: ranks {bad} printed a line matching /{regex}/")
        if rx.search(launcher_out):
            lines.append(f"FAIL: the launcher printed a line matching /{regex}/")
    return {"result": "fail" if any(l.startswith("FAIL") for l in lines) else "pass", "lines": lines}


def show(ranks, launcher_out, rc, secs):
    for r, rank in ranks.items():
        for stream in ("out", "err"):
            text = rank[stream]
            if text:
                print(f"---- rank {r} std{stream} ----")
                print(text.rstrip("\n"))
        if rank["rc"] is not None and rank["rc"].strip() != "0":
            print(f"---- rank {r} exit code {rank['rc'].strip()} ----")
    if launcher_out.strip():
        print("---- launcher ----")
        print(launcher_out.rstrip("\n"))
    print(f"mpitest: exit code {rc} after {secs:.1f} s")


if __name__ == "__main__":
    sys.exit(main())
