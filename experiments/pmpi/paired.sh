#!/usr/bin/env bash
# Issue 32's "never slower than 1.05x", in one process: the unmodified plain MPI programs
# examples/mpi_neighbor/nbr_bench and spmm_plain with -paired R time, in each of R rounds,
# REPS calls through the MPI_ names and REPS through the PMPI_ names (Open MPI's own
# implementation, past the profiling layer), in the order A B B A (swapped every other
# round), and print the median of the per-round ratio MPI_ / PMPI_. Run under
# LD_PRELOAD=libsparsecomm_mpi.so (SPARSECOMM_MPI_BACKEND=auto) that ratio is the library
# against the MPI it replaces a few milliseconds apart; run without it (A/A) it shows the
# method's own spread. nbr_bench RUNS times per topology, with and without the library,
# alternating; the SpMM kernel once per matrix under the library. paired.py summarises.
#
#   experiments/pmpi/paired.sh        (results in results/pmpi_paired/)
#
# Environment: BUILD (build), OUT (results/pmpi_paired), NP (32), REPS (30), ROUNDS (15),
# RUNS (3), TOPOS ("er:0.4,3 moore:2,3"), SIZES (4,64,1024,4096,65536), FIXED (1: the
# fixed-counts hint on the communicators, as run.sh), MATRICES (default every .mtx in
# ../shared/data/suitesparse: the SpMM kernel spmm_plain -paired under the library, once
# per matrix; "none" skips it), SPMM_REPS (10), SPMM_AA (0; 1: each matrix's SpMM also run
# without the library right after, the A/A of the same rounds), LAYOUT (node, or cluster:NxM
# on the emulated cluster, scripts/cluster.sh at 1 Gbit/s; root).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${BUILD:-$root/build}
out=${OUT:-$root/results/pmpi_paired}
prog=$build/tests/mpi_nbr_bench
lib=$build/libsparsecomm_mpi.so
[ -x "$prog" ] && [ -f "$lib" ] || { echo "paired.sh: build first ($prog, $lib)"; exit 1; }
read -r -a topos <<< "${TOPOS:-er:0.4,3 moore:2,3}"
args=(-sizes "${SIZES:-4,64,1024,4096,65536}" -reps "${REPS:-30}" -fixed-counts "${FIXED:-1}" -paired "${ROUNDS:-15}")
layout=${LAYOUT:-node}
launch() {  # with|without program args...: the program on the layout, under the library or not
  local with=$1 env=()
  shift
  [ "$with" = with ] && env=(-x "LD_PRELOAD=$lib" -x SPARSECOMM_MPI_BACKEND=auto)
  if [ "$layout" = node ]; then
    "$root/scripts/mpirun.sh" -np "${NP:-32}" "${env[@]}" "$@"
  else
    local nodes=${layout#cluster:}
    CLUSTER_MPIRUN_ARGS="${env[*]}" "$root/scripts/cluster.sh" run "${nodes%x*}" "${nodes#*x}" --rate 1000mbit -- "$@"
  fi
}
record() {  # with|without label program args...: launch, its paired lines into runs.txt as "label ..."
  local with=$1 label=$2
  shift 2
  launch "$with" "$@" 2>&1 | grep -E "paired|WRONG" | sed "s/^/$label /" >> "$out/runs.txt" || true
}
mkdir -p "$out"
: > "$out/runs.txt"
for ((i = 1; i <= ${RUNS:-3}; i++)); do
  for t in "${topos[@]}"; do
    record with "auto $i" "$prog" -topo "$t" "${args[@]}"
    record without "none $i" "$prog" -topo "$t" "${args[@]}"
  done
  echo "paired.sh: run $i done"
done
data=$root/../shared/data/suitesparse
spmm=$build/tests/mpi_spmm_plain
if [ "${MATRICES:-}" != none ] && [ -x "$spmm" ]; then
  if [ -n "${MATRICES:-}" ]; then read -r -a mats <<< "$MATRICES"; else mats=(); for f in "$data"/*.mtx; do mats+=("$(basename "$f" .mtx)"); done; fi
  for m in "${mats[@]}"; do
    spmm_args=(-matrix "$data/$m.mtx" -reps "${SPMM_REPS:-10}" -fixed-counts "${FIXED:-1}" -paired "${ROUNDS:-15}")
    record with "auto 1" "$spmm" "${spmm_args[@]}"
    if [ "${SPMM_AA:-0}" = 1 ]; then record without "none 1" "$spmm" "${spmm_args[@]}"; fi
  done
  echo "paired.sh: SpMM on ${#mats[@]} matrices done"
fi
if grep -q WRONG "$out/runs.txt"; then echo "paired.sh: WRONG results"; exit 1; fi
/usr/bin/python3 "$here/paired.py" "$out/runs.txt" | tee "$out/table.txt"
