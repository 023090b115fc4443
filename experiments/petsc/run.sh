#!/usr/bin/env bash
# Issue 6's benchmark: PETSc's MatMult with PETSc's own scatters (-sf_type basic and
# -sf_type neighbor) against MatMult through every sparsecomm backend, in the same run with
# interleaved rounds (sparsecomm_petsc_ksp -bench_only), on the shared SuiteSparse matrices
# and the rotated anisotropic diffusion problem, at 4, 8 and 16 ranks: on this node
# (regions ppn:4) and, as root, on the emulated 4-node cluster (scripts/cluster.sh: 4 nodes
# x 1, 2 or 4 ranks, 1 Gbit/s links, regions = nodes).
# The table (experiments/petsc/table.py) gives per case the best PETSc and best sparsecomm times
# and their ratio, against the goal: at most 0.95 where inter-node communication matters
# (the emulated cluster), at most 1.05 elsewhere (the single node).
#
#   experiments/petsc/run.sh        (results in results/bench_petsc/)
#
# Environment: BUILD (default build), OUT (default results/bench_petsc), RANKS (default
# "4 8 16"), BENCH (MatMults per variant, split over ROUNDS rounds; defaults 500 and 5),
# ROUND_MS (at least this many ms per variant and round, more products where they are
# short: -bench_round_ms; default 0, off), MATRICES
# (separated by spaces or ';', or by commas when neither appears; default: every shared
# matrix and gen:rotate:256,256), CLUSTER=0 to skip the cluster, NODE=0 to skip this node.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${BUILD:-$root/build}
out=${OUT:-$root/results/bench_petsc}
ranks=${RANKS:-"4 8 16"}
bench=${BENCH:-500}
rounds=${ROUNDS:-5}
round_ms=${ROUND_MS:-0}
mkdir -p "$out"
rm -f "$out/petsc.jsonl" "$out/runs.log"
prog=$build/src/apps/petsc_ksp/sparsecomm_petsc_ksp
if [ ! -x "$prog" ]; then
  cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release > "$out/configure.log"
  cmake --build "$build" -j "${JOBS:-2}" --target sparsecomm_petsc_ksp
fi
[ -x "$prog" ] || { echo "bench_petsc.sh: $prog not built (PETSc not found: apt-get install petsc-dev)"; exit 1; }
if [ -n "${MATRICES:-}" ]; then
  # Separated by spaces or ';' (a generator spec has commas: "gen:rotate:256,256 HB/bcsstk18"),
  # or by commas when there is neither.
  if [[ $MATRICES == *[\ \;]* ]]; then read -r -a cases <<< "${MATRICES//;/ }"
  else read -r -a cases <<< "${MATRICES//,/ }"; fi
else
  cases=()
  for f in "$root"/../shared/data/suitesparse/*.mtx; do cases+=("$(basename "$f" .mtx)"); done
  cases+=("gen:rotate:256,256")
fi
t0=$(date +%s)
run_case() {  # label regions case launcher...
  local label=$1 regions=$2 c=$3
  shift 3
  local input=(-matrix "$c")
  [[ $c == gen:* ]] && input=(-gen "${c#gen:}")
  if ! "$@" "$prog" "${input[@]}" -bench_only -bench "$bench" -bench_rounds "$rounds" -bench_round_ms "$round_ms" -sparsecomm_regions "$regions" \
      -bench_json "$out/petsc.jsonl" -bench_label "$label" >> "$out/runs.log" 2>&1; then
    echo "bench_petsc.sh: $label, $c failed (see $out/runs.log)"
  fi
}
if [ "${NODE:-1}" = 1 ]; then
  for np in $ranks; do
    echo "== [$(( $(date +%s) - t0 )) s] node, $np ranks"
    for c in "${cases[@]}"; do run_case node ppn:4 "$c" "$root/scripts/mpirun.sh" -np "$np"; done
  done
fi
if [ "${CLUSTER:-1}" = 1 ]; then
  if [ "$(id -u)" = 0 ]; then
    for np in $ranks; do
      echo "== [$(( $(date +%s) - t0 )) s] cluster, 4 nodes x $((np / 4)) ranks"
      for c in "${cases[@]}"; do
        run_case cluster node "$c" "$root/scripts/cluster.sh" run 4 $((np / 4)) --rate 1000mbit --
      done
    done
  else
    echo "emulated cluster skipped: needs root (network namespaces)"
  fi
fi
echo "== [$(( $(date +%s) - t0 )) s] summary"
/usr/bin/python3 "$here/table.py" "$out/petsc.jsonl" --wire | tee "$out/table.txt"
