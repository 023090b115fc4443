#!/usr/bin/env bash
# auto's setup against the setup of the backend it picks (issue 34's goal: <= 1.5x on every
# shared matrix and AMG level). Per shared SuiteSparse matrix, `sparsecomm info` builds auto
# and its pick alike: each first on a fresh duplicate of the communicator ("first plan",
# which pays the communicator's first use: node detection, the model's lookup), then again
# on the same one ("later plans"), median of 9 alternating rounds, max over ranks. Then
# the AMG hierarchy's per-level plan setup (`sparsecomm amg`: every level's plans again in
# 5 rounds alternating the backends, median; first plans are the matrices' column above).
#
#   experiments/auto/setup.sh      (results in results/auto_setup/; ~3 min here)
#
# Environment: BUILD (default build), OUT (default results/auto_setup), RANKS (default 8),
# REGIONS (default ppn:4), DATA (the matrices, default ../shared/data/suitesparse),
# NX/NY (AMG problem, default 256x256).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${BUILD:-$root/build}
out=${OUT:-$root/results/auto_setup}
ranks=${RANKS:-8}
regions=${REGIONS:-ppn:4}
data=${DATA:-$root/../shared/data/suitesparse}
cli=$build/src/apps/cli/sparsecomm
[ -x "$cli" ] || { echo "setup.sh: build $cli first (scripts/build.sh)"; exit 1; }
mkdir -p "$out"
table=$out/table.txt
{
  echo "auto's setup / its pick's, $ranks ranks, regions $regions (sparsecomm info, median of 9)"
  printf '%-36s %-18s %-24s %-24s\n' matrix pick "first plan (ms, x)" "later plans (ms, x)"
} > "$table"
for f in "$data"/*.mtx; do
  name=$(basename "$f" .mtx)
  log=$out/$name.log
  "$root/scripts/mpirun.sh" -np "$ranks" "$cli" info --matrix "$f" --regions "$regions" > "$log" 2>&1 ||
    { echo "setup.sh: $name failed (see $log)"; exit 1; }
  # "setup, auto / shm (median of 9): first plan on a communicator A / B ms = Rx; later plans C / D ms = Sx"
  awk -v m="$name" '/^setup, auto \// {
      pick = $4; first = $13 " / " $15 " = " $18; later = $21 " / " $23 " = " $26
      gsub(/;/, "", first); printf "%-36s %-18s %-24s %-24s\n", m, pick, first, later }' "$log" >> "$table"
done
awk 'NR > 2 { n++; f = $7; l = $12; sub(/x/, "", f); sub(/x/, "", l);
      if (f + 0 <= 1.5) fo++; if (l + 0 <= 1.5) lo++; if (f + 0 > fw) fw = f + 0; if (l + 0 > lw) lw = l + 0 }
     END { printf "<= 1.5x: first plan %d of %d (worst %.2f), later plans %d of %d (worst %.2f)\n", fo, n, fw, lo, n, lw }' \
  "$table" >> "$table"
echo "" >> "$table"
echo "AMG ${NX:-256}x${NY:-256}:" >> "$table"
"$root/scripts/mpirun.sh" -np "$ranks" "$cli" amg --nx "${NX:-256}" --ny "${NY:-256}" --regions "$regions" \
  --backend auto,shm,p2p --reps 10 > "$out/amg.log" 2>&1 || { echo "setup.sh: amg failed"; exit 1; }
sed -n '/^plan setup per level/,/^$/p' "$out/amg.log" >> "$table"
awk '/^plan setup per level/ { on = 1; next } on && /\(.*x\)/ { n++; r = $0; sub(/.*\([a-z_0-9]+ /, "", r); sub(/x\).*/, "", r)
       if (r + 0 <= 1.5) ok++; if (r + 0 > w) w = r + 0 } on && /^$/ { on = 0 }
     END { printf "AMG levels with auto <= 1.5x its pick: %d of %d (worst %.2f)\n", ok, n, w }' "$out/amg.log" >> "$table"
cat "$table"
