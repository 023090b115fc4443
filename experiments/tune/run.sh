#!/usr/bin/env bash
# Is auto's in-place tuning (tune=measure, src/comm/plan/tune.cpp) right, and does it pay in a
# solve? Issue 70's deterministic evidence: `sparsecomm autoeval --tune measure` under SimGrid
# SMPI, where every time is modelled (communication only) and so the same at every run: there
# tuning's winner must be the fastest of the candidates it measured in every case, and two
# identical plans must time exactly alike (the A/A pair). Per matrix and rank count (JSON lines,
# then experiments/tune/table.py): every single backend's exchange time, the candidates tuning
# measured and its winner, the winner against the fastest of them and against the best backend,
# the A/A pair (p2p against a second p2p plan, same rounds), and a solve of SOLVE exchanges from
# a fresh set-up: auto with tune=measure (its model choice, the candidates' builds and the
# measuring exchanges included) against the best single backend.
#
#   experiments/tune/run.sh                (results in results/tune/)
#
# SMPI: platform gpc_flat_1024x8.xml (/work/shared/simgrid; 1024 nodes x 8 cores), 8 ranks per
# simulated node, block mapping, regions = the simulated nodes (--regions node), every --cfg of
# scripts/smpi.sh (printed into platform.txt; among them smpi/simulate-computation:no: only
# communication is simulated, so a plan's set-up costs its messages and collectives, not its
# computation). Backends SMPI cannot run are not registered in the SMPI build: neighbor and
# neighbor_persistent (SMPI 3.32 aborts on MPI's neighborhood collectives) and shm (SMPI has no
# shared-memory windows); the candidates are the others.
#
# Environment: BUILD_SMPI (default build-smpi), OUT (default results/tune), RANKS (simulated
# ranks, default "16 32 64"), MATRICES (';'-separated; default every shared matrix and
# gen:rotate:256,256), SOLVE (exchanges of the solve, default 1000), REPS and ROUNDS (the
# rounds, default 30 and 3: deterministic, three rounds show it), MODEL (calibrate: `sparsecomm
# calibrate` under SMPI first, the default; builtin: the built-in parameters).
# PERCORE=1 also runs the 2-rank variant on this machine (Open MPI, 2 ranks bound one per core,
# regions = the node; BUILD, default build): only on a quiet machine (1-minute load average
# below 1.5 before it starts; FORCE=1 overrides), else it writes "not yet measured".
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out=${OUT:-$root/results/tune}
build_smpi=${BUILD_SMPI:-$root/build-smpi}
ranks=${RANKS:-"16 32 64"}
solve=${SOLVE:-1000}
reps=${REPS:-30}
rounds=${ROUNDS:-3}
matrices=${MATRICES:-all}
mkdir -p "$out"
rm -f "$out"/tune.jsonl "$out"/percore.jsonl "$out"/run_*.txt "$out"/percore.txt "$out"/platform.txt
t0=$(date +%s)
say() { echo "== [$(( $(date +%s) - t0 )) s] $*"; }

[ -x "$build_smpi/src/apps/cli/sparsecomm" ] || { say "build (SMPI): $build_smpi"; JOBS=${JOBS:-1} nice "$root/scripts/smpi.sh" build "$build_smpi" sparsecomm_cli; }
cli=$build_smpi/src/apps/cli/sparsecomm
export SMPI_TIMEOUT=${SMPI_TIMEOUT:-14400}  # (smpi.sh stops a simulation after 600 s by default; 64 ranks take longer)
smpi() { nice -n 19 "$root/scripts/smpi.sh" run "$@"; }  # one simulation at a time

for np in $ranks; do
  model_args=(--model builtin)
  if [ "${MODEL:-calibrate}" = calibrate ]; then
    say "SMPI $np ranks: calibrate"
    smpi "$np" -- "$cli" calibrate --regions node --out "$out/model_np$np.txt" > "$out/calibrate_np$np.txt" 2>&1
    model_args=(--model "$out/model_np$np.txt")
  fi
  say "SMPI $np ranks: autoeval --tune measure --aa p2p --solve $solve"
  smpi "$np" -- "$cli" autoeval --matrices "$matrices" --regions node --reps "$reps" --rounds "$rounds" \
    --tune measure --aa p2p --solve "$solve" "${model_args[@]}" --label "smpi" --json "$out/tune.jsonl" \
    > "$out/run_smpi_np$np.txt" 2> "$out/run_smpi_np$np.err"
  grep -m1 '^smpi.sh:' "$out/run_smpi_np$np.err" >> "$out/platform.txt"  # the platform file and every --cfg
  tail -1 "$out/run_smpi_np$np.txt"
done

if [ "${PERCORE:-0}" = 1 ]; then
  load=$(cut -d' ' -f1 /proc/loadavg)
  if [ "${FORCE:-0}" = 1 ] || awk -v l="$load" 'BEGIN { exit !(l < 1.5) }'; then
    build=${BUILD:-$root/build}
    say "Open MPI, 2 ranks one per core (load average $load): autoeval --tune measure"
    "$root/scripts/mpirun.sh" -np 2 --bind-to core "$build/src/apps/cli/sparsecomm" autoeval --matrices "$matrices" \
      --regions node --reps 400 --rounds 15 --tune=measure --aa p2p --solve "$solve" --label percore \
      --json "$out/percore.jsonl" > "$out/percore.txt"
  else
    say "2 ranks per core: not yet measured (load average $load >= 1.5: a loaded machine's times say nothing)"
    echo "not yet measured: load average $load" > "$out/percore.txt"
  fi
fi
say "summary"
/usr/bin/python3 "$here/table.py" "$out" | tee "$out/table.txt"
say "done"
