#!/usr/bin/env bash
# Where a PCG + BoomerAMG solve's halo exchanges spend their time, per comm package (each
# level's A, and its interpolation P: job 1 the interpolation, job 2 the restriction P^T),
# with Hypre's own exchange and through the hook: time_hook.c (a measurement tool, not part
# of the library) is preloaded in front of either and prints, after each solve, per package
# the calls and the milliseconds spent starting and completing them (rank 0; largest rank
# and mean over ranks). The last solve of each run is kept; packages.py prints the variants
# beside Hypre's (table.txt): per package the median over the rounds, and the ratio paired
# by round.
#
#   experiments/hypre_hook/packages.sh     (root: the emulated cluster)
#
# Environment: BUILD (build), OUT (results/hypre_packages), CASE (rotate:512, or a matrix
# name of ../shared/data/suitesparse), LAYOUT ("4 4": nodes and ranks per node of
# scripts/cluster.sh, 1 Gbit/s links), VARIANTS ("hypre auto": hypre, or a hook backend),
# ROUNDS (3: interleaved, each round running every variant once).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${BUILD:-$root/build}
out=${OUT:-$root/results/hypre_packages}
c=${CASE:-rotate:512}
read -r -a layout <<< "${LAYOUT:-4 4}"
read -r -a variants <<< "${VARIANTS:-hypre auto}"
prog=$build/tests/hypre_amg_solve
hook=$build/libsparsecomm_hypre_hook.so
[ -x "$prog" ] && [ -f "$hook" ] || { echo "packages.sh: build first ($prog, $hook)"; exit 1; }
[ "$(id -u)" = 0 ] || { echo "packages.sh: needs root (scripts/cluster.sh)"; exit 1; }
mkdir -p "$out"
mpicc -O2 -shared -fPIC -I/usr/include/hypre "$here/time_hook.c" -o "$out/time_hook.so" -ldl
if [[ $c == rotate:* ]]; then args=(-n "${c#rotate:}"); else args=(-matrix "$root/../shared/data/suitesparse/$c.mtx"); fi
rounds=${ROUNDS:-3}
rm -f "$out"/*.r*.txt
# Interleaved rounds, each starting one variant later (a slow phase of the machine hits
# every variant alike); the last solve of each run.
for ((r = 0; r < rounds; ++r)); do
  for ((i = 0; i < ${#variants[@]}; ++i)); do
    v=${variants[$(( (i + r) % ${#variants[@]} ))]}
    pre=$out/time_hook.so
    extra=""
    if [ "$v" != hypre ]; then pre=$pre:$hook; extra="-x SPARSECOMM_HYPRE_BACKEND=$v"; fi
    CLUSTER_MPIRUN_ARGS="-x LD_PRELOAD=$pre $extra" "$root/scripts/cluster.sh" run "${layout[0]}" "${layout[1]}" \
      --rate 1000mbit -- "$prog" "${args[@]}" -solves 2 > "$out/$v.r$r.log" 2>&1
    echo "== round $r: $v ($c, ${layout[0]}x${layout[1]}), the last solve"
    # the last solve's table: from its header line on
    awk '/time_hook: pkg/ { n = NR } { line[NR] = $0 } END { for (i = n; i <= NR; ++i) if (line[i] ~ /time_hook|amg_solve/) print line[i] }' \
      "$out/$v.r$r.log" | tee "$out/$v.r$r.txt"
  done
done
others=()
for v in "${variants[@]}"; do [ "$v" = hypre ] || others+=("$v"); done
if [[ " ${variants[*]} " == *" hypre "* ]] && [ ${#others[@]} -gt 0 ]; then
  echo "== side by side (packages.py)"
  /usr/bin/python3 "$here/packages.py" "$out" "${others[@]}" | tee "$out/table.txt"
fi
