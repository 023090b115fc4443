#!/usr/bin/env bash
# Every program's --json output is JSON Lines that a standard parser reads: one object per
# line, the provenance fields (version, git commit, UTC timestamp, host) and the benchmark's
# name, no NaN/Infinity literals, and a label with a quote and a backslash survives escaping.
# Also: a --json file that cannot be opened is an error, not a silent loss of the results.
#
#   tests/apps/json_records.sh BUILD_DIR MPIEXEC PYTHON    (MPIEXEC: scripts/mpirun.sh)
set -euo pipefail
build=$1 mpiexec=$2 python=$3
apps=$build/src/apps
cli=$apps/cli/sparsecomm
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
run() {  # run NP ARGS...: the program must succeed
  local np=$1; shift
  if ! "$mpiexec" -np "$np" "$@" > "$work/out.txt" 2>&1; then
    cat "$work/out.txt"; echo "FAILED: $*"; exit 1
  fi
}
expect=()  # bench names that must appear
J=$work/records.jsonl
run 2 "$cli" spmv --gen rotate:16,16 --reps 4 --rounds 2 --json "$J"; expect+=(spmv)
run 2 "$cli" compare --gen rotate:16,16 --reps 4 --rounds 2 --json "$J"; expect+=(compare)
run 2 "$cli" sdde --gen rotate:16,16 --reps 2 --json "$J"; expect+=(sdde)
run 2 "$cli" nbrbench --topos er:0.5 --sizes 8 --reps 4 --rounds 1 --json "$J"; expect+=(nbrbench)
run 2 "$cli" autoeval --matrices "gen:rotate:16,16 gen:lap2d:8,8" --reps 4 --rounds 2 --json "$J"; expect+=(autoeval)
run 1 "$cli" plan-stats --ranks 16 --topos er:0.2 --json "$J"; expect+=(plan-stats)
if [ -x "$apps/bfs2d/sparsecomm_bfs" ]; then
  run 4 "$cli" bfs --scale 6 --roots 2 --json "$J"; expect+=(bfs)
fi
if [ -x "$apps/amg_spmv/sparsecomm_amg_spmv" ]; then
  run 2 "$cli" amg --nx 16 --ny 16 --reps 2 --json "$J"; expect+=(amg_spmv)
fi
# A matrix file whose name carries a quote and a backslash: spmm labels records by name.
mtx="$work/odd\"name\\x.mtx"
printf '%%%%MatrixMarket matrix coordinate real general\n4 4 6\n1 1 1\n2 2 2\n3 3 3\n4 4 4\n1 4 1\n4 1 1\n' > "$mtx"
run 2 "$cli" spmm --matrix "$mtx" --reps 1 --json "$J"; expect+=(spmm)
if [ -x "$apps/bfs2d/sparsecomm_bfs_combblas" ]; then
  run 4 "$apps/bfs2d/sparsecomm_bfs_combblas" --scale 6 --roots 2 --json "$J"; expect+=(bfs_combblas)
fi
if [ -x "$apps/petsc_ksp/sparsecomm_petsc_ksp" ]; then
  run 2 "$apps/petsc_ksp/sparsecomm_petsc_ksp" -gen rotate:16,16 -bench_only -bench 4 -bench_rounds 2 \
    -bench_json "$J" -bench_label 'la"b\el'
  expect+=(petsc_matmult)
fi

"$python" - "$J" "${expect[@]}" <<'PY'
import json, sys
path, expected = sys.argv[1], set(sys.argv[2:])
def no_constant(name):
    raise ValueError("non-standard JSON literal " + name)
seen, n = set(), 0
with open(path) as f:
    for i, line in enumerate(f, 1):
        rec = json.loads(line, parse_constant=no_constant)
        assert isinstance(rec, dict), f"line {i}: not an object"
        for k in ("sparsecomm_version", "git_commit", "timestamp", "host", "bench"):
            assert isinstance(rec.get(k), str) and rec[k], f"line {i}: missing {k}"
        assert rec["timestamp"].endswith("Z") and "T" in rec["timestamp"], f"line {i}: timestamp {rec['timestamp']}"
        seen.add(rec["bench"])
        if rec["bench"] == "spmm":
            assert rec["matrix"].startswith('odd"name\\x'), f"line {i}: label {rec['matrix']!r}"
        if rec["bench"] == "petsc_matmult":
            assert rec["label"] == 'la"b\\el', f"line {i}: label {rec['label']!r}"
        n += 1
missing = expected - seen
assert not missing, f"no records of {sorted(missing)}"
print(f"json_records: {n} records of {len(seen)} programs parse: {', '.join(sorted(seen))}")
PY

# An unwritable --json: an error (reported once, by rank 0, as every agreed error is) and a
# non-zero exit, not a hang: every rank throws (open_json_lines broadcasts the failure), so
# none waits in a collective the others left; the ctest timeout catches a hang.
if "$mpiexec" -np 3 "$cli" spmv --gen rotate:8,8 --reps 2 --json "$work/no/such/dir/x.jsonl" \
    > "$work/err.txt" 2>&1; then
  echo "FAILED: spmv with an unwritable --json succeeded"; exit 1
fi
if ! grep -q "sparsecomm spmv: error: cannot append to JSON file" "$work/err.txt"; then
  cat "$work/err.txt"; echo "FAILED: no clear error for an unwritable --json file"; exit 1
fi
echo "json_records: an unwritable --json file is a clear error"
