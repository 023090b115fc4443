#!/usr/bin/env bash
# Cost growth with P under SimGrid SMPI (issue 69, part 2): weak-scaled problems, SDDE and
# plan set-up time and heap memory per rank, exchange time per backend; then the PNGs.
#
#   experiments/scaling/run.sh                      # P = 256 1024 2048, both problems, both platforms
#   RANKS="256 1024" PLATFORMS=gpc_fattree experiments/scaling/run.sh
#   SDDE=nbx,personalized BACKENDS=p2p experiments/scaling/run.sh    # the default path only
#   PLOT_ONLY=1 experiments/scaling/run.sh          # redraw results/scaling/*.png from the JSON
#
# Times are MODELLED (simulate-computation:no: communication only, deterministic); the
# platform file and every --cfg are printed by scripts/smpi.sh into each log.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out=$root/results/scaling
bdir=${BUILD:-$root/build-smpi}
ranks=${RANKS:-"256 1024 2048"}
platforms=${PLATFORMS:-"gpc_fattree quartz_fattree"}
problems=${PROBLEMS:-"lap3d27w:8,8,8 rotatew:24,24"}
sdde=${SDDE:-personalized,nbx,rma,locality_personalized,locality_nbx}
backends=${BACKENDS:-p2p,aggregated,aggregated_dedup,aggregated_2step,combined,auto}
mkdir -p "$out"
if [ -z "${PLOT_ONLY:-}" ]; then
  [ -x "$bdir/src/apps/growth/sparsecomm_growth" ] || "$root/scripts/smpi.sh" build "$bdir" sparsecomm_growth
  for plat in $platforms; do
    for prob in $problems; do
      for p in $ranks; do
        log="$out/${plat}_${prob%%:*}_${p}.log"
        echo "scaling: $plat $prob P=$p -> $log" >&2
        # One run at a time, niced: 2,048 ranks take minutes of host time and ~1 GB.
        nice "$root/scripts/smpi.sh" run "$p" --platform "$plat" --timeout "${SMPI_TIMEOUT:-3600}" -- \
          "$bdir/src/apps/growth/sparsecomm_growth" --gen "$prob" --sdde "$sdde" --backend "$backends" \
          --reps 4 --sdde-reps 2 --setup-reps 1 --json "$out/growth.jsonl" > "$log" 2>&1 ||
          echo "scaling: $plat $prob P=$p failed (see $log)" >&2
      done
    done
  done
fi
/usr/bin/python3 "$root/experiments/scaling/plot.py" "$out/growth.jsonl" "$out"
