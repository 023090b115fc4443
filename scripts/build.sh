#!/usr/bin/env bash
# Configures and builds sparsecomm (Release) into ./build with -j2.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=${BUILD_TYPE:-Release} "$@"
cmake --build "$BUILD_DIR" -j "${JOBS:-2}"
