#!/usr/bin/env bash
# mpiexec with the flags this kind of machine needs (scripts/mpi_launcher.sh: oversubscription
# on 2 cores, yielding when idle, root allowed), for whichever MPI the build uses:
#   scripts/mpirun.sh -np 4 build/src/apps/sdde_bench/sparsecomm_sdde --regions ppn:2
#   SPARSECOMM_MPI=mpich scripts/mpirun.sh -np 4 build-mpich/...   # MPICH's mpiexec.mpich
#   SPARSECOMM_MPIEXEC=/path/to/mpiexec scripts/mpirun.sh ...      # any other launcher
# `-x VAR=VALUE` (and `-x VAR`) give the ranks an environment variable with any launcher: it
# is Open MPI's own flag, and becomes `-genv VAR VALUE` for MPICH's Hydra.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=scripts/mpi_launcher.sh
source "$here/mpi_launcher.sh"

if [ -n "${SPARSECOMM_MPIEXEC:-}" ]; then
  mpiexec=$SPARSECOMM_MPIEXEC
elif [ "${SPARSECOMM_MPI:-}" = mpich ]; then
  mpiexec=mpiexec.mpich
else
  mpiexec=mpiexec
fi

flags=() env_flag=-x
rank_env=()
while IFS= read -r line; do
  case "$line" in
    flag=*) flags+=("${line#flag=}") ;;
    env_flag=*) env_flag=${line#env_flag=} ;;
    rank_env=*) rank_env+=("${line#rank_env=}") ;;
  esac
done < <(mpi_launcher_describe "$mpiexec")

# The environment the ranks need (rank_env), then the caller's -x, in the launcher's syntax.
args=()
add_env() {  # add_env VAR=VALUE | VAR
  local kv=$1
  if [ "$env_flag" = -x ]; then
    args+=(-x "$kv")
  elif [[ "$kv" == *=* ]]; then
    args+=("$env_flag" "${kv%%=*}" "${kv#*=}")
  else
    args+=("$env_flag" "$kv" "${!kv-}")
  fi
}
for kv in "${rank_env[@]}"; do add_env "$kv"; done
while [ $# -gt 0 ]; do
  case "$1" in
    -x) add_env "$2"; shift 2 ;;
    *) args+=("$1"); shift ;;
  esac
done
exec "$mpiexec" "${flags[@]}" "${args[@]}"
