#!/usr/bin/env bash
# The main job: installs what is missing, builds, then compares the SDDE strategies on a
# real SuiteSparse matrix (default: the largest one on the data search path; a generated
# rotated anisotropic diffusion problem when none is found) on 4 ranks with emulated
# regions of 2 ranks, and prints the table. JSON lines go to results/sdde.jsonl.
#   ./scripts/run.sh                                   # defaults
#   NP=8 ./scripts/run.sh --regions ppn:4 --matrix HB/bcsstk13
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
./scripts/build.sh > /dev/null
mkdir -p results
args=("$@")
has_regions=0
for a in "${args[@]}"; do [[ "$a" == --regions* ]] && has_regions=1; done
[ $has_regions -eq 1 ] || args+=(--regions ppn:2)
exec ./scripts/mpirun.sh -np "${NP:-4}" "${BUILD_DIR:-build}/src/apps/cli/sparsecomm" sdde \
  --json results/sdde.jsonl "${args[@]}"
