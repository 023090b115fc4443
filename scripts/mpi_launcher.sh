#!/usr/bin/env bash
# The one place that knows each MPI implementation's launcher: which one an mpiexec is, and
# the flags this kind of machine needs from it (2 cores, so every multi-rank run is
# oversubscribed; CI runs as root). scripts/mpirun.sh sources it for users' runs, and CMake
# runs it once at configure time (cmake/SparsecommTesting.cmake) for the tests' launcher.
#
#   scripts/mpi_launcher.sh describe [MPIEXEC]   # key=value lines, one per line:
#     vendor=openmpi|hydra|unknown
#     flag=<one argument the launcher needs before the program> (repeated, in order)
#     env=<VAR=VALUE the launcher's own environment needs> (repeated)
#     rank_env=<VAR=VALUE every rank's program needs> (repeated)
#     timeout_flag=<flag taking seconds>   or   timeout_env=<variable taking seconds>
#     env_flag=<the launcher's flag that gives ranks VAR=VALUE>: -x (Open MPI) or -genv (Hydra)
#     yield=flag|none: whether the flags above make an idle rank give up its core (none: the
#       tests preload tests/driver/yield_when_idle.c where the MPI progresses through UCX)
#     session_dir_env=<variable naming the launcher's session directory>, where two launchers
#       started in the same instant race on one default directory (the tests give each its own)
#
# Open MPI: --oversubscribe (refuses more ranks than cores otherwise), yielding when idle
# (oversubscribed ranks busy-wait otherwise), --allow-run-as-root as root, --timeout.
# MPICH's Hydra (MPICH, Intel MPI, MVAPICH): oversubscribes and runs as root without being
# told, takes its time limit from MPIEXEC_TIMEOUT; MPIR_CVAR_POLLS_BEFORE_YIELD=1 asks its
# progress loop to yield the core between polls where the device honours it (ch3; ch4 has no
# such setting: the tests preload tests/driver/yield_when_idle.c for its UCX device).

# mpi_launcher_vendor MPIEXEC: openmpi, hydra or unknown, from the launcher's --version.
mpi_launcher_vendor() {
  local text
  text=$("$1" --version 2>&1 || true)
  case "$text" in
    *"Open MPI"* | *OpenRTE* | *"Open RTE"*) echo openmpi ;;
    *HYDRA* | *Hydra* | *"Intel(R) MPI"*) echo hydra ;;
    *) echo unknown ;;
  esac
}

mpi_launcher_describe() {
  local mpiexec=$1 vendor
  vendor=$(mpi_launcher_vendor "$mpiexec")
  echo "vendor=$vendor"
  case "$vendor" in
    openmpi)
      echo "flag=--oversubscribe"
      echo "flag=--mca"
      echo "flag=mpi_yield_when_idle"
      echo "flag=1"
      echo "yield=flag"
      if [ "$(id -u)" -eq 0 ]; then echo "flag=--allow-run-as-root"; fi
      echo "timeout_flag=--timeout"
      echo "env_flag=-x"
      # two mpiexec started in the same instant by ctest -j race on mkdir of the shared
      # /tmp/ompi.<host>.<uid> ("File exists", orte_init fails)
      echo "session_dir_env=OMPI_MCA_orte_tmpdir_base"
      ;;
    hydra)
      echo "rank_env=MPIR_CVAR_POLLS_BEFORE_YIELD=1"  # (honoured by MPICH's ch3 device only)
      echo "yield=none"
      echo "timeout_env=MPIEXEC_TIMEOUT"
      echo "env_flag=-genv"
      ;;
  esac
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  set -euo pipefail
  case "${1:-}" in
    describe) mpi_launcher_describe "${2:-${SPARSECOMM_MPIEXEC:-mpiexec}}" ;;
    *) echo "usage: $0 describe [MPIEXEC]" >&2; exit 2 ;;
  esac
fi
