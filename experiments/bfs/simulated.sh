#!/usr/bin/env bash
# Issue 5's overlap question where the network moves data on its own: the 2D BFS on a
# SIMULATED cluster (SimGrid SMPI, one rank per simulated node), blocking vs overlapped.
#
# Why: on this 2-core machine 4-16 ranks share 2 cores, and moving a message (shared memory,
# or TCP in the kernel) is itself CPU work, so an overlapped rank that computes while its
# messages move only takes the core from another rank (experiments/bfs/README.md). The paper's
# setting (Kandalla et al. 2012) is one core per process and a network that progresses
# transfers without the CPU. SimGrid models exactly that: a transfer proceeds in simulated
# time once both sides have posted it, while each rank's compute is measured on the host
# and injected (smpi/simulate-computation:yes, smpi/host-speed = the platform's 10 Gflop/s
# per core, so one host second is one simulated second).
#
#   experiments/bfs/simulated.sh            (results in results/sim_bfs/: JSON lines and table.txt; ~17 min)
#
# The overlapped variant runs with the p2p and direct transports (SMPI 3.32 has no
# neighborhood collectives): MPI_Isend/Irecv per phase (p2p), or straight to the ranks of the
# column with no transpose step and pieces computed in arrival order (direct); both post
# receives at upper bounds, so they also save the blocking version's count exchanges. To
# separate that saving from the overlap, every case also runs with computation NOT
# simulated (compute costs no simulated time, nothing can be overlapped): "comm only" is
# then the blocking version's pure communication time and how much the p2p protocol alone
# saves.
#
# Networks: qdr = ../shared/simgrid/gpc_flat_1024x8.xml (QDR InfiniBand-like: 3.2 GB/s,
# 1.5 us, the class of network of the paper); eth1g = 1 Gbit/s links, 25 us (written here).
# Collectives of the blocking version: Open MPI's selection for allgather(v) (smpi/...:ompi),
# Open MPI's basic linear alltoallv (smpi.sh's default).
#
# Environment: BUILD_SMPI (default build-smpi), OUT (results/sim_bfs), SCALES ("16 17 18"),
# RANKS ("4 9 16"), NETS ("qdr eth1g"), ROOTS (8), TRANSPORTS (p2p,direct); TABLE_ONLY=1
# prints the table of the results already in OUT without running anything.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${BUILD_SMPI:-$root/build-smpi}
out=${OUT:-$root/results/sim_bfs}
roots=${ROOTS:-8}
mkdir -p "$out"
out=$(cd "$out" && pwd)
if [ "${TABLE_ONLY:-0}" != 1 ]; then
rm -f "$out"/*.jsonl
"$root/scripts/smpi.sh" build "$build" sparsecomm_bfs > "$out/build.log" 2>&1 || { tail -30 "$out/build.log"; exit 1; }
bfs=$build/src/apps/bfs2d/sparsecomm_bfs

cat > "$out/eth1g.xml" <<'EOF'
<?xml version='1.0'?>
<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">
<!-- sim_bfs.sh: 64 nodes x 8 cores of 10 Gflop/s, 1 Gbit/s Ethernet-like links: 125 MB/s per
     direction, 12.5 us per link (25 us node to node), flat crossbar (no switch hierarchy). -->
<platform version="4.1">
  <config>
    <prop id="smpi/lat-factor" value="0:1"/>
    <prop id="smpi/bw-factor" value="0:1"/>
  </config>
  <cluster id="eth" prefix="node-" suffix="" radical="0-63" speed="10Gf" core="8"
           bw="125MBps" lat="12.5us" sharing_policy="SPLITDUPLEX"
           loopback_bw="5GBps" loopback_lat="0.3us"/>
</platform>
EOF

cd "$out"  # smpirun leaves its host file in the current directory when a run fails
for net in ${NETS:-qdr eth1g}; do
  case "$net" in
    qdr) pf=gpc_flat ;;
    eth1g) pf=$out/eth1g.xml ;;
    *) echo "sim_bfs.sh: unknown network $net (qdr, eth1g)" >&2; exit 2 ;;
  esac
  for p in ${RANKS:-4 9 16}; do
    for s in ${SCALES:-16 17 18}; do
      for comp in yes no; do
        SMPI_QUIET=1 "$root/scripts/smpi.sh" run "$p" --ppn 1 --platform "$pf" --timeout 900 \
          --cfg smpi/simulate-computation:$comp --cfg smpi/host-speed:10Gf \
          --cfg smpi/allgatherv:ompi --cfg smpi/allgather:ompi -- \
          "$bfs" --scale "$s" --roots "$roots" --variants blocking,overlapped --merge sort --transport "${TRANSPORTS:-p2p,direct}" \
          --fold-every 1,0 --json "$out/$net.np$p.s$s.compute-$comp.jsonl" \
          > "$out/$net.np$p.s$s.compute-$comp.txt" 2>&1 || { cat "$out/$net.np$p.s$s.compute-$comp.txt"; exit 1; }
      done
      echo "sim_bfs.sh: $net $p ranks scale $s done" >&2
    done
  done
done
fi

python3 - "$out" <<'EOF' | tee "$out/table.txt"
import glob, json, os, sys
d = sys.argv[1]
print("2D BFS on a simulated cluster (SimGrid SMPI 3.32, one rank per node), R-MAT edge factor 16, per overlapped")
print("transport; TEPS and exposed communication with compute simulated; hides = 1 - exposed(overlapped) /")
print("exposed(blocking); comm only = blocking's exposed time with compute NOT simulated (pure communication), and")
print("what the overlapped versions save then (default, fold:0): their one-message protocol alone, nothing to overlap")
print("%-6s %5s %5s %-9s %10s %10s %10s %9s %6s %7s %10s %7s %7s" % (
    "net", "ranks", "scale", "transport", "blocking", "overlapped", "fold:0", "exp. ms", "hides", "fold:0",
    "comm only", "saves", "fold:0"))
def load(f):
    return {r["variant"]: r for r in map(json.loads, open(f))} if os.path.exists(f) else {}
keys = []
for f in glob.glob(os.path.join(d, "*.compute-yes.jsonl")):
    net, np_, sc = os.path.basename(f).split(".")[:3]
    keys.append((net, int(np_[2:]), int(sc[1:]), f))
for net, p, s, f in sorted(keys, key=lambda k: (k[0] != "qdr", k[1], k[2])):
    y, n = load(f), load(f.replace("compute-yes", "compute-no"))
    b, nb = y["blocking"], n["blocking"]
    for t in ("p2p", "direct"):
        key, key0 = "overlapped/sort " + t, "overlapped/sort fold:0 " + t
        if key not in y or key not in n:
            continue
        o, o0, no, no0 = y[key], y[key0], n[key], n[key0]
        print("%-6s %5d %5d %-9s %10.3g %10.3g %10.3g %9.3f %5.0f%% %6.0f%% %10.3f %6.0f%% %6.0f%%" % (
            net, p, s, t, b["teps_hmean"], o["teps_hmean"], o0["teps_hmean"], 1e3 * b["exposed_s"],
            100 * (1 - o["exposed_s"] / b["exposed_s"]), 100 * (1 - o0["exposed_s"] / b["exposed_s"]),
            1e3 * nb["exposed_s"], 100 * (1 - no["exposed_s"] / nb["exposed_s"]),
            100 * (1 - no0["exposed_s"] / nb["exposed_s"])))
EOF
