#!/usr/bin/env bash
# Fuzzes the Matrix Market parser (tests/fuzz/fuzz_mtx.cpp) with libFuzzer, ASan and UBSan
# (Debian's clang). Local, no MPI: only src/matrix/mtx_parse.cpp is linked.
#   scripts/fuzz.sh [SECONDS]          60 by default (test.sh's smoke run)
# Starts from the seed corpus tests/fuzz/corpus (copied into build-fuzz/, never modified)
# and prints libFuzzer's final statistics. A crash leaves build-fuzz/crash-* and fails:
# add the file to tests/fuzz/regressions/ (test_reader parses every file there).
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-60}
out=${FUZZ_DIR:-build-fuzz}
command -v clang++ > /dev/null || { echo "fuzz.sh: clang++ not installed (apt-get install clang)"; exit 1; }
mkdir -p "$out/work"
# MPI's include directories, from its compiler wrapper (Open MPI's --showme:incdirs, else
# MPICH's -show)
mpi_inc=$( (mpicxx --showme:incdirs 2> /dev/null | tr ' ' '\n' | sed 's/^/-I/') ||
  (mpicxx -show | tr ' ' '\n' | grep '^-I') )
mpi_inc=$(echo "$mpi_inc" | tr '\n' ' ')
# shellcheck disable=SC2086
clang++ -std=c++17 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
  -DOMPI_SKIP_MPICXX -DMPICH_SKIP_MPICXX -Iinclude -Isrc -Itests $mpi_inc src/matrix/mtx_parse.cpp tests/fuzz/fuzz_mtx.cpp -lz -o "$out/fuzz_mtx"
cp -n tests/fuzz/corpus/* "$out/work/" 2> /dev/null || true
cp -n tests/fuzz/regressions/* "$out/work/" 2> /dev/null || true
echo "fuzz.sh: fuzzing the Matrix Market parser for ${secs} s"
rc=0
UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 ASAN_OPTIONS=detect_leaks=1 \
  "$out/fuzz_mtx" -max_total_time="$secs" -print_final_stats=1 -max_len=4096 -timeout=10 \
  -artifact_prefix="$out/" "$out/work" > "$out/fuzz.log" 2>&1 || rc=$?
grep -E "^(#[0-9]+ +DONE|stat::|Done|==[0-9]+==ERROR|SUMMARY|INFO: Seed|.*Test unit written)|cov: " "$out/fuzz.log" | tail -12
if [ "$rc" -ne 0 ]; then echo "fuzz.sh: FAILED (exit $rc): see $out/fuzz.log"; exit 1; fi
echo "fuzz.sh: no crash in ${secs} s"
