#!/usr/bin/env bash
# MPI Advance's own tests of the operations sparsecomm's compatibility layer provides
# (include/mpi_advance_compat.h), compiled unchanged against it and linked with sparsecomm's
# C API, each run and judged by its own checks (it aborts on a wrong value).
#   tests/peers/mpi_advance.sh MPI_ADVANCE_SRC BUILD_DIR [NP]
# MPI_ADVANCE_SRC: a checkout of github.com/mpi-advance/locality_aware (never part of this
# repository); BUILD_DIR: a sparsecomm build (its mpitest.json names the launcher, its
# CMakeCache.txt the MPI C++ compiler). The tests include "locality_aware.h" and MPI Advance's
# test helpers (library/tests/tests/); a one-line locality_aware.h written into the scratch
# folder includes our header instead. They read their matrices as ../../../test_data/*.pm, so
# they run three folders below a scratch folder whose test_data is MPI Advance's.
# Exit: 0 every test passed, 1 one failed, 77 MPI_ADVANCE_SRC is not such a checkout (skipped).
set -uo pipefail
src=${1:-} build=${2:-} np=${3:-4}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
if [ -z "$src" ] || [ ! -f "$src/library/tests/tests/common.hpp" ] || [ ! -d "$src/test_data" ]; then
  echo "mpi_advance.sh: SKIP: '$src' is not an MPI Advance checkout (library/tests/tests/common.hpp, test_data/)"
  exit 77
fi
build=$(cd "$build" && pwd) || exit 2
cxx=$(sed -n 's/^MPI_CXX_COMPILER:[A-Z]*=//p' "$build/CMakeCache.txt")
[ -n "$cxx" ] || cxx=mpicxx
work=$(mktemp -d /tmp/spc_mpi_advance.XXXXXX)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/include" "$work/run/a/b/c"
ln -s "$src/test_data" "$work/run/test_data"
echo '#include "mpi_advance_compat.h"' > "$work/include/locality_aware.h"

# Within the compatibility layer's scope: the neighborhood alltoallv (blocking, persistent,
# with a topology, with global indices, both directions) and the CRS exchanges. Outside it
# (MPI Advance's dense collectives, see the header): test_alltoall*, test_alltoallv*,
# test_suitesparse_alltoallv, alltoall_c.c.
tests=(test_neighbor_alltoallv_init test_neighbor_topo_alltoallv_init test_neighbor_reorder
       test_suitesparse_neighbor_alltoallv test_suitesparse_neighbor_alltoallv_enum
       test_suitesparse_neighbor_alltoallv_init test_suitesparse_neighbor_alltoallv_init_bidirectional
       test_suitesparse_neighbor_topo_alltoallv_init test_suitesparse_neighbor_reorder
       test_suitesparse_alltoall_crs test_suitesparse_alltoallv_crs)
failed=0 passed=0
for t in "${tests[@]}"; do
  if ! "$cxx" -std=c++17 -O1 -w -I"$work/include" -I"$root/include" -I"$src/library/tests" \
      -I"$src/library/tests/tests" "$src/library/tests/$t.cpp" -o "$work/$t" \
      -L"$build/src/capi" -L"$build" -lsparsecomm_c -lsparsecomm -Wl,-rpath,"$build/src/capi:$build" \
      > "$work/$t.build.log" 2>&1; then
    echo "mpi_advance.sh: $t: FAILED to compile:"
    head -20 "$work/$t.build.log"
    failed=$((failed + 1))
    continue
  fi
  if (cd "$work/run/a/b/c" && "${PYTHON:-python3}" "$root/tests/driver/mpitest.py" --config "$build/mpitest.json" \
        --np "$np" --timeout 240 -- "$work/$t") > "$work/$t.log" 2>&1; then
    echo "mpi_advance.sh: $t at $np ranks: passed"
    passed=$((passed + 1))
  else
    echo "mpi_advance.sh: $t at $np ranks: FAILED"
    tail -40 "$work/$t.log"
    failed=$((failed + 1))
  fi
done
echo "mpi_advance.sh: ${#tests[@]} of MPI Advance's tests, $passed passed, $failed failed"
[ "$failed" -eq 0 ]
