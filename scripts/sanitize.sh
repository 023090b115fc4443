#!/usr/bin/env bash
# The MPI gtest suites under AddressSanitizer + UndefinedBehaviorSanitizer, at 1, 2 and 4
# ranks: a second build (build-asan, -DSPARSECOMM_SANITIZE=address,undefined, -O1 -g) of the
# library and the suites only. Any report halts the rank and fails its test. Open MPI's own
# process-lifetime allocations are suppressed (tests/sanitize/lsan.supp, each line commented).
#   scripts/sanitize.sh [extra ctest args]
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
bdir=${ASAN_BUILD_DIR:-build-asan}
suites=(test_dist_csr test_errors test_reader test_ordering test_generators test_locality test_sdde test_pattern
        test_plan test_gather test_combining test_plan_stats)
t0=$(date +%s)
cmake -S . -B "$bdir" -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS="-O1 -g" -DSPARSECOMM_SANITIZE=address,undefined \
  -DSPARSECOMM_BUILD_APPS=OFF > "$bdir.configure.log" 2>&1 || { cat "$bdir.configure.log"; exit 1; }
cmake --build "$bdir" -j "${JOBS:-2}" --target "${suites[@]}" > "$bdir.build.log" 2>&1 || { tail -50 "$bdir.build.log"; exit 1; }
t1=$(date +%s)
echo "sanitize.sh: built ${#suites[@]} suites with address,undefined in $((t1 - t0)) s"
names=$(printf '%s|' "${suites[@]#test_}"); names=${names%|}
# fast_unwind_on_malloc=0: Open MPI is built without frame pointers; the fast unwinder stops
# at its first frame and no suppression by library name could match.
export ASAN_OPTIONS="halt_on_error=1:detect_leaks=1:exitcode=86:fast_unwind_on_malloc=0"
export LSAN_OPTIONS="suppressions=$root/tests/sanitize/lsan.supp:print_suppressions=0"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"
# The SuiteSparse variants of the suites are left to the optimized build (minutes under ASan).
status=0
(cd "$bdir" && ctest --output-on-failure -j "${JOBS:-2}" -R "^(${names})\.np(1|2|4)$" "$@") || status=$?
if [ $status -ne 0 ]; then
  # LeakSanitizer's own tracer sometimes crashes at exit ("Tracer caught signal 11", a known
  # race with threads that are exiting while it stops the world: google/sanitizers#1170);
  # that is the tool failing, not a finding. A failed test whose log shows that crash and no
  # sanitizer report of its own is run once more; any other failure fails the run as it is.
  log="$bdir/Testing/Temporary/LastTest.log"
  retry=$(awk '/^[0-9]+\/[0-9]+ Testing: /{name=$3; tracer=0; finding=0}
               /Tracer caught signal/{tracer=1}
               /ERROR: AddressSanitizer|runtime error:|SUMMARY: UndefinedBehaviorSanitizer/{finding=1}
               /^Test Failed/{ if (tracer && !finding) print name; else bad=1 }
               END{ if (bad) print "!" }' "$log")
  if [ -z "$retry" ] || echo "$retry" | grep -q '^!$'; then exit $status; fi
  echo "sanitize.sh: LeakSanitizer's tracer crashed in: $(echo $retry); running those once more"
  (cd "$bdir" && ctest --output-on-failure -R "^($(echo $retry | tr ' ' '|' | sed 's/\./\\./g'))$")
fi
echo "sanitize.sh: suites under sanitizers in $(( $(date +%s) - t1 )) s"
