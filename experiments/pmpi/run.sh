#!/usr/bin/env bash
# Issue 32's benchmark: the unmodified plain MPI programs examples/mpi_neighbor/nbr_bench
# and spmm_plain (the SpMM kernel: one MPI_Neighbor_allgather per column of B, on
# SuiteSparse matrices; they know nothing of sparsecomm) with Open MPI's own neighborhood
# collectives and under
# LD_PRELOAD=libsparsecomm_mpi.so, interleaved round by round (each round starts one
# variant later), at 32 ranks on this node and, as root, on the emulated 8x4 cluster
# (scripts/cluster.sh, 1 Gbit/s links). Every run checks every received byte. The
# communicators carry the fixed-counts hint (an MPI_Info key Open MPI ignores), so the
# library's blocking calls need no per-call agreement. table.py prints the median over
# rounds and the ratio to Open MPI with its spread.
#
#   experiments/pmpi/run.sh        (results in results/pmpi/)
#
# Environment: BUILD (build), OUT (results/pmpi), ROUNDS (3), NP (32), REPS (50),
# TOPOS ("moore:2,3 er:0.4,3"), SIZES (4,64,1024,4096,65536), MATRICES ("Pajek_Journals
# HB_dwt_193 HB_ash292"; files in ../shared/data/suitesparse), VARIANTS ("mpi auto
# combined": mpi = Open MPI alone, others = SPARSECOMM_MPI_BACKEND; NAME-noexch: NAME
# without the one-node exchange, SPARSECOMM_MPI_NODE_EXCHANGE=0), LAYOUTS ("node
# cluster:8x4"; the cluster needs root), FIXED (1: the communicators carry the fixed-counts
# hint; 0: they do not, so every blocking call agrees, or steps aside without agreeing).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${BUILD:-$root/build}
out=${OUT:-$root/results/pmpi}
rounds=${ROUNDS:-3}
np=${NP:-32}
reps=${REPS:-50}
sizes=${SIZES:-4,64,1024,4096,65536}
read -r -a topos <<< "${TOPOS:-moore:2,3 er:0.4,3}"
read -r -a variants <<< "${VARIANTS:-mpi auto combined}"
read -r -a layouts <<< "${LAYOUTS:-node cluster:8x4}"
read -r -a matrices <<< "${MATRICES:-Pajek_Journals HB_dwt_193 HB_ash292}"
data=$root/../shared/data/suitesparse
spmm=$build/tests/mpi_spmm_plain
prog=$build/tests/mpi_nbr_bench
lib=$build/libsparsecomm_mpi.so
[ -x "$prog" ] && [ -f "$lib" ] || { echo "run.sh: build first ($prog, $lib)"; exit 1; }
mkdir -p "$out"
t0=$(date +%s)
one() {  # layout case variant round; case: a topology of nbr_bench, or matrix:NAME for spmm_plain
  local layout=$1 topo=$2 v=$3 r=$4 env=() text exe=$prog
  [ "$v" = mpi ] || env=(-x "LD_PRELOAD=$lib" -x "SPARSECOMM_MPI_BACKEND=${v%-noexch}" -x SPARSECOMM_MPI_VERBOSE=1)
  [[ $v != *-noexch ]] || env+=(-x SPARSECOMM_MPI_NODE_EXCHANGE=0)
  local args=(-topo "$topo" -sizes "$sizes" -reps "$reps" -fixed-counts "${FIXED:-1}")
  if [[ $topo == matrix:* ]]; then exe=$spmm args=(-matrix "$data/${topo#matrix:}.mtx" -reps "$reps" -fixed-counts "${FIXED:-1}"); fi
  if [ "$layout" = node ]; then
    text=$("$root/scripts/mpirun.sh" -np "$np" "${env[@]}" "$exe" "${args[@]}" 2>&1) || true
  else
    local nodes=${layout#cluster:}
    text=$(CLUSTER_MPIRUN_ARGS="${env[*]}" "$root/scripts/cluster.sh" run "${nodes%x*}" "${nodes#*x}" --rate 1000mbit \
      -- "$exe" "${args[@]}" 2>&1) || true
  fi
  if echo "$text" | grep -q "WRONG"; then echo "run.sh: WRONG results in $layout $topo $v round $r"; fi
  echo "$text" | grep -E "^(nbr_bench|spmm_plain):" | sed "s|^|$layout $v $r |" >> "$out/runs.${layout%%:*}.txt" || echo "run.sh: $layout $topo $v round $r gave no result"
  echo "$text" | grep "^sparsecomm mpi: communicator" | sed "s|^|$layout $v $r |" >> "$out/choices.${layout%%:*}.txt" || true
}
# One results file per layout, replaced when that layout runs (LAYOUTS=node reruns only it).
for layout in "${layouts[@]}"; do
  if [[ $layout == cluster:* ]] && [ "$(id -u)" != 0 ]; then echo "run.sh: $layout needs root, skipped"; continue; fi
  : > "$out/runs.${layout%%:*}.txt"
  : > "$out/choices.${layout%%:*}.txt"
  for ((r = 0; r < rounds; r++)); do
    cases=("${topos[@]}")
    for m in "${matrices[@]}"; do [ -f "$data/$m.mtx" ] && cases+=("matrix:$m"); done
    for topo in "${cases[@]}"; do
      n=${#variants[@]}
      for ((i = 0; i < n; i++)); do one "$layout" "$topo" "${variants[(((i + r) % n))]}" "$r"; done
    done
    echo "run.sh: $layout round $((r + 1))/$rounds done ($(( $(date +%s) - t0 )) s)"
  done
done
/usr/bin/python3 "$here/table.py" "$out"/runs.*.txt | tee "$out/table.txt"
