#!/usr/bin/env bash
# The out-of-tree consumers of examples/ against an INSTALLED sparsecomm, as a user would
# build them: installs the build tree into a temporary prefix, then configures and builds
#   examples/cpp_spmv   with find_package(sparsecomm)
#   examples/c_halo     with cc and pkg-config --cflags --libs sparsecomm_c
#   examples/petsc_ksp  with find_package(sparsecomm COMPONENTS petsc) (when PETSc is there)
#   examples/petsc_plugin  with PETSc's flags only (it knows nothing of sparsecomm), run with
#                       -sf_type basic and with the installed plugin (-dll_append
#                       $prefix/lib/libsparsecomm_petsc.so -sf_type sparsecomm): same iterations
#   examples/hypre_amg  with Hypre's flags only, run without and with LD_PRELOAD of the
#                       installed libsparsecomm_hypre_hook.so: same iterations and residual
# and runs each at 1 and 4 ranks. Exits non-zero on any failure.
#   scripts/examples.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
build=${1:-${BUILD_DIR:-build}}
work=$(mktemp -d /tmp/sparsecomm_examples.XXXXXX)
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix
echo "examples: installing $build into $prefix"
cmake --install "$build" --prefix "$prefix" > "$work/install.log"
export PKG_CONFIG_PATH=$prefix/lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}
run() {  # ranks program...
  local np=$1
  shift
  "$root/scripts/mpirun.sh" -np "$np" "$@"
}
failed=0
check() {  # name command...
  local name=$1
  shift
  if "$@" > "$work/$name.log" 2>&1; then
    grep -h "verified" "$work/$name.log" | head -1
  else
    echo "examples: $name FAILED:"
    cat "$work/$name.log"
    failed=1
  fi
}
for ex in cpp_spmv petsc_ksp; do
  if [ $ex = petsc_ksp ] && ! pkg-config --exists PETSc; then
    echo "examples: petsc_ksp skipped (PETSc not installed)"
    continue
  fi
  if [ $ex = petsc_ksp ] && [ ! -f "$prefix/lib/cmake/sparsecomm/sparsecommPetscTargets.cmake" ]; then
    echo "examples: petsc_ksp skipped (sparsecomm was built without PETSc)"
    continue
  fi
  cmake -S "examples/$ex" -B "$work/$ex" -DCMAKE_PREFIX_PATH="$prefix" > "$work/$ex.configure.log" 2>&1 ||
    { echo "examples: configuring $ex against the installed package FAILED:"; cat "$work/$ex.configure.log"; exit 1; }
  cmake --build "$work/$ex" -j "${JOBS:-2}" > "$work/$ex.build.log" 2>&1 ||
    { echo "examples: building $ex FAILED:"; cat "$work/$ex.build.log"; exit 1; }
done
# C: plain cc, every flag from pkg-config (Open MPI's own .pc files behind it).
cc -std=c99 -Wall examples/c_halo/halo.c $(pkg-config --cflags --libs sparsecomm_c) \
  -Wl,-rpath,"$prefix/lib" -o "$work/c_halo" ||
  { echo "examples: building c_halo with pkg-config FAILED"; exit 1; }
for np in 1 4; do
  check "cpp_spmv.np$np" run $np "$work/cpp_spmv/spmv_own_csr"
  check "c_halo.np$np" run $np "$work/c_halo" aggregated_dedup
  if [ -x "$work/petsc_ksp/petsc_ksp" ]; then
    check "petsc_ksp.np$np" run $np "$work/petsc_ksp/petsc_ksp" -sparsecomm_backend aggregated_dedup
  fi
done
# An unmodified program run as it is and through an installed interposition library:
#   same_result LABEL NP KEY PROOF DESC PROGRAM-AS-IS... -- PROGRAM-THROUGH-SPARSECOMM...
# KEY is a sed expression printing the result (it must be equal in both runs), PROOF a
# pattern the second run's output must show (it did go through sparsecomm).
same_result() {
  local label=$1 np=$2 key=$3 proof=$4 desc=$5 ref_cmd=() ref got k_ref k_got
  shift 5
  while [ "$1" != "--" ]; do ref_cmd+=("$1"); shift; done
  shift
  ref=$(run "$np" "${ref_cmd[@]}" 2>&1) || { echo "$ref"; failed=1; return; }
  got=$(run "$np" "$@" 2>&1) || { echo "$got"; failed=1; return; }
  k_ref=$(echo "$ref" | sed -n "$key")
  k_got=$(echo "$got" | sed -n "$key")
  if [ -n "$k_ref" ] && [ "$k_ref" = "$k_got" ] && echo "$got" | grep -q "$proof"; then
    echo "$label np $np: $k_got $desc, verified"
  else
    echo "examples: $label np $np FAILED:"; echo "$ref"; echo "$got"; failed=1
  fi
}
# PETSc with no source change, through the INSTALLED plugin.
if pkg-config --exists PETSc && [ -f "$prefix/lib/libsparsecomm_petsc.so" ]; then
  mpicc -Wall examples/petsc_plugin/poisson.c $(pkg-config --cflags --libs PETSc) -o "$work/poisson" ||
    { echo "examples: building petsc_plugin FAILED"; exit 1; }
  for np in 1 4; do
    same_result petsc_plugin $np 's/^poisson: \([0-9]*\) CG.*/\1/p' "scatters of type sparsecomm" \
      "CG iterations with -sf_type basic and through the installed plugin" \
      "$work/poisson" -sf_type basic -- \
      "$work/poisson" -dll_append "$prefix/lib/libsparsecomm_petsc.so" -sf_type sparsecomm
  done
fi
# Hypre with no source change, through the INSTALLED hook.
if [ -f /usr/include/hypre/HYPRE.h ] && [ -f "$prefix/lib/libsparsecomm_hypre_hook.so" ]; then
  mpicc -O2 -Wall -I/usr/include/hypre examples/hypre_amg/amg_solve.c -lHYPRE -lm -o "$work/amg_solve" ||
    { echo "examples: building hypre_amg FAILED"; exit 1; }
  for np in 1 4; do
    same_result hypre_amg $np 's/.*\(iterations [0-9]* final relative residual [^ ]*\).*/\1/p' \
      "exchanges through sparsecomm: [1-9]" "with Hypre's exchange and through the installed hook" \
      "$work/amg_solve" -n 64 -- \
      -x LD_PRELOAD="$prefix/lib/libsparsecomm_hypre_hook.so" -x SPARSECOMM_HYPRE_VERBOSE=1 "$work/amg_solve" -n 64
  done
fi
"$prefix/bin/sparsecomm" --version
[ $failed = 0 ] && echo "examples: every example built against the installed tree and verified" || exit 1
