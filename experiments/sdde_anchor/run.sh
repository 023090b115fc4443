#!/usr/bin/env bash
# Issue 34's anchor: sparsecomm's SDDE and persistent set-up against MPI Advance's, one
# benchmark source (bench.c) compiled against each library. MPI Advance
# (github.com/mpi-advance/locality_aware) is fetched and built under $WORK (never part of
# this repository); sparsecomm is the build in $BUILD. For every matrix and rank count both
# binaries run back to back, ROUNDS times alternately; table.py prints the medians side
# by side with sparsecomm / MPI Advance per algorithm (< 1: sparsecomm is faster).
#
#   experiments/sdde_anchor/run.sh          (results in results/sdde_anchor/)
#
# Environment: BUILD (build), OUT (results/sdde_anchor), WORK (/tmp/mpi_advance), NPS ("8 16"),
# SPARSECOMM_ENV ("NAME=value ..." set for sparsecomm's ranks only, e.g. its SDDE settings),
# PPN (4), REPS (50), ROUNDS (2), MATRICES (below), MPI_ADVANCE_SRC (an unpacked source tree
# instead of cloning), CLUSTER ("NODES RATE", e.g. "4 1000mbit": every run on the emulated
# cluster of scripts/cluster.sh with PPN ranks per node, root only; NPS is then NODES x PPN).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${BUILD:-$root/build}
out=${OUT:-$root/results/sdde_anchor}
work=${WORK:-/tmp/mpi_advance}
nps=${NPS:-"8 16"}
ppn=${PPN:-4}
reps=${REPS:-50}
rounds=${ROUNDS:-2}
data=${SPARSECOMM_DATA:-$root/../shared/data/suitesparse}
read -r -a matrices <<< "${MATRICES:-vanHeukelum_cage11 GHS_psdef_wathen100 HB_bcsstk18 AMD_G2_circuit DIMACS10_delaunay_n16 Oberwolfach_gyro_m JGD_Trefethen_Trefethen_20000 Pothen_bodyy5}"
launch=("$root/scripts/mpirun.sh")
if [ -n "${CLUSTER:-}" ]; then
  read -r cnodes crate <<< "$CLUSTER"
  nps=$((cnodes * ppn))
  launch=("$root/scripts/cluster.sh" run "$cnodes" "$ppn" --rate "${crate:-1000mbit}" --)
fi
mkdir -p "$out" "$work"

# MPI Advance: its own CMake build, CPU only, no tests or benchmarks.
src=${MPI_ADVANCE_SRC:-$work/src}
if [ ! -f "$src/CMakeLists.txt" ]; then
  git clone --depth 1 https://github.com/mpi-advance/locality_aware.git "$src"
fi
if [ ! -f "$work/build/liblocality_aware.a" ]; then
  cmake -S "$src" -B "$work/build" -DCMAKE_BUILD_TYPE=Release -DENABLE_UNIT_TESTS=OFF -DBENCHMARKS=OFF \
    > "$out/mpi_advance_configure.log"
  cmake --build "$work/build" -j "${JOBS:-2}" > "$out/mpi_advance_build.log"
fi
# The same source twice. MPI Advance uses MPI's C++ bindings: link with mpicxx.
flags=(-O2 -std=c11 -Wno-stringop-overread)
mpicc "${flags[@]}" -c -o "$work/bench_ma.o" "$here/bench.c" -I"$src/include"
mpicxx -o "$work/bench_mpi_advance" "$work/bench_ma.o" -L"$work/build" -llocality_aware
[ -f "$build/src/capi/libsparsecomm_c.so" ] || cmake --build "$build" -j "${JOBS:-2}" --target sparsecomm_c
mpicc "${flags[@]}" -DUSE_SPARSECOMM -o "$work/bench_sparsecomm" "$here/bench.c" -I"$root/include" \
  -L"$build/src/capi" -lsparsecomm_c -Wl,-rpath,"$build/src/capi:$build"

results=$out/results.txt
: > "$results"
t0=$(date +%s)
for np in $nps; do
  for m in "${matrices[@]}"; do
    for r in $(seq "$rounds"); do
      order=(bench_mpi_advance bench_sparsecomm)
      [ $((r % 2)) = 0 ] && order=(bench_sparsecomm bench_mpi_advance)
      for b in "${order[@]}"; do
        np_args=(-np "$np")
        [ -n "${CLUSTER:-}" ] && np_args=()
        prog=("$work/$b")
        # shellcheck disable=SC2206  # SPARSECOMM_ENV: words "NAME=value" for sparsecomm's ranks
        [ "$b" = bench_sparsecomm ] && [ -n "${SPARSECOMM_ENV:-}" ] && prog=(env $SPARSECOMM_ENV "$work/$b")
        timeout 900 "${launch[@]}" "${np_args[@]}" "${prog[@]}" "$data/$m.mtx" "$ppn" "$reps" >> "$results" \
          2>> "$out/stderr.log" || echo "run.sh: $b on $m at $np ranks failed" | tee -a "$out/stderr.log"
      done
    done
    echo "run.sh: $m at $np ranks done ($(( $(date +%s) - t0 )) s)"
  done
done
/usr/bin/python3 "$here/table.py" "$results" | tee "$out/table.txt"
