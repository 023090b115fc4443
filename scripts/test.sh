#!/usr/bin/env bash
# The test command. Installs what is missing, builds, then runs every phase, each even when an
# earlier one failed, and ends with one summary line per phase; the exit code is non-zero if
# any phase failed. What each phase proves that the others do not:
#   ctest (Open MPI)  the whole suite (every MPI test at several rank counts, each with a
#                     timeout, judged rank by rank): the library, every backend, the C API,
#                     the CLI and programs, and the interposition layers (PETSc SF type,
#                     Hypre hook, PMPI layer) on unmodified programs, with the MPI that PETSc,
#                     Hypre and CombBLAS are built against
#   install+examples  the installed package as a user meets it: cmake --install into a
#                     temporary prefix, examples/ built against it (find_package, pkg-config)
#   sanitizers        memory and undefined-behaviour errors (ASan + UBSan) in everything that
#                     runs in a user's process: the core gtest suites at 1 and 3 ranks, and
#                     the C API, PMPI layer, Hypre hook and PETSc plugin tests through the
#                     sanitized libraries; ThreadSanitizer over the threaded tests
#                     (scripts/sanitize.sh)
#   fuzz              every input boundary on inputs nobody wrote (libFuzzer, 60 s per
#                     target, scripts/fuzz.sh): the Matrix Market parser; option, region,
#                     topology, generator and model-file parsers; the C API's arguments; the
#                     PMPI layer against MPI's own; Hypre comm packages through the hook's
#                     path (one rank, and every rank's at 3); PetscSF graphs through the SF
#                     type against basic (3 ranks); past crashes replayed first
#   SMPI              the library under SimGrid's simulator at simulated scale (64+ ranks):
#                     the schedules and counts of plans too large to run here
#   ctest (MPICH)     the suite again with MPICH (build-mpich): every test that does not need
#                     Debian's Open MPI-built PETSc, Hypre or CombBLAS, on the other MPI family,
#                     at up to 4 ranks (its busy-polling ranks are slow on 2 cores beyond that;
#                     the larger rank counts of the same tests run with Open MPI above)
#   PETSc's tests     PETSc's own sf, vec and dm tests through the SF plugin, against
#                     -sf_type basic (scripts/petsc_tests.sh)
#   ./scripts/test.sh                 # everything
#   ./scripts/test.sh -R sdde         # extra arguments go to ctest (both MPIs; other phases skipped)
set -uo pipefail
cd "$(dirname "$0")/.."

names=() results=() times=()
failed=0
# phase NAME COMMAND...: runs COMMAND, records its result and time.
phase() {
  local name=$1 t0 rc
  shift
  echo "==== test.sh: $name"
  t0=$(date +%s)
  "$@"
  rc=$?
  names+=("$name") times+=($(($(date +%s) - t0)))
  if [ $rc -eq 0 ]; then results+=(passed); else results+=("FAILED (exit $rc)"); failed=1; fi
  echo "==== test.sh: $name: ${results[-1]} in ${times[-1]} s"
  return $rc
}
# not_run NAME WHY: a phase that could not run, counted as failed.
not_run() {
  names+=("$1") times+=(0) results+=("FAILED (not run: $2)")
  failed=1
}
summary() {
  echo
  echo "test.sh: summary"
  local i
  for i in "${!names[@]}"; do
    printf 'test.sh: %-18s %-28s %5d s\n' "${names[$i]}" "${results[$i]}" "${times[$i]}"
  done
}

ctest_in() {  # ctest_in BUILD_DIR [ctest args]
  local dir=$1
  shift
  (cd "$dir" && ctest --output-on-failure -j "${JOBS:-2}" "$@")
}

phase "setup" ./scripts/setup.sh || { summary; exit 1; }
if phase "build (Open MPI)" ./scripts/build.sh; then
  phase "ctest (Open MPI)" ctest_in "${BUILD_DIR:-build}" "$@"
  if [ $# -eq 0 ]; then
    phase "install+examples" ./scripts/examples.sh "${BUILD_DIR:-build}"
  fi
else
  not_run "ctest (Open MPI)" "the build failed"
fi
if [ $# -eq 0 ]; then
  phase "sanitizers" ./scripts/sanitize.sh
  phase "fuzz" ./scripts/fuzz.sh "${FUZZ_SECONDS:-60}"
  # Simulated scale (SimGrid SMPI): only the targets its tests use.
  smpi() {
    ./scripts/smpi.sh configure build-smpi &&
      ./scripts/smpi.sh build build-smpi test_sdde test_pattern test_plan_stats sparsecomm_cli sparsecomm_bfs \
        test_capi_sdde test_capi_deferred sdde_anchor_bench &&
      ctest_in build-smpi
  }
  if command -v smpicxx > /dev/null; then phase "SMPI" smpi; else not_run "SMPI" "SimGrid SMPI not installed"; fi
fi
mpich() {
  BUILD_DIR=build-mpich SPARSECOMM_MPI=mpich ./scripts/build.sh > build-mpich.log 2>&1 || { tail -40 build-mpich.log; return 1; }
  grep -E "sparsecomm: .*(skipped|is built against)" build-mpich.log
  ctest_in build-mpich -LE "^np(7|8|9|16|32)$" "$@"
}
if command -v mpiexec.mpich > /dev/null; then phase "ctest (MPICH)" mpich "$@"; else not_run "ctest (MPICH)" "MPICH not installed"; fi
if [ $# -eq 0 ]; then
  if [ -f "${BUILD_DIR:-build}/libsparsecomm_petsc.so" ]; then
    phase "PETSc's tests" ./scripts/petsc_tests.sh "${BUILD_DIR:-build}"
  else
    not_run "PETSc's tests" "no PETSc plugin was built"
  fi
fi
summary
exit $failed
