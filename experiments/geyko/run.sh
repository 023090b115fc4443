#!/usr/bin/env bash
# Reproduction of Geyko, Collom, Schafer, Bridges and Bienz, "A More Scalable Sparse Dynamic
# Data Exchange" (arXiv:2308.13869, 2023; MPI Advance's MPIX_Alltoall(v)_crs).
#
# What the paper found (as we read it): forming the communication pattern of a sparse
# matrix-vector product needs a sparse dynamic data exchange (SDDE): every process knows whom
# it needs data from, nobody knows who needs its data. The standard SDDEs -- "personalized"
# (a reduction of P counters tells everyone how many messages to expect) and "non-blocking"
# (NBX: synchronous sends, probe, non-blocking barrier; Hoefler et al. 2010), plus an RMA
# variant -- send one message per pair of communicating processes, so at scale every process
# sends many small messages across the network. The locality-aware variants first gather,
# inside a node, everything bound for one destination node onto one process, send it as ONE
# inter-node message to one process of that node, and redistribute it there: fewer, larger
# inter-node messages for more, cheaper intra-node ones. On SuiteSparse matrices on a CPU
# cluster with many processes per node the locality-aware SDDEs cut the inter-node message
# count sharply and are the fastest at scale (the abstract: speedups up to 20x); at small node
# counts the extra intra-node steps can make them no faster than the standard ones.
#
# Here: `sparsecomm sdde` (every strategy: personalized, nbx, rma, locality_personalized,
# locality_nbx) on two of the largest shared SuiteSparse matrices -- AMD/G2_circuit (150,102
# rows, circuit: mostly banded with long-range couplings) and vanHeukelum/cage11 (39,082 rows,
# DNA electrophoresis: irregular) -- under SimGrid SMPI on the platform quartz_fattree (64 nodes
# x 32 cores, fat tree, 12.5 GB/s), 32 ranks per node, regions = the simulated nodes
# (--regions node: MPI_COMM_TYPE_SHARED groups ranks by simulated host), from 2 nodes up.
# Times are SIMULATED (modelled by SMPI, not measured): the platform and every --cfg go into
# results/repro_geyko/platform.txt and the table. The simulation is deterministic: one timed
# repetition and no warm-up. The communicators are created before the timing (Sdde's
# constructor), and a warm-up changed no simulated time by more than 1% (G2_circuit at 512
# ranks: 167 / 132 / 203 / 74 / 64 us with one, 167 / 133 / 203 / 74 / 64 without) while it
# doubled the host time of the strategies (NBX's probe loop alone: 200 s per run at 2,048
# ranks).
#
# One command (< 30 min on the 2-core dev machine, including an SMPI build of the CLI):
#   experiments/geyko/run.sh
# Environment: BUILD_SMPI (default build-smpi), OUT (default results/repro_geyko), NODES (default
# "2 4 8 16 32 64"), MATRICES, BUDGET (seconds for the simulations, default 1650), APPEND, JOBS.
# Simulating costs host time that grows faster than the rank count (reading and distributing
# the matrix, the dense verification, communicator creation and NBX's probing are simulated
# too): a node count is dropped, with a message, when its estimated cost (the previous
# count's x 4) does not fit into what is left of BUDGET. On the dev machine the default run
# keeps every node count, 2..64, for both matrices: 20 min in all, the largest runs 505 s
# (G2_circuit) and 393 s (cage11) at 2,048 ranks (experiments/geyko/README.md).
# Table and plots: experiments/geyko/plot.py (run at the end).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out=${OUT:-$root/results/repro_geyko}
build_smpi=${BUILD_SMPI:-$root/build-smpi}
nodes_list=${NODES:-2 4 8 16 32 64}
matrices=${MATRICES:-AMD/G2_circuit vanHeukelum/cage11}
budget=${BUDGET:-1650}
ppn=32
growth=4  # host-time factor per doubling of the node count, measured on the dev machine (3.9-4.3)

command -v smpirun > /dev/null || { echo "repro_geyko.sh: SimGrid SMPI not installed (apt-get install libsimgrid-dev simgrid)" >&2; exit 77; }
mkdir -p "$out"
# APPEND=1 keeps earlier records (e.g. to add larger node counts); the plot takes the latest.
[ "${APPEND:-0}" = 1 ] || rm -f "$out"/sdde.jsonl "$out"/platform.txt "$out"/run_*.txt

echo "== build (SMPI): $build_smpi"
"$root/scripts/smpi.sh" build "$build_smpi" sparsecomm_cli > "$out/build_smpi.log" 2>&1 || { tail -30 "$out/build_smpi.log"; exit 1; }
cli=$build_smpi/src/apps/cli/sparsecomm

start=$(date +%s)
declare -A last  # matrix -> host seconds of its previous run
dropped=()
echo "== SDDE strategies under SMPI: quartz_fattree, $ppn ranks per node, regions = nodes"
for n in $nodes_list; do
  np=$((n * ppn))
  for m in $matrices; do
    tag=$(echo "$m" | tr '/' '_')
    left=$((budget - ($(date +%s) - start)))
    est=$(( ${last[$m]:-0} * growth ))
    if [ "$left" -le 60 ] || [ "$est" -gt "$left" ]; then
      dropped+=("$m@$n")
      echo "-- $m, $n nodes ($np ranks): DROPPED, does not fit the time budget (estimated ${est} s, ${left} s left of BUDGET=$budget)"
      continue
    fi
    echo "-- $m, $n nodes ($np ranks)"
    t0=$(date +%s)
    # Bruck all-to-all(v): only the verification (the direct answer through a dense
    # MPI_Alltoall + MPI_Alltoallv) uses them; with Open MPI's choice SimGrid 3.32 aborted there
    # at 1,024 ranks ("Cannot saturate more a constraint that has no active element"; a smaller
    # maxmin/precision did not help). A --cfg after the program is still smpirun's.
    if "$root/scripts/smpi.sh" run "$np" --platform quartz_fattree --ppn "$ppn" --timeout "$left" -- \
        "$cli" sdde --matrix "$m" --regions node --reps 1 --warmup 0 --json "$out/sdde.jsonl" \
        --cfg=smpi/alltoall:bruck --cfg=smpi/alltoallv:bruck > "$out/run_${tag}_$n.txt" 2>&1; then
      rc=0
    else
      rc=$?
    fi
    last[$m]=$(( $(date +%s) - t0 ))
    [ -s "$out/platform.txt" ] || sed -n 's/^smpi.sh: [0-9]* simulated ranks on \([^ ]*\) ([0-9]* nodes x \([0-9]*\), \([a-z]*\)); \(.*\)$/platform \1, \2 ranks per node (\3 mapping); \4 --cfg=smpi\/alltoall:bruck --cfg=smpi\/alltoallv:bruck (verification only)/p' \
      "$out/run_${tag}_$n.txt" | head -1 > "$out/platform.txt"
    grep -v '^smpi.sh:' "$out/run_${tag}_$n.txt" | sed -n '/^strategy/,/^(<=1/p' | sed 's/^/   /'
    echo "   (host time ${last[$m]} s, exit code $rc)"
    if [ "$rc" = 124 ]; then
      dropped+=("$m@$n(timed out)")
      last[$m]=$((budget * 2))  # nothing larger can fit either
    elif [ "$rc" != 0 ]; then
      echo "repro_geyko.sh: the run failed (exit $rc; 3 = a strategy's pattern was wrong); see $out/run_${tag}_$n.txt" >&2
      exit "$rc"
    fi
  done
done
if [ "${#dropped[@]}" -gt 0 ]; then
  echo "== NOT RUN (time budget of $budget s on this machine): ${dropped[*]}"
  echo "   (add them with e.g. APPEND=1 NODES=\"32 64\" BUDGET=20000 experiments/geyko/run.sh: hours, GBs of memory)"
fi

echo "== table and plots"
/usr/bin/python3 "$here/plot.py" "$out" | tee "$out/table.txt"
