#!/usr/bin/env bash
# The test command: installs what is missing, builds, runs every test with ctest.
#   ./scripts/test.sh                 # everything
#   ./scripts/test.sh -R sdde         # extra arguments go to ctest
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
./scripts/build.sh
cd "${BUILD_DIR:-build}"
ctest --output-on-failure -j "${JOBS:-2}" "$@"
