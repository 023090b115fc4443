#!/usr/bin/env bash
# The main job: installs what is missing, builds, then on a real SuiteSparse matrix
# (default: the largest one on the data search path; a generated rotated anisotropic
# diffusion problem when none is found), on 4 ranks with emulated regions of 2 ranks:
#  1. compares the SDDE strategies (pattern discovery), and
#  2. runs the SpMV with every backend (and auto), each verified against a serial
#     reference, with its time, its ratio to p2p and its inter-region messages;
# printing both tables. JSON lines go to results/sdde.jsonl and results/spmv.jsonl.
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
exec ./scripts/mpirun.sh -np "${NP:-4}" "$cli" spmv --backend all --json results/spmv.jsonl "${shared[@]}"
