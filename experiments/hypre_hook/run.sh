#!/usr/bin/env bash
# Issue 31's benchmark: PCG + BoomerAMG (examples/hypre_amg/amg_solve, a program that knows
# nothing of sparsecomm) with Hypre's own exchange and under LD_PRELOAD of
# libsparsecomm_hypre_hook.so (auto and fixed backends), runs interleaved round by round
# (hypre, auto, ..., then the next round starting one variant later), on this node and, as
# root, on the emulated cluster (scripts/cluster.sh, 1 Gbit/s). Each run does SOLVES solves
# (setup + solve each); the table (table.py) takes the last solve of each run and the
# median over rounds, and prints setup and solve against Hypre's, the plans' set-up cost
# and how many V-cycles (PCG iterations) pay for it.
#
#   experiments/hypre_hook/run.sh        (results in results/hypre_hook/)
#
# Environment: BUILD (default build), OUT (default results/hypre_hook), ROUNDS (3),
# SOLVES (2), CASES (default "rotate:512 rotate:1024 GHS_psdef_wathen100 Oberwolfach_gyro_m"),
# LAYOUTS (default "node:8 cluster:4x2 cluster:4x4"; cluster ones need root), VARIANTS
# (default "hypre floor reference auto aggregated_dedup p2p"; "hypre" must be first; "floor": the
# exchanges of the solve skipped, "reference": each made one 8-byte message per rank
# (floor_hook.c; both compared per PCG iteration); a backend may
# carry its own options after a colon, auto:race=30: SPARSECOMM_HYPRE_OPTIONS).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${BUILD:-$root/build}
out=${OUT:-$root/results/hypre_hook}
rounds=${ROUNDS:-3}
solves=${SOLVES:-2}
read -r -a cases <<< "${CASES:-rotate:512 rotate:1024 GHS_psdef_wathen100 Oberwolfach_gyro_m}"
read -r -a layouts <<< "${LAYOUTS:-node:8 cluster:4x2 cluster:4x4}"
read -r -a variants <<< "${VARIANTS:-hypre floor reference auto aggregated_dedup p2p}"
prog=$build/tests/hypre_amg_solve
hook=$build/libsparsecomm_hypre_hook.so
[ -x "$prog" ] && [ -f "$hook" ] || { echo "run.sh: build first ($prog, $hook)"; exit 1; }
floor=$out/floor_hook.so
data=$root/../shared/data/suitesparse
mkdir -p "$out"
mpicc -O2 -shared -fPIC -I/usr/include/hypre "$here/floor_hook.c" -o "$floor" -ldl
jsonl=$out/hypre_hook.jsonl
: > "$jsonl"
log=$out/runs.log
: > "$log"
t0=$(date +%s)
one() {  # layout case variant round
  local layout=$1 c=$2 v=$3 r=$4 args env=() text
  if [[ $c == rotate:* ]]; then args=(-n "${c#rotate:}"); else args=(-matrix "$data/$c.mtx"); fi
  args+=(-solves "$solves")
  if [ "$v" = floor ] || [ "$v" = reference ]; then  # capped at Hypre's iterations (round 0 runs hypre first)
    local its_h
    its_h=$(grep "\"layout\":\"$layout\",\"case\":\"$c\",\"variant\":\"hypre\"" "$jsonl" | head -1 |
            sed -n 's/.*"iterations":\([0-9]*\).*/\1/p')
    env=(-x "LD_PRELOAD=$floor" -x "FLOOR_MAXIT=${its_h:-500}")
    [ "$v" = floor ] || env+=(-x FLOOR_MODE=reference)
  elif [ "$v" != hypre ]; then
    # (a variant may carry the backend's own options after a colon: auto:race=30)
    env=(-x "LD_PRELOAD=$hook" -x "SPARSECOMM_HYPRE_BACKEND=${v%%:*}" -x SPARSECOMM_HYPRE_VERBOSE=1)
    [[ $v == *:* ]] && env+=(-x "SPARSECOMM_HYPRE_OPTIONS=${v#*:}")
  fi
  if [[ $layout == node:* ]]; then
    text=$("$root/scripts/mpirun.sh" -np "${layout#node:}" "${env[@]}" "$prog" "${args[@]}" 2>&1) || true
  else
    local nodes=${layout#cluster:}
    text=$(CLUSTER_MPIRUN_ARGS="${env[*]}" "$root/scripts/cluster.sh" run "${nodes%x*}" "${nodes#*x}" --rate 1000mbit \
      -- "$prog" "${args[@]}" 2>&1) || true
  fi
  echo "== $layout $c $v round $r" >> "$log"
  echo "$text" >> "$log"
  local line
  line=$(echo "$text" | grep "^amg_solve:.*solve $((solves - 1)):" | tail -1)
  [ -n "$line" ] || { echo "run.sh: $layout $c $v round $r failed (see $log)"; return; }
  local its res setup solve built
  its=$(echo "$line" | sed -n 's/.*iterations \([0-9]*\).*/\1/p')
  res=$(echo "$line" | sed -n 's/.*residual \([^ ]*\).*/\1/p')
  setup=$(echo "$line" | sed -n 's/.*setup \([^ ]*\) s.*/\1/p')
  solve=$(echo "$line" | sed -n 's/.* solve \([0-9.e+-]*\) s$/\1/p')
  # The plans' build time of the last solve's packages (rank 0 prints the max over ranks):
  # the package lines after the previous solve's result line (the first solve also builds
  # the package of A itself, which later solves reuse).
  built=$(echo "$text" | awk -v prev="solve $((solves - 2)):" '
    /^amg_solve:/ { on = (solves_seen++ == 0 && prev == "solve -1:") || index($0, prev) > 0; next }
    on && /plans built in/ { sub(/.*plans built in /, ""); t += $1 }
    END { printf "%.3f", t }')
  [ "$solves" -gt 1 ] || built=$(echo "$text" | sed -n 's/.*plans built in \([0-9.]*\) ms/\1/p' | awk '{t+=$1} END {printf "%.3f", t}')
  printf '{"layout":"%s","case":"%s","variant":"%s","round":%d,"iterations":%s,"residual":%s,"setup_s":%s,"solve_s":%s,"plans_ms":%s}\n' \
    "$layout" "$c" "$v" "$r" "$its" "$res" "$setup" "$solve" "${built:-0}" >> "$jsonl"
}
for layout in "${layouts[@]}"; do
  if [[ $layout == cluster:* ]] && [ "$(id -u)" != 0 ]; then echo "run.sh: $layout skipped (root needed)"; continue; fi
  for c in "${cases[@]}"; do
    echo "== [$(( $(date +%s) - t0 )) s] $layout $c"
    for ((r = 0; r < rounds; ++r)); do
      for ((i = 0; i < ${#variants[@]}; ++i)); do
        one "$layout" "$c" "${variants[$(( (i + r) % ${#variants[@]} ))]}" "$r"
      done
    done
  done
done
echo "== [$(( $(date +%s) - t0 )) s] table"
/usr/bin/python3 "$here/table.py" "$jsonl" | tee "$out/table.txt"
