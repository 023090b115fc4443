#!/usr/bin/env bash
# Installs what sparsecomm needs from Debian's packages, only what is missing.
# Idempotent and quick when everything is present. Needs root (or sudo) to install.
set -euo pipefail

packages=(
  build-essential cmake pkg-config git
  libopenmpi-dev openmpi-bin            # MPI: Open MPI, Debian's default
  mpich libmpich-dev                    # MPICH beside it (SPARSECOMM_MPI=mpich; the default stays Open MPI)
  gfortran                              # Fortran programs under the PMPI layer (tests)
  libeigen3-dev                         # serial reference (tests)
  libgtest-dev libgmock-dev             # GoogleTest
  libbenchmark-dev                      # Google Benchmark
  zlib1g-dev                            # .mtx.gz
  nlohmann-json3-dev                    # the programs' JSON records
  libhypre-dev                          # BoomerAMG hierarchies, Hypre comparisons
  petsc-dev                             # PETSc MatMult adapter
  libpetsc3.18-dev-examples             # PETSc's own tests, run through the SF plugin (scripts/petsc_tests.sh)
  libcombblas-dev                       # CombBLAS BFS anchor (side-by-side benchmark)
  python3-matplotlib                    # plots (Debian's /usr/bin/python3)
  iproute2                              # emulated multi-node cluster (network namespaces)
  libsimgrid-dev simgrid                # SimGrid SMPI: paper-scale simulated runs
  clang libclang-rt-dev                 # libFuzzer + sanitizers for the parser fuzz run (scripts/fuzz.sh)
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all dependencies present"
  exit 0
fi

echo "setup: installing ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
$SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
