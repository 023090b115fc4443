#!/usr/bin/env bash
# How good is `auto`? Every halo backend and `auto` on every shared SuiteSparse matrix, a
# generated rotated-anisotropic problem and every level of a Hypre BoomerAMG hierarchy, at
# 8 and 16 ranks: on this single node (regions ppn:4) and, as root, on the emulated
# cluster (scripts/cluster.sh: 4 nodes x 2 or 4 ranks, 1 Gbit/s links, regions = nodes).
# Each setting is first calibrated (`sparsecomm calibrate`, same ranks and regions) and
# `auto` uses that model. Reported (experiments/auto/plot.py): the model's prediction error
# per backend, auto's regret (its measured time / the best backend's, same run), how often
# it is within 10% of the best, and whether it is ever worse than always using p2p.
#
#   experiments/auto/run.sh            (results in results/eval_auto/; about 2 min here with the default REPS, 8 with REPS=1000)
#
# Environment: BUILD (default build), OUT (default results/eval_auto), RANKS (default "8 16"),
# REPS (exchanges timed per backend, default 100), ROUNDS (interleaved rounds, default 5), NX/NY (AMG problem, default 512x512),
# CLUSTER=0 to skip the emulated cluster, MATRICES (';'-separated; default: all shared ones,
# gen:rotate:256,256 and the held-out generators of heldout.txt), MODEL (below), RACE (default
# 30: auto is also run with its option race=30, the close candidates timed at setup, and its
# picks judged on the same rounds; 0 to leave it out), LAUNCHES (MODEL=machine: autoeval is
# the N-th launch to use the fresh cache, so its model is the median of N launches'
# calibrations, N <= 3; default 1, a user's first run).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${BUILD:-$root/build}
out=${OUT:-$root/results/eval_auto}
ranks=${RANKS:-"8 16"}
reps=${REPS:-100}
rounds=${ROUNDS:-5}
mkdir -p "$out"
rm -f "$out/autoeval.jsonl"
if [ ! -x "$build/src/apps/cli/sparsecomm" ]; then
  cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release > "$out/configure.log"
  cmake --build "$build" -j "${JOBS:-2}" --target sparsecomm_cli
fi
cli=$build/src/apps/cli/sparsecomm
t0=$(date +%s)
say() { echo "== [$(( $(date +%s) - t0 )) s] $*"; }

# The AMG levels of each rank count come from a hierarchy built at that rank count: BoomerAMG's
# coarsening and the grid's numbering follow the ranks, so a level dumped at another count
# and split into equal row blocks would be a different communication pattern (at 16 ranks
# a 2-rank dump gives strips with one inter-node neighbor; the real 16-rank level 0 has
# blocks with four).
# Default: every shared matrix, gen:rotate:256,256 (what "all" means) and the held-out
# generators of heldout.txt. A list is separated by ';' (generator specs hold commas).
held_gens=$(grep '^gen:' "$here/heldout.txt" | paste -sd';' -)
matrices=${MATRICES:-all;$held_gens}
declare -A levels_of
for np in $ranks; do
  say "1. AMG hierarchy (Hypre BoomerAMG, rotated anisotropic ${NX:-512}x${NY:-512}) at $np ranks, dumped per level"
  dir=$out/levels_np$np
  "$root/scripts/mpirun.sh" -np "$np" "$cli" amg --nx "${NX:-512}" --ny "${NY:-512}" --dump-levels "$dir" --dump-only \
    > "$out/levels_np$np.log"
  # Levels with at least 64 rows (coarser ones leave most of 16 ranks without rows).
  lv=$(awk -F'\t' '$1 ~ /^[0-9]+$/ && $2 >= 64 { printf "%s%s", sep, $4; sep = "," }' "$dir/levels.tsv")
  [ -n "$lv" ] || { echo "run.sh: no AMG level written (see $out/levels_np$np.log)"; exit 1; }
  # Relative level paths resolve against the levels directory.
  levels_of[$np]=$(echo "$lv" | tr ',' '\n' | sed "s|^\([^/]\)|$dir/\1|" | paste -sd';' -)
done

# MODEL: calibrate (default: `sparsecomm calibrate` first, auto reads that file), machine
# (no calibration run: auto measures on first use into a fresh cache, $out/cache, as a user's
# first run would) or builtin (the documented defaults).
model_mode=${MODEL:-calibrate}
run_setting() {  # name, launcher..., -- np regions
  local name=$1 np=$2 regions=$3
  shift 3
  local model_args=()
  case $model_mode in
    calibrate)
      say "$name, $np ranks: calibrate"
      "$@" "$cli" calibrate --regions "$regions" --out "$out/model_${name}_np$np.txt" > "$out/calibrate_${name}_np$np.txt"
      model_args=(--model "$out/model_${name}_np$np.txt") ;;
    machine)
      rm -rf "$out/cache"; export XDG_CACHE_HOME=$out/cache
      # LAUNCHES (the header): N - 1 launches measure into the fresh cache before autoeval.
      for ((l = 1; l < ${LAUNCHES:-1}; ++l)); do
        say "$name, $np ranks: launch $l of ${LAUNCHES} measures into the cache"
        "$@" "$cli" info --gen rotate:64,64 --regions "$regions" > "$out/launch${l}_${name}_np$np.txt"
      done ;;
    builtin) model_args=(--model builtin) ;;
    *) echo "run.sh: MODEL must be calibrate, machine or builtin"; exit 2 ;;
  esac
  say "$name, $np ranks: autoeval over every matrix and AMG level (model: $model_mode)"
  "$@" "$cli" autoeval --matrices "$matrices;${levels_of[$np]}" --regions "$regions" --reps "$reps" --rounds "$rounds" \
    --race "${RACE:-30}" "${model_args[@]}" --label "$name" --json "$out/autoeval.jsonl" \
    > "$out/autoeval_${name}_np$np.txt"
  # The parameters auto used, for experiments/auto/refit.py (machine: the one cache entry).
  if [ "$model_mode" = machine ]; then cp "$out"/cache/sparsecomm/model-*.txt "$out/model_${name}_np$np.txt"; fi
  tail -1 "$out/autoeval_${name}_np$np.txt"
}

for np in $ranks; do
  run_setting node "$np" ppn:4 "$root/scripts/mpirun.sh" -np "$np"
done
if [ "${CLUSTER:-1}" = 1 ]; then
  if [ "$(id -u)" = 0 ]; then
    for np in $ranks; do
      run_setting cluster "$np" node "$root/scripts/cluster.sh" run 4 $((np / 4)) --rate 1000mbit --
    done
  else
    say "emulated cluster skipped: needs root (network namespaces)"
  fi
fi
say "summary"
/usr/bin/python3 "$here/plot.py" "$out" | tee "$out/table.txt"
# Issue 33's "best backend <= 0.65 of p2p" over every case, from the same rounds.
/usr/bin/python3 "$here/best_vs_p2p.py" "$out" | tee -a "$out/table.txt"
say "done"
