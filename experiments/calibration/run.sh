#!/usr/bin/env bash
# Simulated vs measured, once: the same neighborhood-exchange benchmark on the emulated
# 4-node cluster (scripts/cluster.sh: 4 network namespaces x 4 ranks, links limited to
# 1 Gbit/s) and under SMPI on a platform file that describes that cluster, per backend,
# and the error of the simulation. Root only (network namespaces).
#
#   experiments/calibration/run.sh        (≈5 min on a quiet machine; results in results/repro_calibration/)
#
# The platform file is written from what the cluster really is: 4 hosts x 4 cores, each
# host's link at the configured tbf rate (1 Gbit/s, shared by the host's flows, up and down
# separate), and the latencies that `sparsecomm calibrate` measures on the cluster
# (inter-node: alpha_inter, split over the two links of a route; intra-node: alpha_intra
# on the loopback, with the measured intra-node bandwidth). Everything else is SMPI's
# usual options (scripts/smpi.sh). The error is (simulated - measured) / measured of the
# median latency per (topology, message size, backend).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out=${OUT:-$root/results/repro_calibration}
build=${BUILD:-$root/build}
build_smpi=${BUILD_SMPI:-$root/build-smpi}
rate_mbit=1000
mkdir -p "$out"
rm -f "$out"/measured.jsonl "$out"/simulated.jsonl "$out"/simulated_cpu.jsonl
[ "$(id -u)" = 0 ] || { echo "repro_calibration.sh: needs root (network namespaces)"; exit 77; }
if [ ! -x "$build/src/apps/cli/sparsecomm" ]; then
  cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release > "$out/configure.log"
  cmake --build "$build" -j "${JOBS:-2}" --target sparsecomm_cli
fi
"$root/scripts/smpi.sh" build "$build_smpi" sparsecomm_cli > "$out/build_smpi.log"
cli=$build/src/apps/cli/sparsecomm
scli=$build_smpi/src/apps/cli/sparsecomm
bench=(nbrbench --topos "moore:2,1;moore:2,2;er:0.4" --sizes 4,4096,65536 --k 2 --aware both --backends p2p,combined
       --reps 60 --rounds 3)

echo "== 1. calibrate on the emulated cluster (4 nodes x 4 ranks, ${rate_mbit} Mbit/s)"
"$root/scripts/cluster.sh" run 4 4 --rate ${rate_mbit}mbit -- "$cli" calibrate --out "$out/model.txt" | tee "$out/calibrate.txt"

echo "== 2. platform file from the calibration"
awk -v rate="$rate_mbit" '
  $1 == "alpha_intra" { ai = $2 } $1 == "beta_intra" { bi = $2 } $1 == "alpha_inter" { ae = $2 }
  END {
    print "<?xml version=\x271.0\x27?>"
    print "<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">"
    print "<!-- The emulated cluster of scripts/cluster.sh: 4 hosts x 4 cores; each host link at the tbf rate"
    printf "     (%d Mbit/s), latency alpha_inter/2 per link (2 links per route); loopback = intra-node:\n", rate
    print "     alpha_intra and 1/beta_intra as measured by sparsecomm calibrate on that cluster. -->"
    print "<platform version=\x274.1\x27>"
    print "  <config><prop id=\x27smpi/lat-factor\x27 value=\x270:1\x27/><prop id=\x27smpi/bw-factor\x27 value=\x270:1\x27/></config>"
    printf "  <cluster id=\x27emu\x27 prefix=\x27node-\x27 suffix=\x27\x27 radical=\x270-3\x27 speed=\x271Gf\x27 core=\x274\x27\n"
    printf "           bw=\x27%.6gBps\x27 lat=\x27%.6gs\x27 sharing_policy=\x27SPLITDUPLEX\x27\n", rate * 1e6 / 8, ae / 2
    # A per-byte cost measured as 0 (noise on tiny transfers) would mean infinite bandwidth,
    # which SimGrid rejects: cap the loopback at 20 GB/s.
    lb = (bi > 5e-11) ? 1 / bi : 2e10
    printf "           loopback_bw=\x27%.6gBps\x27 loopback_lat=\x27%.6gs\x27/>\n", lb, ai
    print "</platform>"
  }' "$out/model.txt" > "$out/emulated_4x4.xml"
cat "$out/emulated_4x4.xml"

echo "== 3. measured on the emulated cluster"
"$root/scripts/cluster.sh" run 4 4 --rate ${rate_mbit}mbit -- "$cli" "${bench[@]}" --regions node --json "$out/measured.jsonl" \
  | tee "$out/measured.txt"
echo "== 4a. simulated (SMPI, the platform above, 4 ranks per host; 0.4 us of CPU per message)"
"$root/scripts/smpi.sh" run 16 --platform "$out/emulated_4x4.xml" --ppn 4 --timeout 1200 -- "$scli" "${bench[@]}" --regions node \
  --json "$out/simulated.jsonl" | tee "$out/simulated.txt"
# On the emulated cluster 16 ranks share 2 cores, and a message costs kernel and scheduling
# CPU time that SMPI's latency does not occupy: 4b charges each started message the
# intra-node latency calibrated on the cluster as CPU time (SPARSECOMM_SMPI_MSG_COST,
# include/sparsecomm/comm/messages.hpp), a per-message cost fitted from calibrate, not from the
# benchmark being predicted.
alpha_intra=$(awk '$1 == "alpha_intra" { print $2 }' "$out/model.txt")
echo "== 4b. simulated again with ${alpha_intra} s of CPU per message (calibrated alpha_intra)"
SPARSECOMM_SMPI_MSG_COST=$alpha_intra "$root/scripts/smpi.sh" run 16 --platform "$out/emulated_4x4.xml" --ppn 4 --timeout 1200 -- \
  "$scli" "${bench[@]}" --regions node --json "$out/simulated_cpu.jsonl" | tee "$out/simulated_cpu.txt"
echo "== 5. comparison"
/usr/bin/python3 "$here/plot.py" "$out" | tee "$out/table.txt"
