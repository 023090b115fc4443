#!/usr/bin/env bash
# Issue 33's first benchmark: the `shm` halo backend (on-node neighbors through an MPI-3
# shared-memory window) against `p2p` and `neighbor` (Open MPI's MPI_Ineighbor_alltoallv)
# at 8 ranks on this node, on shared SuiteSparse matrices: `sparsecomm spmv`, which times
# the whole SpMV and the halo exchange alone, every backend in interleaved rounds (median
# of the max over ranks, spread), every product verified. table.py prints per matrix the
# exchange and SpMV ratios to p2p and the median over matrices.
#
#   experiments/shm/run.sh         (results in results/shm/)
#
# Environment: BUILD (build), OUT (results/shm), NP (8), REPS (1000), ROUNDS (5),
# BACKENDS (p2p,shm,neighbor,auto; an entry may carry options, name:key=value), REGIONS (node;
# ppn:4 emulates regions of 4 for the aggregation backends), MATRICES (below).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${BUILD:-$root/build}
out=${OUT:-$root/results/shm}
np=${NP:-8}
reps=${REPS:-1000}
rounds=${ROUNDS:-5}
backends=${BACKENDS:-p2p,shm,neighbor,auto}
regions=${REGIONS:-node}
read -r -a matrices <<< "${MATRICES:-vanHeukelum_cage11 GHS_psdef_wathen100 HB_bcsstk18 AMD_G2_circuit DIMACS10_delaunay_n16 Oberwolfach_gyro_m HB_can_1054 FIDAP_ex40 Pothen_bodyy5 DIMACS10_rgg_n_2_15_s0}"
cli=$build/src/apps/cli/sparsecomm
[ -x "$cli" ] || { echo "run.sh: build first ($cli)"; exit 1; }
mkdir -p "$out"
jsonl=$out/shm.jsonl
: > "$jsonl"
t0=$(date +%s)
for m in "${matrices[@]}"; do
  "$root/scripts/mpirun.sh" -np "$np" "$cli" spmv --matrix "$m" --regions "$regions" --backend "$backends" --reps "$reps" --rounds "$rounds" \
    --json "$jsonl" > "$out/$m.txt" 2>&1 || echo "run.sh: $m failed (see $out/$m.txt)"
  echo "run.sh: $m done ($(( $(date +%s) - t0 )) s)"
done
/usr/bin/python3 "$here/table.py" "$jsonl" | tee "$out/table.txt"
