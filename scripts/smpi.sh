#!/usr/bin/env bash
# Runs sparsecomm under SimGrid's SMPI simulator (Debian libsimgrid-dev 3.32): the real
# MPI code on a simulated cluster of thousands of ranks. See ../shared/simgrid/NOTES.md.
#
#   scripts/smpi.sh configure [BUILD_DIR]          # build-smpi by default: smpicxx, SPARSECOMM_SMPI=ON
#   scripts/smpi.sh build [BUILD_DIR] [targets...]    # configures BUILD_DIR first if needed
#   scripts/smpi.sh run NP [--platform gpc_flat|gpc_fattree|quartz_fattree|FILE.xml] [--map block|cyclic]
#                          [--ppn K] [--timeout S] [--cfg NAME:VALUE]... -- PROGRAM ARGS...
#
# Results are MODELLED times: the platform file and every --cfg are printed with them.
# Exit 77 when SimGrid or the platform files are missing (ctest shows "skipped").
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
simdir=${SPARSECOMM_SIMGRID:-$root/../shared/simgrid}

need_simgrid() {
  command -v smpirun > /dev/null && command -v smpicxx > /dev/null || {
    echo "smpi.sh: SimGrid SMPI not installed (apt-get install libsimgrid-dev simgrid)" >&2; exit 77; }
}

cmd=${1:-}; shift || true
case "$cmd" in
  configure)
    need_simgrid
    bdir=${1:-$root/build-smpi}
    cmake -S "$root" -B "$bdir" -DSPARSECOMM_SMPI=ON -DCMAKE_CXX_COMPILER=smpicxx -DCMAKE_C_COMPILER=smpicc \
      -DCMAKE_BUILD_TYPE=Release > "$bdir.configure.log" 2>&1 || { cat "$bdir.configure.log"; exit 1; }
    echo "smpi.sh: configured $bdir"
    ;;
  build)
    need_simgrid
    bdir=${1:-$root/build-smpi}; shift || true
    [ -f "$bdir/CMakeCache.txt" ] || "$0" configure "$bdir"  # not configured yet: do it first
    if [ $# -gt 0 ]; then cmake --build "$bdir" -j "${JOBS:-2}" --target "$@"; else cmake --build "$bdir" -j "${JOBS:-2}"; fi
    ;;
  run)
    need_simgrid
    np=${1:?usage: smpi.sh run NP [options] -- PROGRAM ARGS}; shift
    platform=gpc_flat map=block ppn=8 tmo=${SMPI_TIMEOUT:-600} extra=()
    while [ $# -gt 0 ] && [ "$1" != "--" ]; do
      case "$1" in
        --platform) platform=$2; shift 2 ;;
        --map) map=$2; shift 2 ;;
        --ppn) ppn=$2; shift 2 ;;
        --timeout) tmo=$2; shift 2 ;;
        --cfg) extra+=("--cfg=$2"); shift 2 ;;  # more SimGrid options, after (so over) the defaults
        *) echo "smpi.sh: unknown option $1" >&2; exit 2 ;;
      esac
    done
    [ "${1:-}" = "--" ] || { echo "smpi.sh: missing -- before the program" >&2; exit 2; }
    shift
    case "$platform" in
      gpc_flat) pf=$simdir/gpc_flat_1024x8.xml; maxnodes=1024 ;;
      gpc_fattree) pf=$simdir/gpc_fattree_1024x8.xml; maxnodes=1024 ;;
      quartz_fattree) pf=$simdir/quartz_fattree_64x32.xml; maxnodes=64; [ "$ppn" = 8 ] && ppn=32 ;;
      *.xml) pf=$platform; maxnodes=1000000 ;;  # your own platform file (hosts node-0, node-1, ...)
      *) echo "smpi.sh: unknown platform $platform (gpc_flat, gpc_fattree, quartz_fattree)" >&2; exit 2 ;;
    esac
    [ -f "$pf" ] || { echo "smpi.sh: platform file $pf not found (set SPARSECOMM_SIMGRID)" >&2; exit 77; }
    nodes=$(( (np + ppn - 1) / ppn ))
    [ "$nodes" -le "$maxnodes" ] || { echo "smpi.sh: $np ranks need $nodes nodes; $platform has $maxnodes" >&2; exit 2; }
    hosts=$(mktemp)
    trap 'rm -f "$hosts"' EXIT
    sh "$simdir/make_hostfile.sh" "$nodes" "$ppn" "$map" > "$hosts"
    # The options of ../shared/simgrid/NOTES.md: persistent requests need
    # send-is-detached-thresh:0; per-message overheads (ois/or) make message counts cost
    # (persistent requests are charged in the library: Messages, include/sparsecomm/comm/messages.hpp).
    # Collective algorithms chosen explicitly: SMPI's default barrier let ranks leave ~35 us
    # apart at 256 ranks (swamping the timed exchanges; Bruck's barrier keeps them together),
    # and both the defaults and coll-selector:ompi cost minutes of host time per collective
    # on a fresh communicator at 2,048 ranks; these cost 1-2 s (found for repro_collom.sh).
    cfg=(--cfg=smpi/simulate-computation:no --cfg=smpi/send-is-detached-thresh:0
         --cfg=surf/precision:1e-7 --cfg=maxmin/precision:1e-4
         --cfg=smpi/iprobe:1e-7 --cfg=smpi/test:1e-7 --cfg=smpi/grow-injected-times:no
         --cfg=smpi/ois:0:0.4e-6:0 --cfg=smpi/or:0:0.4e-6:0
         --cfg=smpi/barrier:ompi_bruck --cfg=smpi/allreduce:redbcast --cfg=smpi/reduce:binomial
         --cfg=smpi/bcast:binomial_tree --cfg=smpi/allgather:GB --cfg=smpi/allgatherv:GB
         --cfg=smpi/gather:ompi_binomial --cfg=smpi/scatter:ompi_binomial --cfg=smpi/alltoall:bruck
         --cfg=smpi/alltoallv:ompi_basic_linear --cfg=smpi/reduce_scatter:ompi_basic_recursivehalving
         --log=root.thres:warning "${extra[@]}")
    [ -n "${SMPI_QUIET:-}" ] || echo "smpi.sh: $np simulated ranks on $(basename "$pf") ($nodes nodes x $ppn, $map); ${cfg[*]}" >&2
    exec timeout "$tmo" smpirun -np "$np" -platform "$pf" -hostfile "$hosts" "${cfg[@]}" "$@"
    ;;
  *)
    sed -n '2,13p' "$0"; exit 2 ;;
esac
