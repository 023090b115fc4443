#!/usr/bin/env bash
# The test command: installs what is missing, builds, runs every test with ctest, installs
# into a temporary prefix and builds and runs examples/ against it; then the
# MPI gtest suites again under ASan + UBSan (scripts/sanitize.sh, build-asan), a 60-second
# fuzz run of the Matrix Market parser (scripts/fuzz.sh), and the SimGrid SMPI variant
# (build-smpi) with its simulated-scale tests. Each part prints how long it took.
#   ./scripts/test.sh                 # everything
#   ./scripts/test.sh -R sdde         # extra arguments go to ctest (both builds)
set -euo pipefail
cd "$(dirname "$0")/.."
t0=$(date +%s)
./scripts/setup.sh
./scripts/build.sh
echo "test.sh: setup and build in $(( $(date +%s) - t0 )) s"
t0=$(date +%s)
(cd "${BUILD_DIR:-build}" && ctest --output-on-failure -j "${JOBS:-2}" "$@")
echo "test.sh: ctest in $(( $(date +%s) - t0 )) s"
# The installed package as a user meets it: cmake --install into a temporary prefix, then
# examples/ built against it (find_package, pkg-config) and run at 1 and 4 ranks.
t0=$(date +%s)
./scripts/examples.sh "${BUILD_DIR:-build}"
echo "test.sh: install + examples in $(( $(date +%s) - t0 )) s"
if [ $# -eq 0 ]; then  # the whole suite: sanitizers and the fuzz smoke run too
  t0=$(date +%s); ./scripts/sanitize.sh; echo "test.sh: sanitizers in $(( $(date +%s) - t0 )) s"
  t0=$(date +%s); ./scripts/fuzz.sh "${FUZZ_SECONDS:-60}"; echo "test.sh: fuzz in $(( $(date +%s) - t0 )) s"
fi
# Simulated scale (SimGrid SMPI): only the targets its tests use.
if command -v smpicxx > /dev/null; then
  t0=$(date +%s)
  ./scripts/smpi.sh configure build-smpi
  ./scripts/smpi.sh build build-smpi test_sdde test_pattern test_plan_stats sparsecomm_cli sparsecomm_bfs
  (cd build-smpi && ctest --output-on-failure "$@")
  echo "test.sh: SMPI build and tests in $(( $(date +%s) - t0 )) s"
else
  echo "test.sh: SimGrid SMPI not installed; simulated-scale tests not run"
fi
