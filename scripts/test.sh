#!/usr/bin/env bash
# The test command: installs what is missing, builds, runs every test with ctest; then
# builds the SimGrid SMPI variant (build-smpi) and runs its simulated-scale tests.
#   ./scripts/test.sh                 # everything
#   ./scripts/test.sh -R sdde         # extra arguments go to ctest (both builds)
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
./scripts/build.sh
(cd "${BUILD_DIR:-build}" && ctest --output-on-failure -j "${JOBS:-2}" "$@")
# Simulated scale (SimGrid SMPI): only the targets its tests use.
if command -v smpicxx > /dev/null; then
  ./scripts/smpi.sh configure build-smpi
  ./scripts/smpi.sh build build-smpi test_sdde test_pattern test_plan_stats sparsecomm_cli sparsecomm_bfs
  (cd build-smpi && ctest --output-on-failure "$@")
else
  echo "test.sh: SimGrid SMPI not installed; simulated-scale tests not run"
fi
