#!/usr/bin/env bash
# Issue 5's benchmark: the 2D BFS at 4 ranks (2x2) and 9 ranks (3x3) on R-MAT graphs of
# scale 16-18, on this node and (root) on the emulated cluster (scripts/cluster.sh, 1 Gbit/s
# links: 4 nodes x 1 rank, 3 nodes x 3 ranks, and the issue's 4 nodes x 4 ranks (4x4 grid)).
# Per case:
#   - sparsecomm_bfs (blocking, and overlapped/sort over the three transports, neighbor, p2p
#     and direct, with a fold chunk per phase and with one fold per level): how much of the blocking version's
#     communication time the overlapped version hides (1 - exposed_overlapped / exposed_blocking);
#   - sparsecomm_bfs_combblas: our blocking and overlapped BFS against CombBLAS's own
#     top-down BFS (graph500 loop) on the same graph, roots and ranks, every BFS validated.
# Goal: our best TEPS >= CombBLAS's, and the overlapped version hides >= 50%.
#
#   experiments/bfs/run.sh        (results in results/bench_bfs/: JSON lines and table.txt; 4 min)
#
# Environment: BUILD (default build), OUT (default results/bench_bfs), SCALES (default
# "16 17 18"), ROOTS (default 8), CLUSTER=0 to skip the cluster.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${BUILD:-$root/build}
out=${OUT:-$root/results/bench_bfs}
roots=${ROOTS:-8}
mkdir -p "$out"
rm -f "$out"/*.jsonl
bfs=$build/src/apps/bfs2d/sparsecomm_bfs
if [ ! -x "$bfs" ]; then
  cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release > "$out/configure.log"
  cmake --build "$build" -j "${JOBS:-2}" --target sparsecomm_bfs
  cmake --build "$build" -j "${JOBS:-2}" --target sparsecomm_bfs_combblas > /dev/null 2>&1 || true  # needs CombBLAS
fi
anchor=$build/src/apps/bfs2d/sparsecomm_bfs_combblas
[ -x "$anchor" ] || { echo "bench_bfs.sh: $anchor not built (needs libcombblas-dev); TEPS ratios skipped" >&2; anchor=; }

run_case() {  # where launcher... -- (the program and its arguments follow)
  local where=$1; shift
  for s in ${SCALES:-16 17 18}; do
    "$@" "$bfs" --scale "$s" --roots "$roots" --variants blocking,overlapped --merge sort --fold-every 1,0 \
      --transport neighbor,p2p,direct \
      --json "$out/$where.s$s.bfs.jsonl" > "$out/$where.s$s.bfs.txt" 2>&1
    if [ -n "$anchor" ]; then
      "$@" "$anchor" --scale "$s" --roots "$roots" --variant blocking,overlapped --combblas graph500 \
        --json "$out/$where.s$s.anchor.jsonl" > "$out/$where.s$s.anchor.txt" 2>&1
    fi
    echo "bench_bfs.sh: $where scale $s done" >&2
  done
}

for p in 4 9; do run_case "node.np$p" "$root/scripts/mpirun.sh" -np "$p"; done
if [ "${CLUSTER:-1}" = 1 ] && [ "$(id -u)" = 0 ]; then
  export CLUSTER_QUIET=1
  run_case cluster.4x1 "$root/scripts/cluster.sh" run 4 1 --rate 1gbit --
  run_case cluster.3x3 "$root/scripts/cluster.sh" run 3 3 --rate 1gbit --
  run_case cluster.4x4 "$root/scripts/cluster.sh" run 4 4 --rate 1gbit --
fi

python3 - "$out" <<'EOF' | tee "$out/table.txt"
import glob, json, os, sys
d = sys.argv[1]
print("2D BFS, R-MAT edge factor 16; hides = 1 - exposed(overlapped/sort) / exposed(blocking);")
print("best/CombBLAS = our best variant's harmonic-mean TEPS / CombBLAS graph500's, same run;")
print("fold:0 = overlapped with one fold per level (only the expand split into phases): TEPS, hides")
print("p2p = overlapped over the p2p transport (Isend/Irecv, no count exchanges), default and fold:0: TEPS, hides")
print("direct = overlapped over the direct transport (no transpose, every receive first, pieces in arrival order)")
print("%-12s %5s %5s %10s %10s %6s %10s %6s %10s %6s %10s %6s %10s %6s %10s %6s %10s %8s" % (
    "setting", "ranks", "scale", "blocking", "overlapped", "hides", "fold:0", "hides", "p2p", "hides",
    "p2p f:0", "hides", "direct", "hides", "dir f:0", "hides", "CombBLAS", "best/CB"))
for f in sorted(glob.glob(os.path.join(d, "*.bfs.jsonl"))):
    where, scale = os.path.basename(f).split(".s")[0], os.path.basename(f).split(".s")[-1].split(".")[0]
    rows = {r["variant"]: r for r in map(json.loads, open(f))}
    b = rows.get("blocking")
    var = [rows.get(v) for v in ("overlapped/sort", "overlapped/sort fold:0", "overlapped/sort p2p",
                                 "overlapped/sort fold:0 p2p", "overlapped/sort direct",
                                 "overlapped/sort fold:0 direct")]
    cells = []
    for o in var:
        teps = o["teps_hmean"] if o else float("nan")
        hides = 1 - o["exposed_s"] / b["exposed_s"] if b and o and b["exposed_s"] > 0 else float("nan")
        cells += [teps, 100 * hides]
    a = f.replace(".bfs.jsonl", ".anchor.jsonl")
    cb, best = float("nan"), float("nan")
    if os.path.exists(a):
        ar = list(map(json.loads, open(a)))
        cbs = [r["hmean_teps"] for r in ar if r["impl"] == "combblas"]
        ours = [r["hmean_teps"] for r in ar if r["impl"] == "ours"]
        if cbs and ours:
            cb, best = cbs[0], max(ours) / cbs[0]
    print("%-12s %5d %5s %10.3g" % (where.replace(".np4", "").replace(".np9", ""), b["ranks"], scale,
                                     b["teps_hmean"]) +
          "".join(" %10.3g %5.0f%%" % (cells[i], cells[i + 1]) for i in range(0, len(cells), 2)) +
          " %10.3g %8.2f" % (cb, best))
EOF
