#!/usr/bin/env bash
# Fuzzes every input boundary with libFuzzer, ASan and UBSan (Debian's clang). The targets
# (tests/fuzz/CMakeLists.txt says what each covers and tests/fuzz/*.cpp what each checks):
#   mtx    the Matrix Market parser (in memory, plain and gzip files, inputs up to 64 KB)
#   specs  option lists, region layouts, topology and generator specs, model files
#   capi   the C API's arguments (one rank)
#   pmpi   the PMPI layer's neighborhood collectives against MPI's own (differential)
#   hypre_pkg  a Hypre comm package as the Hypre hook receives it (where Hypre's headers are)
#   hypre_ranks  every rank's package through the hook's path, exact values, at RANKS ranks
#   petsc_sf   a PetscSF graph as the sparsecomm SF type receives it, against basic, at
#              RANKS ranks (default 3) under mpirun (where PETSc is found)
#
#   scripts/fuzz.sh [SECONDS] [TARGET...]    60 s per target by default (test.sh's smoke run),
#                                            every target; two run at a time (JOBS)
# Builds the library and the targets into build-fuzz (clang, -fsanitize=fuzzer-no-link for the
# library so that its code counts for coverage). Each target first replays every input a
# past run crashed on (tests/fuzz/regressions/TARGET: they must pass now), then fuzzes from
# its seed corpus (tests/fuzz/corpus/TARGET, copied; never modified). Prints libFuzzer's final
# statistics per target. A crash leaves build-fuzz/TARGET-crash-* and fails: after the fix,
# add the file to tests/fuzz/regressions/TARGET.
set -uo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
secs=${1:-60}
shift || true
targets=("$@")
out=${FUZZ_DIR:-build-fuzz}
command -v clang++ > /dev/null || { echo "fuzz.sh: clang++ not installed (apt-get install clang)"; exit 1; }
t0=$(date +%s)
CC=clang CXX=clang++ cmake -S . -B "$out" -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS="-O1 -g" \
  -DSPARSECOMM_SANITIZE=address,undefined -DSPARSECOMM_FUZZ=ON -DSPARSECOMM_BUILD_APPS=OFF \
  -DSPARSECOMM_BUILD_TESTS=OFF -DSPARSECOMM_INSTALL=OFF -DSPARSECOMM_WITH_HYPRE=OFF -DSPARSECOMM_WITH_PETSC=AUTO \
  -DSPARSECOMM_WITH_COMBBLAS=OFF > "$out.configure.log" 2>&1 || { cat "$out.configure.log"; exit 1; }
if [ ${#targets[@]} -eq 0 ]; then
  targets=(mtx specs capi pmpi)
  # (Hypre's headers found: the package target)
  # (the list in a variable: grep -q closing a pipe early fails it under pipefail)
  all_targets=$(cmake --build "$out" --target help)
  if grep -qw fuzz_hypre_pkg <<< "$all_targets"; then targets+=(hypre_pkg hypre_ranks); fi
  if grep -qw fuzz_petsc_sf <<< "$all_targets"; then targets+=(petsc_sf); fi
fi
cmake --build "$out" -j "${JOBS:-2}" --target "${targets[@]/#/fuzz_}" > "$out.build.log" 2>&1 ||
  { grep -E "error|Error" "$out.build.log" | head -30 || tail -5 "$out.build.log"; exit 1; }
echo "fuzz.sh: built ${targets[*]} in $(($(date +%s) - t0)) s"

# Open MPI's own signal handlers would print a backtrace and exit before libFuzzer writes
# the crashing input: off. Leak reports: Open MPI's process-lifetime allocations are
# suppressed as in scripts/sanitize.sh (which explains the two unwinder options).
export OMPI_MCA_opal_signal=""
export ASAN_OPTIONS="halt_on_error=1:detect_leaks=1:fast_unwind_on_malloc=0:intercept_tls_get_addr=0"
export LSAN_OPTIONS="suppressions=$root/tests/sanitize/lsan.supp:print_suppressions=0"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"

# Targets that run at several ranks (tests/fuzz/fuzz_ranks.hpp): rank 0 fuzzes, the others
# serve; each rank writes the input it is running to $FUZZ_RANK_INPUT.rank<r>, which is the
# crashing input when a rank other than 0 crashes (libFuzzer, on rank 0, does not see it).
ranks=${RANKS:-3}
mpirun_args=(-n "$ranks" --oversubscribe --mca mpi_yield_when_idle 1)
[ "$(id -u)" = 0 ] && mpirun_args+=(--allow-run-as-root)
multi_rank() { [ "$1" = petsc_sf ] || [ "$1" = hypre_ranks ]; }

# fuzz_one TARGET: replay the regressions, then fuzz; the verdict in $out/TARGET.rc
fuzz_one() {
  local t=$1 bin="$out/tests/fuzz/fuzz_$1" work="$out/work/$1" rc=0
  mkdir -p "$work"
  local launch=("$bin")
  if multi_rank "$t"; then launch=(mpirun "${mpirun_args[@]}" -x FUZZ_RANK_INPUT="$out/$t-input" "$bin"); fi
  cp -n tests/fuzz/corpus/"$t"/* "$work/" 2> /dev/null
  local regressions=(tests/fuzz/regressions/"$t"/*)
  if [ -e "${regressions[0]}" ]; then
    "${launch[@]}" "${regressions[@]}" > "$out/$t.regressions.log" 2>&1 || rc=$?
  fi
  if [ $rc -eq 0 ]; then
    local max_len=4096
    [ "$t" = mtx ] && max_len=65536  # files past the 4 KB most other inputs need (and 1 MB chunks)
    "${launch[@]}" -max_total_time="$secs" -print_final_stats=1 -max_len=$max_len -timeout=30 -rss_limit_mb=4096 \
      -artifact_prefix="$out/$t-" "$work" > "$out/$t.log" 2>&1 || rc=$?
  else
    echo "a past crash is back: see $out/$t.regressions.log" > "$out/$t.log"
  fi
  echo $rc > "$out/$t.rc"
}

running=0
for t in "${targets[@]}"; do
  fuzz_one "$t" &
  running=$((running + 1))
  if [ $running -ge "${JOBS:-2}" ]; then wait -n; running=$((running - 1)); fi
done
wait

failed=0
for t in "${targets[@]}"; do
  rc=$(cat "$out/$t.rc")
  runs=$(grep -oE "stat::number_of_executed_units: [0-9]+" "$out/$t.log" | grep -oE "[0-9]+$")
  cov=$(grep -E "DONE" "$out/$t.log" | grep -oE "cov: [0-9]+" | tail -1)
  if [ "$rc" -eq 0 ]; then
    echo "fuzz.sh: $t: no crash in ${secs} s (${runs:-?} inputs, ${cov:-cov: ?}, every regression replayed)"
  else
    failed=1
    echo "fuzz.sh: $t: FAILED (exit $rc); $out/$t.log:"
    grep -E "==[0-9]+==ERROR|SUMMARY|fuzz_[a-z_]+( \[rank [0-9]+\])?:|arguments:|Test unit written|a past crash" \
      "$out/$t.log" | head -12
    if multi_rank "$t"; then echo "  (the input each rank ran last: $out/$t-input.rank*)"; fi
  fi
done
exit $failed
