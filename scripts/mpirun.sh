#!/usr/bin/env bash
# mpiexec with the flags this kind of machine needs (scripts/mpi_launcher.sh: oversubscription
# on 2 cores, yielding when idle, root allowed), for whichever MPI the build uses:
#   scripts/mpirun.sh -np 4 build/src/apps/sdde_bench/sparsecomm_sdde --regions ppn:2
#   SPARSECOMM_MPI=mpich scripts/mpirun.sh -np 4 build-mpich/...   # MPICH's mpiexec.mpich
#   SPARSECOMM_MPIEXEC=/path/to/mpiexec scripts/mpirun.sh ...      # any other launcher
# `-x VAR=VALUE` (and `-x VAR`) before the program give the ranks an environment variable with
# any launcher: it is Open MPI's own flag, and becomes `-genv VAR VALUE` for MPICH's Hydra.
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
# The launcher's options up to the program (the first word that is neither an option nor the
# value of one); the program's own arguments after it go through untouched.
while [ $# -gt 0 ]; do
  case "$1" in
    -x)
      [ $# -ge 2 ] || { echo "mpirun.sh: -x needs VAR=VALUE or VAR" >&2; exit 2; }
      add_env "$2"; shift 2 ;;
    -np | -n | -c | --np | --host | -host | --hostfile | -hostfile | -f | --map-by | --bind-to | --rank-by | \
      -ppn | --timeout | -wdir | -genvlist | --output-filename)
      args+=("$1" "${2:-}"); shift 2 || shift ;;
    --mca | -mca | -genv | -env) args+=("$1" "${2:-}" "${3:-}"); shift 3 || shift $# ;;
    -*) args+=("$1"); shift ;;
    *) break ;;
  esac
done
args+=("$@")
exec "$mpiexec" "${flags[@]}" "${args[@]}"
