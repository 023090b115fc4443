#!/usr/bin/env bash
# Configures and builds sparsecomm (Release) with -j2: into ./build with the system's default
# MPI (Debian's: Open MPI), or, with SPARSECOMM_MPI=mpich, into ./build-mpich with Debian's
# MPICH (mpicc.mpich, mpicxx.mpich, mpiexec.mpich; PETSc, Hypre and CombBLAS, built against
# Open MPI, are then skipped with the reason in CMake's output).
#   scripts/build.sh [cmake options]
#   SPARSECOMM_MPI=mpich scripts/build.sh
set -euo pipefail
cd "$(dirname "$0")/.."
mpi=()
case "${SPARSECOMM_MPI:-}" in
  "" | default) BUILD_DIR=${BUILD_DIR:-build} ;;
  mpich)
    BUILD_DIR=${BUILD_DIR:-build-mpich}
    for tool in mpicc.mpich mpicxx.mpich mpiexec.mpich; do
      command -v $tool > /dev/null || { echo "build.sh: $tool not found (scripts/setup.sh installs mpich)" >&2; exit 1; }
    done
    mpi=(-DMPI_C_COMPILER=mpicc.mpich -DMPI_CXX_COMPILER=mpicxx.mpich -DMPIEXEC_EXECUTABLE="$(command -v mpiexec.mpich)")
    if command -v mpif90.mpich > /dev/null; then mpi+=(-DMPI_Fortran_COMPILER=mpif90.mpich); fi
    ;;
  openmpi)
    BUILD_DIR=${BUILD_DIR:-build-openmpi}
    mpi=(-DMPI_C_COMPILER=mpicc.openmpi -DMPI_CXX_COMPILER=mpicxx.openmpi
         -DMPIEXEC_EXECUTABLE="$(command -v mpiexec.openmpi)")
    ;;
  *) echo "build.sh: SPARSECOMM_MPI must be mpich or openmpi (or unset: the default MPI)" >&2; exit 2 ;;
esac
cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=${BUILD_TYPE:-Release} "${mpi[@]}" "$@"
cmake --build "$BUILD_DIR" -j "${JOBS:-2}"
