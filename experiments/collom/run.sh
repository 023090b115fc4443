#!/usr/bin/env bash
# Reproduction of Collom, Li, Bienz, "Optimizing Irregular Communication with Neighborhood
# Collectives and Locality-Aware Parallelism" (EuroMPI'23): per-level message counts and SpMV
# communication time of a BoomerAMG hierarchy of the rotated anisotropic diffusion problem,
# standard point-to-point (p2p) vs node-aware aggregation (aggregated, aggregated_dedup), at
# 2,048 SIMULATED ranks, 16 per node (SimGrid SMPI). See experiments/collom/README.md.
#
#   experiments/collom/run.sh            # one command; results/repro_collom/
#
# Steps:
#  1. builds sparsecomm_amg_spmv (normal Open MPI build, needs Hypre) into $BUILD and the
#     SMPI `sparsecomm` CLI into $BUILD_SMPI (scripts/smpi.sh), if not built yet;
#  2. builds the hierarchy with Hypre on $HYPRE_NP REAL ranks (mpirun) and writes every level
#     A_l to $OUT/levels/level_L.mtx (sparsecomm_amg_spmv --dump-levels, read back and checked);
#  3. per level: `sparsecomm spmv --matrix level_L.mtx` on $NP simulated ranks, $PPN per node
#     (platform $PLATFORM, block mapping), regions = the simulated nodes; each level's rows are
#     REDISTRIBUTED in balanced block rows over the simulated ranks (not Hypre's partition);
#  4. EXACT counts of every level for p2p, combined (pairs, agnostic and aware; slow to
#     simulate at this scale), aggregated and aggregated_dedup with the same layout
#     (`sparsecomm plan-stats --matrices`, one process, seconds): $OUT/planstats.txt/.jsonl;
#  5. experiments/collom/plot.py: the table (also $OUT/table.txt) and two PNGs.
#
# Settings (environment): BUILD (build), BUILD_SMPI (build-smpi), OUT (results/repro_collom),
# NX, NY (1024, 512: 524,288 rows), HYPRE_NP (2), NP (2048), PPN (16), PLATFORM (gpc_flat),
# BACKENDS (p2p,aggregated,aggregated_dedup), COMBINED_LEVELS (levels where `combined` runs
# too; default none: it adds 1.5-2.5 min of host time per level at 2,048 ranks),
# LEVELS (all), REPS (2: simulated time is deterministic), BUDGET (1500 s of host time for
# step 3: levels not started by then are skipped and listed), LEVEL_TIMEOUT (900 s), JOBS (1),
# REUSE_LEVELS=1 (keep an existing dump with the same settings).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
BUILD=${BUILD:-$root/build}
BUILD_SMPI=${BUILD_SMPI:-$root/build-smpi}
OUT=${OUT:-$root/results/repro_collom}
NX=${NX:-1024} NY=${NY:-512} HYPRE_NP=${HYPRE_NP:-2}
NP=${NP:-2048} PPN=${PPN:-16} PLATFORM=${PLATFORM:-gpc_flat}
BACKENDS=${BACKENDS:-p2p,aggregated,aggregated_dedup}
COMBINED_LEVELS=${COMBINED_LEVELS:-}
LEVELS=${LEVELS:-all} REPS=${REPS:-2} BUDGET=${BUDGET:-1500} LEVEL_TIMEOUT=${LEVEL_TIMEOUT:-900}
export JOBS=${JOBS:-1}
t_start=$(date +%s)
mkdir -p "$OUT"
log() { echo "repro_collom: $*" | tee -a "$OUT/run.log" >&2; }
: > "$OUT/run.log"

# SMPI's default collectives (and the SMP-aware ones it picks) build a per-communicator
# leader structure with an allgather ring of P steps (Comm::init_smp): at 2,048 ranks one
# first Allreduce on a new communicator cost ~1 min of host time. These algorithms need no such
# structure and keep every collective at O(P) or O(P log P) simulated messages. They only run
# outside the timed exchanges; the barrier before each timed batch is a dissemination barrier
# (ompi_bruck), so that every rank starts the batch at the same simulated time.
SMPI_COLL=(--cfg=smpi/allreduce:redbcast --cfg=smpi/reduce:binomial --cfg=smpi/bcast:binomial_tree
           --cfg=smpi/barrier:ompi_bruck --cfg=smpi/allgather:GB --cfg=smpi/allgatherv:GB
           --cfg=smpi/gather:ompi_binomial --cfg=smpi/scatter:ompi_binomial --cfg=smpi/alltoall:bruck
           --cfg=smpi/alltoallv:ompi_basic_linear --cfg=smpi/reduce_scatter:ompi_basic_recursivehalving)

# 1. Builds (only what is missing; -j $JOBS).
amg=$BUILD/src/apps/amg_spmv/sparsecomm_amg_spmv
cli=$BUILD_SMPI/src/apps/cli/sparsecomm
t0=$(date +%s)
if [ ! -f "$BUILD/CMakeCache.txt" ]; then
  cmake -S "$root" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release > "$OUT/build.log" 2>&1 || { cat "$OUT/build.log"; exit 1; }
fi
cmake --build "$BUILD" -j "$JOBS" --target sparsecomm_amg_spmv sparsecomm_cli >> "$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
[ -x "$amg" ] || { echo "repro_collom: $amg was not built (Hypre missing? see $OUT/build.log)" >&2; exit 1; }
"$root/scripts/smpi.sh" build "$BUILD_SMPI" sparsecomm_cli >> "$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
log "builds ready in $(( $(date +%s) - t0 )) s ($BUILD, $BUILD_SMPI)"

# 2. The hierarchy, on HYPRE_NP real ranks, dumped level by level.
lv=$OUT/levels
stamp="nx=$NX ny=$NY hypre_np=$HYPRE_NP"
t0=$(date +%s)
if [ "${REUSE_LEVELS:-0}" = 1 ] && [ -f "$lv/levels.tsv" ] && [ "$(cat "$lv/stamp" 2>/dev/null)" = "$stamp" ]; then
  log "reusing the levels in $lv ($stamp)"
else
  rm -rf "$lv"
  mpirun_args=(--oversubscribe --mca mpi_yield_when_idle 1)
  [ "$(id -u)" = 0 ] && mpirun_args+=(--allow-run-as-root)
  mpirun "${mpirun_args[@]}" -np "$HYPRE_NP" "$amg" --nx "$NX" --ny "$NY" --dump-levels "$lv" --dump-only \
    > "$OUT/dump.log" 2>&1 || { cat "$OUT/dump.log"; exit 1; }
  echo "$stamp" > "$lv/stamp"
  log "hierarchy built with Hypre on $HYPRE_NP real ranks and dumped in $(( $(date +%s) - t0 )) s ($lv)"
fi
grep -v '^#' "$lv/levels.tsv" | tee -a "$OUT/run.log" >&2
nlev=$(grep -c '^[0-9]' "$lv/levels.tsv")
if [ "$LEVELS" = all ]; then levels=$(seq 0 $((nlev - 1))); else levels=${LEVELS//,/ }; fi

# 3. Every level on NP simulated ranks.
case "$PLATFORM" in
  gpc_flat|gpc_fattree) pf="${PLATFORM}_1024x8.xml" ;;
  quartz_fattree) pf=quartz_fattree_64x32.xml ;;
  *) pf=$PLATFORM ;;
esac
cat > "$OUT/meta.txt" <<EOF
platform=$pf (SimGrid SMPI 3.32), $((NP / PPN)) nodes x $PPN ranks (block mapping), regions = simulated nodes
layout=hierarchy built with Hypre on $HYPRE_NP real ranks, levels redistributed in block rows over $NP simulated ranks
cfg=scripts/smpi.sh defaults (simulate-computation:no, send-is-detached-thresh:0, ois/or 0.4us, ...) + ${SMPI_COLL[*]}
np=$NP
ppn=$PPN
platform_name=$PLATFORM
EOF
json=$OUT/spmv.jsonl
: > "$json"
t3=$(date +%s)
skipped=()
for l in $levels; do
  used=$(( $(date +%s) - t3 ))
  if [ "$used" -ge "$BUDGET" ]; then skipped+=("$l"); continue; fi
  b=$BACKENDS
  for c in ${COMBINED_LEVELS//,/ }; do [ "$c" = "$l" ] && b="$b,combined"; done
  t0=$(date +%s)
  log "level $l: $NP simulated ranks ($PPN per node, $PLATFORM), backends $b"
  if SMPI_QUIET=1 "$root/scripts/smpi.sh" run "$NP" --platform "$PLATFORM" --ppn "$PPN" --timeout "$LEVEL_TIMEOUT" -- \
      "$cli" spmv --matrix "$lv/level_$l.mtx" --regions node --reference rows --sdde personalized \
      --backend "$b" --reps "$REPS" --json "$json" "${SMPI_COLL[@]}" > "$OUT/level_$l.log" 2>&1; then
    tail -n +2 "$OUT/level_$l.log" | tee -a "$OUT/run.log" >&2
  else
    rc=$?
    log "level $l FAILED (exit $rc; 124 = over LEVEL_TIMEOUT=$LEVEL_TIMEOUT s), see $OUT/level_$l.log"
    tail -5 "$OUT/level_$l.log" >&2
  fi
  log "level $l: $(( $(date +%s) - t0 )) s of host time"
done
[ ${#skipped[@]} -eq 0 ] || log "over the budget of $BUDGET s: levels ${skipped[*]} not simulated"
log "simulations: $(( $(date +%s) - t3 )) s"

# 4. Exact counts of every level and backend (combined included), same layout: block rows,
#    PPN consecutive ranks per node. Labelled exact (counts) and modelled (latency).
files=$(for l in $levels; do printf '%s ' "$lv/level_$l.mtx"; done)
rm -f "$OUT/planstats.jsonl"
"$BUILD/src/apps/cli/sparsecomm" plan-stats --ranks "$NP" --regions "ppn:$PPN" --matrices "$files" \
  --backends direct,combined,aggregated,aggregated_dedup --k 2 --aware both --json "$OUT/planstats.jsonl" \
  > "$OUT/planstats.txt"
log "exact counts (plan-stats, incl. combined) in $OUT/planstats.txt"

# 5. Table and plots.
/usr/bin/python3 "$here/plot.py" "$OUT" | tee "$OUT/table.txt"
log "total $(( $(date +%s) - t_start )) s; results in $OUT"
