#!/usr/bin/env bash
# The main job: installs what is missing, builds, then on a real SuiteSparse matrix
# (default: the largest one on the data search path; a generated rotated anisotropic
# diffusion problem when none is found), on 4 ranks with emulated regions of 2 ranks:
#  1. compares the SDDE strategies (pattern discovery), and
#  2. compares the SpMV through every backend and auto with PETSc's MatMult (its scatters
#     -sf_type basic and neighbor, and with the exchange through sparsecomm) and Hypre's
#     matvec on the same matrix and rows (`sparsecomm compare`): each verified, timed in
#     interleaved rounds, one table with median, spread and the speedup over PETSc's
#     default (higher is better);
# printing both tables. JSON lines go to results/sdde.jsonl and results/compare.jsonl.
#   ./scripts/run.sh                                   # defaults
#   NP=8 ./scripts/run.sh --regions ppn:4 --matrix HB/bcsstk13
# Every argument goes to the SDDE comparison; --matrix, --gen, --ordering and --regions
# also to the SpMV.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
./scripts/build.sh > /dev/null
mkdir -p results
args=("$@")
has_regions=0
for a in "${args[@]}"; do [[ "$a" == --regions* ]] && has_regions=1; done
[ $has_regions -eq 1 ] || args+=(--regions ppn:2)
# The options the SpMV shares with the SDDE comparison (as --name value or --name=value).
shared=()
for ((i = 0; i < ${#args[@]}; ++i)); do
  case "${args[i]}" in
    --matrix=* | --gen=* | --ordering=* | --regions=*) shared+=("${args[i]}") ;;
    --matrix | --gen | --ordering | --regions) shared+=("${args[i]}" "${args[i + 1]:-}"); i=$((i + 1)) ;;
  esac
done
cli=${BUILD_DIR:-build}/src/apps/cli/sparsecomm
./scripts/mpirun.sh -np "${NP:-4}" "$cli" sdde --json results/sdde.jsonl "${args[@]}"
echo
exec ./scripts/mpirun.sh -np "${NP:-4}" "$cli" compare --json results/compare.jsonl "${shared[@]}"
