#!/usr/bin/env bash
# A/B of two builds of sparsecomm on the same machine, interleaved: for every case the two
# builds run alternately, ROUNDS times each (A B B A A B ...), so a slow phase of the machine
# hits both. Two benchmarks: the halo exchange inside the SpMV (`sparsecomm spmv --backend
# all`, every backend) and PETSc's MatMult with its scatters and through every backend
# (`sparsecomm_petsc_ksp -bench_only`). table.py prints after/before per case (median over
# the rounds; < 1: the B build is faster).
#   experiments/ab/run.sh BUILD_A BUILD_B [OUT]      e.g. a build of an old commit and build/
# Environment: NP (4), REGIONS (ppn:2), MATRICES (default below), ROUNDS (3), REPS (1000).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
a=$1 b=$2 out=${3:-$root/results/ab}
np=${NP:-4} regions=${REGIONS:-ppn:2} rounds=${ROUNDS:-3} reps=${REPS:-1000}
read -r -a cases <<< "${MATRICES:-AMD/G2_circuit JGD_Trefethen/Trefethen_20000 vanHeukelum/cage11 GHS_psdef/wathen100 gen:rotate:256,256}"
export SPARSECOMM_DATA=${SPARSECOMM_DATA:-$root/../shared/data/suitesparse}
mkdir -p "$out"
rm -f "$out"/*.jsonl
run_one() {  # label build case round
  local label=$1 build=$2 c=$3 r=$4 input=(--matrix "$3") pin=(-matrix "$3")
  [[ $c == gen:* ]] && input=(--gen "${c#gen:}") pin=(-gen "${c#gen:}")
  "$root/scripts/mpirun.sh" -np "$np" "$build/src/apps/cli/sparsecomm" spmv "${input[@]}" --regions "$regions" \
    --backend all --reps "$reps" --json "$out/spmv.$label.jsonl" > "$out/spmv.$label.$r.log" 2>&1
  if [ -x "$build/src/apps/petsc_ksp/sparsecomm_petsc_ksp" ]; then
    "$root/scripts/mpirun.sh" -np "$np" "$build/src/apps/petsc_ksp/sparsecomm_petsc_ksp" "${pin[@]}" -bench_only \
      -bench "$reps" -sparsecomm_regions "$regions" -bench_json "$out/petsc.$label.jsonl" -bench_label "$label" \
      > "$out/petsc.$label.$r.log" 2>&1
  fi
}
t0=$(date +%s)
for c in "${cases[@]}"; do
  for ((r = 0; r < rounds; ++r)); do
    if (( r % 2 == 0 )); then run_one A "$a" "$c" $r; run_one B "$b" "$c" $r
    else run_one B "$b" "$c" $r; run_one A "$a" "$c" $r; fi
  done
  echo "ab: $c done ($(( $(date +%s) - t0 )) s)" >&2
done
python3 "$here/table.py" "$out"
