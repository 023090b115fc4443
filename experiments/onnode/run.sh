#!/usr/bin/env bash
# Issue 69, part 3: the on-node exchange against the one-copy limit, a core per rank.
# `sparsecomm onnode` at 2 ranks, each bound to a core of its own (Open MPI --bind-to core),
# halo sizes 1 KiB to 64 MiB: the halo exchange of the p2p, shm and neighbor backends (three
# ways each: pack, no-unpack, direct), the gather shape of the p2p, shm and neighbor gather
# backends, and a memcpy of the same bytes in the same run; every exchanged value verified.
# The sweep runs SWEEPS times (the machine is shared: load recorded before and after each);
# table.py prints the median over the sweeps and their spread.
#
#   experiments/onnode/run.sh        (results in results/onnode/: sweep_<i>.jsonl, .txt, .load;
#                                     table.md)
#
# Environment: BUILD (build), OUT (results/onnode), SWEEPS (3), SIZES (1 KiB .. 64 MiB, powers
# of 4), ROUNDS (5), REPS (300), ROUND_BYTES (268435456), NICE (-5: a higher priority than
# the other work on the machine where allowed, 0 otherwise), PATIENCE (unset: the library's
# default; a number: SPARSECOMM_SHM_PATIENCE, the window waits' checks before they yield the
# core, e.g. 100000000 to poll as Open MPI's own waits do with a core per rank), OPTION (unset;
# backend options key=value[,...] for the halo backends that declare them, e.g.
# one_copy=false: shm without its one-copy path).
#
# The launcher is Open MPI's mpiexec itself, not scripts/mpirun.sh: that wrapper sets
# mpi_yield_when_idle (right for the oversubscribed tests, wrong here: with a core per rank
# an MPI, and the shm channel's waits, poll as they would on a cluster node).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${BUILD:-$root/build}
out=${OUT:-$root/results/onnode}
sweeps=${SWEEPS:-3}
sizes=${SIZES:-1024,4096,16384,65536,262144,1048576,4194304,16777216,67108864}
rounds=${ROUNDS:-5}
reps=${REPS:-300}
round_bytes=${ROUND_BYTES:-268435456}
nice_level=${NICE:--5}
exe=$build/src/apps/onnode/sparsecomm_onnode
[ -x "$exe" ] || { echo "run.sh: build first (cmake --build $build --target sparsecomm_onnode)"; exit 1; }
[ "$(nproc)" -ge 2 ] || { echo "run.sh: needs 2 cores (one per rank), this machine has $(nproc)"; exit 1; }
nice -n "$nice_level" true 2>/dev/null || nice_level=0
launch=(mpiexec -np 2 --bind-to core --report-bindings)
[ "$(id -u)" -eq 0 ] && launch+=(--allow-run-as-root)
[ -n "${PATIENCE:-}" ] && launch+=(-x "SPARSECOMM_SHM_PATIENCE=$PATIENCE")
extra=()
[ -n "${OPTION:-}" ] && extra+=(--option "$OPTION")
mkdir -p "$out"
for i in $(seq 1 "$sweeps"); do
  rm -f "$out/sweep_$i.jsonl"
  { echo "before: $(uptime)"; } > "$out/sweep_$i.load"
  nice -n "$nice_level" "${launch[@]}" "$exe" --sizes "$sizes" --rounds "$rounds" --reps "$reps" \
    --round-bytes "$round_bytes" ${extra[@]+"${extra[@]}"} --json "$out/sweep_$i.jsonl" > "$out/sweep_$i.txt" 2>&1 ||
    { echo "run.sh: sweep $i failed (see $out/sweep_$i.txt)"; exit 1; }
  { echo "after: $(uptime)"; echo "nice: $nice_level, SPARSECOMM_SHM_PATIENCE: ${PATIENCE:-default}, option: ${OPTION:-none}"; } >> "$out/sweep_$i.load"
  echo "run.sh: sweep $i done ($(grep after "$out/sweep_$i.load"))"
done
/usr/bin/python3 "$here/table.py" "$out" | tee "$out/table.md"
