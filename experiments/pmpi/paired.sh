#!/usr/bin/env bash
# Issue 32's "never slower than 1.05x" on this node, in one process: the unmodified plain MPI
# program examples/mpi_neighbor/nbr_bench with -paired R times, in each of R rounds, REPS
# calls through the MPI_ names and REPS through the PMPI_ names (Open MPI's own
# implementation, past the profiling layer), alternating which goes first, and prints the
# median of the per-round ratio MPI_ / PMPI_. Run under LD_PRELOAD=libsparsecomm_mpi.so
# (SPARSECOMM_MPI_BACKEND=auto) that ratio is the library against the MPI it replaces a few
# milliseconds apart; run without it (A/A) it shows the method's own spread. Each setting
# RUNS times, alternating; paired.py summarises (median over runs per call and size).
#
#   experiments/pmpi/paired.sh        (results in results/pmpi_paired/)
#
# Environment: BUILD (build), OUT (results/pmpi_paired), NP (32), REPS (30), ROUNDS (15),
# RUNS (3), TOPOS ("er:0.4,3 moore:2,3"), SIZES (4,64,1024,4096,65536), FIXED (1: the
# fixed-counts hint on the communicators, as run.sh).
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
mkdir -p "$out"
: > "$out/runs.txt"
for ((i = 1; i <= ${RUNS:-3}; i++)); do
  for t in "${topos[@]}"; do
    "$root/scripts/mpirun.sh" -np "${NP:-32}" -x "LD_PRELOAD=$lib" -x SPARSECOMM_MPI_BACKEND=auto "$prog" -topo "$t" \
      "${args[@]}" 2>&1 | grep -E "paired|WRONG" | sed "s/^/auto $i /" >> "$out/runs.txt" || true
    "$root/scripts/mpirun.sh" -np "${NP:-32}" "$prog" -topo "$t" "${args[@]}" 2>&1 | grep -E "paired|WRONG" |
      sed "s/^/none $i /" >> "$out/runs.txt" || true
  done
  echo "paired.sh: run $i done"
done
if grep -q WRONG "$out/runs.txt"; then echo "paired.sh: WRONG results"; exit 1; fi
/usr/bin/python3 "$here/paired.py" "$out/runs.txt" | tee "$out/table.txt"
