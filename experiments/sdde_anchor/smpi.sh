#!/usr/bin/env bash
# Issue 69's peer comparison in simulation: bench.c under SimGrid SMPI against sparsecomm
# (scripts/smpi.sh's build, SPARSECOMM_SMPI=ON) and against MPI Advance compiled with
# smpicc/smpicxx in a scratch folder outside this repository ($WORK), on the shared
# platforms. MPI Advance's MPI_Ibarrier (its NBX) goes to a dissemination barrier of this
# harness (smpi/ibarrier_shim.h, force-included into its sources): SMPI 3.32's is not a
# barrier. Communication only is simulated (smpi/simulate-computation:no): every number
# is a deterministic model time.
#
#   experiments/sdde_anchor/smpi.sh build            # both benchmarks (MPI Advance if MA_SRC is given)
#   experiments/sdde_anchor/smpi.sh run              # the runs below, results in $OUT
#   experiments/sdde_anchor/smpi.sh one LIB NP PLATFORM INPUT   # one run to stdout (LIB: sparsecomm|mpi_advance)
#   experiments/sdde_anchor/smpi.sh check-shim       # the harness's MPI_Exscan against SMPI's, 1-64 ranks
#
# Environment: MA_SRC (an unpacked MPI Advance source tree; default /tmp/ma-src), WORK
# (/tmp/ma-smpi), BUILD (build-smpi), OUT (results/sdde_anchor_smpi), NPS ("256 1024"),
# PLATFORMS ("quartz_fattree gpc_fattree"), INPUTS (below), REPS (10), LIBS (both),
# PPN (the node size: 32 on quartz, 8 on gpc; the locality-aware algorithms' regions).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${BUILD:-$root/build-smpi}
work=${WORK:-/tmp/ma-smpi}
out=${OUT:-$root/results/sdde_anchor_smpi}
ma_src=${MA_SRC:-/tmp/ma-src}
data=${SPARSECOMM_DATA:-$root/../shared/data/suitesparse}
reps=${REPS:-10}

build_sparsecomm() {
  JOBS=1 nice "$root/scripts/smpi.sh" build "$build" sparsecomm_c > /dev/null
  mkdir -p "$work"
  smpicc -O2 -std=gnu11 -DUSE_SPARSECOMM -c -o "$work/bench_sc.o" "$here/bench.c" -I"$root/include"
  smpicxx -o "$work/bench_sparsecomm" "$work/bench_sc.o" "$build/src/capi/libsparsecomm_c.a" "$build/libsparsecomm.a" -lz
}

build_mpi_advance() {
  [ -f "$ma_src/include/locality_aware.h" ] || { echo "smpi.sh: no MPI Advance source at $ma_src (MA_SRC)" >&2; return 77; }
  mkdir -p "$work/ma"
  local inc=(-I"$ma_src/include" -I"$ma_src/library/include") objs=() f o
  # Its CPU sources (no GPU, tests or benchmarks), each with the harness barrier force-included.
  while IFS= read -r f; do
    o=$work/ma/$(echo "${f#"$ma_src"/library/}" | tr / _).o
    objs+=("$o")
    [ "$o" -nt "$f" ] && [ "$o" -nt "$here/smpi/ibarrier_shim.h" ] && continue
    case "$f" in
      *.c) nice smpicc -O2 -std=gnu11 -include "$here/smpi/ibarrier_shim.h" "${inc[@]}" -c "$f" -o "$o" ;;
      *) nice smpicxx -O2 -std=gnu++14 -include "$here/smpi/ibarrier_shim.h" "${inc[@]}" -c "$f" -o "$o" ;;
    esac
  done < <(find "$ma_src/library/bindings" "$ma_src/library/source" \( -name '*.c' -o -name '*.cpp' \) \
             -not -path '*/tests/*' -not -path '*/heterogeneous/*' | sort)
  smpicc -O2 -std=gnu11 -c -o "$work/ibarrier_shim.o" "$here/smpi/ibarrier_shim.c" -I"$here/smpi"
  rm -f "$work/liblocality_aware.a"
  ar rcs "$work/liblocality_aware.a" "${objs[@]}" "$work/ibarrier_shim.o"
  smpicc -O2 -std=gnu11 -c -o "$work/bench_ma.o" "$here/bench.c" -I"$ma_src/include"
  smpicxx -o "$work/bench_mpi_advance" "$work/bench_ma.o" "$work/liblocality_aware.a"
}

# one LIB NP PLATFORM INPUT: INPUT a SuiteSparse name or gen:KIND:B.
one() {
  local lib=$1 np=$2 platform=$3 input=$4 ppn arg
  case "$platform" in quartz_fattree) ppn=32 ;; *) ppn=8 ;; esac
  ppn=${PPN:-$ppn}
  case "$input" in gen:*) arg=$input ;; *) arg=$data/$input.mtx ;; esac
  SMPI_QUIET=${SMPI_QUIET:-} nice "$root/scripts/smpi.sh" run "$np" --platform "$platform" --ppn "$ppn" \
    --timeout "${SMPI_TIMEOUT:-3600}" -- "$work/bench_$lib" "$arg" "$ppn" "$reps"
}

cmd=${1:-}; shift || true
case "$cmd" in
  build)
    build_sparsecomm
    build_mpi_advance || echo "smpi.sh: MPI Advance not built; only sparsecomm's benchmark" >&2
    ;;
  one) one "$@" ;;
  check-shim)
    mkdir -p "$work"
    smpicc -O2 -std=gnu11 -o "$work/test_exscan_shim" "$here/smpi/test_exscan_shim.c" "$here/smpi/ibarrier_shim.c" -I"$here/smpi"
    for np in 1 2 3 13 64; do
      SMPI_QUIET=1 "$root/scripts/smpi.sh" run "$np" --timeout 120 -- "$work/test_exscan_shim" 2>/dev/null | grep "^exscan shim" || exit 1
    done
    ;;
  run)
    read -r -a nps <<< "${NPS:-256 1024}"
    read -r -a platforms <<< "${PLATFORMS:-quartz_fattree gpc_fattree}"
    read -r -a inputs <<< "${INPUTS:-gen:lap3d27:16 gen:rotate2d:64 AMD_G2_circuit DIMACS10_delaunay_n16}"
    read -r -a libs <<< "${LIBS:-sparsecomm mpi_advance}"
    mkdir -p "$out"
    for np in "${nps[@]}"; do
      for pf in "${platforms[@]}"; do
        for in in "${inputs[@]}"; do
          for lib in "${libs[@]}"; do
            t0=$(date +%s)
            if one "$lib" "$np" "$pf" "$in" 2>> "$out/stderr.log" | sed "s/^/$pf /" >> "$out/results.txt"; then :; else
              echo "smpi.sh: $lib $in at $np on $pf failed" | tee -a "$out/stderr.log"
            fi
            echo "smpi.sh: $lib $in $np $pf: $(( $(date +%s) - t0 )) s host" | tee -a "$out/host_times.txt"
          done
        done
      done
    done
    /usr/bin/python3 "$here/table.py" --smpi "$out/results.txt" | tee "$out/table.txt"
    ;;
  *) sed -n 2,19p "$0"; exit 2 ;;
esac
