#!/usr/bin/env bash
# mpirun with the flags this kind of machine needs: oversubscription (2 cores), yielding
# when idle (oversubscribed ranks busy-wait otherwise), and root allowed (CI runs as root).
#   scripts/mpirun.sh -np 4 build/src/apps/sdde_bench/sparsecomm_sdde --regions ppn:2
set -euo pipefail
extra=(--oversubscribe --mca mpi_yield_when_idle 1)
if [ "$(id -u)" -eq 0 ]; then extra+=(--allow-run-as-root); fi
exec mpirun "${extra[@]}" "$@"
