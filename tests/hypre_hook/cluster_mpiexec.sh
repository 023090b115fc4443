#!/usr/bin/env bash
# mpiexec-shaped front of the emulated cluster for tests/hypre_hook/compare.py:
#   cluster_mpiexec.sh NODES PPN -np N [-x VAR=VALUE ...] program [args...]
# runs `scripts/cluster.sh run NODES PPN --rate 1gbit -- program args` with the -x options
# handed to its mpirun (CLUSTER_MPIRUN_ARGS). -np must equal NODES * PPN.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
nodes=$1 ppn=$2
shift 2
[ "$1" = -np ] || { echo "cluster_mpiexec.sh: expected -np" >&2; exit 2; }
[ "$2" = $((nodes * ppn)) ] || { echo "cluster_mpiexec.sh: -np $2 is not $nodes x $ppn" >&2; exit 2; }
shift 2
extra=()
while [ "${1:-}" = -x ]; do extra+=(-x "$2"); shift 2; done
CLUSTER_MPIRUN_ARGS="${extra[*]:-}" exec "$here/../../scripts/cluster.sh" run "$nodes" "$ppn" --rate 1gbit -- "$@"
